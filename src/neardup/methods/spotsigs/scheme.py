"""TODO: docstring."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..._kernels.hashing import hash_str
from ...core.errors import IncompatibleSketchError, InputError
from ...text.normalize import normalize, tokenize
from ...text.stopwords import ENGLISH_ANTECEDENTS, ENGLISH_STOPWORDS

FORMAT_VERSION = 1


HASH_FAMILY = "nd64"


# ---------------------------------------------------------------------------------------------
# Scheme and word lists
def _canonical_words(words, what: str, nfkc: bool, casefold: bool) -> tuple[str, ...]:
    if isinstance(words, (str, bytes)):
        raise TypeError(
            f"{what} must be a sequence of words, not a single string (use load_words(path) to read a file)"
        )
    out = set()
    for w in words:
        if not isinstance(w, str):
            raise TypeError(f"{what} must be strings, got {w!r}")
        norm = normalize(w, nfkc=nfkc, casefold=casefold)
        toks = tokenize(norm, nfkc=False, casefold=False)
        if toks != [norm]:
            raise ValueError(f"each of the {what} must be a single word token; {w!r} is {toks!r}")
        out.add(norm)
    return tuple(sorted(out))


@dataclass(frozen=True)
class SpotSigsScheme:
    """Everything that determines the spot signatures of a text; signatures of different
    schemes never mix.

    Word lists are stored normalized (NFKC, case folding), sorted and without repeats, so two
    schemes built from the same words in any order are equal.

    Attributes:
        antecedents: words a signature starts at (default: :data:`ENGLISH_ANTECEDENTS`).
        stopwords: words a chain skips; the antecedents are skipped too
            (default: :data:`ENGLISH_STOPWORDS`).
        spot_distance: d >= 1, the chain takes every d-th non-stopword after the antecedent.
        chain: c >= 1, the number of words in a chain.
        key: ``"antecedent"`` (key ``"the:south:carolina"``) or ``"chain"`` (``"south:carolina"``).
        nfkc, casefold: text normalization (see :mod:`neardup.text.normalize`).
        hash_family, format_version: bumped whenever the same inputs would give other values.

    >>> s = SpotSigsScheme(antecedents=["The", "a"], stopwords=["to"], chain=2)
    >>> s.antecedents
    ('a', 'the')
    """

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
        for name in ("spot_distance", "chain"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.key not in ("antecedent", "chain"):
            raise ValueError(f"key must be 'antecedent' or 'chain', got {self.key!r}")
        ants = _canonical_words(self.antecedents, "antecedents", self.nfkc, self.casefold)
        if not ants:
            raise ValueError("antecedents must not be empty: signatures start at antecedents")
        object.__setattr__(self, "antecedents", ants)
        object.__setattr__(self, "stopwords", _canonical_words(self.stopwords, "stopwords", self.nfkc, self.casefold))
        object.__setattr__(self, "spot_distance", int(self.spot_distance))
        object.__setattr__(self, "chain", int(self.chain))

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
        """Raise IncompatibleSketchError unless ``other`` is the same scheme."""
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
