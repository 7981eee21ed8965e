"""``verify="edit"``: LSH candidates kept by their normalized edit similarity.

A candidate pair (two documents sharing an LSH bucket) is a near-duplicate when
1 - d / max(|a|, |b|) >= ``threshold`` over word tokens or characters
(:mod:`neardup.text.edit`). The banding is then chosen for a lower *candidate* Jaccard threshold
(:func:`candidate_threshold`), so that pairs the edit verifier accepts are found as candidates.

Stages (after ``read + sketch`` and ``band``): ``find candidate texts`` (documents in some
bucket of two or more), scan ``re-read candidate texts`` (their token ids, CSR), step
``verifier`` (an :class:`EditVerifier`) and the group-by ``verify + cluster``, whose local form
enumerates every candidate pair once (a pair sharing several bands is checked once) and
verifies them in chunks on the worker threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.components import components
from ...core.documents import DocBatch
from ...core.plan import StageContext
from ...text.edit import edit_similarities, edit_tokens, token_sequences
from .candidates import Verifier, find_clusters

if TYPE_CHECKING:
    from .config import MinHashConfig

__all__ = [
    "EDIT_JACCARD",
    "EditVerifier",
    "TokenRows",
    "candidate_threshold",
    "cluster_edit",
    "edit_token_rows",
    "edit_verifier",
    "similarity_edit",
    "verify_group_edit",
]

# (edit similarity threshold t, LSH candidate Jaccard threshold): below the 1 % quantile of the
# word-5-gram Jaccard of generated near-duplicate pairs whose word edit similarity lies in
# [t, t + 0.05), measured by scripts/edit_jaccard.py (0.8 -> 0.375, 0.9 -> 0.59, 0.95 -> 0.73),
# lowered further for short documents with scattered word substitutions, where each changed
# word removes up to 5 shingles; see docs/evaluation.md. Linear between points.
EDIT_JACCARD: tuple[tuple[float, float], ...] = (
    (0.5, 0.1),
    (0.6, 0.15),
    (0.7, 0.2),
    (0.8, 0.25),
    (0.85, 0.3),
    (0.9, 0.4),
    (0.95, 0.55),
    (1.0, 1.0),
)

CHUNK = 1 << 15  # candidate pairs verified per call into rapidfuzz

PREFILTER = 0.7
"""A candidate pair goes to the edit verifier only when its signature estimate r/K reaches
``PREFILTER`` times the candidate threshold: with a low candidate threshold the banding has r = 1
or 2 rows, and sharing one slot says little (on 10k generated documents, 8M pairs share a band at
candidate threshold 0.1). The estimate's standard deviation at J = 0.1, K = 128 is 0.027, so
0.07 is more than one below it; the recall tests run with it."""


MIN_CANDIDATE_THRESHOLD = 0.1


def candidate_threshold(edit_threshold: float, n: int = 5) -> float:
    """The LSH (Jaccard) threshold for an edit-similarity threshold ``t`` and word n-grams.

    The smaller of two bounds, and at least :data:`MIN_CANDIDATE_THRESHOLD`:

    - the measured relation for sentence-level edits (:data:`EDIT_JACCARD`, for n = 5);
    - scattered word substitutions: a fraction f = 1 - t of changed words removes up to n f of
      each document's n-grams, so J >= (1 - n f) / (1 + n f); times 0.9 as a margin.

    For n = 5 the second bound vanishes at t <= 0.8: five-word shingles cannot see through one
    changed word in five, and the floor makes the banding take nearly every pair that shares a
    few shingles. Word 2- or 3-grams (``--ngram 2``) give a tighter candidate threshold at the same
    recall; docs/evaluation.md measures both.

    >>> candidate_threshold(0.8), candidate_threshold(0.9, n=2), candidate_threshold(0.95, n=5)
    (0.1, 0.4, 0.54)
    """
    xs = [p[0] for p in EDIT_JACCARD]
    ys = [p[1] for p in EDIT_JACCARD]
    measured = float(np.interp(edit_threshold, xs, ys))
    nf = n * (1.0 - edit_threshold)
    scattered = 0.9 * max(0.0, (1.0 - nf) / (1.0 + nf))
    return round(max(MIN_CANDIDATE_THRESHOLD, min(measured, scattered)), 4)


@dataclass(frozen=True, eq=False)
class EditVerifier:
    """Token ids (CSR ``ids``, ``offsets``) of the candidate documents, ``row[doc]`` the CSR row
    of a document (-1: none), and the edit threshold."""

    threshold: float
    ids: np.ndarray
    offsets: np.ndarray
    row: np.ndarray

    def similarities(self, a: np.ndarray, b: np.ndarray, workers: int = 1, cutoff: bool = True) -> np.ndarray:
        """Edit similarity of documents ``a[i]`` and ``b[i]`` (0.0 below the threshold when
        ``cutoff``); verified in chunks of :data:`CHUNK` pairs on ``workers`` threads."""
        out = np.zeros(len(a), dtype=np.float64)
        ra, rb = self.row[a], self.row[b]
        ok = np.flatnonzero((ra >= 0) & (rb >= 0))
        for s in range(0, len(ok), CHUNK):
            idx = ok[s : s + CHUNK]
            rows, inverse = np.unique(np.concatenate([ra[idx], rb[idx]]), return_inverse=True)
            seqs = token_sequences(self.ids, self.offsets, rows)
            k = len(idx)
            sa = [seqs[i] for i in inverse[:k].tolist()]
            sb = [seqs[i] for i in inverse[k:].tolist()]
            out[idx] = edit_similarities(sa, sb, self.threshold if cutoff else 0.0, workers)
        return out


def edit_token_rows(config: MinHashConfig, batch: DocBatch, wanted: np.ndarray):
    """Map: the token ids of the batch's wanted documents, as (document indices, CSR ids, lengths)."""
    idx = np.flatnonzero(wanted[batch.start : batch.start + len(batch)])
    s = config.shingling
    ids, off = edit_tokens([batch.texts[i] for i in idx], config.edit_level, nfkc=s.nfkc, casefold=s.casefold)
    return batch.start + idx, ids, np.diff(off)


