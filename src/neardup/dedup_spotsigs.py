"""The SpotSigs dedup job: extract spot signatures -> (IDF filter) -> exact all pairs -> cluster.

Stages, each a plain function:

1. (with an IDF band only) ``count_document_frequencies``: a first read of the input, counting in
   how many documents each signature occurs; nothing else is kept;
2. ``extract_documents``: texts -> spot signature multisets (per batch, on the thread pool),
   filtered by the IDF band when there is one;
3. ``all_pairs`` (:mod:`neardup.spotsigs`): every pair with weighted Jaccard >= threshold, exactly,
   by length partitions and a pruned inverted index;
4. clusters: connected components of that pair graph (:mod:`neardup.cluster`).

There is no candidate stage and nothing to verify: the pairs are the complete graph of pairs at
or above the threshold, no more, no less. Documents without signatures (after the filter) are
never paired and are reported as empty.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Iterable, Literal, Sequence

import numpy as np

from . import io
from .cluster import components
from .pipeline import Found, Reader, RunContext, bounded_map, concat, find_with_exact_prepass
from .spotsigs import (DocumentFrequencies, SpotSignatures, SpotSigsScheme, all_pairs, check_band,
                       check_threshold, extract, idf_filter, weighted_jaccard_rows)
from .stopwords import ENGLISH_ANTECEDENTS, ENGLISH_STOPWORDS

DEFAULT_THRESHOLD = 0.8
DEFAULT_SPOT_DISTANCE = 1
DEFAULT_CHAIN = 2
DEFAULT_KEY = "antecedent"


def _word_tuple(words, name: str) -> tuple[str, ...] | None:
    if words is None:
        return None
    if isinstance(words, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of words, not a string; "
                        f"read a file with neardup.spotsigs.load_words(path)")
    return tuple(words)


@dataclass(frozen=True)
class SpotSigsConfig:
    """Settings of the SpotSigs method (the CLI options map one to one).

    Attributes:
        threshold: weighted Jaccard of spot signature multisets at or above which two documents
            are near-duplicates (the job finds every such pair, exactly).
        spot_distance: d >= 1; a chain takes every d-th non-stopword after its antecedent.
        chain: c >= 1, the number of words in a chain.
        antecedents: words a signature starts at; None for the English default
            (:data:`neardup.stopwords.ENGLISH_ANTECEDENTS`). ``load_words(path)`` reads a file.
        stopwords: words a chain skips (the antecedents are skipped too); None for the English
            default (:data:`neardup.stopwords.ENGLISH_STOPWORDS`).
        idf_band: ``(lo, hi)`` keeps only signatures whose normalised collection IDF
            ``log(N / df) / log(N)`` lies in ``[lo, hi]`` (reads the input twice); None keeps all.
        key: ``"antecedent"`` (signature "the:south:carolina") or ``"chain"`` ("south:carolina").
        exact_prepass: extract signatures only for the first of each group of identical
            normalized texts (same result, less work; off with an IDF band, whose document
            frequencies count every document).

    >>> SpotSigsConfig(threshold=0.9, idf_band=(0.2, 0.85)).scheme.chain
    2
    """

    threshold: float = DEFAULT_THRESHOLD
    spot_distance: int = DEFAULT_SPOT_DISTANCE
    chain: int = DEFAULT_CHAIN
    antecedents: tuple[str, ...] | None = None
    stopwords: tuple[str, ...] | None = None
    idf_band: tuple[float, float] | None = None
    key: Literal["antecedent", "chain"] = DEFAULT_KEY
    exact_prepass: bool = True
    _scheme: SpotSigsScheme = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_threshold(self.threshold)
        object.__setattr__(self, "antecedents", _word_tuple(self.antecedents, "antecedents"))
        object.__setattr__(self, "stopwords", _word_tuple(self.stopwords, "stopwords"))
        if self.idf_band is not None:
            object.__setattr__(self, "idf_band", check_band(self.idf_band))
        object.__setattr__(self, "_scheme", SpotSigsScheme(
            antecedents=self.antecedents if self.antecedents is not None else ENGLISH_ANTECEDENTS,
            stopwords=self.stopwords if self.stopwords is not None else ENGLISH_STOPWORDS,
            spot_distance=self.spot_distance, chain=self.chain, key=self.key))

    @property
    def scheme(self) -> SpotSigsScheme:
        """The extraction scheme these settings make (validated word lists, d, c, key)."""
        return self._scheme

    def find(self, read: Reader, ctx: RunContext) -> Found:
        """Run the job over the input that ``read`` streams (twice with an IDF band)."""
        if self.exact_prepass and self.idf_band is None:
            return find_with_exact_prepass(replace(self, exact_prepass=False), read, ctx,
                                           nfkc=self.scheme.nfkc, casefold=self.scheme.casefold)
        df = None
        if self.idf_band is not None:
            t0 = time.perf_counter()
            ctx.on_stage("reading + counting signatures (IDF)")
            df = count_document_frequencies(read(), self.scheme, ctx)
            ctx.timings["read+idf"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ctx.on_stage("reading + extracting spot signatures")
        ex = extract_documents(read(), self, df, ctx)
        ctx.timings["read+extract"] = time.perf_counter() - t0

        ctx.on_stage("all pairs (partitions + pruned index)")
        t0 = time.perf_counter()
        res = all_pairs(ex.sigs, self.threshold, workers=ctx.workers)
        ctx.timings["all-pairs"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        root = components(len(ex.ids), res.a, res.b)
        ctx.timings["cluster"] = time.perf_counter() - t0

        sig_lengths = ex.sigs.lengths
        c = res.counters
        stats = {
            "SpotSigs": (f"d={self.spot_distance} c={self.chain} key={self.key}, "
                         f"{len(self.scheme.antecedents)} antecedents, {len(self.scheme.skipped)} skipped words"),
            "spot signatures": (f"{int(sig_lengths.sum()):,} in {c.documents:,} documents "
                                f"({sig_lengths.sum() / max(c.documents, 1):.1f} per non-empty document)"),
        }
        if self.idf_band is not None:
            stats["IDF band"] = (f"[{self.idf_band[0]:g}, {self.idf_band[1]:g}]: kept {ex.kept:,} of "
                                 f"{ex.before:,} signatures")
        stats["length partitions"] = f"{c.partitions:,} (threshold {self.threshold})"
        stats["similarity computations"] = f"{c.computed:,} ({c.pairs:,} pairs >= {self.threshold})"
        stats["pruned by length bound"] = (f"{c.pruned:,} list entries; {c.lists_cut:,} lists cut short, "
                                           f"{c.lists_skipped:,} never opened")
        pairs = (res.a, res.b, res.similarity) if ctx.want_pairs else None
        sigs = ex.sigs
        return Found(ex.ids, ex.lengths, root, pairs,
                     lambda a, b: weighted_jaccard_rows(sigs, a, b, sig_lengths), stats, sig_lengths == 0)


@dataclass(frozen=True, eq=False)
class Extracted:
    """Output of the extraction stage for the whole input, in input order."""

    ids: list[str]
    sigs: SpotSignatures
    lengths: np.ndarray
    """int64[n] text length in characters (for keep='longest')."""
    before: int = 0
    """Signature occurrences before the IDF filter."""
    kept: int = 0
    """Signature occurrences after it."""


def count_document_frequencies(batches: Iterable[io.DocBatch], scheme: SpotSigsScheme,
                               ctx: RunContext) -> DocumentFrequencies:
    """Stage (IDF band only): the document frequency of every signature of the collection."""
    df = DocumentFrequencies()
    for sigs in bounded_map(lambda batch: extract(batch.texts, scheme), batches, ctx.workers):
        df.add(sigs)
        ctx.on_batch(len(sigs))
    df.table()  # merge now: the extraction threads only read it
    return df


def extract_batch(texts: Sequence[str], config: SpotSigsConfig,
                  df: DocumentFrequencies | None = None) -> tuple[SpotSignatures, np.ndarray, int]:
    """Stage: texts -> (signatures, text lengths int64[n], occurrences before the IDF filter)."""
    sigs = extract(texts, config.scheme)
    before = int(sigs.counts.sum())
    if df is not None:
        sigs = idf_filter(sigs, config.idf_band, df)
    return sigs, np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), before


def extract_documents(batches: Iterable[io.DocBatch], config: SpotSigsConfig,
                      df: DocumentFrequencies | None, ctx: RunContext) -> Extracted:
    """Stage: stream of document batches -> signatures of the whole input."""
    ids: list[str] = []
    parts, lengths = [], []
    before = 0

    def work(batch: io.DocBatch):
        return batch, extract_batch(batch.texts, config, df)

    for batch, (sigs, ln, b) in bounded_map(work, batches, ctx.workers):
        ids.extend(batch.ids)
        parts.append(sigs)
        lengths.append(ln)
        before += b
        ctx.on_batch(len(batch.ids))
    sigs = SpotSignatures.concat(parts, config.scheme)
    return Extracted(ids, sigs, concat(lengths, np.empty(0, dtype=np.int64)), before,
                     int(sigs.counts.sum()))
