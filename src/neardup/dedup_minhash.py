"""The MinHash + LSH dedup job: shingle -> MinHash -> band -> verify -> cluster.

Stages, each a plain function:

1. ``sketch_batch``: texts -> signatures, shingle counts, lengths (per batch, on the thread pool);
2. ``band_keys`` (:mod:`neardup.lsh`): signatures -> one 64-bit key per band;
3. (``--verify exact`` only) ``shingle_sets``: the exact shingle sets of the documents that share
   a bucket with another, recomputed from a second read of the input;
4. ``find_clusters`` (:mod:`neardup.candidates`): buckets by sorting band keys, verification,
   union-find, and the verified pairs when asked for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Literal, Sequence

import numpy as np

from . import io
from .candidates import Verifier, find_clusters, in_buckets, similarity_to
from .lsh import LSHParams, band_keys, params_for
from .minhash import MinHasher, MinHashScheme
from .pipeline import Found, Reader, RunContext, bounded_map, concat
from .shingles import Shingling, shingle_texts_kernel, _kind_code, encode_texts
from .text import CHAR_CLASS

DEFAULT_THRESHOLD = 0.8
DEFAULT_NGRAM = 5
DEFAULT_NUM_PERM = 128


@dataclass(frozen=True)
class MinHashConfig:
    """Settings of the MinHash + LSH method (the CLI options map one to one).

    Attributes:
        threshold: Jaccard similarity at or above which two documents are near-duplicates.
        shingling: how texts become sets (word 5-grams by default).
        num_perm: K, MinHash signature length.
        seed: seed of the MinHash permutations.
        bands, rows: LSH banding; chosen from the threshold when None (see ``lsh.optimal_params``).
        verify: ``"signature"`` (estimate r/K >= threshold) or ``"exact"`` (exact Jaccard of
            the shingle sets, recomputed for candidate documents only).
    """

    threshold: float = DEFAULT_THRESHOLD
    shingling: Shingling = field(default_factory=lambda: Shingling("word", DEFAULT_NGRAM))
    num_perm: int = DEFAULT_NUM_PERM
    seed: int = 1
    bands: int | None = None
    rows: int | None = None
    verify: Literal["signature", "exact"] = "signature"

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold!r}")
        if self.verify not in ("signature", "exact"):
            raise ValueError(f"verify must be 'signature' or 'exact', got {self.verify!r}")
        self.scheme  # validates num_perm and seed
        self.lsh  # validates bands and rows against num_perm

    @property
    def scheme(self) -> MinHashScheme:
        return MinHashScheme(num_perm=self.num_perm, seed=self.seed, shingling=self.shingling)

    @property
    def lsh(self) -> LSHParams:
        # a threshold of exactly 1.0 bands like 0.999 (the S-curve needs t < 1)
        return params_for(min(self.threshold, 0.999), self.num_perm, self.bands, self.rows)

    def find(self, read: Reader, ctx: RunContext) -> Found:
        """Run the job over the input that ``read`` streams."""
        t0 = time.perf_counter()
        ctx.on_stage("reading + sketching")
        sk = sketch_documents(read(), self, ctx)
        ctx.timings["read+sketch"] = time.perf_counter() - t0
        root, pairs, verifier, lsh, cstats = cluster_sketches(sk, self, read, ctx)
        stats = {
            "LSH": f"b={lsh.bands} r={lsh.rows} (threshold {self.threshold}, K={self.num_perm})",
            "candidate pairs checked": f"{cstats.checked:,} ({cstats.verified:,} verified, {self.verify})",
        }
        return Found(sk.ids, sk.lengths, root, pairs, lambda a, b: similarity_to(a, b, verifier), stats,
                     int(np.count_nonzero(sk.shingle_counts == 0)))


@dataclass(frozen=True, eq=False)
class Sketches:
    """Output of the sketch stage for the whole input, in input order."""

    ids: list[str]
    values: np.ndarray
    """uint32[n, K] MinHash signatures."""
    shingle_counts: np.ndarray
    """int64[n] number of shingles of each document (0: empty)."""
    lengths: np.ndarray
    """int64[n] text length in characters (for keep='longest')."""


def sketch_batch(texts: Sequence[str], hasher: MinHasher) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stage: texts -> (signatures uint32[n, K], shingle counts int64[n], lengths int64[n])."""
    values, counts = hasher.sign_texts_with_counts(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return values, counts, lengths


def sketch_documents(batches: Iterable[io.DocBatch], config: MinHashConfig, ctx: RunContext) -> Sketches:
    """Stage: stream of document batches -> Sketches of the whole input."""
    hasher = MinHasher(scheme=config.scheme)
    ids: list[str] = []
    values, counts, lengths = [], [], []

    def work(batch: io.DocBatch):
        return batch, sketch_batch(batch.texts, hasher)

    for batch, (v, c, ln) in bounded_map(work, batches, ctx.workers):
        ids.extend(batch.ids)
        values.append(v)
        counts.append(c)
        lengths.append(ln)
        ctx.on_batch(len(batch.ids))
    no_ints = np.empty(0, dtype=np.int64)
    return Sketches(ids, concat(values, np.empty((0, config.num_perm), dtype=np.uint32)),
                    concat(counts, no_ints), concat(lengths, no_ints))


def shingle_sets(batches: Iterable[io.DocBatch], wanted: np.ndarray, shingling: Shingling):
    """Stage (exact verification): sorted shingle sets of the ``wanted`` documents as CSR
    ``(values, offsets, row)`` with ``row[doc]`` the CSR row of a document, -1 if not wanted."""
    row = np.full(len(wanted), -1, dtype=np.int64)
    parts, sizes = [], []
    nrows = 0
    for batch in batches:
        idx = np.flatnonzero(wanted[batch.start:batch.start + len(batch.texts)])
        if not len(idx):
            continue
        data, offsets = encode_texts([batch.texts[i] for i in idx], shingling)
        values, off = shingle_texts_kernel(data, offsets, CHAR_CLASS, _kind_code(shingling), shingling.n,
                                           shingling.strip_punctuation, True)
        row[batch.start + idx] = np.arange(nrows, nrows + len(idx))
        nrows += len(idx)
        parts.append(values)
        sizes.append(np.diff(off))
    offsets = np.zeros(nrows + 1, dtype=np.int64)
    if sizes:
        np.cumsum(np.concatenate(sizes), out=offsets[1:])
    return concat(parts, np.empty(0, dtype=np.uint64)), offsets, row


def cluster_sketches(sk: Sketches, config: MinHashConfig, read: Reader | None, ctx: RunContext):
    """Stages band -> (re-shingle) -> verify -> cluster on the sketches of a whole input.

    Returns (root, pairs or None, verifier, LSH params, candidate stats).
    """
    lsh = config.lsh
    ctx.on_stage("banding")
    t0 = time.perf_counter()
    keys = band_keys(sk.values, lsh.bands, lsh.rows)
    candidates = np.flatnonzero(sk.shingle_counts > 0)
    ctx.timings["band"] = time.perf_counter() - t0

    if config.verify == "exact":
        if read is None:
            raise ValueError("verify='exact' needs a way to re-read the texts")
        ctx.on_stage("re-reading candidate texts")
        t0 = time.perf_counter()
        sets = shingle_sets(read(), in_buckets(keys, candidates), config.shingling)
        verifier = Verifier.exact(sk.values, config.threshold, *sets)
        ctx.timings["reshingle"] = time.perf_counter() - t0
    else:
        verifier = Verifier.signature(sk.values, config.threshold)

    ctx.on_stage("verifying candidates")
    t0 = time.perf_counter()
    result = find_clusters(keys, candidates, verifier, want_pairs=ctx.want_pairs)
    ctx.timings["verify+cluster"] = time.perf_counter() - t0
    pairs = (result.pairs_a, result.pairs_b, result.pairs_similarity) if ctx.want_pairs else None
    return result.root, pairs, verifier, lsh, result.stats
