"""``verify="edit"`` for any method whose job produces candidate pairs.

A candidate pair is a near-duplicate when its normalized edit similarity
1 - d / max(|a|, |b|) over word tokens or characters (:mod:`neardup.text.edit`) reaches the edit
threshold. MinHash (LSH buckets), SimHash (fingerprints within the Hamming distance) and SpotSigs
(weighted Jaccard at the candidate threshold) share these stages; each method only says which
pairs are candidates:

1. step (the method's): the candidate pairs, and ``wanted`` (bool[n], the documents in one);
2. scan ``re-read candidate texts`` (:func:`edit_token_rows`, :class:`TokenRows`): their token
   ids, CSR;
3. step ``verifier`` (:func:`edit_verifier`): an :class:`EditVerifier`;
4. the pairs verified on the worker threads (:func:`verify_edit_pairs`; the step
   :func:`verify_candidates` for a method whose candidates are a list of pairs), and the
   connected components of the kept ones. With pairs asked for, each carries its edit similarity.

A config that uses them provides ``edit_threshold`` (float), ``edit_level`` (``"word"`` or
``"char"``) and ``edit_normalization`` (``(nfkc, casefold)``, as its features are normalized).

Cost: rapidfuzz's bit-parallel Levenshtein (Hyyrö), banded by the largest distance that still
reaches the threshold, in chunks of :data:`CHUNK` pairs on the workers with the GIL released.
Before it, three lower bounds of the distance that never drop a pair the verifier would keep
(:mod:`neardup._kernels.edit_bounds`): the lengths, the multiset intersection of the tokens and
that of the token bigrams (the q-gram lemma), at one merge of sorted arrays a pair, on the
workers. On candidates found at a low LSH threshold most pairs are unrelated documents that share
a few shingles, and these bounds refuse them before the quadratic-time distance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._kernels.edit_bounds import bigram_rows, dense_codes_kernel, sort_rows, within_bounds
from ..core.arrays import CsrParts, CsrRows
from ..core.components import components
from ..core.documents import DocBatch
from ..core.parallel import Threads
from ..core.plan import Recheck, Scan, StageContext, Step
from ..text.edit import edit_similarities, edit_tokens, token_sequences

__all__ = [
    "CHUNK",
    "EditBounds",
    "EditVerifier",
    "TokenRows",
    "dense_codes",
    "edit_recheck",
    "edit_similarity_of",
    "edit_stages",
    "edit_token_rows",
    "edit_verifier",
    "shard_edit_similarity",
    "shard_edit_verify",
    "verify_candidates",
    "verify_edit_pairs",
]

CHUNK = 1 << 15  # candidate pairs verified per call into rapidfuzz
BOUND_CHUNK = 1 << 16  # candidate pairs per call of the bounds kernel


@dataclass(frozen=True, eq=False)
class EditBounds:
    """Each candidate document's tokens sorted (CSR over the verifier's ``offsets``) and its
    bigram hashes sorted (CSR ``bigrams``, ``bigram_offsets``), for
    :func:`~neardup._kernels.edit_bounds.within_bounds`."""

    tokens: np.ndarray
    bigrams: np.ndarray
    bigram_offsets: np.ndarray

    @classmethod
    def of(cls, ids: np.ndarray, offsets: np.ndarray, threads: Threads | None = None) -> EditBounds:
        """The bounds of CSR token rows; rows are sorted in stretches on ``threads``."""
        tokens = np.array(ids, dtype=np.uint32 if ids.dtype == np.uint32 else np.uint64)  # a copy, sorted below
        bigrams, bigram_offsets = bigram_rows(tokens, offsets)
        n = len(offsets) - 1
        step = max(1, -(-n // (4 * (threads.workers if threads is not None else 1))))

        def part(r: int) -> None:
            e = min(r + step, n)
            sort_rows(tokens, offsets[r : e + 1])
            sort_rows(bigrams, bigram_offsets[r : e + 1])

        if threads is not None and threads.workers > 1:
            threads.map(part, range(0, n, step))
        else:
            for r in range(0, n, step):
                part(r)
        return cls(tokens, bigrams, bigram_offsets)


@dataclass(frozen=True, eq=False)
class EditVerifier:
    """Token ids (CSR ``ids``, ``offsets``) of the candidate documents, ``row[doc]`` the CSR row
    of a document (-1: none), the edit threshold, and the rows' :class:`EditBounds` (None: every
    pair goes to rapidfuzz)."""

    threshold: float
    ids: np.ndarray
    offsets: np.ndarray
    row: np.ndarray
    bounds: EditBounds | None = None

    def may_reach(self, ra: np.ndarray, rb: np.ndarray, workers: int = 1) -> np.ndarray:
        """bool: CSR rows ``ra[i]``, ``rb[i]`` pass the length, token and bigram bounds (an
        edit similarity at or above the threshold is possible); on ``workers`` threads."""
        out = np.ones(len(ra), dtype=bool)
        b = self.bounds
        if b is None or not len(ra):
            return out
        ra = np.ascontiguousarray(ra, dtype=np.int64)
        rb = np.ascontiguousarray(rb, dtype=np.int64)

        def part(s: int) -> None:
            e = min(s + BOUND_CHUNK, len(ra))
            within_bounds(
                b.tokens, self.offsets, b.bigrams, b.bigram_offsets, ra[s:e], rb[s:e], self.threshold, out[s:e]
            )

        starts = range(0, len(ra), BOUND_CHUNK)
        if workers > 1 and len(ra) > BOUND_CHUNK:
            with Threads(workers) as threads:
                threads.map(part, starts)
        else:
            for s in starts:
                part(s)
        return out

    def similarities(self, a: np.ndarray, b: np.ndarray, workers: int = 1, cutoff: bool = True) -> np.ndarray:
        """Edit similarity of documents ``a[i]`` and ``b[i]`` (0.0 below the threshold when
        ``cutoff``); verified in chunks of :data:`CHUNK` pairs on ``workers`` threads.

        With ``cutoff``, a pair that the length, token or bigram bound rules out
        (:meth:`may_reach`) is not computed."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        out = np.zeros(len(a), dtype=np.float64)
        ra, rb = self.row[a], self.row[b]
        ok = np.flatnonzero((ra >= 0) & (rb >= 0))
        if cutoff:
            ok = ok[self.may_reach(ra[ok], rb[ok], workers)]
        for s in range(0, len(ok), CHUNK):
            idx = ok[s : s + CHUNK]
            rows, inverse = np.unique(np.concatenate([ra[idx], rb[idx]]), return_inverse=True)
            seqs = token_sequences(self.ids, self.offsets, rows)
            k = len(idx)
            sa = [seqs[i] for i in inverse[:k].tolist()]
            sb = [seqs[i] for i in inverse[k:].tolist()]
            out[idx] = edit_similarities(sa, sb, self.threshold if cutoff else 0.0, workers)
        return out


