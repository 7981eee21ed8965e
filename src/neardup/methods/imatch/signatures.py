"""I-Match signatures: term sets, collection document frequencies, lexicon signatures, matches.

**I-Match** (Chowdhury, Frieder, Grossman, McCabe 2002) and its multi-lexicon variant
(Kołcz, Chowdhury, Alspector 2004), over a collection of N documents:

1. the terms of a document are its unique word tokens (:func:`neardup.text.normalize.tokenize` rules),
   each as its 64-bit hash ``hash_str(token)`` (:func:`term_sets`);
2. ``df(t)`` = number of documents of the collection that contain ``t`` (a first pass);
3. the normalized IDF of a term is ``idf(t) = ln(N / df(t)) / ln(N)`` in [0, 1] (0: in every
   document, 1: in one). A term is in the *lexicon* when ``lo <= idf(t) <= hi``, which for integer
   ``df`` is computed exactly as ``df_lo <= df(t) <= df_hi`` (:func:`df_bounds`) with
   ``df_lo = ceil(N**(1 - hi) * (1 - 1e-12))`` and ``df_hi = floor(N**(1 - lo) * (1 + 1e-12))``;
   the 1e-12 keeps exact powers (N=100, lo=0.5: df <= 10) on the side the real-number definition
   puts them. With N = 1 every term is in the lexicon;
4. a document's I-Match signature is nd128 of the concatenated 8-byte little-endian hashes of
   its lexicon terms, in ascending order (each term once). A document with fewer than
   ``min_terms`` (default 1) lexicon terms has no signature and never matches;
5. multi-lexicon with L lexicons: signature 0 uses the full lexicon (classic I-Match);
   signature j = 1..L-1 uses the sub-lexicon of the terms ``t`` with
   ``fmix64(t ^ salt_j) < floor(fraction * 2**64)`` (all terms when ``fraction == 1``), where
   ``salt_j = splitmix64((seed + j * 0x9E3779B97F4A7C15) mod 2**64)``. Two documents match when
   any of their L signatures agree (union-find over the L groupings), so recall can only grow with
   L; their *similarity* is the share of the L lexicons under which their signatures agree (1.0
   for every match of classic I-Match).

The kernels are in :mod:`neardup._kernels.imatch`; nd128 is defined in :mod:`neardup.methods.exact.keys`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..._kernels.exact import GAMMA
from ..._kernels.hashing import MASK64
from ..._kernels.imatch import imatch_kernel, lexicon_salt_array
from ..._kernels.unionfind import roots_in_place, union_edges
from ...core.budget import Spill
from ...core.components import components
from ...core.extsort import equal_runs, external
from ...text.shingles import Shingling, shingle_batch
from ..exact.groups import group_equal, group_pairs

_TOL = 1e-12


# --------------------------------------------------------------------------------------------
# I-Match
_TERMS = Shingling("word", 1)


def term_sets(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Unique word-token hashes of every text as CSR ``(values uint64[m], offsets int64[n + 1])``,
    each row sorted ascending; ``values`` are ``hash_str(token)``."""
    return shingle_batch(texts, _TERMS, unique=True)


