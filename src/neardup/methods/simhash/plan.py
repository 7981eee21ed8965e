"""The SimHash batch job as a plan: shingle -> fingerprint -> permuted-table Hamming search -> cluster.

1. (``weighting="idf"`` only) scan ``read + document frequencies``: for every shingle, the
   documents it occurs in (:class:`~neardup.methods.simhash.sketch.DocumentFrequencies`), and
   step ``IDF table``;
2. scan ``read + fingerprint``: texts -> fingerprints and shingle counts;
3. group-by ``Hamming search``: identical fingerprints are collapsed, every pair of distinct
   fingerprints within ``max_distance`` is found by Manku et al.'s permuted tables
   (:func:`~neardup.methods.simhash.search.unique_pairs`), and union-find joins them. The pairs are
   exactly those of brute-force all-pairs, so the clusters are the connected components of the
   graph "Hamming distance <= max_distance"; a pair's similarity is 1 - d / f. By definition, a
   table per block combination keyed by its kept bits, every group verified by distance.

With ``verify="edit"``, step 3 is ``Hamming search (candidates)``, the same search giving every
pair within ``max_distance`` as a candidate, followed by the edit-verification stages every method
shares (:mod:`neardup.methods.verify_edit`): the candidate texts are re-read and a pair is kept when
its normalized edit similarity reaches ``threshold``.

Documents without a single shingle (empty after normalization) are never paired.

Sharded (:class:`~neardup.core.plan.Sharded`, without ``verify="edit"``): the fingerprints of
the last scan stay where they were made (with IDF weights, the table of scan 1 is its input, as
without shards); the group-by's tables are those above, chosen for the job's number of
documents, a group's pairs are verified by Hamming distance on the fingerprint rows, and (clusters
only) a member is compared only with the earlier members of its group not yet in its component.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._kernels.hamming import connect_within_groups, expand, index_keys, within_groups
from ..._kernels.unionfind import roots, union_edges
from ...core.components import new_forest
from ...core.documents import DocBatch
from ...core.extsort import external
from ...core.plan import GroupBy, Plan, Prepass, Rows, Scan, Sharded, StageContext, Step
from ...text.shingles import shingle_batch
from .external import search_external
from .scheme import popcount_array
from .search import block_plan, choose_blocks, unique_pairs
from .sketch import DocumentFrequencies, IdfTable, SimHasher

if TYPE_CHECKING:
    from .config import SimHashConfig

__all__ = ["simhash_plan"]

_SEARCH_BYTES = 96
"""Bytes a document that the in-memory search takes at its peak (the fingerprints gathered,
sorted and made distinct, two tables sorted at once, the forest and the group maps)."""


def simhash_plan(config: SimHashConfig) -> Plan:
    """The plan of ``config`` (see the module docs)."""
    stages: list[Any] = []
    fingerprint_inputs: tuple[str, ...] = ()
    if config.weighting == "idf":
        stages += [
            Scan("read + document frequencies", shingle_counts, ShingleFrequencies, table=True),
            Step("IDF table", idf_table, ("frequencies",)),
        ]
        fingerprint_inputs = ("idf",)
    stages.append(Scan("read + fingerprint", fingerprint_batch, fingerprint_rows, fingerprint_inputs))
    prepass = None
    if config.exact_prepass and config.weighting != "idf":
        prepass = Prepass(config.shingling.nfkc, config.shingling.casefold)
    if config.verify == "edit":
        from ..verify_edit import edit_similarity_of, edit_stages, shard_edit_similarity

        tail, recheck = edit_stages(Step("Hamming search (candidates)", candidate_pairs, ("values", "counts")))
        stages += tail
        columns = ("values", "counts")
        sharded = Sharded(
            columns, shard_keys, shard_verify, shard_edit_similarity, shard_empty, recheck=recheck, pairwise=True
        )
        return Plan(config, tuple(stages), edit_similarity_of, prepass, sharded)
    stages.append(GroupBy("Hamming search", table_keys, within_distance, search, ("values", "counts")))
    sharded = Sharded(("values", "counts"), shard_keys, shard_verify, similarity, shard_empty, shard_connect)
    return Plan(config, tuple(stages), similarity, prepass, sharded)


def shingle_counts(config: SimHashConfig, batch: DocBatch):
    """Map (IDF): the batch's distinct shingles with the number of its documents containing each."""
    h, off = shingle_batch(batch.texts, config.shingling, unique=False)
    return DocumentFrequencies.batch_counts(h, off), len(batch)


