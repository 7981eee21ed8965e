"""Exact and I-Match fingerprints: one 128-bit key per document, equal keys = duplicates.

Everything here is batch-first (arrays in, arrays out), numba for the per-byte loops, and fully
specified so that keys are the same on every process, platform and worker count. Golden tests
pin the values (``tests/test_exact.py``).

**nd128** (scheme ``"nd128"``, version 1), the 128-bit hash of a byte string ``x``
    Two 64-bit lanes over the same 8-byte little-endian words ``w`` of ``x`` (the last word
    zero-padded), with different seeds, multipliers and rotations::

        a = SEED;   for each w: a = rotl64(a ^ (w * P1), 31) * P2;   A = fmix64(a ^ len(x))
        b = SEED_B; for each w: b = rotl64(b ^ (w * Q1), 29) * Q2;   B = fmix64(b ^ len(x))

    The key is ``(A, B)`` as ``uint64[2]``. Lane A *is* nd64 (:func:`neardup._hash.hash_bytes`),
    so ``key[0] == hash_bytes(x)``; lane B uses its own constants, so the lanes behave as two
    independent 64-bit hashes for non-adversarial input, and two different inputs share a key with
    probability about 2**-128. It is not a cryptographic hash: do not use it against an adversary.

**Exact key** of a text (:func:`exact_keys`)
    nd128 of the UTF-8 bytes of the text's *normalized form*, which is exactly
    ``neardup.text.char_stream(text, strip_punctuation=False)``: Unicode NFKC, case folding
    (``str.casefold``), then per character with the class table of :mod:`neardup.text`: format
    characters (class IGNORE: soft hyphen, zero-width space, ...) are dropped, every run of
    whitespace and other separators (classes SPACE and OTHER) becomes one space, and there is no
    space at either end. Letters, digits, ideographs, punctuation and symbols are kept as they are.
    With ``raw=True`` the key is nd128 of the text's UTF-8 bytes, untouched.

    Every shingle set neardup computes (word or character n-grams) is a function of this
    normalized form, so equal exact keys imply equal shingle sets, MinHash signatures and
    similarities: that is what makes the exact pre-pass (:func:`exact_duplicate_groups`,
    :class:`ExactPrepass`) a pure optimisation for the near-duplicate methods.

    A text whose normalized form is empty has the key :data:`EMPTY_KEY` (nd128 of ``b""``); the
    jobs treat such documents as empty: they never match anything.

**I-Match** (Chowdhury, Frieder, Grossman, McCabe 2002) and its multi-lexicon variant
(Kołcz, Chowdhury, Alspector 2004), over a collection of N documents:

1. the terms of a document are its unique word tokens (:func:`neardup.text.tokenize` rules),
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numba as nb
import numpy as np

from ._hash import MASK64, P1, P2, SEED, fmix64, rotl64, splitmix64
from .cluster import components
from .shingles import Shingling, _decode, encode_texts, shingle_batch
from .text import CHAR_CLASS, IGNORE, OTHER, SPACE, normalize

__all__ = [
    "EXACT_SCHEME",
    "EXACT_VERSION",
    "IMATCH_VERSION",
    "EMPTY_KEY",
    "nonempty",
    "hash128",
    "hash128_str",
    "exact_keys",
    "keys_from_encoded",
    "prepass_keys",
    "group_equal",
    "group_pairs",
    "ExactGroups",
    "exact_duplicate_groups",
    "ExactPrepass",
    "term_sets",
    "DocumentFrequencies",
    "df_bounds",
    "lexicon_salts",
    "imatch_signatures",
    "match_roots",
    "match_pairs",
    "match_similarity",
]

EXACT_SCHEME = "nd128"
EXACT_VERSION = 1
IMATCH_VERSION = 1

SEED_B = np.uint64(0x8EBC6AF09C88C6E3)
Q1 = np.uint64(0xA0761D6478BD642F)
Q2 = np.uint64(0xE7037ED1A0B428DB)
_GAMMA = 0x9E3779B97F4A7C15
_TOL = 1e-12


# --------------------------------------------------------------------------------------------
# nd128


@nb.njit(inline="always", cache=True)
def _lane_a(h, w):
    return rotl64(h ^ (w * P1), 31) * P2


@nb.njit(inline="always", cache=True)
def _lane_b(h, w):
    return rotl64(h ^ (w * Q1), 29) * Q2


@nb.njit(inline="always", cache=True)
def _push(byte, acc, shift, a, b):
    """Append one byte to the word accumulator; a full word goes into both lanes."""
    acc |= np.uint64(byte) << shift
    shift += np.uint64(8)
    if shift == 64:
        a = _lane_a(a, acc)
        b = _lane_b(b, acc)
        acc = np.uint64(0)
        shift = np.uint64(0)
    return acc, shift, a, b


@nb.njit(inline="always", cache=True)
def _finish(acc, shift, a, b, n, out, row):
    if shift:
        a = _lane_a(a, acc)
        b = _lane_b(b, acc)
    size = np.uint64(n)
    out[row, 0] = fmix64(a ^ size)
    out[row, 1] = fmix64(b ^ size)


@nb.njit(cache=True, nogil=True)
def _keys_kernel(data, offsets, table, raw, out):
    """``out[d]`` = nd128 of document d's bytes, normalized (see the module docstring) unless raw.

    The normalized bytes are never stored: each output byte goes into a 64-bit word accumulator,
    and every full word into both lanes.
    """
    ndoc = offsets.shape[0] - 1
    for d in range(ndoc):
        start = offsets[d]
        end = offsets[d + 1]
        a = SEED
        b = SEED_B
        acc = np.uint64(0)
        shift = np.uint64(0)
        if raw:
            i = start
            while i + 8 <= end:
                w = np.uint64(0)
                for q in range(8):
                    w |= np.uint64(data[i + q]) << np.uint64(8 * q)
                a = _lane_a(a, w)
                b = _lane_b(b, w)
                i += 8
            while i < end:
                acc, shift, a, b = _push(data[i], acc, shift, a, b)
                i += 1
            _finish(acc, shift, a, b, end - start, out, d)
            continue
        n = 0
        pending = False
        i = start
        while i < end:
            c = data[i]
            if c < 0x80:  # ASCII: one byte, one character
                cls = table[c]
                j = i + 1
            else:
                cp, j = _decode(data, i, end)
                cls = table[cp]
            if cls == SPACE or cls == OTHER:
                pending = n > 0
            elif cls != IGNORE:
                if pending:
                    pending = False
                    acc, shift, a, b = _push(32, acc, shift, a, b)
                    n += 1
                if j == i + 1:
                    acc, shift, a, b = _push(c, acc, shift, a, b)
                else:
                    for q in range(i, j):  # the character's own bytes, as they are
                        acc, shift, a, b = _push(data[q], acc, shift, a, b)
                n += j - i
            i = j
        _finish(acc, shift, a, b, n, out, d)


def _pack(encoded: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def hash128(data: bytes) -> tuple[int, int]:
    """nd128 of a byte string as two Python ints (lane A, lane B).

    >>> from neardup._hash import hash_bytes
    >>> hash128(b"hello")[0] == hash_bytes(b"hello")
    True
    """
    arr, offsets = _pack([bytes(data)])
    out = np.empty((1, 2), dtype=np.uint64)
    _keys_kernel(arr, offsets, CHAR_CLASS, True, out)
    return int(out[0, 0]), int(out[0, 1])


def hash128_str(s: str) -> tuple[int, int]:
    """nd128 of a string's UTF-8 bytes (lone surrogates pass through, as everywhere in neardup)."""
    return hash128(s.encode("utf-8", "surrogatepass"))


