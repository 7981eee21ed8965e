"""The SpotSigs scheme and word lists: what determines the spot signatures of a text.

:class:`SpotSigsScheme` holds the antecedents and stopwords (normalized, sorted, without
repeats), the spot distance, the chain length, the key mode and the text normalization; it is a
versioned :class:`~neardup.core.schemes.Scheme`, so signatures and outputs can say how they were
made. :func:`load_words` reads a word list file (one word a line, ``#`` comments). The extraction
itself is in :mod:`neardup.methods.spotsigs.signatures`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..._kernels.hashing import hash_str
from ...core.errors import IncompatibleSketchError, InputError
from ...core.schemes import Scheme
from ...core.validation import Boolean, Choice, Integer, ParameterError, Words, check
from ...text.normalize import normalize, tokenize
from ...text.stopwords import ENGLISH_ANTECEDENTS, ENGLISH_STOPWORDS

__all__ = ["FORMAT_VERSION", "HASH_FAMILY", "MAX_CHAIN", "SpotSigsScheme", "load_words"]

FORMAT_VERSION = 2  # 2: letters of Thai, Lao, Khmer and Myanmar are tokens of their own (with their marks)


HASH_FAMILY = "nd64"


MAX_CHAIN = 32
"""Longest chains and spot distances accepted: beyond, every signature is unique to its page."""


_WORDS = Words("read a file with neardup.methods.spotsigs.scheme.load_words(path)")


# ---------------------------------------------------------------------------------------------
# Scheme and word lists
def _canonical_words(words, what: str, nfkc: bool, casefold: bool) -> tuple[str, ...]:
    out = set()
    for w in check(what, words, _WORDS):
        norm = normalize(w, nfkc=nfkc, casefold=casefold)
        toks = tokenize(norm, nfkc=False, casefold=False)
        if toks != [norm]:
            raise ParameterError(f"{what} must be single word tokens, got {w!r} (tokens {toks!r})")
        out.add(norm)
    return tuple(sorted(out))


@dataclass(frozen=True)
class SpotSigsScheme(Scheme):
    """Everything that determines the spot signatures of a text; signatures of different
    schemes never mix.

    Word lists are stored normalized (NFKC, case folding), sorted and without repeats, so two
    schemes built from the same words in any order are equal.

    Attributes:
        antecedents: words a signature starts at (default: :data:`ENGLISH_ANTECEDENTS`).
        stopwords: words a chain skips; the antecedents are skipped too
            (default: :data:`ENGLISH_STOPWORDS`).
        spot_distance: d in [1, MAX_CHAIN], the chain takes every d-th non-stopword after the
            antecedent.
        chain: c in [1, MAX_CHAIN], the number of words in a chain.
        key: ``"antecedent"`` (key ``"the:south:carolina"``) or ``"chain"`` (``"south:carolina"``).
        nfkc, casefold: text normalization (see :mod:`neardup.text.normalize`).
        hash_family, format_version: bumped whenever the same inputs would give other values.

    >>> s = SpotSigsScheme(antecedents=["The", "a"], stopwords=["to"], chain=2)
    >>> s.antecedents
    ('a', 'the')
    >>> s.to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'scheme': 'spotsigs', 'format_version': 2, 'antecedents': ['a', 'the'], 'stopwords': ['to'],
     'spot_distance': 1, 'chain': 2, 'key': 'antecedent', 'nfkc': True, 'casefold': True, 'hash_family': 'nd64'}
    """

    kind = "spotsigs"

    antecedents: tuple[str, ...] = ENGLISH_ANTECEDENTS
    stopwords: tuple[str, ...] = ENGLISH_STOPWORDS
    spot_distance: int = 1
    chain: int = 2
    key: Literal["antecedent", "chain"] = "antecedent"
    nfkc: bool = True
    casefold: bool = True
    hash_family: str = HASH_FAMILY
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "spot_distance", check("spot_distance", self.spot_distance, Integer(1, MAX_CHAIN)))
        set_(self, "chain", check("chain", self.chain, Integer(1, MAX_CHAIN)))
        set_(self, "key", check("key", self.key, Choice(("antecedent", "chain"))))
        set_(self, "nfkc", check("nfkc", self.nfkc, Boolean()))
        set_(self, "casefold", check("casefold", self.casefold, Boolean()))
        set_(self, "hash_family", check("hash_family", self.hash_family, Choice((HASH_FAMILY,))))
        set_(self, "format_version", check("format_version", self.format_version, Integer(1, FORMAT_VERSION)))
        ants = _canonical_words(self.antecedents, "antecedents", self.nfkc, self.casefold)
        if not ants:
            raise ParameterError(
                f"antecedents must be a non-empty sequence of words (signatures start at antecedents), "
                f"got {self.antecedents!r}"
            )
        set_(self, "antecedents", ants)
        set_(self, "stopwords", _canonical_words(self.stopwords, "stopwords", self.nfkc, self.casefold))

    def __str__(self) -> str:
        return (
            f"spotsigs/{self.format_version} d={self.spot_distance} c={self.chain} key={self.key} "
            f"nfkc={self.nfkc} casefold={self.casefold}, {len(self.antecedents)} antecedents and "
            f"{len(self.stopwords)} stopwords (digest {hash_str(self.to_json()):016x})"
        )

    @property
    def skipped(self) -> tuple[str, ...]:
        """The words a chain skips: the stopwords and the antecedents."""
        return tuple(sorted(set(self.stopwords) | set(self.antecedents)))

    def word_hashes(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted uint64 hashes of (antecedents, skipped words), as the kernel looks them up."""
        ant = np.array(sorted(hash_str(w) for w in self.antecedents), dtype=np.uint64)
        skip = np.array(sorted(hash_str(w) for w in self.skipped), dtype=np.uint64)
        return ant, skip

    def check_compatible(self, other: SpotSigsScheme | None) -> None:
        """Raise IncompatibleSketchError unless ``other`` is the same scheme (the message names
        both, their word lists by count and a digest of the whole scheme)."""
        if self != other:
            raise IncompatibleSketchError(f"spot signatures of different schemes cannot be compared: {self} vs {other}")


def load_words(path: str | os.PathLike) -> tuple[str, ...]:
    """Read a word list: one word per line, UTF-8; ``#`` starts a comment; blank lines are ignored.

    Each word must be a single token of the tokenizer (an error names the file and line).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ants.txt"
    >>> _ = p.write_text("# antecedents\\nthe\\nA   # articles\\n\\nis\\n", encoding="utf-8")
    >>> load_words(p)
    ('the', 'A', 'is')
    """
    words: list[str] = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(str(path), None, f"word list is not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read word list: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, start=1):
        word = line.split("#", 1)[0].strip()
        if not word:
            continue
        toks = tokenize(word)
        if len(toks) != 1:
            raise InputError(str(path), number, f"expected one word per line, got {word!r} (tokens {toks!r})")
        words.append(word)
    return tuple(words)