class ShingleFrequencies:
    """Reduce (IDF): the document frequency of every shingle of the collection."""

    def __init__(self, config: SimHashConfig) -> None:
        self.counter = DocumentFrequencies(config.shingling)

    def add(self, part) -> None:
        (hashes, docs), n = part
        self.counter.add_counts(hashes, docs, n)

    def merge(self, other: ShingleFrequencies) -> None:
        self.counter.merge(other.counter)

    def result(self) -> dict[str, Any]:
        return {"frequencies": self.counter.compact()}  # one table, not the pending pieces


def idf_table(config: SimHashConfig, ctx: StageContext, frequencies: DocumentFrequencies) -> dict[str, Any]:
    """Step (IDF): the IDF table, keeping shingles in at least ``min_df`` documents."""
    idf = frequencies.table(config.min_df)
    return {"idf": idf, "counters": {"idf_shingles": len(idf)}}


def fingerprint_batch(config: SimHashConfig, batch: DocBatch, idf: IdfTable | None = None) -> dict[str, np.ndarray]:
    """Map: fingerprints (uint64[n, W]) and shingle counts (int64[n]) of the batch's texts."""
    values, counts = SimHasher(scheme=config.scheme, idf=idf).sign_texts_with_counts(batch.texts)
    return {"values": values, "counts": counts, "empty": counts == 0}