def keys_from_encoded(data: np.ndarray, offsets: np.ndarray, raw: bool = False) -> np.ndarray:
    """Exact keys of documents already packed as UTF-8 ``(data, offsets)``.

    For a caller that has run NFKC and case folding itself (e.g. ``shingles.encode_texts``):
    ``raw=False`` applies only the per-character step of the normalization.
    """
    out = np.empty((len(offsets) - 1, 2), dtype=np.uint64)
    _keys_kernel(np.asarray(data, dtype=np.uint8), np.asarray(offsets, dtype=np.int64), CHAR_CLASS, raw, out)
    return out


def exact_keys(texts: Sequence[str], raw: bool = False, *, nfkc: bool = True, casefold: bool = True) -> np.ndarray:
    """Exact keys ``uint64[n, 2]`` of texts: nd128 of the normalized text, or of the raw UTF-8 bytes.

    ``nfkc`` and ``casefold`` switch off those two normalization steps (use the values of the
    ``Shingling`` of the method the keys serve); ``raw=True`` ignores them.

    >>> k = exact_keys(["Hello,  WORLD\\n", "hello, world", "hello world"])
    >>> bool((k[0] == k[1]).all()), bool((k[1] == k[2]).all())
    (True, False)
    """
    if raw:
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    else:
        encoded = [normalize(t, nfkc=nfkc, casefold=casefold).encode("utf-8", "surrogatepass") for t in texts]
    data, offsets = _pack(encoded)
    return keys_from_encoded(data, offsets, raw)


