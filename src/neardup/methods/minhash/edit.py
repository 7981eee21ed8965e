"""``verify="edit"``: LSH candidates kept by their normalized edit similarity.

A candidate pair (two documents sharing an LSH bucket) is a near-duplicate when
1 - d / max(|a|, |b|) >= ``threshold`` over word tokens or characters
(:mod:`neardup.text.edit`). The banding is then chosen for a lower *candidate* Jaccard threshold
(:func:`candidate_threshold`), so that pairs the edit verifier accepts are found as candidates.

Stages (after ``read + sketch`` and ``band``): ``find candidate texts`` (documents in some
bucket of two or more), then the stages every method shares (:mod:`neardup.methods.verify_edit`):
scan ``re-read candidate texts`` (their token ids, CSR), step ``verifier``; and the group-by
``verify + cluster``, whose local form enumerates every candidate pair once (a pair sharing
several bands is checked once) and verifies them on the worker threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.plan import StageContext
from ..verify_edit import EditVerifier, verify_edit_pairs
from .candidates import Verifier, find_clusters

if TYPE_CHECKING:
    from .config import MinHashConfig

__all__ = ["EDIT_JACCARD", "candidate_threshold", "cluster_edit", "verify_group_edit"]

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

PREFILTER = 0.7
"""A candidate pair goes to the edit verifier only when its signature estimate r/K reaches
``PREFILTER`` times the candidate threshold: with a low candidate threshold the banding has r = 1
or 2 rows, and sharing one slot says little (on 10k generated documents, 8M pairs share a band at
candidate threshold 0.1). The estimate's standard deviation at J = 0.1, K = 128 is 0.027, so
0.07 is more than one below it; the recall tests run with it."""


MIN_CANDIDATE_THRESHOLD = 0.1


def candidate_threshold(edit_threshold: float, n: int = 5) -> float:
    """The LSH (Jaccard) threshold for an edit-similarity threshold ``t`` and word n-grams.

    The measured relation (:data:`EDIT_JACCARD`, below the 1 % quantile of the word-5-gram
    Jaccard of generated near-duplicates with every kind of edit, short documents with scattered
    word substitutions included), for n <= 5; for n > 5 times 5 / n (a longer shingle is broken by
    proportionally more edits); at least :data:`MIN_CANDIDATE_THRESHOLD`.

    It is not a worst-case bound. A fraction f = 1 - t of changed words spread evenly, one in
    every 1 / f, removes up to n f of each document's n-grams (J >= (1 - n f) / (1 + n f)), which
    is 0 for n = 5 at t = 0.8: no banding on 5-grams finds such pairs short of taking every pair
    that shares a shingle. An earlier version took that bound too, and at t = 0.8 the candidate
    threshold fell to the floor 0.1: 1.04M candidate pairs on 10k benchmark documents instead of
    9,090 at 0.25, with the same 2,745 pairs found, and the 100k run did not finish. For such
    edits use word 2- or 3-grams (``--ngram 2``; a changed word then breaks 2 or 3 shingles) or
    a lower ``--candidate-threshold``; docs/evaluation.md measures both.

    >>> candidate_threshold(0.8), candidate_threshold(0.9, n=2), candidate_threshold(0.95, n=10)
    (0.25, 0.4, 0.275)
    """
    xs = [p[0] for p in EDIT_JACCARD]
    ys = [p[1] for p in EDIT_JACCARD]
    measured = float(np.interp(edit_threshold, xs, ys)) * min(1.0, 5.0 / n)
    return round(max(MIN_CANDIDATE_THRESHOLD, measured), 4)


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
    """Group-by, locally: every candidate pair once, verified by edit similarity on the workers
    (:func:`~neardup.methods.verify_edit.verify_edit_pairs`), then connected components."""
    pa, pb, buckets = _candidate_pairs(config, values, keys, candidates, ctx.threads)
    return verify_edit_pairs(len(values), pa, pb, verifier, ctx, {"buckets": buckets})


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
