"""Option handling shared by the ``neardup`` commands."""

from __future__ import annotations

import click

from .dedup_minhash import DEFAULT_NGRAM
from .shingles import Shingling


def shingling_option(ngram: int | None, char_ngram: int | None, strip_punctuation: bool,
                     default_ngram: int = DEFAULT_NGRAM) -> Shingling:
    """The Shingling chosen by ``--ngram`` / ``--char-ngram`` / ``--strip-punctuation``."""
    if ngram is not None and char_ngram is not None:
        raise click.UsageError("--ngram and --char-ngram are exclusive: choose word or character shingles")
    if char_ngram:
        return Shingling("char", char_ngram, strip_punctuation=strip_punctuation)
    return Shingling("word", ngram or default_ngram)