def prepass_keys(texts: Sequence[str], *, nfkc: bool = True, casefold: bool = True) -> np.ndarray:
    """Cheaper keys for the exact pre-pass: nd128 of the UTF-8 bytes after NFKC and case folding
    only (no per-character pass), i.e. ``keys_from_encoded(*shingles.encode_texts(texts, sh), raw=True)``.

    Equal pre-pass keys imply equal exact keys, hence equal shingle sets, so grouping by them is
    as safe as grouping by :func:`exact_keys`; it catches byte-identical, case and compatibility
    variants, not whitespace-only ones (those are still found by the method itself, at similarity
    1.0). About 3x cheaper than :func:`exact_keys` (see docs/exact.md).

    >>> k = prepass_keys(["Hello World", "HELLO WORLD", "hello  world"])
    >>> bool((k[0] == k[1]).all()), bool((k[0] == k[2]).all())
    (True, False)
    """
    return keys_from_encoded(*encode_texts(texts, Shingling("word", 1, nfkc=nfkc, casefold=casefold)), raw=True)


# hash128(b"") written out, so that importing the module does not run a kernel (a test pins it)
EMPTY_KEY: np.ndarray = np.array([0x9353DFC8A195F3E2, 0x898CCD7541E68504], dtype=np.uint64)
"""The key of every text whose normalized form is empty (nd128 of ``b""``)."""


def nonempty(keys: np.ndarray) -> np.ndarray:
    """bool[n]: the keys that are not :data:`EMPTY_KEY`."""
    keys = np.asarray(keys, dtype=np.uint64)
    return (keys != EMPTY_KEY).any(axis=1)


# --------------------------------------------------------------------------------------------
# grouping


