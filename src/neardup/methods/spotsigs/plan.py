"""The SpotSigs batch job as a plan: extract spot signatures -> (IDF filter) -> exact all pairs -> cluster.

1. (with an IDF band only) scan ``read + count signatures (IDF)``: in how many documents each
   signature occurs; nothing else is kept;
2. scan ``read + extract spot signatures``: texts -> spot signature multisets, filtered by the IDF
   band when there is one;
3. step ``all pairs``: every pair with weighted Jaccard >= threshold, exactly, by length
   partitions and a pruned inverted index (:func:`~neardup.methods.spotsigs.pairs.all_pairs`),
   and the connected components of that pair graph.

With ``verify="edit"``, step 3 is ``all pairs (candidates)`` at the candidate threshold, followed
by the edit-verification stages every method shares (:mod:`neardup.methods.verify_edit`).

Otherwise there is no candidate stage and nothing to verify: the pairs are the complete graph of pairs at
or above the threshold, no more, no less. Documents without signatures (after the filter) are
never paired and are reported as empty. The all-pairs search is one step over every document's
signatures: its length partitions are where an engine that spreads the work cuts it.

Sharded (:class:`~neardup.core.plan.Sharded`, without ``verify="edit"``): the signature lists of
the last scan stay where they were made, and the all-pairs step is a group-by over the length
partitions. A pair at or above the threshold has its documents in one partition or in two
neighbouring ones, k and k + 1; two tables, keyed by ``k // 2`` and ``(k + 1) // 2``, group
every two neighbouring partitions once (k even in the first, odd in the second). A group's
verification is :func:`~neardup.methods.spotsigs.pairs.all_pairs` over its documents, probing
only those of its lower partition when it holds both (the pairs whose shorter document is in the
upper one are its other group's): together, every pair of the whole search, each found once
(twice when a group holds one partition only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.budget import current_spill
from ...core.components import components
from ...core.documents import DocBatch
from ...core.plan import Plan, Prepass, Scan, Sharded, StageContext, Step
from .pairs import all_pairs, partition_bounds, weighted_jaccard_rows
from .signatures import DocumentFrequencies, SpotSignatures, extract, idf_filter

if TYPE_CHECKING:
    from .config import SpotSigsConfig

__all__ = ["spotsigs_plan"]


def spotsigs_plan(config: SpotSigsConfig) -> Plan:
    """The plan of ``config`` (see the module docs)."""
    stages: list[Any] = []
    extract_inputs: tuple[str, ...] = ()
    if config.idf_band is not None:
        stages.append(Scan("read + count signatures (IDF)", extract_batch, SignatureFrequencies, table=True))
        extract_inputs = ("frequencies",)
    stages.append(Scan("read + extract spot signatures", filtered_batch, SignatureRows, extract_inputs))
    prepass = None
    if config.exact_prepass and config.idf_band is None:
        prepass = Prepass(config.scheme.nfkc, config.scheme.casefold)
    if config.verify == "edit":
        from ..verify_edit import edit_similarity_of, edit_stages, shard_edit_similarity

        tail, recheck = edit_stages(Step("all pairs (candidates)", candidate_pairs, ("signatures",)))
        stages += tail
        columns = ("signatures", "signature_lengths")
        sharded = Sharded(columns, shard_keys, shard_verify, shard_edit_similarity, shard_empty, recheck=recheck)
        return Plan(config, tuple(stages), edit_similarity_of, prepass, sharded)
    stages.append(Step("all pairs", pairs_and_clusters, ("signatures",)))
    sharded = Sharded(("signatures", "signature_lengths"), shard_keys, shard_verify, similarity, shard_empty)
    return Plan(config, tuple(stages), similarity, prepass, sharded)


def extract_batch(config: SpotSigsConfig, batch: DocBatch) -> SpotSignatures:
    """Map (IDF): the spot signatures of the batch's texts."""
    return extract(batch.texts, config.scheme)


class SignatureFrequencies:
    """Reduce (IDF): the document frequency of every signature of the collection."""

    def __init__(self, config: SpotSigsConfig) -> None:
        self.df = DocumentFrequencies()

    def add(self, part: SpotSignatures) -> None:
        self.df.add(part)

    def merge(self, other: SignatureFrequencies) -> None:
        self.df.merge(other.df)

    def result(self) -> dict[str, Any]:
        self.df.table()  # merge now: the extraction workers only read it
        return {"frequencies": self.df}


def filtered_batch(
    config: SpotSigsConfig, batch: DocBatch, frequencies: DocumentFrequencies | None = None
) -> tuple[SpotSignatures, int]:
    """Map: the batch's signatures (IDF-filtered with a band), and how many there were before."""
    sigs = extract(batch.texts, config.scheme)
    before = int(sigs.counts.sum())
    if frequencies is not None:
        sigs = idf_filter(sigs, config.idf_band, frequencies)
    return sigs, before


class SignatureRows:
    """Reduce: the signatures of every document (CSR), in input order."""

    def __init__(self, config: SpotSigsConfig) -> None:
        self.scheme = config.scheme
        self.parts: list[SpotSignatures] = []
        self.before = 0

    def add(self, part: tuple[SpotSignatures, int]) -> None:
        self.parts.append(part[0])
        self.before += part[1]

    def merge(self, other: SignatureRows) -> None:
        self.parts.extend(other.parts)
        self.before += other.before

    def result(self) -> dict[str, Any]:
        sigs = SpotSignatures.concat(self.parts, self.scheme)
        lengths = sigs.lengths
        return {
            "signatures": sigs,
            "signature_lengths": lengths,
            "empty": lengths == 0,
            "counters": {"before": self.before, "kept": int(sigs.counts.sum())},
        }