class TokenRows:
    """Reduce: the token ids of every wanted document, as CSR in input order."""

    def __init__(self, config: MinHashConfig) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._dtype = np.uint64 if config.edit_level == "word" else np.uint32

    def add(self, part) -> None:
        self._parts.append(part)

    def merge(self, other: TokenRows) -> None:
        self._parts.extend(other._parts)

    def result(self) -> dict[str, Any]:
        sizes = [p[2] for p in self._parts]
        offsets = np.zeros(sum(len(s) for s in sizes) + 1, dtype=np.int64)
        if sizes:
            np.cumsum(np.concatenate(sizes), out=offsets[1:])
        return {
            "token_docs": np.concatenate([p[0] for p in self._parts]) if self._parts else np.empty(0, np.int64),
            "token_ids": np.concatenate([p[1] for p in self._parts]) if self._parts else np.empty(0, self._dtype),
            "token_offsets": offsets,
        }


def edit_verifier(
    config: MinHashConfig,
    ctx: StageContext,
    values: np.ndarray,
    token_docs: np.ndarray,
    token_ids: np.ndarray,
    token_offsets: np.ndarray,
) -> dict[str, Any]:
    """Step: the :class:`EditVerifier` of the candidate documents."""
    row = np.full(len(values), -1, dtype=np.int64)
    row[token_docs] = np.arange(len(token_docs))
    return {"verifier": EditVerifier(config.threshold, token_ids, token_offsets, row)}


def _candidate_pairs(config, values: np.ndarray, keys: np.ndarray, candidates: np.ndarray, threads) -> tuple:
    """Every pair sharing a band key whose signature estimate reaches the prefilter, once
    (i < j, sorted), and the number of buckets."""
    prefilter = Verifier.signature(values, PREFILTER * config.lsh_threshold)
    res = find_clusters(keys, candidates, prefilter, want_pairs=True, threads=threads)
    return res.pairs_a, res.pairs_b, res.stats.buckets


def cluster_edit(
    config: MinHashConfig,
    ctx: StageContext,
    keys: np.ndarray,
    candidates: np.ndarray,
    values: np.ndarray,
    verifier: EditVerifier,
) -> dict[str, Any]:
    """Group-by, locally: every candidate pair once, verified by edit similarity on the workers,
    then connected components."""
    pa, pb, buckets = _candidate_pairs(config, values, keys, candidates, ctx.threads)
    sim = verifier.similarities(pa, pb, ctx.workers)
    keep = sim >= verifier.threshold
    a, b, s = pa[keep], pb[keep], sim[keep]
    out: dict[str, Any] = {
        "root": components(len(values), a, b),
        "counters": {"buckets": buckets, "checked": len(pa), "verified": len(a)},
    }
    if ctx.want_pairs:
        out["pairs"] = (a, b, s)
    return out


def verify_group_edit(
    config: MinHashConfig,
    members: np.ndarray,
    keys: np.ndarray,
    candidates: np.ndarray,
    values: np.ndarray,
    verifier: EditVerifier,
):
    """Group-by verify: every pair of one bucket whose signature estimate reaches the prefilter
    and whose edit similarity reaches the threshold."""
    m = np.ascontiguousarray(members, dtype=np.int64)
    i, j = np.triu_indices(len(m), 1)
    a, b = np.minimum(m[i], m[j]), np.maximum(m[i], m[j])
    k = values.shape[1]
    need = np.ceil(PREFILTER * config.lsh_threshold * k - 1e-9)
    passed = (values[a] == values[b]).sum(axis=1) >= need
    a, b = a[passed], b[passed]
    sim = verifier.similarities(a, b)
    keep = sim >= verifier.threshold
    return a[keep], b[keep], sim[keep]


def similarity_edit(config: MinHashConfig, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Edit similarity of ``docs[q]`` to ``others[q]`` (1.0 for a document itself)."""
    docs = np.asarray(docs, dtype=np.int64)
    others = np.asarray(others, dtype=np.int64)
    out = state["verifier"].similarities(docs, others, cutoff=False)
    out[docs == others] = 1.0
    return out
