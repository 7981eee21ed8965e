"""SpotSigs: spot signatures, and the exact all-pairs search over them.

Theobald, Siddharth and Paepcke, "SpotSigs: robust and efficient near duplicate detection in
large web collections", SIGIR 2008. Signatures favour the natural-language core of a page over
navigation, advertisements and footers; the search returns *every* pair of documents whose
weighted Jaccard reaches the threshold, exactly, with length partitions and a pruned inverted
index instead of hashing.

Spot signatures
---------------
Text is tokenized as everywhere in neardup (:mod:`neardup.text`: NFKC, case folding, word tokens
of any script). Given antecedents ``A``, stopwords ``S`` (the antecedents always count as
stopwords), a spot distance ``d >= 1`` and a chain length ``c >= 1``: for every token ``t_i`` in
``A``, let ``w_1, w_2, ...`` be the tokens after ``t_i`` that are not stopwords. The signature of
that spot is the chain ``w_d, w_2d, ..., w_cd``; a spot with fewer than ``c * d`` non-stopwords
after it (the end of the text) has none. Its key is the string ``"a:w_d:...:w_cd"`` (key mode
``"antecedent"``, the paper's form, e.g. ``the:south:carolina``) or ``"w_d:...:w_cd"`` (key mode
``"chain"``), hashed to 64 bits with :func:`neardup._hash.hash_str` (scheme nd64; tokens never
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
import os
import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, NamedTuple, Sequence

import numba as nb
import numpy as np

from ._hash import fmix64, hash_span_words, hash_str
from .errors import IncompatibleSketchError, InputError
from .shingles import _decode
from .stopwords import ENGLISH_ANTECEDENTS, ENGLISH_STOPWORDS
from .text import CHAR_CLASS, IDEOGRAPH, IGNORE, OTHER, WORD, normalize, tokenize

FORMAT_VERSION = 1
HASH_FAMILY = "nd64"
KEY_ANTECEDENT, KEY_CHAIN = 0, 1
_COLON = 58


# ---------------------------------------------------------------------------------------------
# Scheme and word lists


def _canonical_words(words, what: str, nfkc: bool, casefold: bool) -> tuple[str, ...]:
    if isinstance(words, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of words, not a single string "
                        f"(use load_words(path) to read a file)")
    out = set()
    for w in words:
        if not isinstance(w, str):
            raise TypeError(f"{what} must be strings, got {w!r}")
        norm = normalize(w, nfkc=nfkc, casefold=casefold)
        toks = tokenize(norm, nfkc=False, casefold=False)
        if toks != [norm]:
            raise ValueError(f"each of the {what} must be a single word token; {w!r} is {toks!r}")
        out.add(norm)
    return tuple(sorted(out))


@dataclass(frozen=True)
class SpotSigsScheme:
    """Everything that determines the spot signatures of a text; signatures of different
    schemes never mix.

    Word lists are stored normalized (NFKC, case folding), sorted and without repeats, so two
    schemes built from the same words in any order are equal.

    Attributes:
        antecedents: words a signature starts at (default: :data:`ENGLISH_ANTECEDENTS`).
        stopwords: words a chain skips; the antecedents are skipped too
            (default: :data:`ENGLISH_STOPWORDS`).
        spot_distance: d >= 1, the chain takes every d-th non-stopword after the antecedent.
        chain: c >= 1, the number of words in a chain.
        key: ``"antecedent"`` (key ``"the:south:carolina"``) or ``"chain"`` (``"south:carolina"``).
        nfkc, casefold: text normalization (see :mod:`neardup.text`).
        hash_family, format_version: bumped whenever the same inputs would give other values.

    >>> s = SpotSigsScheme(antecedents=["The", "a"], stopwords=["to"], chain=2)
    >>> s.antecedents
    ('a', 'the')
    """

    antecedents: tuple[str, ...] = ENGLISH_ANTECEDENTS
    stopwords: tuple[str, ...] = ENGLISH_STOPWORDS
    spot_distance: int = 1
    chain: int = 2
    key: Literal["antecedent", "chain"] = "antecedent"
    nfkc: bool = True
    casefold: bool = True
    hash_family: str = HASH_FAMILY
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        for name in ("spot_distance", "chain"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.key not in ("antecedent", "chain"):
            raise ValueError(f"key must be 'antecedent' or 'chain', got {self.key!r}")
        ants = _canonical_words(self.antecedents, "antecedents", self.nfkc, self.casefold)
        if not ants:
            raise ValueError("antecedents must not be empty: signatures start at antecedents")
        object.__setattr__(self, "antecedents", ants)
        object.__setattr__(self, "stopwords",
                           _canonical_words(self.stopwords, "stopwords", self.nfkc, self.casefold))
        object.__setattr__(self, "spot_distance", int(self.spot_distance))
        object.__setattr__(self, "chain", int(self.chain))

    @property
    def skipped(self) -> tuple[str, ...]:
        """The words a chain skips: the stopwords and the antecedents."""
        return tuple(sorted(set(self.stopwords) | set(self.antecedents)))

    def word_hashes(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted uint64 hashes of (antecedents, skipped words), as the kernel looks them up."""
        ant = np.array(sorted(hash_str(w) for w in self.antecedents), dtype=np.uint64)
        skip = np.array(sorted(hash_str(w) for w in self.skipped), dtype=np.uint64)
        return ant, skip

    def check_compatible(self, other: "SpotSigsScheme | None") -> None:
        """Raise IncompatibleSketchError unless ``other`` is the same scheme."""
        if self != other:
            raise IncompatibleSketchError(
                f"spot signatures of different schemes cannot be compared: {self} vs {other}")