class DocumentFrequencies:
    """Collection document frequencies, accumulated batch by batch (the first I-Match pass).

    >>> df = DocumentFrequencies()
    >>> df.add(*term_sets(["a b", "b c"])); df.add(*term_sets(["b"]))
    >>> df.n_documents, sorted(df.finish()[1].tolist())
    (3, [1, 1, 3])
    """

    _COMPACT = 1 << 22

    def __init__(self) -> None:
        self.n_documents = 0
        self._terms = np.empty(0, dtype=np.uint64)
        self._counts = np.empty(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_size = 0

    def add(self, values: np.ndarray, offsets: np.ndarray) -> None:
        """Count one batch's term sets (each row a set: every term at most once)."""
        self.n_documents += len(offsets) - 1
        if len(values):
            u, c = np.unique(values, return_counts=True)
            self._pending.append((u, c.astype(np.int64)))
            self._pending_size += len(u)
            if self._pending_size > max(self._COMPACT, 2 * len(self._terms)):
                self._compact()

    def _compact(self) -> None:
        if not self._pending:
            return
        terms = np.concatenate([self._terms] + [u for u, _ in self._pending])
        counts = np.concatenate([self._counts] + [c for _, c in self._pending])
        order = np.argsort(terms, kind="stable")
        terms, counts = terms[order], counts[order]
        new = np.ones(len(terms), dtype=bool)
        new[1:] = terms[1:] != terms[:-1]
        starts = np.flatnonzero(new)
        self._terms = terms[starts]
        self._counts = np.add.reduceat(counts, starts) if len(starts) else counts[:0]
        self._pending = []
        self._pending_size = 0

    def merge(self, other: DocumentFrequencies) -> None:
        """Add the counts of ``other`` (another stretch of the collection)."""
        self.n_documents += other.n_documents
        terms, counts = other.finish()
        if len(terms):
            self._pending.append((terms, counts))
            self._pending_size += len(terms)
            self._compact()

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(terms uint64[V] ascending, df int64[V])."""
        self._compact()
        return self._terms, self._counts


def df_bounds(n_documents: int, idf_band: tuple[float, float]) -> tuple[int, int]:
    """The document-frequency range ``[df_lo, df_hi]`` equivalent to ``lo <= idf <= hi``.

    >>> df_bounds(100, (0.5, 1.0)), df_bounds(10_000, (0.4, 0.75))
    ((1, 10), (10, 251))
    """
    lo, hi = idf_band
    n = max(int(n_documents), 1)
    df_lo = max(1, math.ceil(n ** (1.0 - hi) * (1.0 - _TOL)))
    df_hi = min(n, math.floor(n ** (1.0 - lo) * (1.0 + _TOL)))
    return df_lo, df_hi


def lexicon_salts(lexicons: int, seed: int) -> np.ndarray:
    """uint64[L]: ``salt_j = splitmix64((seed + j * 0x9E3779B97F4A7C15) mod 2**64)`` (salt_0 unused)."""
    states = np.array([(seed + j * GAMMA) & MASK64 for j in range(lexicons)], dtype=np.uint64)
    return lexicon_salt_array(states)


def _fraction_threshold(fraction: float) -> tuple[np.uint64, bool]:
    """(floor(fraction * 2**64), keep everything) for the sub-lexicon test."""
    if fraction >= 1.0:
        return np.uint64(MASK64), True
    return np.uint64(min(int(fraction * 2.0**64), MASK64)), False


def imatch_signatures(
    values: np.ndarray,
    offsets: np.ndarray,
    terms: np.ndarray,
    df: np.ndarray,
    df_range: tuple[int, int],
    lexicons: int = 1,
    fraction: float = 1.0,
    seed: int = 1,
    min_terms: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """I-Match signatures of documents given as term-set CSR (see the module docstring).

    ``terms``/``df`` are the collection's sorted vocabulary and document frequencies
    (:class:`DocumentFrequencies`); a term missing from them counts as df = 0 (never kept).
    Returns ``(sigs uint64[n, L, 2], has bool[n, L])``.
    """
    values = np.asarray(values, dtype=np.uint64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if len(terms) and len(values):
        pos = np.minimum(np.searchsorted(terms, values), len(terms) - 1)
        dfv = np.where(terms[pos] == values, df[pos], 0)
    else:
        dfv = np.zeros(len(values), dtype=np.int64)
    kept = (dfv >= df_range[0]) & (dfv <= df_range[1])
    threshold, keep_all = _fraction_threshold(fraction)
    n = len(offsets) - 1
    sigs = np.empty((n, lexicons, 2), dtype=np.uint64)
    has = np.empty((n, lexicons), dtype=bool)
    imatch_kernel(values, offsets, kept, lexicon_salts(lexicons, seed), threshold, keep_all, int(min_terms), sigs, has)
    return sigs, has


def match_roots(sigs: np.ndarray, has: np.ndarray) -> np.ndarray:
    """int64[n] clusters of documents that agree under any of the L signatures (smallest index).

    Past the job's memory budget (a tiny one, or many documents) each lexicon's groups come
    from an external sort (:func:`neardup.core.extsort.equal_runs`) and are joined into a
    union-find forest of the budget (a spill file): the same components, whose roots are their
    smallest members either way."""
    n, lexicons = has.shape
    spill = external(_SORT_BYTES * n * max(lexicons, 1), "imatch groups")
    if spill is not None:
        return _match_roots_external(sigs, has, spill)
    if lexicons == 1:
        return group_equal(sigs[:, 0], has[:, 0])
    a, b = [], []
    for j in range(lexicons):
        r = group_equal(sigs[:, j], has[:, j])
        moved = np.flatnonzero(r != np.arange(n))
        a.append(moved)
        b.append(r[moved])
    return components(n, np.concatenate(a), np.concatenate(b))


_SORT_BYTES = 112
"""Bytes a document and lexicon that :func:`match_roots` takes in memory at its peak (the
grouping of one lexicon, and every lexicon's joins kept for the components)."""


def _match_roots_external(sigs: np.ndarray, has: np.ndarray, spill: Spill) -> np.ndarray:
    n, lexicons = has.shape
    parent = spill.array(n, np.int64)
    step = 1 << 20
    for lo in range(0, n, step):
        parent[lo : lo + step] = np.arange(lo, min(lo + step, n), dtype=np.int64)
    for j in range(lexicons):
        for members, heads in equal_runs(sigs[:, j], has[:, j], spill):
            union_edges(parent, members, heads)
            spill.relieve()
    roots_in_place(parent)
    spill.relieve()
    return parent


def match_pairs(sigs: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (a < b) agreeing under at least one of the L signatures, with the share of the
    L signatures that agree as similarity. Quadratic in the size of each signature group."""
    _n, lexicons = has.shape
    pa, pb = [], []
    for j in range(lexicons):
        a, b = group_pairs(group_equal(sigs[:, j], has[:, j]))
        pa.append(a)
        pb.append(b)
    a = np.concatenate(pa)
    b = np.concatenate(pb)
    if not len(a):
        return a, b, np.empty(0, dtype=np.float64)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(a)))
    return a[starts], b[starts], counts / lexicons


def match_similarity(sigs: np.ndarray, has: np.ndarray, docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Share of the L signatures on which ``docs[q]`` and ``others[q]`` agree (1.0 for itself)."""
    docs = np.asarray(docs, dtype=np.int64)
    others = np.asarray(others, dtype=np.int64)
    agree = (sigs[docs] == sigs[others]).all(axis=2) & has[docs] & has[others]
    out = agree.mean(axis=1) if has.shape[1] else np.zeros(len(docs))
    out[docs == others] = 1.0
    return out
