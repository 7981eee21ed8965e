"""The exact all-pairs search over spot signatures: length partitions and a pruned inverted index.

:func:`all_pairs` returns every pair of documents whose weighted Jaccard reaches the threshold,
exactly (Theobald et al.'s partitions and bounds, see :mod:`neardup.methods.spotsigs.signatures`
for the definitions); :func:`partition_bounds` gives the length partitions,
:func:`all_pairs_unpruned` and :func:`all_pairs_bruteforce` the same pairs by plainer means (for
tests and measurements), and :func:`weighted_jaccard_rows` the similarity of given pairs.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..._kernels.spotsigs import (
    bruteforce,
    fill_lists,
    probe,
    rows_similarity,
    signature_ids,
    take_rows,
)
from ...core.parallel import Threads, as_threads
from ...core.validation import Boolean, Integer, Real, check
from .signatures import SpotSignatures

THRESHOLD = Real(0, 1, low_open=True)
"""The weighted Jaccard at or above which a pair is returned: in (0, 1]."""


# ---------------------------------------------------------------------------------------------
# Partitions
def partition_bounds(tau: float, max_len: int) -> np.ndarray:
    """Partition bounds ``p_0 = 1 < p_1 < ... < p_K`` with ``p_K > max_len``: ``p_{k+1}`` is the
    smallest integer above ``p_k`` with ``p_{k+1} - p_k > (1 - tau) p_{k+1}``, i.e. ``p_k / p_{k+1} < tau``.

    Partition k holds lengths ``[p_k, p_{k+1})``.

    >>> partition_bounds(0.7, 60).tolist()
    [1, 2, 3, 5, 8, 12, 18, 26, 38, 55, 79]
    """
    tau = check("threshold", tau, THRESHOLD)
    max_len = check("max_len", max_len, Integer())
    if tau == 1.0:  # every length is its own partition
        return np.arange(1, max(max_len, 0) + 2, dtype=np.int64)
    bounds = [1]
    while bounds[-1] <= max_len:
        p = bounds[-1]
        q = max(p + 1, int(p / tau))
        while q > p + 1 and p / (q - 1) < tau:
            q -= 1
        while not p / q < tau:
            q += 1
        bounds.append(q)
    return np.array(bounds, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# All pairs
@dataclass(frozen=True)
class PairCounters:
    """What an all-pairs search did."""

    documents: int = 0
    """Documents with at least one signature (the others are never paired)."""
    partitions: int = 0
    """Non-empty length partitions (0 when the search does not partition)."""
    computed: int = 0
    """Similarity computations (full weighted Jaccard of a pair)."""
    pairs: int = 0
    """Pairs at or above the threshold."""
    pruned: int = 0
    """Inverted-list entries passed over because the length bound proved them below the threshold."""
    lists_cut: int = 0
    """Lists left early by the length bound."""
    lists_skipped: int = 0
    """Lists never opened: the weight already done left no room for a new candidate."""
    lists_opened: int = 0
    """Lists opened."""


class AllPairs(NamedTuple):
    """Every pair at or above the threshold: a < b (document numbers), sorted by (a, b)."""

    a: np.ndarray
    b: np.ndarray
    similarity: np.ndarray
    counters: PairCounters


def _as_signatures(sigs) -> SpotSignatures:
    if isinstance(sigs, SpotSignatures):
        return sigs
    if isinstance(sigs, tuple) and len(sigs) == 3:
        return SpotSignatures(*(np.asarray(x) for x in sigs))
    raise TypeError("expected SpotSignatures or a CSR tuple (values, counts, offsets)")


def all_pairs(
    sigs: SpotSignatures,
    tau: float,
    *,
    workers: Threads | int = 1,
    partitions: bool = True,
    pruning: bool = True,
    probe_below: int | None = None,
) -> AllPairs:
    """Every pair of documents with weighted Jaccard >= ``tau``, exactly (see the module docstring).

    ``partitions`` and ``pruning`` switch off the length partitions and the length-bound pruning
    (for measurements; the result is the same). ``workers`` threads (a number, or the job's
    :class:`~neardup.core.parallel.Threads`) share the documents. With ``probe_below``, only the
    pairs whose shorter document (by length, then number) is shorter than ``probe_below``.

    >>> s = SpotSignatures.from_multisets([{1: 5, 2: 4, 3: 4}, {1: 8, 2: 4}, {2: 5, 3: 5}])
    >>> r = all_pairs(s, 0.5)
    >>> r.a.tolist(), r.b.tolist(), r.similarity.round(4).tolist()
    ([0, 0], [1, 2], [0.5625, 0.5333])
    """
    tau = check("threshold", tau, THRESHOLD)
    partitions = check("partitions", partitions, Boolean())
    pruning = check("pruning", pruning, Boolean())
    sigs = _as_signatures(sigs)
    threads, owned = as_threads(workers)
    try:
        return _all_pairs(sigs, tau, threads, partitions, pruning, probe_below)
    finally:
        if owned:
            threads.close()


def _all_pairs(
    sigs: SpotSignatures, tau: float, threads: Threads, partitions: bool, pruning: bool, probe_below: int | None = None
) -> AllPairs:
    workers = threads.workers
    lengths = sigs.lengths
    docs = np.flatnonzero(lengths > 0)
    doc_of = docs[np.argsort(lengths[docs], kind="stable")]  # rank -> document, by (length, number)
    nr = len(doc_of)
    empty = np.empty(0, dtype=np.int64)
    if nr < 2:
        return AllPairs(empty, empty, np.empty(0, dtype=np.float64), PairCounters(documents=nr))
    values, counts, off = take_rows(sigs.values, sigs.counts, sigs.offsets, doc_of)
    rlen = lengths[doc_of]
    sid, n_keys = signature_ids(values)
    list_off = np.zeros(n_keys + 1, dtype=np.int64)
    np.cumsum(np.bincount(sid, minlength=n_keys), out=list_off[1:])
    list_rank = fill_lists(sid, off, list_off)
    n_parts = 0
    if partitions:
        bounds = partition_bounds(tau, int(rlen[-1]))
        part = np.searchsorted(bounds, rlen, side="right") - 1
        first = np.r_[np.searchsorted(rlen, bounds, side="left"), nr, nr]
        limit = first[part + 2]  # first rank past the right neighbour partition
        n_parts = len(np.unique(part))
    else:
        limit = np.full(nr, nr, dtype=np.int64)

    # the probed ranks (a pair is found from its shorter document's rank): all, or those shorter
    # than probe_below
    probed = nr if probe_below is None else int(np.searchsorted(rlen, probe_below, side="left"))
    if probed == 0:
        return AllPairs(empty, empty, np.empty(0, dtype=np.float64), PairCounters(documents=nr, partitions=n_parts))
    # chunks of about equal signature mass, a few per thread
    n_chunks = 1 if workers == 1 else min(probed, 8 * workers)
    cuts = np.unique(np.searchsorted(off[: probed + 1], np.linspace(0, off[probed], n_chunks + 1), side="left"))
    cuts[0], cuts[-1] = 0, probed
    cuts = np.unique(cuts)
    seen_pool: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(min(workers, len(cuts) - 1)):
        seen_pool.put(np.full(nr, -1, dtype=np.int64))

    def task(bounds_pair):
        seen = seen_pool.get()
        try:
            return probe(
                bounds_pair[0],
                bounds_pair[1],
                tau,
                pruning,
                values,
                counts,
                off,
                sid,
                rlen,
                list_off,
                list_rank,
                limit,
                seen,
            )
        finally:
            seen_pool.put(seen)

    chunks = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    results = threads.map(task, chunks)
    ra = np.concatenate([r[0] for r in results])
    rb = np.concatenate([r[1] for r in results])
    sim = np.concatenate([r[2] for r in results])
    st = np.sum([r[3] for r in results], axis=0)
    a, b = doc_of[ra], doc_of[rb]
    a, b = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((b, a))
    counters = PairCounters(
        documents=nr,
        partitions=n_parts,
        computed=int(st[0]),
        pairs=int(st[1]),
        pruned=int(st[2]),
        lists_cut=int(st[3]),
        lists_skipped=int(st[4]),
        lists_opened=int(st[5]),
    )
    return AllPairs(a[order], b[order], sim[order], counters)


def all_pairs_unpruned(sigs: SpotSignatures, tau: float, *, workers: Threads | int = 1) -> AllPairs:
    """The inverted-index search with neither partitions nor pruning: every pair of documents
    sharing a signature is compared once. Same result as :func:`all_pairs`; the baseline the
    paper's "No-Pruning/No-Partitions" row measures."""
    return all_pairs(sigs, tau, workers=workers, partitions=False, pruning=False)