def load_words(path: str | os.PathLike) -> tuple[str, ...]:
    """Read a word list: one word per line, UTF-8; ``#`` starts a comment; blank lines are ignored.

    Each word must be a single token of the tokenizer (an error names the file and line).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ants.txt"
    >>> _ = p.write_text("# antecedents\\nthe\\nA   # articles\\n\\nis\\n", encoding="utf-8")
    >>> load_words(p)
    ('the', 'A', 'is')
    """
    words: list[str] = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(str(path), None, f"word list is not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read word list: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, start=1):
        word = line.split("#", 1)[0].strip()
        if not word:
            continue
        toks = tokenize(word)
        if len(toks) != 1:
            raise InputError(str(path), number,
                             f"expected one word per line, got {word!r} (tokens {toks!r})")
        words.append(word)
    return tuple(words)


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
        return _row_sums(self.counts, self.offsets)

    def doc(self, i: int) -> dict[int, int]:
        """Document i as a dict hash -> count."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return dict(zip(self.values[lo:hi].tolist(), self.counts[lo:hi].tolist()))

    @classmethod
    def from_multisets(cls, docs: Iterable[Mapping[int, int] | Iterable[int]],
                       scheme: SpotSigsScheme | None = None) -> "SpotSignatures":
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
    def concat(cls, parts: Sequence["SpotSignatures"], scheme: SpotSigsScheme | None = None) -> "SpotSignatures":
        """The documents of ``parts``, one after the other; all must have ``scheme`` (by default
        the first part's)."""
        if scheme is None and parts:
            scheme = parts[0].scheme
        for p in parts:
            if p.scheme != scheme:
                raise IncompatibleSketchError(
                    f"spot signatures of different schemes cannot be mixed: {p.scheme} vs {scheme}")
        if not parts:
            return cls(np.empty(0, np.uint64), np.empty(0, np.int32), np.zeros(1, np.int64), scheme)
        sizes = np.concatenate([np.diff(p.offsets) for p in parts])
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(np.concatenate([p.values for p in parts]), np.concatenate([p.counts for p in parts]),
                   offsets, scheme)

    def select(self, keep: np.ndarray) -> "SpotSignatures":
        """The same documents keeping only the entries where the bool mask ``keep`` is True."""
        doc = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))
        sizes = np.bincount(doc[keep], minlength=len(self))
        offsets = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return SpotSignatures(self.values[keep], self.counts[keep], offsets, self.scheme)


