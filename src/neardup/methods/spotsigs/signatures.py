"""SpotSigs: spot signatures, and the exact all-pairs search over them.

Theobald, Siddharth and Paepcke, "SpotSigs: robust and efficient near duplicate detection in
large web collections", SIGIR 2008. Signatures favour the natural-language core of a page over
navigation, advertisements and footers; the search returns *every* pair of documents whose
weighted Jaccard reaches the threshold, exactly, with length partitions and a pruned inverted
index instead of hashing.

Spot signatures
---------------
Text is tokenized as everywhere in neardup (:mod:`neardup.text.normalize`: NFKC, case folding, word tokens
of any script). Given antecedents ``A``, stopwords ``S`` (the antecedents always count as
stopwords), a spot distance ``d >= 1`` and a chain length ``c >= 1``: for every token ``t_i`` in
``A``, let ``w_1, w_2, ...`` be the tokens after ``t_i`` that are not stopwords. The signature of
that spot is the chain ``w_d, w_2d, ..., w_cd``; a spot with fewer than ``c * d`` non-stopwords
after it (the end of the text) has none. Its key is the string ``"a:w_d:...:w_cd"`` (key mode
``"antecedent"``, the paper's form, e.g. ``the:south:carolina``) or ``"w_d:...:w_cd"`` (key mode
``"chain"``), hashed to 64 bits with :func:`neardup._kernels.hashing.hash_str` (scheme nd64; tokens never
contain ``:``, so keys are unambiguous). A document is the **multiset** of its keys: signature
hash -> number of occurrences, stored as CSR (sorted hashes, counts). Its length ``|d|`` is the
sum of the counts.

With ``d = 1`` this is the algorithm on the talk's slide. For ``d > 1`` the slide's pseudocode
counts ``d`` raw token positions (stopwords included) and then skips stopwords; we count
non-stopwords only, so that inserting or deleting a function word never changes a chain. (The
pseudocode also reads past the end of the token list; we drop incomplete chains.)

Similarity
----------
Weighted (multiset) Jaccard ``sim(A, B) = sum_s min(a_s, b_s) / sum_s max(a_s, b_s)``; an empty
document is never similar to anything. Since the intersection is at most ``min(|A|, |B|)`` and the
union at least ``max(|A|, |B|)``, ``sim(A, B) <= min(|A|, |B|) / max(|A|, |B|)``: two documents
whose lengths differ by more than that ratio allows are never compared.

Every threshold test is ``inter / union >= tau`` in float64, and every bound is a quotient of
integers that dominate ``inter`` and ``union``; correctly rounded division is monotone, so a bound
below ``tau`` proves the float similarity is below ``tau`` too, and the search is exact to the bit
against brute force.

IDF filter
----------
With ``N`` documents in the collection and ``df(s)`` the number of them containing ``s``, the
normalised inverse document frequency is ``idf(s) = log(N / df(s)) / log(N)``, in ``[0, 1]``: 0 for
a signature in every document, 1 for one in a single document (``N >= 2``; with fewer documents
the filter keeps everything). ``idf_filter`` keeps the signatures with ``lo <= idf(s) <= hi`` and
recomputes each document's length from what it kept. Both ends count, and the decision is
made once per distinct ``df`` value, so equal frequencies are always treated alike.

Partitions
----------
``partition_bounds(tau, max_len)``: ``p_0 = 1`` and ``p_{k+1}`` is the smallest integer above
``p_k`` with ``p_{k+1} - p_k > (1 - tau) p_{k+1}`` (i.e. ``p_k / p_{k+1} < tau``). Partition
``k`` holds the documents of length ``[p_k, p_{k+1})``. Every length in a partition is compatible
with its first, and two compatible lengths are at most one partition apart: if ``|x| < p_{k+1}``
and ``|y| >= p_{k+2}`` then ``|x| / |y| < p_{k+1} / p_{k+2} < tau``. So each document needs only its
own partition and the next one (the "right neighbour").

Pruned inverted index
---------------------
Per partition, an inverted list per signature holds the documents containing it, sorted by
length (ties by document number); a signature's per-partition lists are stored one after the
other, in partition order. A document ``x`` searches only longer documents (equal lengths: later
ones), in its own and the next partition, opening its lists by ascending document frequency.
Let ``delta1`` be the weight of ``x``'s signatures whose lists are done and ``delta2 = |y| - |x|``.
A document ``y`` first met now shares none of those signatures, so
``inter <= |x| - delta1`` and ``union >= |y| + delta1``, and

    sim(x, y) <= (|x| - delta1) / (|x| + delta1 + delta2).

That is ``< tau`` exactly when ``(1 + tau) delta1 + tau delta2 > (1 - tau) |x|``: the paper's
"break if delta1 + delta2 > (1 - tau)|d|", in the tight form for the weighted Jaccard. Lists are
sorted by length, so the first ``y`` that fails ends the list (a list *cut short*, the rest of
it *pruned*), and once the bound fails for ``delta2 = 0`` no later list can hold a new candidate
and the remaining lists are not opened at all. Every other ``y`` is compared once (its full
weighted Jaccard, a "similarity computation"). Documents are processed in parallel; each pair is
found exactly once (from its shorter document) and the output is sorted, so results and counters
do not depend on the number of threads.

``all_pairs_unpruned`` is the same search with neither partitions nor pruning (every document
that shares a signature is compared once), and ``all_pairs_bruteforce`` compares every pair;
both exist to check and to measure ``all_pairs``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..._kernels.charclass import CHAR_CLASS
from ..._kernels.spotsigs import KEY_ANTECEDENT, KEY_CHAIN, extract_kernel, row_sums
from ...core.arrays import csr_take
from ...core.errors import IncompatibleSketchError
from ...core.validation import Instance, Optional, Range, Real, check
from ...text.normalize import normalize, tokenize
from .scheme import SpotSigsScheme


# ---------------------------------------------------------------------------------------------
# Signature sets (CSR multisets)
@dataclass(frozen=True, eq=False)
class SpotSignatures:
    """Multisets of signatures of n documents, as CSR.

    Document ``i`` owns ``values[offsets[i]:offsets[i + 1]]`` (sorted, distinct uint64 hashes) with
    multiplicities ``counts`` (int32, >= 1). ``scheme`` is None for multisets built from arbitrary
    integers (:meth:`from_multisets`).
    """

    values: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray
    scheme: SpotSigsScheme | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """int64[n]: |d|, the number of signature occurrences of each document."""
        return row_sums(self.counts, self.offsets)

    def doc(self, i: int) -> dict[int, int]:
        """Document i as a dict hash -> count."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return dict(zip(self.values[lo:hi].tolist(), self.counts[lo:hi].tolist()))

    @classmethod
    def from_multisets(
        cls, docs: Iterable[Mapping[int, int] | Iterable[int]], scheme: SpotSigsScheme | None = None
    ) -> SpotSignatures:
        """Build from mappings item -> count or iterables with repeats, items being integers
        in [0, 2**64) used as they are (no hashing).

        >>> s = SpotSignatures.from_multisets([{5: 2, 1: 1}, [7, 7, 7], []])
        >>> s.lengths.tolist(), s.doc(0)
        ([3, 3, 0], {1: 1, 5: 2})
        """
        values, counts, sizes = [], [], []
        for d in docs:
            if not isinstance(d, Mapping):
                m: dict[int, int] = {}
                for x in d:
                    m[x] = m.get(x, 0) + 1
                d = m
            items = sorted((int(k), int(v)) for k, v in d.items() if v)
            if any(v < 0 for _, v in items):
                raise ValueError("multiset counts must be >= 0")
            values.extend(k for k, _ in items)
            counts.extend(v for _, v in items)
            sizes.append(len(items))
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(np.asarray(sizes, dtype=np.int64), out=offsets[1:])
        return cls(np.array(values, dtype=np.uint64), np.array(counts, dtype=np.int32), offsets, scheme)

    @classmethod
    def concat(cls, parts: Sequence[SpotSignatures], scheme: SpotSigsScheme | None = None) -> SpotSignatures:
        """The documents of ``parts``, one after the other; all must have ``scheme`` (by default
        the first part's)."""
        if scheme is None and parts:
            scheme = parts[0].scheme
        for p in parts:
            if p.scheme != scheme:
                raise IncompatibleSketchError(
                    f"spot signatures of different schemes cannot be mixed: {p.scheme} vs {scheme}"
                )
        if not parts:
            return cls(np.empty(0, np.uint64), np.empty(0, np.int32), np.zeros(1, np.int64), scheme)
        sizes = np.concatenate([np.diff(p.offsets) for p in parts])
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(
            np.concatenate([p.values for p in parts]), np.concatenate([p.counts for p in parts]), offsets, scheme
        )

    def take(self, docs: np.ndarray) -> SpotSignatures:
        """The documents ``docs`` (positions), in that order.

        >>> s = SpotSignatures.from_multisets([{5: 2}, {7: 3, 8: 1}, {9: 1}])
        >>> t = s.take(np.array([2, 1]))
        >>> t.doc(0), t.doc(1)
        ({9: 1}, {7: 3, 8: 1})
        """
        entries, offsets = csr_take(self.offsets, docs)
        return SpotSignatures(self.values[entries], self.counts[entries], offsets, self.scheme)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays."""
        return int(self.values.nbytes + self.counts.nbytes + self.offsets.nbytes)

    def select(self, keep: np.ndarray) -> SpotSignatures:
        """The same documents keeping only the entries where the bool mask ``keep`` is True."""
        doc = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))
        sizes = np.bincount(doc[keep], minlength=len(self))
        offsets = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return SpotSignatures(self.values[keep], self.counts[keep], offsets, self.scheme)


def encode(texts: Sequence[str], scheme: SpotSigsScheme) -> tuple[np.ndarray, np.ndarray]:
    """Normalize texts (NFKC, case folding) and pack their UTF-8 bytes as (data, offsets)."""
    encoded = [normalize(t, nfkc=scheme.nfkc, casefold=scheme.casefold).encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def extract(texts: Sequence[str], scheme: SpotSigsScheme | None = None) -> SpotSignatures:
    """Spot signature multisets of many texts (one kernel pass over their UTF-8 bytes).

    >>> from neardup._kernels.hashing import hash_str
    >>> s = extract(["At a rally to kick off a weeklong campaign", "no antecedent here"],
    ...             SpotSigsScheme(antecedents=["a"], stopwords=["to", "off"]))
    >>> s.lengths.tolist()
    [2, 0]
    >>> sorted(s.doc(0)) == sorted([hash_str("a:rally:kick"), hash_str("a:weeklong:campaign")])
    True
    """
    scheme = check("scheme", scheme, Optional(Instance(SpotSigsScheme))) or SpotSigsScheme()
    data, offsets = encode(texts, scheme)
    ant, skip = _scheme_arrays(scheme)
    v, c, off = extract_kernel(
        data,
        offsets,
        CHAR_CLASS,
        ant,
        skip,
        scheme.spot_distance,
        scheme.chain,
        KEY_ANTECEDENT if scheme.key == "antecedent" else KEY_CHAIN,
    )
    return SpotSignatures(v, c, off, scheme)


_ARRAYS: dict = {}


def _scheme_arrays(scheme: SpotSigsScheme) -> tuple[np.ndarray, np.ndarray]:
    key = (scheme.antecedents, scheme.stopwords)
    arrays = _ARRAYS.get(key)
    if arrays is None:
        arrays = scheme.word_hashes()
        if len(_ARRAYS) > 16:
            _ARRAYS.clear()
        _ARRAYS[key] = arrays
    return arrays


def signature_keys(text: str, scheme: SpotSigsScheme | None = None) -> list[str]:
    """The signature keys of a text in text order, as strings (a slow reference in Python);
    ``extract`` gives the multiset of their ``hash_str`` values.

    The example of the SpotSigs talk (antecedents {a, an, the, is}, d = 1, c = 2; the slide lists
    "an:attack:circulating", so "an" is an antecedent too, and writes "g:weeklong:campaign" for
    "a:weeklong:campaign"):

    >>> text = ("At a rally to kick off a weeklong campaign for the South Carolina primary, Obama "
    ...         "tried to set the record straight from an attack circulating widely on the Internet "
    ...         "that is designed to play into prejudices against Muslims and fears of terrorism.")
    >>> signature_keys(text, SpotSigsScheme(antecedents=["a", "an", "the", "is"]))
    ['a:rally:kick', 'a:weeklong:campaign', 'the:south:carolina', 'the:record:straight', \
'an:attack:circulating', 'the:internet:designed', 'is:designed:play']
    """
    scheme = check("scheme", scheme, Optional(Instance(SpotSigsScheme))) or SpotSigsScheme()
    toks = tokenize(text, nfkc=scheme.nfkc, casefold=scheme.casefold)
    ants = set(scheme.antecedents)
    skip = set(scheme.skipped)
    d, c = scheme.spot_distance, scheme.chain
    nonstop = [k for k, t in enumerate(toks) if t not in skip]
    keys = []
    first = 0  # index in nonstop of the first non-stopword after token i
    for i, tok in enumerate(toks):
        while first < len(nonstop) and nonstop[first] <= i:
            first += 1
        if tok not in ants or first + c * d > len(nonstop):
            continue
        chain = [toks[nonstop[first + e * d - 1]] for e in range(1, c + 1)]
        keys.append(":".join(([tok] if scheme.key == "antecedent" else []) + chain))
    return keys


# ---------------------------------------------------------------------------------------------
# IDF filter
def normalized_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """``log(n_docs / df) / log(n_docs)`` in [0, 1] (all zeros when n_docs < 2).

    >>> normalized_idf(np.array([1, 10, 100]), 100).tolist()
    [1.0, 0.5, 0.0]
    """
    df = np.asarray(df, dtype=np.float64)
    if n_docs < 2:
        return np.zeros(df.shape)
    return np.log(n_docs / df) / math.log(n_docs)


class DocumentFrequencies:
    """Collection document frequencies, accumulated batch by batch.

    >>> f = DocumentFrequencies()
    >>> f.add(SpotSignatures.from_multisets([{1: 3, 2: 1}, {2: 5}]))
    >>> f.n_docs, f.lookup(np.array([1, 2, 3], dtype=np.uint64)).tolist()
    (2, [1, 2, 0])
    """

    def __init__(self) -> None:
        self.n_docs = 0
        self._keys = np.empty(0, dtype=np.uint64)
        self._df = np.empty(0, dtype=np.int64)
        self._pending: list[np.ndarray] = []
        self._pending_size = 0

    def add(self, sigs: SpotSignatures) -> None:
        """Count the documents of ``sigs`` (each document's values are distinct)."""
        self.n_docs += len(sigs)
        if len(sigs.values):
            self._pending.append(sigs.values)
            self._pending_size += len(sigs.values)
        if self._pending_size > max(len(self._keys), 1 << 20):
            self._compact()

    def merge(self, other: DocumentFrequencies) -> None:
        """Add the counts of ``other`` (another stretch of the collection)."""
        self.n_docs += other.n_docs
        keys, df = other.table()
        self._compact(keys, df)

    def _compact(self, more_keys: np.ndarray | None = None, more_df: np.ndarray | None = None) -> None:
        if not self._pending and more_keys is None:
            return
        new = np.concatenate(self._pending) if self._pending else np.empty(0, dtype=np.uint64)
        self._pending, self._pending_size = [], 0
        keys = np.concatenate([self._keys, new] + ([more_keys] if more_keys is not None else []))
        weights = np.concatenate(
            [self._df, np.ones(len(new), dtype=np.int64)] + ([more_df] if more_df is not None else [])
        )
        order = np.argsort(keys, kind="stable")
        keys, weights = keys[order], weights[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
        self._keys = keys[starts]
        self._df = np.add.reduceat(weights, starts) if len(keys) else np.empty(0, np.int64)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct signatures uint64, document frequency int64)."""
        self._compact()
        return self._keys, self._df

    def lookup(self, values: np.ndarray) -> np.ndarray:
        """Document frequency of each value (0 for unseen ones)."""
        keys, df = self.table()
        if not len(keys):
            return np.zeros(len(values), dtype=np.int64)
        i = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
        return np.where(keys[i] == values, df[i], 0)

    @classmethod
    def of(cls, sigs: SpotSignatures) -> DocumentFrequencies:
        f = cls()
        f.add(sigs)
        return f


IDF_BAND = Range(Real(0, 1))
"""An IDF band ``(lo, hi)`` with ``0 <= lo <= hi <= 1``."""


def idf_filter(
    sigs: SpotSignatures, band: tuple[float, float], df: DocumentFrequencies | None = None
) -> SpotSignatures:
    """Keep the signatures whose normalised IDF lies in ``band = (lo, hi)`` (both ends included);
    document lengths follow (a document may become empty).

    ``df`` holds the collection's document frequencies; by default those of ``sigs`` itself.
    Signatures absent from ``df`` count as df = 1.

    >>> s = SpotSignatures.from_multisets([{1: 2, 2: 1}, {1: 1, 3: 4}, {1: 1, 2: 2}, {4: 1}])
    >>> idf_filter(s, (0.1, 0.6)).lengths.tolist()   # idf(1) = 0.21, idf(2) = 0.5, idf(3, 4) = 1
    [3, 1, 3, 0]
    """
    lo, hi = check("idf_band", band, IDF_BAND)
    df = df if df is not None else DocumentFrequencies.of(sigs)
    if df.n_docs < 2:
        return sigs
    freq = np.maximum(df.lookup(sigs.values), 1)
    distinct, inverse = np.unique(freq, return_inverse=True)
    idf = normalized_idf(distinct, df.n_docs)
    keep = ((idf >= lo) & (idf <= hi))[inverse.reshape(-1)]
    return sigs.select(keep)