def edit_token_rows(config: Any, batch: DocBatch, wanted: np.ndarray):
    """Map: the token ids of the batch's wanted documents, as (document indices, CSR ids, lengths)."""
    idx = np.flatnonzero(wanted[batch.start : batch.start + len(batch)])
    nfkc, casefold = config.edit_normalization
    ids, off = edit_tokens([batch.texts[i] for i in idx], config.edit_level, nfkc=nfkc, casefold=casefold)
    return batch.start + idx, ids, np.diff(off)


class TokenRows(CsrParts):
    """Reduce: the token ids of every wanted document, as CSR in input order (word tokens as
    :func:`dense_codes`, so the 64-bit hashes are not kept beside them)."""

    def __init__(self, config: Any) -> None:
        super().__init__(np.uint64 if config.edit_level == "word" else np.uint32)

    def result(self) -> dict[str, Any]:
        docs, ids, offsets = self.joined()
        return {"token_docs": docs, "token_ids": dense_codes(ids), "token_offsets": offsets}


def edit_verifier(
    config: Any,
    ctx: StageContext,
    wanted: np.ndarray,
    token_docs: np.ndarray,
    token_ids: np.ndarray,
    token_offsets: np.ndarray,
) -> dict[str, Any]:
    """Step: the :class:`EditVerifier` of the candidate documents."""
    row = np.full(len(wanted), -1, dtype=np.int64)
    row[token_docs] = np.arange(len(token_docs))
    bounds = EditBounds.of(token_ids, token_offsets, ctx.threads)
    return {"verifier": EditVerifier(config.edit_threshold, token_ids, token_offsets, row, bounds)}


MAX_CODE = 0x110000 - 0x800
"""Distinct tokens that fit the code points of a ``str`` (all of Unicode but the surrogates)."""


def dense_codes(ids: np.ndarray) -> np.ndarray:
    """Word token hashes (uint64) renumbered as uint32 code points, equal tokens equal codes, so
    that :func:`~neardup.text.edit.token_sequences` hands rapidfuzz a ``str`` per document
    instead of a list of Python ints: about a tenth of the memory (4 bytes a token instead of
    about 36), no int objects to make, and rapidfuzz's string path. Codes skip the surrogate
    range. Characters (uint32) are returned as they are, and so are word tokens with more than
    :data:`MAX_CODE` distinct values (they stay lists)."""
    if ids.dtype != np.uint64 or not len(ids):
        return ids
    codes, distinct = dense_codes_kernel(ids, MAX_CODE)
    if distinct < 0:
        return ids
    codes = codes.astype(np.uint32)
    codes[codes >= 0xD800] += 0x800
    return codes


