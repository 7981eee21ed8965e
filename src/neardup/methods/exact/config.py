"""Settings of the exact method: identical normalized text, by equal 128-bit keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...core.plan import Plan
from ...core.validation import Boolean
from ..base import MethodConfig, Sketched, param
from ..registry import register
from .keys import exact_keys, nonempty
from .plan import exact_plan
from .scheme import ExactScheme

__all__ = ["ExactConfig"]


@register
@dataclass(frozen=True)
class ExactConfig(MethodConfig):
    """Settings of the exact method: equal 128-bit keys of the normalized text.

    One read; per batch on the workers, the 128-bit key of each normalized (or raw) text;
    documents with equal keys form a cluster. No candidates, no verification: equal keys are the
    answer. Documents whose normalized (or raw) text is empty are counted as empty and never
    grouped. Pairs (when asked for) are every pair inside each group, similarity 1.0, so their
    number is quadratic in group size: ask for pairs only where groups are known to be small.

    >>> ExactConfig(raw=True).scheme
    ExactScheme(raw=True, key_family='nd128', format_version=1)
    """

    name = "exact"
    summary = "identical normalized text (128-bit hash)"
    rank = 30

    raw: bool = param(False, Boolean(), "Hash the raw text instead of the normalized text.")

    @property
    def scheme(self) -> ExactScheme:
        return ExactScheme(raw=self.raw)

    def plan(self) -> Plan:
        return exact_plan(self)

    def describe(self, counters: dict[str, float]) -> dict[str, str]:
        return {"exact key": f"{self.scheme} (128-bit)", "exact groups": group_summary(counters)}

    def sketch_texts(self, texts: Sequence[str]) -> Sketched:
        keys = exact_keys(list(texts), self.raw)
        return Sketched(keys, ~nonempty(keys))


def group_summary(counters: dict[str, float]) -> str:
    """ "G groups of 2+ documents, D duplicates" from the counters ``groups`` and ``duplicates``."""
    return (
        f"{int(counters.get('groups', 0)):,} groups of 2+ documents, {int(counters.get('duplicates', 0)):,} duplicates"
    )