def _counters(res, signatures: SpotSignatures) -> dict[str, int]:
    c = res.counters
    return {
        "documents": c.documents,
        "signatures": int(signatures.lengths.sum()),
        "partitions": c.partitions,
        "computed": c.computed,
        "pairs": c.pairs,
        "pruned": c.pruned,
        "lists_cut": c.lists_cut,
        "lists_skipped": c.lists_skipped,
    }


SEARCH_BYTES_PER_SIGNATURE = 40
"""Bytes the all-pairs search holds for each signature of a document (its value and count
copied in rank order, its signature number and its entry in an inverted list)."""

SEARCH_BYTES_PER_DOCUMENT = 64
"""Bytes it holds for each document (ranks, lengths, partitions, limits, offsets), and 8 more
for each worker (the worker's table of documents already met)."""


def search_bytes(signatures: SpotSignatures, workers: int) -> int:
    """What the all-pairs search (:func:`~neardup.methods.spotsigs.pairs.all_pairs`) holds in
    memory at once for ``signatures``: its inverted lists have no form on disk, so this is
    SpotSigs' bound under a memory budget."""
    n = len(signatures)
    return SEARCH_BYTES_PER_SIGNATURE * len(signatures.values) + (SEARCH_BYTES_PER_DOCUMENT + 8 * workers) * n


def _require(signatures: SpotSignatures, ctx: StageContext) -> None:
    spill = current_spill()
    if spill is not None:
        spill.require(
            search_bytes(signatures, ctx.threads.workers),
            f"SpotSigs' all-pairs search of {len(signatures):,} documents ({len(signatures.values):,} signatures)",
            "give a larger --memory, or use --method minhash, whose candidate stage goes to disk past the budget",
        )


def candidate_pairs(config: SpotSigsConfig, ctx: StageContext, signatures: SpotSignatures) -> dict[str, Any]:
    """Step (``verify="edit"``): every pair at or above the candidate threshold, as candidates for
    edit verification, and the documents in one."""
    _require(signatures, ctx)
    res = all_pairs(signatures, config.pair_threshold, workers=ctx.threads)
    wanted = np.zeros(len(signatures), dtype=bool)
    wanted[res.a] = True
    wanted[res.b] = True
    return {"candidate_a": res.a, "candidate_b": res.b, "wanted": wanted, "counters": _counters(res, signatures)}


def pairs_and_clusters(config: SpotSigsConfig, ctx: StageContext, signatures: SpotSignatures) -> dict[str, Any]:
    """Step: every pair at or above the threshold, and the clusters they make."""
    _require(signatures, ctx)
    res = all_pairs(signatures, config.threshold, workers=ctx.threads)
    out: dict[str, Any] = {
        "root": components(len(signatures), res.a, res.b),
        "counters": _counters(res, signatures),
    }
    if ctx.want_pairs:
        out["pairs"] = (res.a, res.b, res.similarity)
    return out


# --------------------------------------------------------------------------------------------
# the all-pairs step on shards of rows (core.plan.Sharded): signature lists and their lengths


def _partitions(config: SpotSigsConfig, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The length partition of each document (0 for one without signatures), and the bounds (of
    the pair threshold: the search's)."""
    bounds = partition_bounds(config.pair_threshold, int(lengths.max()) if len(lengths) else 0)
    return np.maximum(np.searchsorted(bounds, lengths, side="right") - 1, 0), bounds


def shard_keys(config: SpotSigsConfig, rows: dict[str, Any], documents: int):
    """Two tables: the partition k of a shard's document halved, ``k // 2`` and ``(k + 1) // 2``
    (the bounds are the same whatever the longest document: every shard numbers partitions
    alike); the documents with signatures take part."""
    lengths = rows["signature_lengths"]
    part = _partitions(config, lengths)[0].astype(np.uint64)
    keys = np.stack([part // np.uint64(2), (part + np.uint64(1)) // np.uint64(2)], axis=1)
    return keys, np.repeat((lengths > 0)[:, None], 2, axis=1)


def shard_verify(config: SpotSigsConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, Any]):
    """The pairs at or above the pair threshold (``threshold``; with ``verify="edit"`` the
    candidate threshold) of each group ``members[bounds[g]:bounds[g + 1]]`` (the documents of one
    or two neighbouring partitions): all of them when it holds one partition, else those whose
    shorter document is in the lower one."""
    sigs, lengths = rows["signatures"], rows["signature_lengths"]
    found_a, found_b, found_s = [np.empty(0, np.int64)], [np.empty(0, np.int64)], [np.empty(0, np.float64)]
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        pos = np.asarray(members[lo:hi], dtype=np.int64)
        part, limits = _partitions(config, lengths[pos])
        lower = int(part.min())
        probe_below = int(limits[lower + 1]) if (part > lower).any() else None
        res = all_pairs(sigs.take(pos), config.pair_threshold, probe_below=probe_below)
        a, b = pos[res.a], pos[res.b]
        found_a.append(np.minimum(a, b))
        found_b.append(np.maximum(a, b))
        found_s.append(res.similarity)
    return np.concatenate(found_a), np.concatenate(found_b), np.concatenate(found_s)


def shard_empty(config: SpotSigsConfig, rows: dict[str, Any]) -> np.ndarray:
    """The documents without signatures (as ``SignatureRows``)."""
    return rows["signature_lengths"] == 0


def similarity(config: SpotSigsConfig, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Weighted Jaccard of the signature multisets of ``docs[q]`` and ``others[q]``."""
    return weighted_jaccard_rows(state["signatures"], docs, others, state["signature_lengths"])
