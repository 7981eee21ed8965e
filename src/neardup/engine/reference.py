"""The reference engine: the candidate stage by its definition, group by group.

It runs scans and steps as the local engine does with one worker, but a
:class:`~neardup.core.plan.GroupBy` by what it means rather than by the method's fast path:
every table's documents are sorted by key, every group of two or more is verified with the
method's ``verify``, the pairs of all groups are merged (a pair found in several tables counts
once) and their connected components are the clusters. That is what an engine that spreads
groups over machines does (shuffle on (table, key), verify per group, components), so the
contract tests run every method through this engine too and require the same answer as the
local one. It is meant for tests and small inputs: groups of m documents cost m^2 / 2
verifications here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.components import components
from ..core.plan import GroupBy, StageContext
from .local import LocalEngine

__all__ = ["ReferenceEngine", "group_by_definition"]


def group_by_definition(stage: GroupBy, config: Any, inputs: list[Any]) -> dict[str, Any]:
    """``root`` and ``pairs`` of a :class:`GroupBy` from its ``keys`` and ``verify``."""
    keys, member = stage.keys(config, *inputs)
    keys = np.asarray(keys, dtype=np.uint64)
    n, tables = keys.shape[0], keys.shape[1]
    keys = keys.reshape(n, tables, -1)
    member = np.asarray(member, dtype=bool).reshape(n, tables)
    found_a, found_b, found_s = [], [], []
    for t in range(tables):
        rows = np.flatnonzero(member[:, t])
        k = keys[rows, t]
        order = np.lexsort(k.T[::-1]) if len(rows) else np.empty(0, dtype=np.int64)
        k, rows = k[order], rows[order]
        change = np.ones(len(rows) + 1, dtype=bool)
        change[1:-1] = (k[1:] != k[:-1]).any(axis=1)
        bounds = np.flatnonzero(change)
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            if hi - lo >= 2:
                a, b, s = stage.verify(config, rows[lo:hi], *inputs)
                found_a.append(np.asarray(a, dtype=np.int64))
                found_b.append(np.asarray(b, dtype=np.int64))
                found_s.append(np.asarray(s, dtype=np.float64))
    a = np.concatenate(found_a) if found_a else np.empty(0, dtype=np.int64)
    b = np.concatenate(found_b) if found_b else np.empty(0, dtype=np.int64)
    s = np.concatenate(found_s) if found_s else np.empty(0, dtype=np.float64)
    if np.any(a >= b):
        raise RuntimeError(f"{stage.name}: verify must return pairs with a < b")
    _, first = np.unique(a * max(n, 1) + b, return_index=True)
    a, b, s = a[first], b[first], s[first]
    order = np.lexsort((b, a))
    return {"root": components(n, a, b), "pairs": (a[order], b[order], s[order])}


class ReferenceEngine(LocalEngine):
    """The local engine with one worker, whose candidate stage follows its definition."""

    def __init__(self) -> None:
        super().__init__(workers=1)

    def __repr__(self) -> str:
        return "ReferenceEngine()"

    def group_by(self, stage: GroupBy, config: Any, ctx: StageContext, inputs: list[Any]) -> dict[str, Any]:
        return group_by_definition(stage, config, inputs)
