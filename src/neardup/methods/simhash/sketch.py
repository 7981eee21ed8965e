"""The SimHash sketcher: :class:`SimHasher` turns texts, hashed features or dense vectors into
:class:`~neardup.methods.simhash.scheme.Fingerprints` of its scheme, by the numba kernels, with
count or IDF weights. The IDF weights come from an :class:`IdfTable` of document frequencies,
counted by :class:`DocumentFrequencies` (streaming) or :func:`fit_idf`; :func:`vectors_from_parquet`
reads dense vectors from a Parquet list column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ..._kernels.charclass import CHAR_CLASS
from ..._kernels.hashing import hash_spans
from ..._kernels.shingles import WORD_KIND
from ..._kernels.simhash import (
    df_batch,
    lookup_idf_weights,
    merge_counts,
    simhash_chars_kernel,
    simhash_csr,
    simhash_csr_weighted,
    simhash_words_kernel,
)
from ...core.arrays import check_offsets
from ...core.errors import IncompatibleSketchError
from ...core.validation import Instance, Integer, Optional, ParameterError, check, conflict
from ...text.shingles import Shingling, encode_texts, kind_code, shingle_encoded
from .scheme import (
    DEFAULT_SHINGLING,
    HASH_FAMILY,
    VECTOR_FAMILY,
    Fingerprints,
    SimHashScheme,
)

__all__ = [
    "IDF_SCALE",
    "DocumentFrequencies",
    "IdfTable",
    "SimHasher",
    "fit_idf",
    "idf_weight",
    "vectors_from_parquet",
]

IDF_SCALE = 256


# ---------------------------------------------------------------------------------------------
# IDF
def idf_weight(df: Any, n_docs: int) -> np.ndarray:
    """The integer weight of a shingle in ``df`` of ``n_docs`` documents:
    round(IDF_SCALE * (ln((1 + N) / (1 + df)) + 1)), at least IDF_SCALE for df <= N.

    >>> idf_weight([1, 10, 100], 100).tolist()
    [1260, 824, 256]
    """
    df = np.asarray(df, dtype=np.float64)
    return np.rint(IDF_SCALE * (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0)).astype(np.int64)


@dataclass(frozen=True, eq=False)
class IdfTable:
    """Document frequencies of the shingles seen in at least ``min_df`` documents of a collection.

    The weight of a shingle is :func:`idf_weight` of its document frequency; a shingle not in the
    table counts as seen in one document (so with ``min_df = 2`` the table stays small: the
    many shingles of a single document all share the largest weight). ``digest`` identifies the
    table in the scheme of the fingerprints made with it.

    Attributes:
        hashes: uint64[m] sorted shingle hashes.
        df: int64[m] the number of documents each occurs in.
        n_docs: N, documents counted.
        min_df: shingles in fewer documents were left out.
    """

    hashes: np.ndarray
    df: np.ndarray
    n_docs: int
    min_df: int = 2
    weights: np.ndarray = field(init=False, repr=False)
    default_weight: int = field(init=False)
    digest: int = field(init=False)
    directory: np.ndarray = field(init=False, repr=False)
    """int64[2^B + 1]: hashes with top B bits p lie at [directory[p], directory[p + 1])."""
    dir_shift: int = field(init=False)
    """64 - B."""

    def __post_init__(self) -> None:
        h = np.ascontiguousarray(self.hashes, dtype=np.uint64)
        df = np.ascontiguousarray(self.df, dtype=np.int64)
        if h.ndim != 1 or h.shape != df.shape:
            raise ValueError(f"hashes and df must be 1-D of one length, got {h.shape} and {df.shape}")
        if len(h) > 1 and not (h[1:] > h[:-1]).all():
            raise ValueError("IDF table hashes must be sorted and distinct")
        object.__setattr__(self, "n_docs", check("n_docs", self.n_docs, Integer(0, 2**62)))
        object.__setattr__(self, "min_df", check("min_df", self.min_df, Integer(1, 2**62)))
        if len(df) and (df.min() < 1 or df.max() > self.n_docs):
            raise ValueError("document frequencies must be in [1, n_docs]")
        object.__setattr__(self, "hashes", h)
        object.__setattr__(self, "df", df)
        object.__setattr__(self, "weights", idf_weight(df, self.n_docs))
        object.__setattr__(self, "default_weight", int(idf_weight(1, self.n_docs)))
        b = max(0, min(24, len(h).bit_length() - 1))
        starts = np.arange(1 << b, dtype=np.uint64) << np.uint64(64 - b) if b else np.zeros(1, dtype=np.uint64)
        directory = np.append(np.searchsorted(h, starts), len(h)).astype(np.int64)
        object.__setattr__(self, "directory", directory)
        object.__setattr__(self, "dir_shift", 64 - b)
        blob = np.concatenate([np.array([self.n_docs, self.min_df], dtype=np.uint64), h, df.astype(np.uint64)]).view(
            np.uint8
        )
        object.__setattr__(self, "digest", int(hash_spans(blob, np.array([0, len(blob)], dtype=np.int64))[0]))

    def __len__(self) -> int:
        return len(self.hashes)

    def weights_of(self, hashes: np.ndarray) -> np.ndarray:
        """int64 weight of every hash (``default_weight`` for hashes not in the table)."""
        return lookup_idf_weights(
            np.ascontiguousarray(hashes, dtype=np.uint64),
            self.hashes,
            self.weights,
            self.directory,
            self.dir_shift,
            self.default_weight,
        )


class DocumentFrequencies:
    """Streaming document-frequency counter (the first pass of IDF weighting).

    Memory: 16 bytes per distinct shingle seen, until :meth:`table` prunes to ``min_df``.

    >>> dfs = DocumentFrequencies(Shingling("word", 1))
    >>> dfs.add_texts(["a b a", "b c"])
    >>> t = dfs.table(min_df=1)
    >>> t.n_docs, sorted(t.df.tolist())
    (2, [1, 1, 2])
    """

    def __init__(self, shingling: Shingling | None = DEFAULT_SHINGLING):
        self.shingling = check("shingling", shingling, Optional(Instance(Shingling)))
        self.n_docs = 0
        self._hashes = np.empty(0, dtype=np.uint64)
        self._counts = np.empty(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_size = 0

    @staticmethod
    def batch_counts(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distinct hashes, documents containing each) of one CSR batch (repeats within a
        document count once; ``ValueError`` for offsets that are not CSR offsets over ``hashes``)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        check_offsets(offsets, len(hashes))
        return df_batch(hashes, offsets)

    def add_counts(self, hashes: np.ndarray, docs: np.ndarray, n_docs: int) -> None:
        """Add a batch already reduced by :meth:`batch_counts` that covered ``n_docs`` documents."""
        self.n_docs += int(n_docs)
        self._pending.append((hashes, docs))
        self._pending_size += len(hashes)
        if self._pending_size > max(len(self._hashes), 1 << 22):
            self._merge()

    def add_hashed(self, hashes: np.ndarray, offsets: np.ndarray) -> None:
        """Count a batch of documents given as CSR shingle hashes."""
        self.add_counts(*self.batch_counts(hashes, offsets), len(offsets) - 1)

    def add_texts(self, texts: Sequence[str]) -> None:
        """Count a batch of texts, shingled by ``shingling``."""
        if self.shingling is None:
            raise ValueError("this counter has no shingling; use add_hashed")
        sh = self.shingling
        data, offsets = encode_texts(texts, sh)
        h, off = shingle_encoded(data, offsets, sh)
        self.add_hashed(h, off)

    def merge(self, other: DocumentFrequencies) -> None:
        """Add the counts of ``other`` (another stretch of the collection)."""
        other._merge()
        self.add_counts(other._hashes, other._counts, other.n_docs)

    def compact(self) -> DocumentFrequencies:
        """Merge what is pending into the one sorted table (16 bytes a distinct shingle), as
        before sending the counter to another process; returns it."""
        self._merge()
        return self

    def _merge(self) -> None:
        if not self._pending:
            return
        hs = np.concatenate([self._hashes] + [p[0] for p in self._pending])
        cs = np.concatenate([self._counts] + [p[1] for p in self._pending])
        self._hashes, self._counts = merge_counts(hs, cs)
        self._pending, self._pending_size = [], 0

    def table(self, min_df: int = 2) -> IdfTable:
        """The IDF table of everything counted, keeping shingles in at least ``min_df`` documents."""
        self._merge()
        keep = self._counts >= min_df
        return IdfTable(self._hashes[keep], self._counts[keep], self.n_docs, min_df)


def fit_idf(
    docs: Sequence[str] | tuple[np.ndarray, np.ndarray],
    shingling: Shingling | None = DEFAULT_SHINGLING,
    *,
    min_df: int = 2,
) -> IdfTable:
    """Document frequencies of a collection: texts (shingled by ``shingling``) or a CSR pair
    ``(hashes, offsets)`` of already hashed features.

    >>> t = fit_idf(["the cat sat", "the dog sat", "a bird"], Shingling("word", 1))
    >>> t.n_docs, len(t), t.df.tolist()
    (3, 2, [2, 2])
    """
    counter = DocumentFrequencies(shingling)
    if isinstance(docs, tuple) and len(docs) == 2 and isinstance(docs[0], np.ndarray):
        counter.add_hashed(*docs)
    else:
        counter.add_texts(list(docs))
    return counter.table(min_df)


# ---------------------------------------------------------------------------------------------
# the hasher
class SimHasher:
    """Computes SimHash fingerprints of texts, hashed features or dense vectors, in batches.

    Args:
        bits: 64 or 128.
        seed: seeds the hyperplanes.
        shingling: how text becomes features (default word 2-grams).
        weighting: ``"count"`` or ``"idf"`` (then ``idf`` is required).
        idf: an :class:`IdfTable` (from :func:`fit_idf` or :meth:`fit_idf`).
        scheme: a full :class:`SimHashScheme` instead of the arguments above.

    >>> sh = SimHasher(bits=64, shingling=Shingling("word", 1))
    >>> fps = sh.sign(["the quick brown fox jumps over the lazy dog",
    ...                "the quick brown fox jumped over the lazy dog"])
    >>> fps.values.dtype, fps.hamming(0, j=1) < 20
    (dtype('uint64'), True)
    """

    def __init__(
        self,
        bits: int = 64,
        seed: int = 1,
        shingling: Shingling | None = None,
        weighting: Literal["count", "idf"] = "count",
        idf: IdfTable | None = None,
        scheme: SimHashScheme | None = None,
    ):
        scheme = check("scheme", scheme, Optional(Instance(SimHashScheme)))
        idf = check("idf", idf, Optional(Instance(IdfTable)))
        if scheme is None:
            scheme = SimHashScheme(
                bits=bits,
                seed=seed,
                shingling=shingling if shingling is not None else DEFAULT_SHINGLING,
                weighting=weighting,
            )
        if scheme.hash_family != HASH_FAMILY:
            raise ParameterError(
                f"scheme must be a feature scheme (hash_family {HASH_FAMILY!r}), got one of hash_family "
                f"{scheme.hash_family!r}; vector schemes are made by sign_vectors"
            )
        if scheme.weighting == "idf":
            if idf is None:
                raise conflict("weighting='idf' needs an IdfTable (see fit_idf)")
            if scheme.idf_digest is not None and scheme.idf_digest != idf.digest:
                raise IncompatibleSketchError("the IDF table does not match the scheme's idf_digest")
            scheme = replace(scheme, idf_digest=idf.digest)
        elif idf is not None:
            raise conflict("an IDF table was given but weighting is 'count'")
        self.scheme = scheme
        self.idf = idf
        self._salts = scheme.salts()
        self._planes: dict[int, np.ndarray] = {}

    @property
    def bits(self) -> int:
        return self.scheme.bits

    def _wrap(self, words: np.ndarray, scheme: SimHashScheme | None = None) -> Fingerprints:
        scheme = scheme or self.scheme
        return Fingerprints(words.reshape(-1) if scheme.bits == 64 else words, scheme)

    def fit_idf(self, docs: Sequence[str] | tuple[np.ndarray, np.ndarray], *, min_df: int = 2) -> IdfTable:
        """Document frequencies of ``docs`` (texts, or CSR hashes) with this hasher's shingling."""
        return fit_idf(docs, self.scheme.shingling, min_df=min_df)

    def sign(self, texts: Sequence[str]) -> Fingerprints:
        """Fingerprints of many texts, shingled by the scheme's shingling."""
        values, _ = self.sign_texts_with_counts(texts)
        return self._wrap(values)

    def sign_texts_with_counts(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Raw fingerprints (uint64[n, W]) and the number of shingles of each text (int64[n])."""
        sh = self.scheme.shingling
        if sh is None:
            raise ValueError("this scheme has no shingling; use sign_hashed")
        data, offsets = encode_texts(texts, sh)
        out = np.empty((len(texts), self.scheme.words), dtype=np.uint64)
        counts = np.empty(len(texts), dtype=np.int64)
        idf = self.idf
        use = idf is not None
        kernel = simhash_words_kernel if kind_code(sh) & 1 == WORD_KIND else simhash_chars_kernel
        kernel(
            data,
            offsets,
            CHAR_CLASS,
            kind_code(sh),
            sh.n,
            sh.strip_punctuation,
            self._salts,
            use,
            idf.hashes if use else np.empty(0, dtype=np.uint64),
            idf.weights if use else np.empty(0, dtype=np.int64),
            idf.directory if use else np.zeros(2, dtype=np.int64),
            idf.dir_shift if use else 64,
            idf.default_weight if use else 0,
            out,
            counts,
        )
        return out, counts

    def sign_hashed(self, hashes: np.ndarray, offsets: np.ndarray, weights: np.ndarray | None = None) -> Fingerprints:
        """Fingerprints of documents given as CSR feature hashes (document i owns
        ``hashes[offsets[i]:offsets[i + 1]]``; repeats add up).

        ``weights`` (one per hash, int or float, any sign) override the scheme's weighting;
        without them each hash weighs 1 (``count``) or its IDF weight (``idf``). With the same
        shingling, ``sign_hashed(*shingle_batch(texts, sh, unique=False))`` equals ``sign(texts)``.
        """
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        check_offsets(offsets, len(hashes))
        out = np.empty((len(offsets) - 1, self.scheme.words), dtype=np.uint64)
        if weights is None and self.idf is not None:
            weights = self.idf.weights_of(hashes)
        if weights is None:
            simhash_csr(hashes, offsets, self._salts, out)
        else:
            weights = np.asarray(weights)
            if weights.shape != hashes.shape:
                raise ValueError(f"need one weight per hash: {weights.shape} vs {hashes.shape}")
            if weights.dtype.kind in "iub":
                weights = np.ascontiguousarray(weights, dtype=np.int64)
            else:
                weights = np.ascontiguousarray(weights, dtype=np.float64)
                if not np.isfinite(weights).all():
                    raise ValueError("weights must be finite")
            simhash_csr_weighted(hashes, weights, offsets, self._salts, out)
        return self._wrap(out)

    def sign_one(self, text: str) -> np.ndarray:
        """The fingerprint of one text: a uint64 scalar (64 bits) or uint64[2] (128 bits)."""
        return self.sign([text]).values[0]

    def vector_scheme(self, dim: int) -> SimHashScheme:
        """The scheme of fingerprints of ``dim``-dimensional vectors made by this hasher."""
        return SimHashScheme(bits=self.bits, seed=self.scheme.seed, shingling=None, dim=dim, hash_family=VECTOR_FAMILY)

    def sign_vectors(self, X: Any, *, chunk: int = 65536) -> Fingerprints:
        """Fingerprints of the rows of a float array X (n, dim) by Gaussian random hyperplanes.

        Bit j is [x . G[:, j] > 0] with G from :meth:`SimHashScheme.hyperplanes` (float64
        products; a row with a projection within rounding of 0 may differ across BLAS builds).
        Non-finite values raise ValueError.
        """
        chunk = check("chunk", chunk, Integer(1))
        X = np.asarray(X)
        if X.ndim != 2 or X.dtype.kind not in "fiu":
            raise ValueError(f"vectors must be a 2-D numeric array (n, dim), got {X.dtype} {X.shape}")
        n, dim = X.shape
        scheme = self.vector_scheme(dim)
        planes = self._planes.get(dim)
        if planes is None:
            planes = self._planes[dim] = scheme.hyperplanes(dim)
        out = np.empty((n, self.scheme.words), dtype=np.uint64)
        for lo in range(0, n, chunk):
            block = np.asarray(X[lo : lo + chunk], dtype=np.float64)
            if not np.isfinite(block).all():
                bad = lo + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
                raise ValueError(f"vector {bad} has a non-finite value")
            bits = (block @ planes) > 0
            packed = np.packbits(bits, axis=1, bitorder="little")
            out[lo : lo + chunk] = np.ascontiguousarray(packed).view("<u8").astype(np.uint64)
        return self._wrap(out, scheme)


def vectors_from_parquet(path: str, column: str) -> np.ndarray:
    """A Parquet list (or fixed-size list) column of numbers as float64[n, dim].

    Every row must be present and have the same length; the error names the file and row.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ...core.errors import InputError

    try:
        table = pq.read_table(path, columns=[column])
    except (KeyError, pa.ArrowInvalid) as exc:
        raise InputError(path, None, f"cannot read column {column!r}: {exc}") from None
    col = table.column(column).combine_chunks()
    if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or pa.types.is_fixed_size_list(col.type)):
        raise InputError(path, None, f"column {column!r} is {col.type}, expected a list of numbers")
    n = len(col)
    if n == 0:
        return np.empty((0, 0), dtype=np.float64)
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0]) + 1
        raise InputError(path, row, f"column {column!r} is null")
    lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
    if (lengths != lengths[0]).any():
        row = int(np.flatnonzero(lengths != lengths[0])[0]) + 1
        raise InputError(path, row, f"vector of length {lengths[row - 1]}, expected {lengths[0]} like row 1")
    values = pc.list_flatten(col)
    if values.null_count:
        raise InputError(path, None, f"column {column!r} holds null numbers")
    flat = values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    return flat.reshape(n, int(lengths[0]))