def group_equal(keys: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """int64[n]: for every document the smallest index with an equal key (itself if none).

    Documents where ``valid`` is False (no key) are their own group. Sorting keys, O(n log n).

    >>> group_equal(np.array([[1, 2], [3, 4], [1, 2], [1, 5]], dtype=np.uint64)).tolist()
    [0, 1, 0, 3]
    """
    keys = np.asarray(keys, dtype=np.uint64)
    if keys.ndim != 2 or keys.shape[1] != 2:
        raise ValueError(f"keys must have shape (n, 2), got {keys.shape}")
    n = keys.shape[0]
    root = np.arange(n, dtype=np.int64)
    idx = root.copy() if valid is None else np.flatnonzero(np.asarray(valid, dtype=bool))
    if len(idx) < 2:
        return root
    k = keys[idx]
    order = np.lexsort((idx, k[:, 1], k[:, 0]))
    sk = k[order]
    new = np.ones(len(idx), dtype=bool)
    new[1:] = (sk[1:] != sk[:-1]).any(axis=1)
    sorted_idx = idx[order]
    first = sorted_idx[new]  # smallest index of each run (ties sorted by index)
    root[sorted_idx] = first[np.cumsum(new) - 1]
    return root


@nb.njit(cache=True, nogil=True)
def _pairs_within(members, starts, ends, total):
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    p = 0
    for g in range(starts.shape[0]):
        for x in range(starts[g], ends[g]):
            for y in range(x + 1, ends[g]):
                a[p] = members[x]
                b[p] = members[y]
                p += 1
    return a, b


def _runs(root: np.ndarray):
    """Members of every group of two or more, as (members sorted by (root, index), starts, ends)."""
    n = len(root)
    order = np.lexsort((np.arange(n), root))
    sr = root[order]
    new = np.ones(n, dtype=bool)
    new[1:] = sr[1:] != sr[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)
    big = ends - starts >= 2
    return order.astype(np.int64), starts[big].astype(np.int64), ends[big].astype(np.int64)


def group_pairs(root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (a < b) of documents with the same root, sorted by (a, b).

    Quadratic in group size: a group of m documents gives m (m - 1) / 2 pairs.

    >>> [x.tolist() for x in group_pairs(np.array([0, 1, 0, 0]))]
    [[0, 0, 2], [2, 3, 3]]
    """
    root = np.asarray(root, dtype=np.int64)
    if not len(root):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    members, starts, ends = _runs(root)
    sizes = ends - starts
    a, b = _pairs_within(members, starts, ends, int((sizes * (sizes - 1) // 2).sum()))
    order = np.lexsort((b, a))
    return a[order], b[order]


# --------------------------------------------------------------------------------------------
# the exact pre-pass of the near-duplicate methods


@dataclass(frozen=True, eq=False)
class ExactGroups:
    """Exact-duplicate groups of a collection, and the maps between all documents and the
    *representatives* (the first document of each group), which are the only ones sketched.

    Representatives keep their input order, so sketch-stage arrays of the representatives are
    indexed by ``sub = to_sketched(doc)`` (0 .. n_sketched - 1).
    """

    rep: np.ndarray
    """int64[n] smallest document index with the same exact key (itself for unique documents)."""

    @property
    def sketch(self) -> np.ndarray:
        """bool[n] the documents to sketch: the representatives."""
        return self.rep == np.arange(len(self.rep))

    @property
    def index(self) -> np.ndarray:
        """int64[m] document index of each representative, in input order (sub -> doc)."""
        return np.flatnonzero(self.sketch)

    @property
    def n_duplicates(self) -> int:
        """Documents not sketched because an earlier one has the same key."""
        return int(len(self.rep) - np.count_nonzero(self.sketch))

    def to_sketched(self, docs: np.ndarray) -> np.ndarray:
        """Position among the representatives of each document's representative (doc -> sub)."""
        pos = np.cumsum(self.sketch) - 1
        return pos[self.rep[np.asarray(docs, dtype=np.int64)]]

    def _dissolved(self, sub_empty: np.ndarray | None) -> np.ndarray:
        """``rep`` with the groups whose representative is empty split into singletons."""
        if sub_empty is None:
            return self.rep
        sub_empty = np.asarray(sub_empty, dtype=bool)
        empty_doc = sub_empty[self.to_sketched(np.arange(len(self.rep)))]
        return np.where(empty_doc, np.arange(len(self.rep)), self.rep)

    def expand_root(self, sub_root: np.ndarray, sub_empty: np.ndarray | None = None) -> np.ndarray:
        """Clusters of all documents from the clusters of the representatives.

        ``sub_root[s]`` is the root (smallest member, a sub index) of representative s's cluster;
        the result is the root of every document's cluster as a document index, again the
        smallest member. Groups whose representative is empty (``sub_empty``, e.g. no shingles)
        are dissolved: empty documents never match, not even each other.
        """
        sub_root = np.asarray(sub_root, dtype=np.int64)
        if len(sub_root) != len(self.index):
            raise ValueError(f"sub_root has {len(sub_root)} entries, expected one per representative "
                             f"({len(self.index)})")
        root = self.index[sub_root][self.to_sketched(np.arange(len(self.rep)))]
        if sub_empty is not None:
            empty_doc = np.asarray(sub_empty, dtype=bool)[self.to_sketched(np.arange(len(self.rep)))]
            root = np.where(empty_doc, np.arange(len(self.rep)), root)
        return root

    def expand_pairs(self, a: np.ndarray, b: np.ndarray, s: np.ndarray, sub_empty: np.ndarray | None = None,
                     complete: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs of all documents from the verified pairs ``(a, b, s)`` of the representatives.

        ``complete=True`` gives the pairs the method would have found without the pre-pass:
        every pair inside an exact group (similarity 1.0) and, for each representative pair,
        every member of one group with every member of the other (similarity s). Quadratic in
        group sizes. ``complete=False`` gives a spanning version: each member paired with its
        representative (1.0) plus the representative pairs. Sorted by (a, b), a < b.
        """
        rep = self._dissolved(sub_empty)
        members, starts, ends = _runs(rep)
        if complete:
            sizes = ends - starts
            ga, gb = _pairs_within(members, starts, ends, int((sizes * (sizes - 1) // 2).sum()))
        else:
            ga, gb = _to_rep(rep)
        index = self.index
        a = index[np.asarray(a, dtype=np.int64)]
        b = index[np.asarray(b, dtype=np.int64)]
        s = np.asarray(s, dtype=np.float64)
        if complete and len(a):
            # CSR of the members of every group, keyed by representative
            n = len(rep)
            order = np.lexsort((np.arange(n), rep))
            counts = np.bincount(rep, minlength=n)
            first = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts, out=first[1:])
            ca, cb, cs = _cross(order.astype(np.int64), first, a, b, s)
        else:
            ca, cb, cs = np.minimum(a, b), np.maximum(a, b), s
        pa = np.concatenate([ga, ca])
        pb = np.concatenate([gb, cb])
        ps = np.concatenate([np.ones(len(ga)), cs])
        order = np.lexsort((pb, pa))
        return pa[order], pb[order], ps[order]


def _to_rep(rep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    docs = np.flatnonzero(rep != np.arange(len(rep)))
    return rep[docs].astype(np.int64), docs.astype(np.int64)


@nb.njit(cache=True, nogil=True)
def _cross(members, first, a, b, s):
    total = 0
    for q in range(a.shape[0]):
        total += (first[a[q] + 1] - first[a[q]]) * (first[b[q] + 1] - first[b[q]])
    pa = np.empty(total, dtype=np.int64)
    pb = np.empty(total, dtype=np.int64)
    ps = np.empty(total, dtype=np.float64)
    p = 0
    for q in range(a.shape[0]):
        for x in range(first[a[q]], first[a[q] + 1]):
            for y in range(first[b[q]], first[b[q] + 1]):
                u = members[x]
                v = members[y]
                pa[p] = min(u, v)
                pb[p] = max(u, v)
                ps[p] = s[q]
                p += 1
    return pa, pb, ps


def exact_duplicate_groups(keys: np.ndarray, valid: np.ndarray | None = None) -> ExactGroups:
    """The exact pre-pass over the keys of a whole collection: representative of every document
    and the mask of documents to sketch (``.rep``, ``.sketch``).

    ``valid`` (default: keys other than :data:`EMPTY_KEY`) marks the documents that may be
    grouped; the others are their own representatives.

    >>> g = exact_duplicate_groups(exact_keys(["a b", "x", "A  B", ""]))
    >>> g.rep.tolist(), g.sketch.tolist()
    ([0, 1, 0, 3], [True, True, False, True])
    """
    keys = np.asarray(keys, dtype=np.uint64)
    if valid is None:
        valid = nonempty(keys)
    return ExactGroups(group_equal(keys, valid))


@nb.njit(inline="always", cache=True)
def _find_slot(slots, reps, k0, k1):
    """The slot of key (k0, k1) in the open-addressing table (``slots`` keys, ``reps`` their
    first document, -1 = free), or the free slot where it belongs: linear probing from the key's
    low bits, which are hash output."""
    mask = np.uint64(reps.shape[0] - 1)
    h = k0 & mask
    while reps[h] >= 0 and not (slots[h, 0] == k0 and slots[h, 1] == k1):
        h = (h + np.uint64(1)) & mask
    return h


@nb.njit(cache=True, nogil=True)
def _admit_kernel(slots, reps, keys, valid, start, rep):
    """Look every valid key up in the table (see :func:`_find_slot`) and insert the new ones.
    ``rep[i]`` becomes the first document with key i (``start + i`` if new). Returns how many
    keys were inserted."""
    added = 0
    for i in range(keys.shape[0]):
        rep[i] = start + i
        if not valid[i]:
            continue
        h = _find_slot(slots, reps, keys[i, 0], keys[i, 1])
        if reps[h] >= 0:
            rep[i] = reps[h]
        else:
            slots[h, 0], slots[h, 1], reps[h] = keys[i, 0], keys[i, 1], start + i
            added += 1
    return added


@nb.njit(cache=True, nogil=True)
def _rehash_kernel(slots, reps, old_slots, old_reps):
    """Insert every entry of the old table into the (larger, empty) new one."""
    for j in range(old_reps.shape[0]):
        if old_reps[j] >= 0:
            h = _find_slot(slots, reps, old_slots[j, 0], old_slots[j, 1])
            slots[h, 0], slots[h, 1], reps[h] = old_slots[j, 0], old_slots[j, 1], old_reps[j]


class ExactPrepass:
    """The exact pre-pass in streaming form: batch after batch, which documents to sketch.

    ``admit(keys)`` must be called once per batch, in input order, from one thread; it returns
    the batch's mask of documents whose key was not seen before (the representatives). After
    the last batch, :meth:`groups` equals ``exact_duplicate_groups(all keys)``. The distinct keys
    live in an open-addressing hash table kept at most half full (a kernel call per batch, no
    Python object per key): 48 to 96 bytes per distinct key.

    >>> p = ExactPrepass()
    >>> p.admit(exact_keys(["a", "b"])).tolist(), p.admit(exact_keys(["B", "c", ""])).tolist()
    ([True, True], [False, True, True])
    >>> p.groups().rep.tolist()
    [0, 1, 1, 3, 4]
    """

    def __init__(self) -> None:
        self._slots = np.zeros((1024, 2), dtype=np.uint64)
        self._table_reps = np.full(1024, -1, dtype=np.int64)
        self._distinct = 0
        self._reps: list[np.ndarray] = []
        self._n = 0

    def admit(self, keys: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        if keys.ndim != 2 or keys.shape[1] != 2:
            raise ValueError(f"keys must have shape (n, 2), got {keys.shape}")
        if valid is None:
            valid = nonempty(keys)
        valid = np.ascontiguousarray(valid, dtype=bool)
        start, m = self._n, len(keys)
        self._reserve(self._distinct + m)
        rep = np.empty(m, dtype=np.int64)
        self._distinct += _admit_kernel(self._slots, self._table_reps, keys, valid, start, rep)
        self._reps.append(rep)
        self._n += m
        return rep == np.arange(start, start + m)

    def _reserve(self, distinct: int) -> None:
        """Grow the table (rehashing every entry) so that ``distinct`` keys fill at most half of it."""
        cap = len(self._table_reps)
        if 2 * distinct <= cap:
            return
        while 2 * distinct > cap:
            cap *= 2
        old_slots, old_reps = self._slots, self._table_reps
        self._slots = np.zeros((cap, 2), dtype=np.uint64)
        self._table_reps = np.full(cap, -1, dtype=np.int64)
        _rehash_kernel(self._slots, self._table_reps, old_slots, old_reps)

    def groups(self) -> ExactGroups:
        return ExactGroups(np.concatenate(self._reps) if self._reps else np.empty(0, dtype=np.int64))


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
    states = np.array([(seed + j * _GAMMA) & MASK64 for j in range(lexicons)], dtype=np.uint64)
    return _salts(states)


@nb.njit(cache=True)
def _salts(states):
    out = np.empty_like(states)
    for j in range(states.shape[0]):
        out[j] = splitmix64(states[j])
    return out


def _fraction_threshold(fraction: float) -> tuple[np.uint64, bool]:
    """(floor(fraction * 2**64), keep everything) for the sub-lexicon test."""
    if fraction >= 1.0:
        return np.uint64(MASK64), True
    return np.uint64(min(int(fraction * 2.0**64), MASK64)), False


@nb.njit(cache=True, nogil=True)
def _imatch_kernel(values, offsets, kept, salts, threshold, keep_all, min_terms, sigs, has):
    ndoc = offsets.shape[0] - 1
    for d in range(ndoc):
        for j in range(salts.shape[0]):
            a = SEED
            b = SEED_B
            count = 0
            for p in range(offsets[d], offsets[d + 1]):
                if not kept[p]:
                    continue
                t = values[p]
                if j > 0 and not keep_all and fmix64(t ^ salts[j]) >= threshold:
                    continue
                a = _lane_a(a, t)
                b = _lane_b(b, t)
                count += 1
            if count >= min_terms and count > 0:
                n = np.uint64(8 * count)
                sigs[d, j, 0] = fmix64(a ^ n)
                sigs[d, j, 1] = fmix64(b ^ n)
                has[d, j] = True
            else:
                sigs[d, j, 0] = 0
                sigs[d, j, 1] = 0
                has[d, j] = False


def imatch_signatures(values: np.ndarray, offsets: np.ndarray, terms: np.ndarray, df: np.ndarray,
                      df_range: tuple[int, int], lexicons: int = 1, fraction: float = 1.0, seed: int = 1,
                      min_terms: int = 1) -> tuple[np.ndarray, np.ndarray]:
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
    _imatch_kernel(values, offsets, kept, lexicon_salts(lexicons, seed), threshold, keep_all, int(min_terms),
                   sigs, has)
    return sigs, has


def match_roots(sigs: np.ndarray, has: np.ndarray) -> np.ndarray:
    """int64[n] clusters of documents that agree under any of the L signatures (smallest index)."""
    n, lexicons = has.shape
    if lexicons == 1:
        return group_equal(sigs[:, 0], has[:, 0])
    a, b = [], []
    for j in range(lexicons):
        r = group_equal(sigs[:, j], has[:, j])
        moved = np.flatnonzero(r != np.arange(n))
        a.append(moved)
        b.append(r[moved])
    return components(n, np.concatenate(a), np.concatenate(b))


def match_pairs(sigs: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (a < b) agreeing under at least one of the L signatures, with the share of the
    L signatures that agree as similarity. Quadratic in the size of each signature group."""
    n, lexicons = has.shape
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
