"""The exact method's scheme: which 128-bit key a document gets (nd128 of its normalized text)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.schemes import Scheme
from ...core.validation import Boolean, Choice, Integer, check
from .keys import EXACT_SCHEME, EXACT_VERSION

__all__ = ["ExactScheme"]


@dataclass(frozen=True)
class ExactScheme(Scheme):
    """Everything that determines an exact key (:mod:`neardup.methods.exact.keys`).

    Attributes:
        raw: the key hashes the raw UTF-8 bytes instead of the normalized text.
        key_family: the 128-bit hash, ``"nd128"``.
        format_version: bumped whenever the same text would get another key.

    >>> ExactScheme().to_dict()
    {'scheme': 'exact', 'format_version': 1, 'raw': False, 'key_family': 'nd128'}
    >>> str(ExactScheme(raw=True))
    'nd128/1 raw'
    """

    kind = "exact"

    raw: bool = False
    key_family: str = EXACT_SCHEME
    format_version: int = EXACT_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", check("raw", self.raw, Boolean()))
        object.__setattr__(self, "key_family", check("key_family", self.key_family, Choice((EXACT_SCHEME,))))
        object.__setattr__(
            self, "format_version", check("format_version", self.format_version, Integer(1, EXACT_VERSION))
        )

    def __str__(self) -> str:
        return f"{self.key_family}/{self.format_version} {'raw' if self.raw else 'normalized'}"
