"""The settings of a repeats job, checked once: :class:`RepeatsConfig`."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import NeardupError

MODES = ("spans", "lines", "paragraphs")
UNITS = ("words", "chars", "bytes")


@dataclass(frozen=True)
class RepeatsConfig:
    """What a repeats job removes.

    * ``mode="spans"``: every run of at least ``min_length`` tokens (``unit``: words, characters
      or UTF-8 bytes) that occurs at least ``min_count`` times in the collection (within one
      document or across documents, overlapping occurrences counted), every occurrence;
    * ``mode="lines"`` / ``"paragraphs"``: every line (paragraph: run of non-blank lines) whose
      normalized content occurs at least ``min_count`` times; with ``keep_first`` its first
      occurrence (in reading order) stays.

    ``bloom``: for lines and paragraphs, count in a counting Bloom filter of bounded size with
    this false-positive rate at ``bloom_items`` distinct units, instead of the exact table.
    """

    mode: str = "spans"
    min_length: int = 50
    unit: str = "words"
    min_count: int = 2
    keep_first: bool = True
    bloom: float | None = None
    bloom_items: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise NeardupError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.unit not in UNITS:
            raise NeardupError(f"unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if not isinstance(self.min_length, int) or self.min_length < 1:
            raise NeardupError(f"min_length must be an integer >= 1, got {self.min_length!r}")
        if not isinstance(self.min_count, int) or not 2 <= self.min_count <= 255:
            raise NeardupError(f"min_count must be an integer from 2 to 255, got {self.min_count!r}")
        if self.bloom is not None:
            if self.mode == "spans":
                raise NeardupError("a Bloom filter counts lines and paragraphs; spans are found by a suffix array")
            if not 0 < self.bloom < 1:
                raise NeardupError(f"the Bloom filter's false-positive rate must be in (0, 1), got {self.bloom!r}")
        if self.bloom_items is not None and self.bloom_items < 1:
            raise NeardupError(f"bloom_items must be >= 1, got {self.bloom_items!r}")
