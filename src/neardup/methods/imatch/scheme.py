"""The I-Match scheme: which lexicon signatures a document gets (see :mod:`neardup.methods.imatch`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.schemes import Scheme
from ...core.validation import Integer, Optional, Range, Real, check

__all__ = ["IMATCH_VERSION", "MAX_LEXICONS", "IMatchScheme"]

IMATCH_VERSION = 2  # 2: letters of Thai, Lao, Khmer and Myanmar are tokens of their own (with their marks)
"""Format version of I-Match signatures."""


MAX_LEXICONS = 64
"""The most signatures per document (each is a 16-byte key; recall saturates long before)."""


@dataclass(frozen=True)
class IMatchScheme(Scheme):
    """Everything that determines a document's I-Match signatures, but the collection: the
    lexicon is the terms of the collection whose normalized IDF lies in ``idf_band``, so two
    collections give different signatures to the same text. ``lexicon_digest`` (set where a
    lexicon is fixed, e.g. by an index) names the lexicon.

    >>> IMatchScheme().to_dict()["idf_band"]
    [0.4, 0.75]
    """

    kind = "imatch"

    idf_band: tuple[float, float] = (0.4, 0.75)
    lexicons: int = 1
    lexicon_fraction: float = 0.7
    min_terms: int = 1
    seed: int = 1
    lexicon_digest: int | None = None
    format_version: int = IMATCH_VERSION

    def __post_init__(self) -> None:
        for name, constraint in (
            ("idf_band", Range(Real(0, 1))),
            ("lexicons", Integer(1, MAX_LEXICONS)),
            ("lexicon_fraction", Real(0, 1, low_open=True)),
            ("min_terms", Integer(1)),
            ("seed", Integer(0, 2**64 - 1)),
            ("lexicon_digest", Optional(Integer(0, 2**64 - 1))),
            ("format_version", Integer(1, IMATCH_VERSION)),
        ):
            object.__setattr__(self, name, check(name, getattr(self, name), constraint))

    def __str__(self) -> str:
        lo, hi = self.idf_band
        return (
            f"imatch/{self.format_version} band=[{lo}, {hi}] L={self.lexicons} "
            f"fraction={self.lexicon_fraction} min_terms={self.min_terms} seed={self.seed}"
        )
