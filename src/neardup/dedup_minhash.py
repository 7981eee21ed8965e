"""The MinHash + LSH dedup job: shingle -> MinHash -> band -> verify -> cluster.

Stages, each a plain function:

0. (on by default) the exact pre-pass (:mod:`neardup.exact`): a 128-bit key of each normalized
   text; a document whose key was seen before is not sketched, it joins its representative's
   cluster at similarity 1.0. Equal keys mean equal normalized texts, hence equal shingle sets,
   so the results are the same with or without the pre-pass; only the work is saved.
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
from .exact import ExactGroups, ExactPrepass, keys_from_encoded
from .lsh import LSHParams, band_keys, params_for
from .minhash import SKETCHES, MinHasher, MinHashScheme
from .pipeline import Found, Reader, RowBuffer, RunContext, bounded_map, concat, expand_prepass
from .shingles import Shingling, _kind_code, encode_for_sketch, encode_texts, lower_ascii, shingle_texts_kernel
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
        exact_prepass: sketch only the first of each group of documents whose normalized texts
            are identical (the others join its cluster at similarity 1.0).
        sketch: ``"classic"`` (K permutations, every element hashed K times) or ``"oph"``
            (one-permutation hashing with optimal densification, :mod:`neardup.oph`: one hash
            per element, the same estimate; faster, with its own signature values).
    """

    threshold: float = DEFAULT_THRESHOLD
    shingling: Shingling = field(default_factory=lambda: Shingling("word", DEFAULT_NGRAM))
    num_perm: int = DEFAULT_NUM_PERM
    seed: int = 1
    bands: int | None = None
    rows: int | None = None
    verify: Literal["signature", "exact"] = "signature"
    exact_prepass: bool = True
    sketch: Literal["classic", "oph"] = "classic"

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold!r}")
        if self.verify not in ("signature", "exact"):
            raise ValueError(f"verify must be 'signature' or 'exact', got {self.verify!r}")
        if self.sketch not in SKETCHES:
            raise ValueError(f"sketch must be one of {sorted(SKETCHES)}, got {self.sketch!r}")
        self.scheme  # validates num_perm and seed
        self.lsh  # validates bands and rows against num_perm

    @property
    def scheme(self) -> MinHashScheme:
        return MinHashScheme(num_perm=self.num_perm, seed=self.seed, shingling=self.shingling,
                             hash_family=SKETCHES[self.sketch])

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
        sub_root, sub_pairs, verifier, lsh, cstats = cluster_sketches(sk, self, read, ctx)
        stats = {
            "exact duplicates (pre-pass)": f"{sk.groups.n_duplicates:,}" if self.exact_prepass else "off",
            "LSH": f"b={lsh.bands} r={lsh.rows} (threshold {self.threshold}, K={self.num_perm}"
                   + (", one-permutation sketch)" if self.sketch == "oph" else ")"),
            "candidate pairs checked": f"{cstats.checked:,} ({cstats.verified:,} verified, {self.verify})",
        }
        sub = Found(sk.ids, sk.lengths, sub_root, sub_pairs, lambda a, b: similarity_to(a, b, verifier), {},
                    sk.shingle_counts == 0)
        return expand_prepass(sk.groups, sk.ids, sk.lengths, sub, stats)


@dataclass(frozen=True, eq=False)
class Sketches:
    """Output of the sketch stage for the whole input.

    ``ids`` and ``lengths`` cover every document; ``values`` and ``shingle_counts`` only the
    sketched ones (the representatives of ``groups``, in input order).
    """

    ids: list[str]
    lengths: np.ndarray
    """int64[n] text length in characters (for keep='longest')."""
    groups: ExactGroups
    """Exact-duplicate groups: which documents were sketched (all of them without the pre-pass)."""
    values: np.ndarray
    """uint32[m, K] MinHash signatures of the sketched documents."""
    shingle_counts: np.ndarray
    """int64[m] number of shingles of each sketched document (0: empty)."""


def sketch_batch(texts: Sequence[str], hasher: MinHasher) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stage: texts -> (signatures uint32[n, K], shingle counts int64[n], lengths int64[n])."""
    values, counts = hasher.sign_texts_with_counts(texts)
    return values, counts, _lengths(texts)


def _lengths(texts: Sequence[str]) -> np.ndarray:
    return np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))


def sketch_documents(batches: Iterable[io.DocBatch], config: MinHashConfig, ctx: RunContext) -> Sketches:
    """Stages encode -> (exact pre-pass) -> sketch over a stream of document batches.

    Encoding (normalization to UTF-8) and sketching run on the thread pool; the pre-pass decides,
    in input order on the calling thread, which documents of each batch need a signature.
    """
    hasher = MinHasher(scheme=config.scheme)
    shingling = config.shingling
    prepass = ExactPrepass()

    def encode(batch: io.DocBatch):
        data, offsets = encode_for_sketch(batch.texts, shingling)
        keys = None
        if config.exact_prepass:  # keys of the normalized bytes, i.e. of encode_texts' bytes
            keys = keys_from_encoded(lower_ascii(data) if shingling.casefold else data, offsets, raw=True)
        return batch, data, offsets, keys

    def admit(encoded):
        for batch, data, offsets, keys in encoded:
            mask = prepass.admit(keys) if keys is not None else np.ones(len(batch.texts), dtype=bool)
            yield batch, data, offsets, mask

    def sketch(item):
        batch, data, offsets, mask = item
        chosen = np.flatnonzero(mask)
        values, counts = hasher.sign_encoded(data, offsets[:-1][chosen], offsets[1:][chosen])
        return batch, values, counts, _lengths(batch.texts)

    ids: list[str] = []
    values = RowBuffer((config.num_perm,), np.uint32)
    counts, lengths = RowBuffer((), np.int64), RowBuffer((), np.int64)
    for batch, v, c, ln in bounded_map(sketch, admit(bounded_map(encode, batches, ctx.workers)), ctx.workers):
        ids.extend(batch.ids)
        values.append(v)
        counts.append(c)
        lengths.append(ln)
        ctx.on_batch(len(batch.ids))
    groups = prepass.groups() if config.exact_prepass else ExactGroups(np.arange(len(ids), dtype=np.int64))
    return Sketches(ids, lengths.finish(), groups, values.finish(), counts.finish())


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
    """Stages band -> (re-shingle) -> verify -> cluster on the sketched documents.

    Works in the index space of the sketched documents (``sk.groups.index`` maps back).
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
        index = sk.groups.index
        wanted = np.zeros(len(sk.ids), dtype=bool)
        wanted[index[in_buckets(keys, candidates)]] = True
        set_values, set_offsets, set_row = shingle_sets(read(), wanted, config.shingling)
        verifier = Verifier.exact(sk.values, config.threshold, set_values, set_offsets, set_row[index])
        ctx.timings["reshingle"] = time.perf_counter() - t0
    else:
        verifier = Verifier.signature(sk.values, config.threshold)

    ctx.on_stage("verifying candidates")
    t0 = time.perf_counter()
    result = find_clusters(keys, candidates, verifier, want_pairs=ctx.want_pairs)
    ctx.timings["verify+cluster"] = time.perf_counter() - t0
    pairs = (result.pairs_a, result.pairs_b, result.pairs_similarity) if ctx.want_pairs else None
    return result.root, pairs, verifier, lsh, result.stats
