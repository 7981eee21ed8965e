"""The batch dedup job: read -> normalize/shingle/sketch -> band -> verify -> cluster -> write.

Each stage is a plain function of arrays (no hidden global state), so another engine can map
the same functions over partitions. The local engine below streams the input in batches,
sketches them on a thread pool (the numba kernels release the GIL), and keeps only the
signatures and ids in memory; texts are read again where needed (exact verification, writing
the kept records).

Results do not depend on the number of workers: batches are sketched independently and put
back in input order, and clusters depend only on the verified edges (see :mod:`neardup.cluster`).
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Literal, Sequence

import numpy as np

from . import io
from .candidates import CandidateStats, Verifier, find_clusters, in_buckets, similarity_to
from .cluster import choose_kept
from .lsh import LSHParams, band_keys, params_for
from .minhash import MinHasher, MinHashScheme
from .shingles import Shingling, shingle_texts_kernel, _kind_code, encode_texts
from .text import CHAR_CLASS

DEFAULT_THRESHOLD = 0.8
DEFAULT_NGRAM = 5
DEFAULT_NUM_PERM = 128


@dataclass(frozen=True)
class DedupConfig:
    """Settings of a dedup run (the CLI options map one to one).

    Attributes:
        threshold: Jaccard similarity at or above which two documents are near-duplicates.
        shingling: how texts become sets (word 5-grams by default).
        num_perm: K, MinHash signature length.
        seed: seed of the MinHash permutations.
        bands, rows: LSH banding; chosen from the threshold when None (see ``lsh.optimal_params``).
        verify: ``"signature"`` (estimate r/K >= threshold) or ``"exact"`` (exact Jaccard of
            the shingle sets, recomputed for candidate documents only).
        keep: which document of a cluster is kept: ``"first"`` or ``"longest"``.
        workers: sketching threads; None means every core.
        batch_size: documents per sketching batch.
    """

    threshold: float = DEFAULT_THRESHOLD
    shingling: Shingling = field(default_factory=lambda: Shingling("word", DEFAULT_NGRAM))
    num_perm: int = DEFAULT_NUM_PERM
    seed: int = 1
    bands: int | None = None
    rows: int | None = None
    verify: Literal["signature", "exact"] = "signature"
    keep: Literal["first", "longest"] = "first"
    workers: int | None = None
    batch_size: int = 2048

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold!r}")
        if self.verify not in ("signature", "exact"):
            raise ValueError(f"verify must be 'signature' or 'exact', got {self.verify!r}")
        if self.keep not in ("first", "longest"):
            raise ValueError(f"keep must be 'first' or 'longest', got {self.keep!r}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size!r}")

    @property
    def scheme(self) -> MinHashScheme:
        return MinHashScheme(num_perm=self.num_perm, seed=self.seed, shingling=self.shingling)

    @property
    def lsh(self) -> LSHParams:
        # a threshold of exactly 1.0 bands like 0.999 (the S-curve needs t < 1)
        return params_for(min(self.threshold, 0.999), self.num_perm, self.bands, self.rows)

    @property
    def n_workers(self) -> int:
        return self.workers or os.cpu_count() or 1


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


@dataclass(frozen=True, eq=False)
class DedupResult:
    """Everything a dedup run found."""

    ids: list[str]
    root: np.ndarray
    """int64[n] smallest document index of each document's cluster."""
    kept: np.ndarray
    """int64[n] index of the kept document of each document's cluster."""
    similarity: np.ndarray
    """float64[n] similarity of each document to its kept document (1.0 for kept ones)."""
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    """Verified pairs (index a < index b, similarity), when asked for."""
    lsh: LSHParams
    candidate_stats: CandidateStats
    read_stats: io.ReadStats
    timings: dict[str, float]
    empty: int

    @property
    def keep_mask(self) -> np.ndarray:
        return self.kept == np.arange(len(self.kept))

    @property
    def n_documents(self) -> int:
        return len(self.ids)

    @property
    def n_removed(self) -> int:
        return int(len(self.kept) - np.count_nonzero(self.keep_mask))

    @property
    def n_clusters(self) -> int:
        """Clusters with two or more documents."""
        if not len(self.root):
            return 0
        return int(np.count_nonzero(np.bincount(self.root) >= 2))


# ---------------------------------------------------------------------------------------------
# stages