@nb.njit(cache=True, nogil=True)
def _row_sums(counts, offsets):
    out = np.zeros(offsets.shape[0] - 1, dtype=np.int64)
    for d in range(out.shape[0]):
        for e in range(offsets[d], offsets[d + 1]):
            out[d] += counts[e]
    return out


# ---------------------------------------------------------------------------------------------
# Extraction


@nb.njit(inline="always", cache=True)
def _contains(sorted_arr, h):
    i = np.searchsorted(sorted_arr, h)
    return i < sorted_arr.shape[0] and sorted_arr[i] == h


@nb.njit(cache=True, nogil=True)
def extract_kernel(data, offsets, table, ant, skip, d, c, key_mode):
    """Spot signatures of every document of ``data`` (UTF-8, split by ``offsets``) as CSR
    ``(values uint64, counts int32, doc_offsets int64)``; see the module docstring."""
    ndoc = offsets.shape[0] - 1
    longest = 0
    for q in range(ndoc):
        longest = max(longest, offsets[q + 1] - offsets[q])
    buf = np.zeros(((longest + 24) // 8) * 8, dtype=np.uint8)
    words = buf.view(np.uint64)
    kbuf = np.zeros(((2 * longest + 32) // 8) * 8, dtype=np.uint8)
    kwords = kbuf.view(np.uint64)
    tstart = np.empty(longest + 1, dtype=np.int64)
    tend = np.empty(longest + 1, dtype=np.int64)
    is_ant = np.empty(longest + 1, dtype=np.bool_)
    ns = np.empty(longest + 1, dtype=np.int64)  # token index of the m-th non-stopword
    ns_upto = np.empty(longest + 1, dtype=np.int64)  # non-stopwords among tokens 0..t
    keys = np.empty(longest + 1, dtype=np.uint64)
    total = offsets[ndoc] - offsets[0] + 1
    out_v = np.empty(total, dtype=np.uint64)
    out_c = np.empty(total, dtype=np.int32)
    doc_off = np.zeros(ndoc + 1, dtype=np.int64)
    pos = 0
    for q in range(ndoc):
        start = offsets[q]
        end = offsets[q + 1]
        # 1. tokens, copied into buf (format characters inside a token are dropped)
        ntok = 0
        blen = 0
        in_tok = False
        i = start
        while i <= end:
            if i < end:
                cp, j = _decode(data, i, end)
                cls = table[cp]
            else:
                j = end + 1
                cls = OTHER
            if cls == WORD:
                if not in_tok:
                    tstart[ntok] = blen
                    in_tok = True
                for b in range(i, j):
                    buf[blen] = data[b]
                    blen += 1
            elif cls != IGNORE:
                if in_tok:
                    tend[ntok] = blen
                    ntok += 1
                    in_tok = False
                if cls == IDEOGRAPH:
                    tstart[ntok] = blen
                    for b in range(i, j):
                        buf[blen] = data[b]
                        blen += 1
                    tend[ntok] = blen
                    ntok += 1
            i = j
        # 2. classify tokens by their hash
        m = 0
        for t in range(ntok):
            h = hash_span_words(words, tstart[t], tend[t])
            is_ant[t] = _contains(ant, h)
            if not _contains(skip, h):
                ns[m] = t
                m += 1
            ns_upto[t] = m
        # 3. one key per antecedent with a complete chain
        nk = 0
        for t in range(ntok):
            if not is_ant[t]:
                continue
            first = ns_upto[t]  # index in ns of the first non-stopword after t
            if first + c * d - 1 >= m:
                continue
            klen = 0
            if key_mode == KEY_ANTECEDENT:
                for b in range(tstart[t], tend[t]):
                    kbuf[klen] = buf[b]
                    klen += 1
            for e in range(1, c + 1):
                if klen > 0:
                    kbuf[klen] = _COLON
                    klen += 1
                w = ns[first + e * d - 1]
                for b in range(tstart[w], tend[w]):
                    kbuf[klen] = buf[b]
                    klen += 1
            keys[nk] = hash_span_words(kwords, 0, klen)
            nk += 1
        # 4. the multiset: sorted distinct keys with counts
        if nk > 0:
            s = np.sort(keys[:nk])
            out_v[pos] = s[0]
            out_c[pos] = 1
            u = pos
            for k in range(1, nk):
                if s[k] == out_v[u]:
                    out_c[u] += 1
                else:
                    u += 1
                    out_v[u] = s[k]
                    out_c[u] = 1
            pos = u + 1
        doc_off[q + 1] = pos
    return out_v[:pos].copy(), out_c[:pos].copy(), doc_off


def encode(texts: Sequence[str], scheme: SpotSigsScheme) -> tuple[np.ndarray, np.ndarray]:
    """Normalize texts (NFKC, case folding) and pack their UTF-8 bytes as (data, offsets)."""
    encoded = [normalize(t, nfkc=scheme.nfkc, casefold=scheme.casefold).encode("utf-8", "surrogatepass")
               for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def extract(texts: Sequence[str], scheme: SpotSigsScheme | None = None) -> SpotSignatures:
    """Spot signature multisets of many texts (one kernel pass over their UTF-8 bytes).

    >>> s = extract(["At a rally to kick off a weeklong campaign", "no antecedent here"],
    ...             SpotSigsScheme(antecedents=["a"], stopwords=["to", "off"]))
    >>> s.lengths.tolist()
    [2, 0]
    >>> sorted(s.doc(0)) == sorted([hash_str("a:rally:kick"), hash_str("a:weeklong:campaign")])
    True
    """
    scheme = scheme if scheme is not None else SpotSigsScheme()
    data, offsets = encode(texts, scheme)
    ant, skip = _scheme_arrays(scheme)
    v, c, off = extract_kernel(data, offsets, CHAR_CLASS, ant, skip, scheme.spot_distance, scheme.chain,
                               KEY_ANTECEDENT if scheme.key == "antecedent" else KEY_CHAIN)
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
    scheme = scheme if scheme is not None else SpotSigsScheme()
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

    def _compact(self) -> None:
        if not self._pending:
            return
        new = np.concatenate(self._pending)
        self._pending, self._pending_size = [], 0
        keys = np.concatenate([self._keys, new])
        weights = np.concatenate([self._df, np.ones(len(new), dtype=np.int64)])
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
    def of(cls, sigs: SpotSignatures) -> "DocumentFrequencies":
        f = cls()
        f.add(sigs)
        return f


def check_band(band) -> tuple[float, float]:
    """Validate an IDF band (lo, hi) with 0 <= lo <= hi <= 1."""
    try:
        lo, hi = (float(x) for x in band)
    except (TypeError, ValueError):
        raise ValueError(f"idf_band must be a pair (lo, hi) of numbers, got {band!r}") from None
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"idf_band must satisfy 0 <= lo <= hi <= 1, got ({lo}, {hi})")
    return lo, hi


def idf_filter(sigs: SpotSignatures, band: tuple[float, float],
               df: DocumentFrequencies | None = None) -> SpotSignatures:
    """Keep the signatures whose normalised IDF lies in ``band = (lo, hi)`` (both ends included);
    document lengths follow (a document may become empty).

    ``df`` holds the collection's document frequencies; by default those of ``sigs`` itself.
    Signatures absent from ``df`` count as df = 1.

    >>> s = SpotSignatures.from_multisets([{1: 2, 2: 1}, {1: 1, 3: 4}, {1: 1, 2: 2}, {4: 1}])
    >>> idf_filter(s, (0.1, 0.6)).lengths.tolist()   # idf(1) = 0.21, idf(2) = 0.5, idf(3, 4) = 1
    [3, 1, 3, 0]
    """
    lo, hi = check_band(band)
    df = df if df is not None else DocumentFrequencies.of(sigs)
    if df.n_docs < 2:
        return sigs
    freq = np.maximum(df.lookup(sigs.values), 1)
    distinct, inverse = np.unique(freq, return_inverse=True)
    idf = normalized_idf(distinct, df.n_docs)
    keep = ((idf >= lo) & (idf <= hi))[inverse.reshape(-1)]
    return sigs.select(keep)


# ---------------------------------------------------------------------------------------------
# Partitions


def check_threshold(tau: float) -> float:
    if not isinstance(tau, (int, float, np.floating, np.integer)) or not 0 < tau <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {tau!r}")
    return float(tau)


def partition_bounds(tau: float, max_len: int) -> np.ndarray:
    """Partition bounds ``p_0 = 1 < p_1 < ... < p_K`` with ``p_K > max_len``: ``p_{k+1}`` is the
    smallest integer above ``p_k`` with ``p_{k+1} - p_k > (1 - tau) p_{k+1}``, i.e. ``p_k / p_{k+1} < tau``.

    Partition k holds lengths ``[p_k, p_{k+1})``.

    >>> partition_bounds(0.7, 60).tolist()
    [1, 2, 3, 5, 8, 12, 18, 26, 38, 55, 79]
    """
    tau = check_threshold(tau)
    if tau == 1.0:  # every length is its own partition
        return np.arange(1, max(int(max_len), 0) + 2, dtype=np.int64)
    bounds = [1]
    while bounds[-1] <= max_len:
        p = bounds[-1]
        q = max(p + 1, int(p / tau))
        while q > p + 1 and p / (q - 1) < tau:
            q -= 1
        while not p / q < tau:
            q += 1
        bounds.append(q)
    return np.array(bounds, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# All pairs


@dataclass(frozen=True)
class PairCounters:
    """What an all-pairs search did."""

    documents: int = 0
    """Documents with at least one signature (the others are never paired)."""
    partitions: int = 0
    """Non-empty length partitions (0 when the search does not partition)."""
    computed: int = 0
    """Similarity computations (full weighted Jaccard of a pair)."""
    pairs: int = 0
    """Pairs at or above the threshold."""
    pruned: int = 0
    """Inverted-list entries passed over because the length bound proved them below the threshold."""
    lists_cut: int = 0
    """Lists left early by the length bound."""
    lists_skipped: int = 0
    """Lists never opened: the weight already done left no room for a new candidate."""
    lists_opened: int = 0
    """Lists opened."""


class AllPairs(NamedTuple):
    """Every pair at or above the threshold: a < b (document numbers), sorted by (a, b)."""

    a: np.ndarray
    b: np.ndarray
    similarity: np.ndarray
    counters: PairCounters


@nb.njit(inline="always", cache=True)
def _wjaccard(values, counts, off, x, y, lx, ly):
    i = off[x]
    ie = off[x + 1]
    j = off[y]
    je = off[y + 1]
    inter = 0
    while i < ie and j < je:
        vi = values[i]
        vj = values[j]
        if vi == vj:
            inter += min(np.int64(counts[i]), np.int64(counts[j]))
            i += 1
            j += 1
        elif vi < vj:
            i += 1
        else:
            j += 1
    union = lx + ly - inter
    return inter / union if union > 0 else 0.0


@nb.njit(cache=True, nogil=True)
def _grow(arr, need):
    out = np.empty(max(2 * arr.shape[0], need, 64), dtype=arr.dtype)
    out[:arr.shape[0]] = arr
    return out


@nb.njit(cache=True, nogil=True)
def _take_rows(values, counts, offsets, rows):
    """Rows ``rows`` of a CSR, in that order."""
    n = rows.shape[0]
    off = np.zeros(n + 1, dtype=np.int64)
    for r in range(n):
        d = rows[r]
        off[r + 1] = off[r] + offsets[d + 1] - offsets[d]
    v = np.empty(off[n], dtype=values.dtype)
    c = np.empty(off[n], dtype=counts.dtype)
    for r in range(n):
        d = rows[r]
        v[off[r]:off[r + 1]] = values[offsets[d]:offsets[d + 1]]
        c[off[r]:off[r + 1]] = counts[offsets[d]:offsets[d + 1]]
    return v, c, off


@nb.njit(cache=True, nogil=True)
def _signature_ids(values):
    """A dense id per distinct value (in order of first appearance), by open addressing."""
    m = values.shape[0]
    size = 1024
    while size < 2 * min(m, 1 << 16):
        size *= 2
    slot_key = np.empty(size, dtype=np.uint64)
    slot_id = np.full(size, -1, dtype=np.int64)
    keys = np.empty(max(m, 1), dtype=np.uint64)
    sid = np.empty(m, dtype=np.int64)
    n = 0
    for e in range(m):
        v = values[e]
        mask = np.uint64(size - 1)
        h = fmix64(v) & mask
        while slot_id[h] >= 0 and slot_key[h] != v:
            h = (h + np.uint64(1)) & mask
        if slot_id[h] < 0:
            slot_key[h] = v
            slot_id[h] = n
            keys[n] = v
            n += 1
            if 2 * n > size:  # keep the load under 1/2: rehash into a table twice as large
                size *= 2
                mask = np.uint64(size - 1)
                slot_key = np.empty(size, dtype=np.uint64)
                slot_id = np.full(size, -1, dtype=np.int64)
                for q in range(n):
                    g = fmix64(keys[q]) & mask
                    while slot_id[g] >= 0:
                        g = (g + np.uint64(1)) & mask
                    slot_key[g] = keys[q]
                    slot_id[g] = q
                sid[e] = n - 1
                continue
        sid[e] = slot_id[h]
    return sid, n


@nb.njit(cache=True, nogil=True)
def _fill_lists(sid, off, list_off):
    """Inverted lists: for each signature, the ranks of the documents holding it, ascending."""
    nr = off.shape[0] - 1
    nxt = list_off[:-1].copy()
    ranks = np.empty(list_off[-1], dtype=np.int64)
    for r in range(nr):
        for e in range(off[r], off[r + 1]):
            s = sid[e]
            ranks[nxt[s]] = r
            nxt[s] += 1
    return ranks


@nb.njit(cache=True, nogil=True)
def _probe(r0, r1, tau, pruning, values, counts, off, sid, rlen, list_off, list_rank, limit, seen):
    """Search documents (ranks) r0..r1-1 against longer ones; returns pairs and counters."""
    cap = 256
    pa = np.empty(cap, dtype=np.int64)
    pb = np.empty(cap, dtype=np.int64)
    ps = np.empty(cap, dtype=np.float64)
    k = 0
    computed = 0
    pruned = 0
    cut = 0
    skipped = 0
    opened = 0
    order = np.empty(64, dtype=np.int64)
    for r in range(r0, r1):
        lo = off[r]
        m = off[r + 1] - lo
        lx = rlen[r]
        lim = limit[r]
        if pruning:  # lists by ascending length (document frequency), ties in signature order
            if order.shape[0] < m:
                order = np.empty(2 * m, dtype=np.int64)
            for t in range(m):
                s = sid[lo + t]
                order[t] = (list_off[s + 1] - list_off[s]) * m + t
            order[:m].sort()
        delta1 = 0
        for t in range(m):
            e = lo + (order[t] % m if pruning else t)
            if pruning and (lx - delta1) / (lx + delta1) < tau:
                skipped += m - t
                break
            s = sid[e]
            a = list_off[s]
            b = list_off[s + 1]
            p = a + np.searchsorted(list_rank[a:b], r) + 1
            opened += 1
            while p < b:
                y = list_rank[p]
                if y >= lim:
                    break
                if seen[y] != r:
                    ly = rlen[y]
                    if pruning and (lx - delta1) / (ly + delta1) < tau:
                        q = a + np.searchsorted(list_rank[a:b], lim)
                        pruned += q - p
                        cut += 1
                        break
                    seen[y] = r
                    sim = _wjaccard(values, counts, off, r, y, lx, ly)
                    computed += 1
                    if sim >= tau:
                        if k == pa.shape[0]:
                            pa = _grow(pa, k + 1)
                            pb = _grow(pb, k + 1)
                            ps = _grow(ps, k + 1)
                        pa[k] = r
                        pb[k] = y
                        ps[k] = sim
                        k += 1
                p += 1
            delta1 += counts[e]
    stats = np.array([computed, k, pruned, cut, skipped, opened], dtype=np.int64)
    return pa[:k].copy(), pb[:k].copy(), ps[:k].copy(), stats


def _as_signatures(sigs) -> SpotSignatures:
    if isinstance(sigs, SpotSignatures):
        return sigs
    if isinstance(sigs, tuple) and len(sigs) == 3:
        return SpotSignatures(*(np.asarray(x) for x in sigs))
    raise TypeError("expected SpotSignatures or a CSR tuple (values, counts, offsets)")


def all_pairs(sigs: SpotSignatures, tau: float, *, workers: int = 1, partitions: bool = True,
              pruning: bool = True) -> AllPairs:
    """Every pair of documents with weighted Jaccard >= ``tau``, exactly (see the module docstring).

    ``partitions`` and ``pruning`` switch off the length partitions and the length-bound pruning
    (for measurements; the result is the same). ``workers`` threads share the documents.

    >>> s = SpotSignatures.from_multisets([{1: 5, 2: 4, 3: 4}, {1: 8, 2: 4}, {2: 5, 3: 5}])
    >>> r = all_pairs(s, 0.5)
    >>> r.a.tolist(), r.b.tolist(), r.similarity.round(4).tolist()
    ([0, 0], [1, 2], [0.5625, 0.5333])
    """
    tau = check_threshold(tau)
    sigs = _as_signatures(sigs)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    lengths = sigs.lengths
    docs = np.flatnonzero(lengths > 0)
    doc_of = docs[np.argsort(lengths[docs], kind="stable")]  # rank -> document, by (length, number)
    nr = len(doc_of)
    empty = np.empty(0, dtype=np.int64)
    if nr < 2:
        return AllPairs(empty, empty, np.empty(0, dtype=np.float64), PairCounters(documents=nr))
    values, counts, off = _take_rows(sigs.values, sigs.counts, sigs.offsets, doc_of)
    rlen = lengths[doc_of]
    sid, n_keys = _signature_ids(values)
    list_off = np.zeros(n_keys + 1, dtype=np.int64)
    np.cumsum(np.bincount(sid, minlength=n_keys), out=list_off[1:])
    list_rank = _fill_lists(sid, off, list_off)
    n_parts = 0
    if partitions:
        bounds = partition_bounds(tau, int(rlen[-1]))
        part = np.searchsorted(bounds, rlen, side="right") - 1
        first = np.r_[np.searchsorted(rlen, bounds, side="left"), nr, nr]
        limit = first[part + 2]  # first rank past the right neighbour partition
        n_parts = len(np.unique(part))
    else:
        limit = np.full(nr, nr, dtype=np.int64)

    # chunks of about equal signature mass, a few per thread
    n_chunks = 1 if workers == 1 else min(nr, 8 * workers)
    cuts = np.unique(np.searchsorted(off, np.linspace(0, off[-1], n_chunks + 1), side="left"))
    cuts[0], cuts[-1] = 0, nr
    cuts = np.unique(cuts)
    seen_pool: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(min(workers, len(cuts) - 1)):
        seen_pool.put(np.full(nr, -1, dtype=np.int64))

    def task(bounds_pair):
        seen = seen_pool.get()
        try:
            return _probe(bounds_pair[0], bounds_pair[1], tau, pruning, values, counts, off, sid, rlen,
                          list_off, list_rank, limit, seen)
        finally:
            seen_pool.put(seen)

    chunks = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    if workers == 1 or len(chunks) == 1:
        results = [task(c) for c in chunks]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(task, chunks))
    ra = np.concatenate([r[0] for r in results])
    rb = np.concatenate([r[1] for r in results])
    sim = np.concatenate([r[2] for r in results])
    st = np.sum([r[3] for r in results], axis=0)
    a, b = doc_of[ra], doc_of[rb]
    a, b = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((b, a))
    counters = PairCounters(documents=nr, partitions=n_parts, computed=int(st[0]), pairs=int(st[1]),
                            pruned=int(st[2]), lists_cut=int(st[3]), lists_skipped=int(st[4]),
                            lists_opened=int(st[5]))
    return AllPairs(a[order], b[order], sim[order], counters)


def all_pairs_unpruned(sigs: SpotSignatures, tau: float, *, workers: int = 1) -> AllPairs:
    """The inverted-index search with neither partitions nor pruning: every pair of documents
    sharing a signature is compared once. Same result as :func:`all_pairs`; the baseline the
    paper's "No-Pruning/No-Partitions" row measures."""
    return all_pairs(sigs, tau, workers=workers, partitions=False, pruning=False)


@nb.njit(cache=True, nogil=True)
def _bruteforce(values, counts, off, lengths, docs, tau):
    n = docs.shape[0]
    pa = np.empty(64, dtype=np.int64)
    pb = np.empty(64, dtype=np.int64)
    ps = np.empty(64, dtype=np.float64)
    k = 0
    for i in range(n):
        x = docs[i]
        for j in range(i + 1, n):
            y = docs[j]
            sim = _wjaccard(values, counts, off, x, y, lengths[x], lengths[y])
            if sim >= tau:
                if k == pa.shape[0]:
                    pa = _grow(pa, k + 1)
                    pb = _grow(pb, k + 1)
                    ps = _grow(ps, k + 1)
                pa[k] = x
                pb[k] = y
                ps[k] = sim
                k += 1
    return pa[:k].copy(), pb[:k].copy(), ps[:k].copy()


def all_pairs_bruteforce(sigs: SpotSignatures, tau: float) -> AllPairs:
    """Weighted Jaccard of every pair of non-empty documents, O(n^2): the reference."""
    tau = check_threshold(tau)
    sigs = _as_signatures(sigs)
    lengths = sigs.lengths
    docs = np.flatnonzero(lengths > 0).astype(np.int64)
    a, b, s = _bruteforce(sigs.values, sigs.counts, sigs.offsets, lengths, docs, tau)
    n = len(docs)
    return AllPairs(a, b, s, PairCounters(documents=n, computed=n * (n - 1) // 2, pairs=len(a)))


@nb.njit(cache=True, nogil=True)
def _rows_similarity(values, counts, off, lengths, docs, others):
    out = np.empty(docs.shape[0], dtype=np.float64)
    for q in range(docs.shape[0]):
        x = docs[q]
        y = others[q]
        if x == y:
            out[q] = 1.0
        else:
            out[q] = _wjaccard(values, counts, off, x, y, lengths[x], lengths[y])
    return out


def weighted_jaccard_rows(sigs: SpotSignatures, docs: np.ndarray, others: np.ndarray,
                          lengths: np.ndarray | None = None) -> np.ndarray:
    """Weighted Jaccard of ``docs[q]`` and ``others[q]`` (1.0 for a document and itself).

    >>> s = SpotSignatures.from_multisets([{1: 5, 2: 4, 3: 4}, {1: 8, 2: 4}])
    >>> weighted_jaccard_rows(s, np.array([0, 1]), np.array([1, 1])).tolist()
    [0.5625, 1.0]
    """
    lengths = sigs.lengths if lengths is None else lengths
    return _rows_similarity(sigs.values, sigs.counts, sigs.offsets, lengths,
                            np.asarray(docs, dtype=np.int64), np.asarray(others, dtype=np.int64))
