"""The MinHash sketcher: :class:`MinHasher` turns texts, generic sets or hashed sets into
:class:`~neardup.methods.minhash.scheme.Signatures` of its scheme (classic K-permutation MinHash
or one-permutation hashing), by the numba kernels; :func:`hash_items` hashes generic set items
(str, bytes, integers) as the text kernels hash shingles, and :func:`hasher_for` keeps one hasher
per scheme.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from ..._kernels.charclass import CHAR_CLASS
from ..._kernels.hashing import MASK64, hash_ints, hash_spans
from ..._kernels.minhash import (
    LONG_DOC,
    WINDOW,
    fold_long_doc,
    minhash_chars_kernel,
    minhash_csr,
    minhash_words_kernel,
    oph_long_doc,
)
from ..._kernels.oph import oph_csr_kernel, oph_texts_kernel
from ...core.arrays import check_offsets
from ...core.validation import Choice, Instance, Optional, check, conflict
from ...text.shingles import Shingling, encode_for_sketch, kind_code
from .oph import OPH_FAMILY, oph_params, oph_sequence
from .scheme import SKETCHES, MinHashScheme, Signatures

__all__ = ["MinHasher", "hash_items", "hasher_for"]

_SKETCH = Choice(tuple(SKETCHES))


def hash_items(items: Iterable) -> np.ndarray:
    """64-bit hashes of generic set items: str (UTF-8), bytes, or integers.

    >>> from neardup._kernels.hashing import hash_str, hash_int
    >>> hash_items(["a", b"a", 7]).tolist() == [hash_str("a"), hash_str("a"), hash_int(7)]
    True
    """
    if isinstance(items, np.ndarray):
        if items.dtype.kind in "iu":
            return hash_ints(items.astype(np.uint64, copy=False) if items.dtype.kind == "u" else items.astype(np.int64))
        items = items.tolist()
    items = list(items)
    out = np.empty(len(items), dtype=np.uint64)
    blobs, where = [], []
    ints, int_where = [], []
    for i, item in enumerate(items):
        if isinstance(item, str):
            blobs.append(item.encode("utf-8", "surrogatepass"))
            where.append(i)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            blobs.append(bytes(item))
            where.append(i)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not -(1 << 63) <= int(item) < (1 << 64):
                raise ValueError(f"integer set item {item} does not fit in 64 bits")
            ints.append(int(item) & MASK64)
            int_where.append(i)
        else:
            raise TypeError(f"set items must be str, bytes or int, got {type(item).__name__}: {item!r}")
    if blobs:
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)), out=offsets[1:])
        out[np.asarray(where)] = hash_spans(np.frombuffer(b"".join(blobs), dtype=np.uint8), offsets)
    if ints:
        out[np.asarray(int_where)] = hash_ints(np.asarray(ints, dtype=np.uint64))
    return out


class MinHasher:
    """Computes MinHash signatures of texts or generic sets, in batches.

    >>> mh = MinHasher(num_perm=128, shingling=Shingling("word", 2))
    >>> sigs = mh.sign(["Jack London traveled to Oakland", "Jack London traveled to the city of Oakland"])
    >>> sigs.values.shape
    (2, 128)
    >>> 0.2 < sigs.jaccard(0, j=1) < 0.6      # true Jaccard 3/8
    True

    ``sketch="oph"`` selects the fast one-permutation family (:mod:`neardup.methods.minhash.oph`): one hash per
    element instead of K, same signature shape and estimate.

    >>> fast = MinHasher(num_perm=128, shingling=Shingling("word", 2), sketch="oph")
    >>> fast.scheme.hash_family
    'nd64/oph-dens-32'
    """

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        shingling: Shingling | None = None,
        scheme: MinHashScheme | None = None,
        *,
        sketch: str | None = None,
    ):
        sketch = check("sketch", sketch, Optional(_SKETCH))
        scheme = check("scheme", scheme, Optional(Instance(MinHashScheme)))
        if scheme is None:
            scheme = MinHashScheme(
                num_perm=num_perm,
                seed=seed,
                shingling=shingling if shingling is not None else Shingling(),
                hash_family=SKETCHES[sketch or "classic"],
            )
        elif sketch is not None and scheme.sketch != sketch:
            raise conflict(f"sketch={sketch!r} disagrees with the scheme's hash family {scheme.hash_family!r}")
        self.scheme = scheme
        if scheme.hash_family == OPH_FAMILY:
            self._oph = oph_params(scheme.seed)
            self._oph_seq = oph_sequence(self._oph, scheme.num_perm)
        else:
            self._a, self._b = scheme.permutations()

    @classmethod
    def for_sets(cls, num_perm: int = 128, seed: int = 1, *, sketch: str = "classic") -> MinHasher:
        """A MinHasher for generic sets only (its scheme has ``shingling=None``)."""
        sketch = check("sketch", sketch, _SKETCH)
        return cls(scheme=MinHashScheme(num_perm=num_perm, seed=seed, shingling=None, hash_family=SKETCHES[sketch]))

    def sign(self, texts: Sequence[str]) -> Signatures:
        """Signatures of many texts, shingled by the scheme's shingling."""
        values, _ = self.sign_texts_with_counts(texts)
        return Signatures(values, self.scheme)

    def sign_texts_with_counts(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Raw signatures (uint32[n, K]) and the number of shingles of each text (int64[n])."""
        sh = self._text_shingling()
        data, offsets = encode_for_sketch(texts, sh)
        return self.sign_encoded(data, offsets[:-1], offsets[1:])

    def sign_encoded(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw signatures and shingle counts of the texts ``data[starts[i]:ends[i]]``, already
        normalized and UTF-8 encoded (as :func:`neardup.text.shingles.encode_texts` or
        :func:`~neardup.text.shingles.encode_for_sketch` packs them)."""
        sh = self._text_shingling()
        values = np.empty((len(starts), self.scheme.num_perm), dtype=np.uint32)
        counts = np.empty(len(starts), dtype=np.int64)
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        if self.scheme.hash_family == OPH_FAMILY:
            # long documents are folded window by window (as the classic kernel
            # does): the kernel's scratch would be sized for the whole text
            long = np.flatnonzero(ends - starts > LONG_DOC)
            oph_texts_kernel(
                data,
                starts,
                np.where(ends - starts > LONG_DOC, starts, ends) if len(long) else ends,
                CHAR_CLASS,
                kind_code(sh),
                sh.n,
                sh.strip_punctuation,
                self._oph,
                self._oph_seq,
                values,
                counts,
            )
            kind = kind_code(sh)
            for d in long.tolist():
                counts[d] = oph_long_doc(
                    data,
                    starts[d],
                    ends[d],
                    CHAR_CLASS,
                    kind,
                    sh.n,
                    sh.strip_punctuation,
                    self._oph,
                    self._oph_seq,
                    values[d],
                    WINDOW,
                )
        else:
            kernel = minhash_chars_kernel if sh.kind == "char" else minhash_words_kernel
            kernel(
                data,
                starts,
                ends,
                CHAR_CLASS,
                kind_code(sh),
                sh.n,
                sh.strip_punctuation,
                self._a,
                self._b,
                values,
                counts,
            )
            kind = kind_code(sh)
            for d in np.flatnonzero(counts < 0):  # texts past LONG_DOC bytes
                counts[d] = fold_long_doc(
                    data,
                    starts[d],
                    ends[d],
                    CHAR_CLASS,
                    kind,
                    sh.n,
                    sh.strip_punctuation,
                    self._a,
                    self._b,
                    values[d],
                    WINDOW,
                )
        return values, counts

    def _text_shingling(self) -> Shingling:
        if self.scheme.shingling is None:
            raise ValueError("this scheme is for generic sets (shingling=None); use sign_sets")
        return self.scheme.shingling

    def sign_sets(self, sets: Iterable[Iterable]) -> Signatures:
        """Signatures of generic sets: iterables of str, bytes or ints (or integer numpy arrays).

        Items are hashed as :func:`hash_items` does, so a text's shingle strings give the same
        signature here as the text gives through :meth:`sign` with a text scheme.
        """
        parts = [hash_items(s) for s in sets]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        hashes = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        return self.sign_hashed(hashes, offsets)

    def sign_hashed(self, hashes: np.ndarray, offsets: np.ndarray) -> Signatures:
        """Signatures of sets given as already-hashed uint64 CSR arrays (set i is
        ``hashes[offsets[i]:offsets[i + 1]]``; ``ValueError`` for offsets that are not that)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        check_offsets(offsets, len(hashes))
        values = np.empty((len(offsets) - 1, self.scheme.num_perm), dtype=np.uint32)
        if self.scheme.hash_family == OPH_FAMILY:
            oph_csr_kernel(hashes, offsets, self._oph, self._oph_seq, values)
        else:
            minhash_csr(hashes, offsets, self._a, self._b, values)
        return Signatures(values, self.scheme)

    def sign_one(self, text: str) -> np.ndarray:
        """The signature row (uint32[K]) of one text."""
        return self.sign([text]).values[0]


@lru_cache(maxsize=64)
def hasher_for(scheme: MinHashScheme) -> MinHasher:
    """The :class:`MinHasher` of ``scheme``, made once per scheme (its permutations are computed
    when it is made)."""
    return MinHasher(scheme=scheme)