def fingerprint_rows(config: SimHashConfig) -> Rows:
    """Reduce: every document's fingerprint and shingle count, in input order."""
    return Rows({"values": ((config.bits // 64,), np.uint64), "counts": ((), np.int64), "empty": ((), bool)})


def _plan_for(config: SimHashConfig, n: int):
    blocks = config.blocks if config.blocks is not None else choose_blocks(config.bits, config.max_distance, n)
    return block_plan(config.bits, config.max_distance, blocks)


def table_keys(config: SimHashConfig, values: np.ndarray, counts: np.ndarray, documents: int | None = None):
    """Group-by keys: one table per choice of kept blocks, keyed by the kept bits (at most 64 of
    them, as the permuted tables do); documents with shingles take part. The tables are chosen
    for ``documents`` (default: the documents with shingles); every choice finds every pair
    within ``max_distance``."""
    plan = _plan_for(config, int(np.count_nonzero(counts)) if documents is None else documents)
    kstart, ksize, nkept, keybits = plan.arrays()[:4]
    keys = np.empty((len(plan.tables), len(values)), dtype=np.uint64)
    index_keys(np.ascontiguousarray(values), kstart, ksize, nkept, keybits, keys)
    member = np.repeat((counts > 0)[:, None], len(plan.tables), axis=1)
    return keys.T, member


def within_distance(config: SimHashConfig, members: np.ndarray, values: np.ndarray, counts: np.ndarray):
    """Group-by verify: every pair of a group within ``max_distance`` bits, similarity 1 - d / f."""
    members = np.sort(np.asarray(members, dtype=np.int64))
    a, b = np.triu_indices(len(members), k=1)
    a, b = members[a], members[b]
    d = popcount_array(values[a] ^ values[b]).sum(axis=1)
    keep = d <= config.max_distance
    return a[keep], b[keep], 1.0 - d[keep] / config.bits


def search(config: SimHashConfig, ctx: StageContext, values: np.ndarray, counts: np.ndarray) -> dict[str, Any]:
    """Group-by, locally: all pairs within ``max_distance`` among non-empty documents, and their
    components.

    Clusters come from the pairs of *distinct* fingerprints plus the groups of identical ones,
    which give the same components as the complete pair graph without its quadratic groups;
    the complete pairs are expanded only when ``ctx.want_pairs``. Past the job's memory budget
    the tables are sorted on disk (:mod:`neardup.methods.simhash.external`), with the same result.
    """
    n = len(values)
    spill = external(_SEARCH_BYTES * n, "simhash tables")
    if spill is not None:  # past the budget: the same search, sorted on disk
        return search_external(values, counts, config.bits, config.max_distance, config.blocks, ctx.want_pairs, spill)
    docs = np.flatnonzero(counts > 0)
    up = unique_pairs(values[docs], config.max_distance, blocks=config.blocks, workers=ctx.threads)
    counters = _search_counters(up)
    ngroups = len(up.firsts)
    # union-find over documents: each group's members to its first member, and group pairs
    parent = new_forest(n)
    members = docs[up.order]
    group_of_sorted = np.repeat(np.arange(ngroups), np.diff(up.starts))
    heads = docs[up.order[up.starts[:-1]]]
    union_edges(parent, members, heads[group_of_sorted])
    union_edges(parent, heads[up.a], heads[up.b])
    out: dict[str, Any] = {"root": roots(parent), "counters": {**counters, "checked": counters.pop("searched")}}
    if ctx.want_pairs:
        a, b, d = expand(up.a, up.b, up.d, up.order, up.starts)
        a, b = docs[a], docs[b]
        order = np.lexsort((b, a))
        out["pairs"] = (a[order], b[order], 1.0 - d[order] / config.bits)
    return out


def _search_counters(up) -> dict[str, int]:
    """Counters of a Hamming search: pairs within the distance (of documents), fingerprint pairs
    searched, distinct fingerprints, blocks and tables."""
    sizes = np.diff(up.starts)
    return {
        "pairs": int((sizes[up.a] * sizes[up.b]).sum() + (sizes * (sizes - 1) // 2).sum()),
        "searched": up.checked,
        "distinct": len(up.firsts),
        "blocks": up.plan.blocks,
        "tables": len(up.plan.tables),
    }


def candidate_pairs(config: SimHashConfig, ctx: StageContext, values: np.ndarray, counts: np.ndarray) -> dict[str, Any]:
    """Step (``verify="edit"``): every pair of non-empty documents within ``max_distance`` (those
    of equal fingerprints included), as candidates for edit verification, and the documents in one."""
    docs = np.flatnonzero(counts > 0)
    up = unique_pairs(values[docs], config.max_distance, blocks=config.blocks, workers=ctx.threads)
    a, b, _ = expand(up.a, up.b, up.d, up.order, up.starts)
    a, b = docs[a], docs[b]
    wanted = np.zeros(len(values), dtype=bool)
    wanted[a] = True
    wanted[b] = True
    return {"candidate_a": a, "candidate_b": b, "wanted": wanted, "counters": _search_counters(up)}


# --------------------------------------------------------------------------------------------
# the group-by on shards of rows (core.plan.Sharded): fingerprints and counts of some documents


def shard_keys(config: SimHashConfig, rows: dict[str, np.ndarray], documents: int):
    """The table keys of a shard's documents, the tables chosen for the job's ``documents``."""
    return table_keys(config, rows["values"], rows["counts"], documents)


def shard_verify(config: SimHashConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """The pairs of every group ``members[bounds[g]:bounds[g + 1]]`` within ``max_distance`` bits
    (as ``within_distance``, all groups in one kernel call), similarity 1 - d / f."""
    members, bounds = np.ascontiguousarray(members, np.int64), np.ascontiguousarray(bounds, np.int64)
    a, b, d = within_groups(members, bounds, np.ascontiguousarray(rows["values"]), config.max_distance)
    return a, b, 1.0 - d / config.bits


def shard_connect(config: SimHashConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """Clusters only: edges spanning the components of :func:`shard_verify`'s pairs, found with
    fewer comparisons (:func:`~neardup._kernels.hamming.connect_within_groups`)."""
    members, bounds = np.ascontiguousarray(members, np.int64), np.ascontiguousarray(bounds, np.int64)
    return connect_within_groups(members, bounds, np.ascontiguousarray(rows["values"]), config.max_distance)


def shard_empty(config: SimHashConfig, rows: dict[str, np.ndarray]) -> np.ndarray:
    """The documents without shingles (as ``fingerprint_batch``)."""
    return rows["counts"] == 0


def similarity(config: SimHashConfig, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """1 - d / f for the Hamming distance d of the fingerprints (1.0 for a document itself)."""
    words = state["values"]
    d = popcount_array(words[docs] ^ words[others]).sum(axis=1)
    return np.where(docs == others, 1.0, 1.0 - d / config.bits)
