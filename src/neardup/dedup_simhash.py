"""The SimHash dedup job: shingle -> fingerprint -> permuted-table Hamming search -> cluster.

Stages, each a plain function:

1. (``weighting="idf"`` only) ``document_frequencies``: a first read of the input counts, for
   every shingle, the documents it occurs in (:class:`neardup.simhash.DocumentFrequencies`);
2. ``fingerprint_documents``: texts -> fingerprints, shingle counts, lengths (per batch, on the
   thread pool);
3. ``cluster_fingerprints``: identical fingerprints are collapsed, every pair of distinct
   fingerprints within ``max_distance`` is found by Manku et al.'s permuted tables
   (:func:`neardup.hamming.unique_pairs`), and union-find joins them. The pairs are exactly
   those of brute-force all-pairs, so the clusters are the connected components of the graph
   "Hamming distance <= max_distance"; a pair's similarity is 1 - d / f.

Documents without a single shingle (empty after normalization) are never paired.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Iterable, Literal, Sequence

import numpy as np

from . import io
from .cluster import new_forest, roots, union_edges
from .hamming import _expand, unique_pairs
from .pipeline import Found, Reader, RunContext, bounded_map, concat, find_with_exact_prepass
from .shingles import Shingling, shingle_batch
from .simhash import DEFAULT_SHINGLING, DocumentFrequencies, IdfTable, SimHasher, SimHashScheme, _popcount_array

# 128 bits within 12 (similarity >= 0.906): 98% of light edits, no unrelated pair in 5e9 on the
# generated benchmark corpus, where Manku et al.'s 64 bits within 3 keeps only ~70% (docs/simhash.md)
DEFAULT_MAX_DISTANCE = 12
DEFAULT_BITS = 128


@dataclass(frozen=True)
class SimHashConfig:
    """Settings of the SimHash method (the CLI options map one to one).

    Attributes:
        max_distance: k; documents whose fingerprints differ in at most k bits are
            near-duplicates (similarity 1 - k / bits; cosine about cos(pi k / bits)).
        bits: fingerprint width, 64 or 128.
        shingling: how texts become features (word 2-grams by default, see docs/simhash.md).
        seed: seed of the hyperplanes.
        weighting: ``"count"`` (shingle counts) or ``"idf"`` (counts times inverse document
            frequency learned from the input itself; reads the input twice).
        min_df: with ``"idf"``, shingles in fewer documents share the largest weight.
        blocks: m, the permuted-table blocks; chosen from the number of documents when None.
        exact_prepass: fingerprint only the first of each group of identical normalized texts
            (same result, less work; off with IDF weighting, whose document frequencies count
            every document).
    """

    max_distance: int = DEFAULT_MAX_DISTANCE
    bits: int = DEFAULT_BITS
    shingling: Shingling = field(default_factory=lambda: DEFAULT_SHINGLING)
    seed: int = 1
    weighting: Literal["count", "idf"] = "count"
    min_df: int = 2
    blocks: int | None = None
    exact_prepass: bool = True

    def __post_init__(self) -> None:
        self.scheme  # validates bits, seed, shingling, weighting
        k = self.max_distance
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k < self.bits:
            raise ValueError(f"max_distance must be an integer in [0, {self.bits}), got {k!r}")
        if not isinstance(self.min_df, (int, np.integer)) or isinstance(self.min_df, bool) or self.min_df < 1:
            raise ValueError(f"min_df must be an integer >= 1, got {self.min_df!r}")
        if self.blocks is not None and (not isinstance(self.blocks, (int, np.integer)) or isinstance(self.blocks, bool)
                                        or not k < self.blocks <= self.bits):
            raise ValueError(f"blocks must be an integer with max_distance < blocks <= bits "
                             f"({k} < m <= {self.bits}), got {self.blocks!r}")

    @property
    def scheme(self) -> SimHashScheme:
        """The fingerprint scheme (without the IDF digest, which the data decides)."""
        return SimHashScheme(bits=self.bits, seed=self.seed, shingling=self.shingling, weighting=self.weighting)

    def find(self, read: Reader, ctx: RunContext) -> Found:
        """Run the job over the input that ``read`` streams."""
        if self.exact_prepass and self.weighting != "idf":
            return find_with_exact_prepass(replace(self, exact_prepass=False), read, ctx,
                                           nfkc=self.shingling.nfkc, casefold=self.shingling.casefold)
        idf = None
        if self.weighting == "idf":
            t0 = time.perf_counter()
            ctx.on_stage("reading + document frequencies")
            idf = document_frequencies(read(), self, ctx)
            ctx.timings["document frequencies"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ctx.on_stage("reading + fingerprinting")
        fp = fingerprint_documents(read(), self, idf, ctx)
        ctx.timings["read+fingerprint"] = time.perf_counter() - t0
        ctx.on_stage("Hamming search")
        t0 = time.perf_counter()
        result = cluster_fingerprints(fp, self, ctx)
        ctx.timings["search+cluster"] = time.perf_counter() - t0
        words, f = fp.values, self.bits

        def similarity(docs: np.ndarray, others: np.ndarray) -> np.ndarray:
            d = _popcount_array(words[docs] ^ words[others]).sum(axis=1)
            return np.where(docs == others, 1.0, 1.0 - d / f)

        plan = result.plan
        stats = {
            "SimHash": f"{f}-bit, max distance {self.max_distance} (similarity >= {1 - self.max_distance / f:.3f}), "
                       f"{self.weighting} weighting" + (f", {len(idf):,} shingles with df >= {self.min_df}" if idf else ""),
            "permuted tables": f"m={plan.blocks} blocks, {len(plan.tables)} tables, "
                               f"{result.distinct:,} distinct fingerprints",
            "pairs within distance": f"{result.n_pairs:,} ({result.checked:,} candidates checked)",
        }
        return Found(fp.ids, fp.lengths, result.root, result.pairs, similarity, stats, fp.shingle_counts == 0)


@dataclass(frozen=True, eq=False)
class FingerprintedDocs:
    """Output of the fingerprint stage for the whole input, in input order."""

    ids: list[str]
    values: np.ndarray
    """uint64[n, W] fingerprints (W = bits / 64)."""
    shingle_counts: np.ndarray
    """int64[n] number of shingle occurrences of each document (0: empty)."""
    lengths: np.ndarray
    """int64[n] text length in characters (for keep='longest')."""


@dataclass(frozen=True, eq=False)
class SearchResult:
    root: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    n_pairs: int
    checked: int
    distinct: int
    plan: object


def document_frequencies(batches: Iterable[io.DocBatch], config: SimHashConfig, ctx: RunContext) -> IdfTable:
    """Stage (IDF weighting): stream of batches -> IDF table of the whole input."""
    counter = DocumentFrequencies(config.shingling)

    def work(batch: io.DocBatch):
        h, off = shingle_batch(batch.texts, config.shingling, unique=False)
        return len(batch), DocumentFrequencies.batch_counts(h, off)

    for n, (h, c) in bounded_map(work, batches, ctx.workers):
        counter.add_counts(h, c, n)
        ctx.on_batch(n)
    return counter.table(config.min_df)


def fingerprint_batch(texts: Sequence[str], hasher: SimHasher) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stage: texts -> (fingerprints uint64[n, W], shingle counts int64[n], lengths int64[n])."""
    values, counts = hasher.sign_texts_with_counts(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return values, counts, lengths


def fingerprint_documents(batches: Iterable[io.DocBatch], config: SimHashConfig, idf: IdfTable | None,
                          ctx: RunContext) -> FingerprintedDocs:
    """Stage: stream of document batches -> fingerprints of the whole input."""
    hasher = SimHasher(scheme=config.scheme, idf=idf)
    ids: list[str] = []
    values, counts, lengths = [], [], []

    def work(batch: io.DocBatch):
        return batch, fingerprint_batch(batch.texts, hasher)

    for batch, (v, c, ln) in bounded_map(work, batches, ctx.workers):
        ids.extend(batch.ids)
        values.append(v)
        counts.append(c)
        lengths.append(ln)
        ctx.on_batch(len(batch.ids))
    no_ints = np.empty(0, dtype=np.int64)
    return FingerprintedDocs(ids, concat(values, np.empty((0, config.bits // 64), dtype=np.uint64)),
                             concat(counts, no_ints), concat(lengths, no_ints))


def cluster_fingerprints(fp: FingerprintedDocs, config: SimHashConfig, ctx: RunContext) -> SearchResult:
    """Stage: all pairs within ``max_distance`` among non-empty documents, and their components.

    Clusters come from the pairs of *distinct* fingerprints plus the groups of identical ones,
    which give the same components as the complete pair graph without its quadratic groups;
    the complete pairs are expanded only when ``ctx.want_pairs``.
    """
    n = len(fp.ids)
    docs = np.flatnonzero(fp.shingle_counts > 0)
    up = unique_pairs(fp.values[docs], config.max_distance, blocks=config.blocks, workers=ctx.workers)
    ngroups = len(up.firsts)
    # union-find over documents: each group's members to its first member, and group pairs
    parent = new_forest(n)
    members = docs[up.order]
    group_of_sorted = np.repeat(np.arange(ngroups), np.diff(up.starts))
    heads = docs[up.order[up.starts[:-1]]]
    union_edges(parent, members, heads[group_of_sorted])
    union_edges(parent, heads[up.a], heads[up.b])
    root = roots(parent)
    sizes = np.diff(up.starts)
    n_pairs = int((sizes[up.a] * sizes[up.b]).sum() + (sizes * (sizes - 1) // 2).sum())
    pairs = None
    if ctx.want_pairs:
        a, b, d = _expand(up.a, up.b, up.d, up.order, up.starts)
        a, b = docs[a], docs[b]
        order = np.lexsort((b, a))
        pairs = (a[order], b[order], 1.0 - d[order] / config.bits)
    return SearchResult(root, pairs, n_pairs, up.checked, ngroups, up.plan)
