"""The exact batch job as a plan: key every document, group equal keys.

1. scan ``read + hash``: the 128-bit key of every text (:func:`~neardup.methods.exact.keys.exact_keys`);
2. group-by ``group``: documents with equal keys (empty texts never match) form a cluster, every
   pair of a group has similarity 1.0.

Sharded (:class:`~neardup.core.plan.Sharded`, the keys stay where they were made): one table
keyed by the key, a group's pairs verified by equality of their keys, and (clusters only) each
member joined to its group's first member.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.documents import DocBatch
from ...core.extsort import external
from ...core.plan import GroupBy, Plan, Rows, Scan, Sharded, StageContext
from .groups import group_counters, group_equal, group_equal_external, group_pairs, groups_pairs, groups_stars
from .keys import exact_keys, nonempty

if TYPE_CHECKING:
    from .config import ExactConfig

__all__ = ["exact_plan"]

_SORT_BYTES = 96
"""Bytes a document that ``group_equal`` takes at its peak (the keys copied, sorted and
compared, the order and the roots)."""


def exact_plan(config: ExactConfig) -> Plan:
    """The plan of ``config`` (see the module docs)."""
    return Plan(
        config,
        (Scan("read + hash", hash_batch, key_rows), GroupBy("group", key_groups, same_key, group, ("keys",))),
        similarity,
        sharded=Sharded(("keys",), shard_keys, shard_verify, similarity, shard_empty, shard_connect),
    )


def hash_batch(config: ExactConfig, batch: DocBatch) -> dict[str, np.ndarray]:
    """Map: the exact key (uint64[n, 2]) of every text of the batch, and which are empty."""
    keys = exact_keys(batch.texts, config.raw)
    return {"keys": keys, "empty": ~nonempty(keys)}


def key_rows(config: ExactConfig) -> Rows:
    """Reduce: the keys of every document, in input order."""
    return Rows({"keys": ((2,), np.uint64), "empty": ((), bool)})


def key_groups(config: ExactConfig, keys: np.ndarray):
    """Group-by keys: one table keyed by the 128-bit key (two words); empty texts take no part."""
    return keys.reshape(len(keys), 1, 2), nonempty(keys).reshape(-1, 1)


def same_key(config: ExactConfig, members: np.ndarray, keys: np.ndarray):
    """Group-by verify: every pair of a group, similarity 1.0."""
    members = np.sort(np.asarray(members, dtype=np.int64))
    a, b = np.triu_indices(len(members), k=1)
    return members[a], members[b], np.ones(len(a), dtype=np.float64)


def group(config: ExactConfig, ctx: StageContext, keys: np.ndarray) -> dict[str, Any]:
    """Group-by, locally: equal keys by sorting (past the job's memory budget, an external sort
    with the same roots: :func:`~neardup.methods.exact.groups.group_equal_external`); the pairs
    of every group when asked for."""
    valid = nonempty(keys)
    spill = external(_SORT_BYTES * len(keys), "exact groups")
    root = group_equal(keys, valid) if spill is None else group_equal_external(keys, valid, spill)
    out: dict[str, Any] = {"root": root, "counters": group_counters(root)}
    if ctx.want_pairs:
        a, b = group_pairs(root)
        out["pairs"] = (a, b, np.ones(len(a), dtype=np.float64))
    return out


# --------------------------------------------------------------------------------------------
# the group-by on shards of rows (core.plan.Sharded): the keys of some documents


def shard_keys(config: ExactConfig, rows: dict[str, np.ndarray], documents: int):
    """The keys of a shard's documents (as ``key_groups``)."""
    return key_groups(config, rows["keys"])


def shard_verify(config: ExactConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """Every pair of each group ``members[bounds[g]:bounds[g + 1]]`` whose keys are equal (all
    of them: a group is one key), similarity 1.0."""
    a, b = groups_pairs(members, bounds)
    keys = rows["keys"]
    equal = (keys[a] == keys[b]).all(axis=1)
    a, b = a[equal], b[equal]
    return a, b, np.ones(len(a), dtype=np.float64)


def shard_connect(config: ExactConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """Clusters only: each member joined to its group's first member (equal keys: no comparison)."""
    return groups_stars(members, bounds)


def shard_empty(config: ExactConfig, rows: dict[str, np.ndarray]) -> np.ndarray:
    """The empty texts (as ``hash_batch``)."""
    return ~nonempty(rows["keys"])


def similarity(config: ExactConfig, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """1.0 for documents with equal keys (and a document itself), else 0.0."""
    keys = state["keys"]
    valid = nonempty(keys)
    docs = np.asarray(docs, dtype=np.int64)
    others = np.asarray(others, dtype=np.int64)
    same = (keys[docs] == keys[others]).all(axis=1)
    return (same & (valid[docs] | (docs == others))).astype(np.float64)