def verify_edit_pairs(
    n: int, a: np.ndarray, b: np.ndarray, verifier: EditVerifier, ctx: StageContext, counters: dict[str, float]
) -> dict[str, Any]:
    """The candidate pairs ``(a[i], b[i])`` (each once) kept by edit similarity, on the workers,
    and the connected components of the kept ones over ``n`` documents: ``root``, ``counters``
    (``counters`` plus ``checked`` and ``verified``) and, when asked for, ``pairs`` (a < b, sorted,
    with their edit similarity)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    sim = verifier.similarities(a, b, ctx.workers)
    keep = sim >= verifier.threshold
    ka, kb, ks = a[keep], b[keep], sim[keep]
    out: dict[str, Any] = {
        "root": components(n, ka, kb),
        "counters": {**counters, "checked": len(a), "verified": len(ka)},
    }
    if ctx.want_pairs:
        lo, hi = np.minimum(ka, kb), np.maximum(ka, kb)
        order = np.lexsort((hi, lo))
        out["pairs"] = (lo[order], hi[order], ks[order])
    return out


def verify_candidates(
    config: Any,
    ctx: StageContext,
    wanted: np.ndarray,
    candidate_a: np.ndarray,
    candidate_b: np.ndarray,
    verifier: EditVerifier,
) -> dict[str, Any]:
    """Step: the method's candidate pairs verified by edit similarity, and the clusters."""
    return verify_edit_pairs(len(wanted), candidate_a, candidate_b, verifier, ctx, {})


def edit_similarity_of(config: Any, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """A plan's similarity under ``verify="edit"``: the edit similarity of ``docs[q]`` to
    ``others[q]`` (1.0 for a document itself; 0.0 for a document that was in no candidate pair)."""
    return _similarities_to(state["verifier"], docs, others)


def _similarities_to(verifier: EditVerifier, docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    docs = np.asarray(docs, dtype=np.int64)
    others = np.asarray(others, dtype=np.int64)
    out = verifier.similarities(docs, others, cutoff=False)
    out[docs == others] = 1.0
    return out


# --------------------------------------------------------------------------------------------
# the same verification on shards (core.plan.Recheck): token rows gathered from the partitions
# that read them, as CsrRows of raw token ids (renumbered by dense_codes here, where the pairs
# that compare them meet: codes made per partition would not agree)


def edit_recheck() -> Recheck:
    """The sharded form's :class:`~neardup.core.plan.Recheck` of ``verify="edit"``: the token rows
    of the candidate documents, the candidate pairs verified on them."""
    return Recheck(Scan("re-read candidate texts", edit_token_rows, TokenRows, ("wanted",)), shard_edit_verify)


def edit_stages(candidates: Step) -> tuple[list[Scan | Step], Recheck]:
    """The stages of ``verify="edit"`` for a method whose step ``candidates`` gives candidate
    pairs (``candidate_a``, ``candidate_b``, ``wanted``): it, the re-read, the verifier and
    ``verify + cluster``; and the :class:`~neardup.core.plan.Recheck` of its sharded form."""
    recheck = edit_recheck()
    stages = [
        candidates,
        recheck.scan,
        Step("verifier", edit_verifier, ("wanted", "token_docs", "token_ids", "token_offsets")),
        Step("verify + cluster", verify_candidates, ("wanted", "candidate_a", "candidate_b", "verifier")),
    ]
    return stages, recheck


def _shard_verifier(config: Any, rows: dict[str, Any], cutoff: bool) -> EditVerifier:
    tokens: CsrRows = rows["reread"]
    ids = dense_codes(tokens.values)
    bounds = EditBounds.of(ids, tokens.offsets) if cutoff else None
    return EditVerifier(config.edit_threshold, ids, tokens.offsets, np.arange(len(tokens), dtype=np.int64), bounds)


def shard_edit_verify(config: Any, a: np.ndarray, b: np.ndarray, rows: dict[str, Any]):
    """The candidate pairs ``(a[i], b[i])`` (positions in ``rows``) whose edit similarity reaches
    the threshold (as :func:`verify_edit_pairs`), with it."""
    verifier = _shard_verifier(config, rows, cutoff=True)
    sim = verifier.similarities(a, b)
    keep = sim >= verifier.threshold
    return a[keep], b[keep], sim[keep]


def shard_edit_similarity(config: Any, rows: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """:func:`edit_similarity_of` on token rows (positions in ``rows``)."""
    return _similarities_to(_shard_verifier(config, rows, cutoff=False), docs, others)