def sketch_batch(texts: Sequence[str], hasher: MinHasher) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stage: texts -> (signatures uint32[n, K], shingle counts int64[n], lengths int64[n])."""
    values, counts = hasher.sign_texts_with_counts(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return values, counts, lengths


def _bounded_map(fn: Callable, items: Iterable, workers: int) -> Iterator:
    """``map(fn, items)`` on a thread pool, in order, with at most 2 * workers items in flight."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def sketch_documents(batches: Iterable[io.DocBatch], config: DedupConfig,
                     on_batch: Callable[[int], None] | None = None) -> Sketches:
    """Stage: stream of document batches -> Sketches of the whole input."""
    hasher = MinHasher(scheme=config.scheme)
    ids: list[str] = []

    def work(batch: io.DocBatch):
        return batch, sketch_batch(batch.texts, hasher)

    values, counts, lengths = [], [], []
    for batch, (v, c, ln) in _bounded_map(work, batches, config.n_workers):
        ids.extend(batch.ids)
        values.append(v)
        counts.append(c)
        lengths.append(ln)
        if on_batch is not None:
            on_batch(len(batch.ids))
    k = config.num_perm
    return Sketches(
        ids,
        np.concatenate(values) if values else np.empty((0, k), dtype=np.uint32),
        np.concatenate(counts) if counts else np.empty(0, dtype=np.int64),
        np.concatenate(lengths) if lengths else np.empty(0, dtype=np.int64),
    )


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
    values = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    return values, offsets, row


def cluster_sketches(sk: Sketches, config: DedupConfig, *, want_pairs: bool = False,
                     reread: Callable[[], Iterable[io.DocBatch]] | None = None,
                     timings: dict[str, float] | None = None, on_stage: Callable[[str], None] | None = None):
    """Stages band -> verify -> cluster on the sketches of a whole input.

    Returns (root, kept, similarity, pairs, lsh params, candidate stats).
    """
    timings = {} if timings is None else timings
    on_stage = on_stage or (lambda name: None)
    on_stage("banding")
    lsh = config.lsh
    t0 = time.perf_counter()
    keys = band_keys(sk.values, lsh.bands, lsh.rows)
    candidates = np.flatnonzero(sk.shingle_counts > 0)
    timings["band"] = time.perf_counter() - t0

    if config.verify == "exact":
        if reread is None:
            raise ValueError("verify='exact' needs a way to re-read the texts")
        on_stage("re-reading candidate texts")
        t0 = time.perf_counter()
        wanted = in_buckets(keys, candidates)
        sets = shingle_sets(reread(), wanted, config.shingling)
        verifier = Verifier.exact(sk.values, config.threshold, *sets)
        timings["reshingle"] = time.perf_counter() - t0
    else:
        verifier = Verifier.signature(sk.values, config.threshold)

    on_stage("verifying candidates")
    t0 = time.perf_counter()
    result = find_clusters(keys, candidates, verifier, want_pairs=want_pairs)
    timings["verify"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    kept = choose_kept(result.root, config.keep, sk.lengths)
    similarity = similarity_to(np.arange(len(kept)), kept, verifier)
    timings["cluster"] = time.perf_counter() - t0
    pairs = (result.pairs_a, result.pairs_b, result.pairs_similarity) if want_pairs else None
    return result.root, kept, similarity, pairs, lsh, result.stats


def dedup(paths: Sequence[str], config: DedupConfig = DedupConfig(), *, text_field: str = "text",
          id_field: str | None = None, on_error: Literal["fail", "skip"] = "fail", want_pairs: bool = False,
          on_batch: Callable[[int], None] | None = None,
          on_stage: Callable[[str], None] | None = None) -> DedupResult:
    """Run the dedup job on input files and return what it found (nothing is written).

    >>> import tempfile, pathlib, json
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> docs = ["the quick brown fox jumps over the lazy dog near the river bank today"] * 2
    >>> _ = (d / "in.jsonl").write_text("".join(json.dumps({"text": t}) + "\\n" for t in docs))
    >>> dedup([str(d / "in.jsonl")]).n_removed
    1
    """
    read_stats = io.ReadStats()
    timings: dict[str, float] = {}

    def read(stats=None):
        return io.read_documents(paths, text_field=text_field, id_field=id_field, on_error=on_error,
                                 batch_size=config.batch_size, stats=stats)

    t0 = time.perf_counter()
    sk = sketch_documents(read(read_stats), config, on_batch)
    timings["read+sketch"] = time.perf_counter() - t0
    root, kept, similarity, pairs, lsh, cstats = cluster_sketches(
        sk, config, want_pairs=want_pairs, reread=read, timings=timings, on_stage=on_stage)
    return DedupResult(sk.ids, root, kept, similarity, pairs, lsh, cstats, read_stats, timings,
                       int(np.count_nonzero(sk.shingle_counts == 0)))