def all_pairs_bruteforce(sigs: SpotSignatures, tau: float) -> AllPairs:
    """Weighted Jaccard of every pair of non-empty documents, O(n^2): the reference."""
    tau = check("threshold", tau, THRESHOLD)
    sigs = _as_signatures(sigs)
    lengths = sigs.lengths
    docs = np.flatnonzero(lengths > 0).astype(np.int64)
    a, b, s = bruteforce(sigs.values, sigs.counts, sigs.offsets, lengths, docs, tau)
    n = len(docs)
    return AllPairs(a, b, s, PairCounters(documents=n, computed=n * (n - 1) // 2, pairs=len(a)))


def weighted_jaccard_rows(
    sigs: SpotSignatures, docs: np.ndarray, others: np.ndarray, lengths: np.ndarray | None = None
) -> np.ndarray:
    """Weighted Jaccard of ``docs[q]`` and ``others[q]`` (1.0 for a document and itself).

    >>> s = SpotSignatures.from_multisets([{1: 5, 2: 4, 3: 4}, {1: 8, 2: 4}])
    >>> weighted_jaccard_rows(s, np.array([0, 1]), np.array([1, 1])).tolist()
    [0.5625, 1.0]
    """
    lengths = sigs.lengths if lengths is None else lengths
    return rows_similarity(
        sigs.values,
        sigs.counts,
        sigs.offsets,
        lengths,
        np.asarray(docs, dtype=np.int64),
        np.asarray(others, dtype=np.int64),
    )
