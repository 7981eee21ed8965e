"""The exact and I-Match dedup jobs (definitions in :mod:`neardup.exact`).

``ExactConfig`` (``--method exact``): one read; per batch on the thread pool, the 128-bit key of
each normalized (or raw) text; documents with equal keys form a cluster. One pass, no candidates,
no verification: equal keys are the answer.

``IMatchConfig`` (``--method imatch``): two reads of the input. Pass 1 counts, for every word
term, the documents that contain it; pass 2 keeps the terms whose normalized IDF lies in the
band and hashes each document's sorted kept terms into one signature per lexicon; documents
that agree under any lexicon form a cluster.

Pairs (``want_pairs``) are every pair inside each group, so their number is quadratic in group
size: a million copies of one boilerplate page give 5 * 10**11 pairs. Ask for pairs on
collections whose groups are known to be small, or use the clusters output instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import io
from .exact import (
    EXACT_SCHEME,
    EXACT_VERSION,
    IMATCH_VERSION,
    DocumentFrequencies,
    df_bounds,
    exact_keys,
    group_equal,
    group_pairs,
    imatch_signatures,
    match_pairs,
    match_roots,
    match_similarity,
    nonempty,
    term_sets,
)
from .pipeline import Found, Reader, RunContext, bounded_map, concat

DEFAULT_IDF_BAND = (0.4, 0.75)
DEFAULT_LEXICON_FRACTION = 0.7
_NO_INTS = np.empty(0, dtype=np.int64)


def _lengths(texts: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))


def _group_stats(root: np.ndarray) -> str:
    n = len(root)
    if not n:
        return "0 groups, 0 duplicates"
    sizes = np.bincount(root, minlength=n)
    groups = int(np.count_nonzero(sizes >= 2))
    dups = int(n - np.count_nonzero(sizes))
    return f"{groups:,} groups of 2+ documents, {dups:,} duplicates"


@dataclass(frozen=True)
class ExactConfig:
    """Settings of the exact method: equal 128-bit keys of the normalized text.

    Attributes:
        raw: hash the text's raw UTF-8 bytes instead of its normalized form (NFKC, case
            folding, whitespace collapsed; see :mod:`neardup.exact`).

    Documents whose normalized (or raw) text is empty are counted as empty and never grouped.
    """

    raw: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.raw, (bool, np.bool_)):
            raise ValueError(f"raw must be True or False, got {self.raw!r}")

    @property
    def scheme(self) -> str:
        return f"{EXACT_SCHEME}/{EXACT_VERSION} {'raw' if self.raw else 'normalized'}"

    def find(self, read: Reader, ctx: RunContext) -> Found:
        """Run the job over the input that ``read`` streams.

        Pairs (when ``ctx.want_pairs``) are every pair inside each group, similarity 1.0:
        quadratic in group size.
        """
        t0 = time.perf_counter()
        ctx.on_stage("reading + hashing")
        raw = bool(self.raw)

        def work(batch: io.DocBatch):
            return batch, exact_keys(batch.texts, raw), _lengths(batch.texts)

        ids: list[str] = []
        keys, lengths = [], []
        for batch, k, ln in bounded_map(work, read(), ctx.workers):
            ids.extend(batch.ids)
            keys.append(k)
            lengths.append(ln)
            ctx.on_batch(len(batch.ids))
        keys_all = concat(keys, np.empty((0, 2), dtype=np.uint64))
        ctx.timings["read+hash"] = time.perf_counter() - t0

        ctx.on_stage("grouping")
        t0 = time.perf_counter()
        valid = nonempty(keys_all)
        root = group_equal(keys_all, valid)
        pairs = None
        if ctx.want_pairs:
            a, b = group_pairs(root)
            pairs = (a, b, np.ones(len(a), dtype=np.float64))
        ctx.timings["group"] = time.perf_counter() - t0

        def similarity(docs: np.ndarray, others: np.ndarray) -> np.ndarray:
            docs = np.asarray(docs, dtype=np.int64)
            others = np.asarray(others, dtype=np.int64)
            return ((root[docs] == root[others]) & (valid[docs] | (docs == others))).astype(np.float64)

        stats = {
            "exact key": f"{self.scheme} (128-bit)",
            "exact groups": _group_stats(root),
        }
        return Found(ids, concat(lengths, _NO_INTS), root, pairs, similarity, stats, ~valid)


@dataclass(frozen=True)
class IMatchConfig:
    """Settings of the I-Match method (Chowdhury et al. 2002; multi-lexicon: Kołcz et al. 2004).

    Attributes:
        idf_band: ``(lo, hi)``, 0 <= lo <= hi <= 1: the terms whose normalized collection IDF
            ``ln(N / df) / ln(N)`` lies in [lo, hi] form the lexicon; very common terms (low IDF)
            and very rare ones (high IDF: typos, names, the words an edit introduces) are left out.
        lexicons: L, signatures per document: the full lexicon plus L - 1 random sub-lexicons;
            documents match when any signature agrees (more recall, a little less precision).
        lexicon_fraction: share of the lexicon's terms each random sub-lexicon keeps, in (0, 1].
        min_terms: documents with fewer lexicon terms get no signature (1: classic I-Match).
        seed: seed of the random sub-lexicons.

    See :mod:`neardup.exact` for the exact definitions.
    """

    idf_band: tuple[float, float] = DEFAULT_IDF_BAND
    lexicons: int = 1
    lexicon_fraction: float = DEFAULT_LEXICON_FRACTION
    min_terms: int = 1
    seed: int = 1

    def __post_init__(self) -> None:
        try:
            lo, hi = (float(x) for x in self.idf_band)
        except (TypeError, ValueError):
            raise ValueError(f"idf_band must be a pair (lo, hi) of numbers, got {self.idf_band!r}") from None
        if not (0.0 <= lo <= hi <= 1.0):
            raise ValueError(f"idf_band must satisfy 0 <= lo <= hi <= 1, got ({lo}, {hi})")
        object.__setattr__(self, "idf_band", (lo, hi))
        if not _is_int(self.lexicons) or self.lexicons < 1:
            raise ValueError(f"lexicons must be an integer >= 1, got {self.lexicons!r}")
        if not isinstance(self.lexicon_fraction, (int, float)) or not 0.0 < self.lexicon_fraction <= 1.0:
            raise ValueError(f"lexicon_fraction must be in (0, 1], got {self.lexicon_fraction!r}")
        if not _is_int(self.min_terms) or self.min_terms < 1:
            raise ValueError(f"min_terms must be an integer >= 1, got {self.min_terms!r}")
        if not _is_int(self.seed) or not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {self.seed!r}")

    @property
    def scheme(self) -> str:
        return (f"imatch/{IMATCH_VERSION} band=[{self.idf_band[0]}, {self.idf_band[1]}] L={self.lexicons} "
                f"fraction={self.lexicon_fraction} min_terms={self.min_terms} seed={self.seed}")

    def find(self, read: Reader, ctx: RunContext) -> Found:
        """Run the job: count document frequencies (first read), then sign (second read).

        Pairs (when ``ctx.want_pairs``) are every pair agreeing under some lexicon, similarity =
        share of the L lexicons that agree: quadratic in group size.
        """
        t0 = time.perf_counter()
        ctx.on_stage("reading + counting terms")
        dfs = DocumentFrequencies()
        for batch, (values, offsets) in bounded_map(lambda b: (b, term_sets(b.texts)), read(), ctx.workers):
            dfs.add(values, offsets)
            ctx.on_batch(len(batch.ids))
        terms, df = dfs.finish()
        n_docs = dfs.n_documents
        df_range = df_bounds(n_docs, self.idf_band)
        ctx.timings["count terms"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        ctx.on_stage("re-reading + signing")

        def work(batch: io.DocBatch):
            values, offsets = term_sets(batch.texts)
            sigs, has = imatch_signatures(values, offsets, terms, df, df_range, self.lexicons,
                                          self.lexicon_fraction, self.seed, self.min_terms)
            return batch, sigs, has, _lengths(batch.texts)

        ids: list[str] = []
        sig_parts, has_parts, lengths = [], [], []
        for batch, sigs, has, ln in bounded_map(work, read(), ctx.workers):
            ids.extend(batch.ids)
            sig_parts.append(sigs)
            has_parts.append(has)
            lengths.append(ln)
            ctx.on_batch(len(batch.ids))
        if len(ids) != n_docs:
            raise ValueError(f"the second read gave {len(ids)} documents, the first {n_docs}; "
                             "did the input change while the job ran?")
        sigs = concat(sig_parts, np.empty((0, self.lexicons, 2), dtype=np.uint64))
        has = concat(has_parts, np.empty((0, self.lexicons), dtype=bool))
        ctx.timings["sign"] = time.perf_counter() - t0

        ctx.on_stage("grouping")
        t0 = time.perf_counter()
        root = match_roots(sigs, has)
        pairs = match_pairs(sigs, has) if ctx.want_pairs else None
        ctx.timings["group"] = time.perf_counter() - t0

        in_lexicon = int(np.count_nonzero((df >= df_range[0]) & (df <= df_range[1])))
        lo, hi = self.idf_band
        stats = {
            "I-Match lexicon": (f"IDF in [{lo:g}, {hi:g}] = df in [{df_range[0]:,}, {df_range[1]:,}] of "
                                f"{n_docs:,} documents: {in_lexicon:,} of {len(terms):,} terms"),
            "I-Match signatures": (f"{self.lexicons} per document" if self.lexicons == 1 else
                                   f"{self.lexicons} per document (full lexicon + {self.lexicons - 1} random "
                                   f"{self.lexicon_fraction:.0%} sub-lexicons, seed {self.seed})"),
            "I-Match groups": _group_stats(root),
        }
        empty = ~has[:, 0] if len(has) else np.zeros(0, dtype=bool)
        return Found(ids, concat(lengths, _NO_INTS), root, pairs,
                     lambda a, b: match_similarity(sigs, has, a, b), stats, empty)


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
