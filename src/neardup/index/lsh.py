"""MinHash LSH index: the stored sets whose estimated Jaccard similarity to a query reaches a threshold.

Follows the index contract (:mod:`neardup.index.base`); the banding and its S-curve are in
:mod:`neardup.methods.minhash.lsh`, the query kernels in :mod:`neardup._kernels.lsh`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any

import numba as nb
import numpy as np
from numba.core import types

from .._kernels.lsh import band_keys_kernel, query_kernel, query_one, query_state
from .._kernels.minhash import EMPTY_VALUE
from ..core.errors import IncompatibleSketchError
from ..core.parallel import MAX_WORKERS
from ..core.validation import (
    Instance,
    Integer,
    Optional,
    ParameterError,
    ParameterTypeError,
    check,
    check_int,
    check_real,
    conflict,
)
from ..methods.minhash.config import DEFAULT_NUM_PERM, DEFAULT_THRESHOLD, MAX_NUM_PERM, MinHashConfig
from ..methods.minhash.lsh import DEFAULT_FN_WEIGHT, DEFAULT_FP_WEIGHT, LSHParams, params_for
from ..methods.minhash.scheme import MinHashScheme, Signatures
from .base import Match, OneOrMany, check_empty, check_limit, check_similarity
from .growth import copy, zeros
from .keys import RowKeys
from .runs import PARALLEL_ROWS, SortedRuns, run_each

__all__ = ["LSHIndex"]

_UINT32 = np.dtype(np.uint32)

_UNRESOLVED = object()  # an entry point that LSHIndex._resolve_entry_point has not looked up yet

_ENTRY_POINTS: dict = {}  # compiled query_one by argument types (see LSHIndex._resolve_entry_point)

_BANDING_MAX_THRESHOLD = 0.999  # a threshold of 1.0 bands like this (the S-curve needs t < 1), as MinHashConfig.lsh


class LSHIndex(OneOrMany):
    """An in-memory MinHash LSH index (the index contract of :mod:`neardup.index.base`).

    Signatures are banded as chosen by ``params_for(threshold, num_perm, bands, rows, ...)``; a
    stored row is a *candidate* of a query when at least one band of the two is equal. ``query``
    returns the candidates whose estimated Jaccard similarity (equal slots / num_perm) is at least
    ``min_similarity``, as ``(key, estimate)``. An empty set (every slot ``EMPTY_VALUE``, or a row
    marked in ``add(..., empty=)``) is stored but is never a candidate, and querying with an empty
    signature returns nothing.

    Args:
        threshold: the Jaccard similarity the banding targets, in (0, 1]; the default
            ``min_similarity`` (a threshold of 1.0 bands like 0.999).
        num_perm: K, the signature length; defaults to ``scheme.num_perm``, else 128 (the
            defaults are ``MinHashConfig``'s).
        bands, rows: set the banding by hand (see ``params_for``).
        fp_weight, fn_weight: weights for ``optimal_params``.
        scheme: the ``MinHashScheme`` of the signatures; if ``None`` it is taken from the first
            ``Signatures`` added. Signatures of another scheme raise ``IncompatibleSketchError``.
        workers: threads for the band keys and sorts of batches of 65,536 rows or more.

    ``LSHIndex.from_config(MinHashConfig(...))`` takes the batch job's threshold, K, banding and
    scheme. The index verifies candidates by their signature estimate (a config's
    ``verify="exact"`` re-reads texts, which an index does not keep).

    Memory: 4 * K bytes per row for the signatures, 14 to 16 bytes per row and band for the tables
    (12 for the sorted keys and row ids, 2 to 4 for their bucket directories) and, while every
    key is an ``int``, 8 bytes per row for a copy of the keys. Not safe for concurrent
    ``add``/``remove``; concurrent queries are fine.

    >>> rng = np.random.default_rng(0)
    >>> sigs = rng.integers(0, 2**32 - 1, size=(3, 128), dtype=np.uint32)
    >>> index = LSHIndex(threshold=0.8, num_perm=128)
    >>> index.add(["a", "b", "c"], sigs)
    >>> near_b = sigs[1].copy(); near_b[:10] = 0
    >>> index.query(near_b)
    [('b', 0.921875)]

    Made from a config, it takes texts, one or many (:class:`~neardup.index.base.OneOrMany`):

    >>> index = LSHIndex.from_config(MinHashConfig(threshold=0.5))
    >>> index.add("rain", "the cat sat on the mat and looked out of the window at the rain")
    >>> index.query("the cat sat on the mat and looked out of the window at the rain today")
    [('rain', 0.8984375)]
    """

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD,
        num_perm: int | None = None,
        *,
        bands: int | None = None,
        rows: int | None = None,
        fp_weight: float = DEFAULT_FP_WEIGHT,
        fn_weight: float = DEFAULT_FN_WEIGHT,
        scheme: MinHashScheme | None = None,
        workers: int = 1,
    ) -> None:
        scheme = check("scheme", scheme, Optional(Instance(MinHashScheme)))
        if scheme is not None:
            if num_perm is None:
                num_perm = scheme.num_perm
            elif num_perm != scheme.num_perm:
                raise conflict(f"num_perm={num_perm} disagrees with scheme.num_perm={scheme.num_perm}")
        self._num_perm = check_int("num_perm", DEFAULT_NUM_PERM if num_perm is None else num_perm, 1, MAX_NUM_PERM)
        self._threshold = check_real("threshold", threshold, 0.0, 1.0, low_open=True)
        bands = check("bands", bands, Optional(Integer(1, self._num_perm)))
        rows = check("rows", rows, Optional(Integer(1, self._num_perm)))
        fp_weight = check_real("fp_weight", fp_weight, 0.0)
        fn_weight = check_real("fn_weight", fn_weight, 0.0)
        try:
            self._params = params_for(
                min(self._threshold, _BANDING_MAX_THRESHOLD),
                self._num_perm,
                bands,
                rows,
                fp_weight=fp_weight,
                fn_weight=fn_weight,
            )
        except ValueError as exc:
            raise conflict(str(exc)) from None
        self._workers = check_int("workers", workers, 1, MAX_WORKERS)
        self._scheme = scheme
        self._sigs = np.empty((0, self._num_perm), dtype=np.uint32)
        self._rows = RowKeys()
        self._tables = SortedRuns(self._params.bands, workers=self._workers)
        self._default_min_matches = self._min_matches(self._threshold)
        self._min_match_cache: dict[float, int] = {}
        self._num_perm_float = float(self._num_perm)
        self._refresh_kernel_args()

    @classmethod
    def from_config(cls, config: MinHashConfig, *, workers: int = 1) -> LSHIndex:
        """An index with the settings of the MinHash batch job ``config``: its threshold, K,
        banding (``config.lsh``) and scheme."""
        config = check("config", config, Instance(MinHashConfig))
        lsh = config.lsh
        index = cls(
            config.threshold,
            config.num_perm,
            bands=lsh.bands,
            rows=lsh.rows,
            scheme=config.scheme,
            workers=workers,
        )
        index._config = config
        return index

    # -- properties ------------------------------------------------------------------------

    @property
    def params(self) -> LSHParams:
        """The banding in use."""
        return self._params

    @property
    def threshold(self) -> float:
        """The default ``min_similarity``."""
        return self._threshold

    @property
    def num_perm(self) -> int:
        return self._num_perm

    @property
    def scheme(self) -> MinHashScheme | None:
        return self._scheme

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[Hashable]:
        """The stored keys in insertion order."""
        return iter(self._rows)

    def __repr__(self) -> str:
        p = self._params
        return (
            f"LSHIndex(threshold={self._threshold}, num_perm={self._num_perm}, "
            f"bands={p.bands}, rows={p.rows}, size={len(self)})"
        )

    # -- mutation --------------------------------------------------------------------------

    def add(self, keys: Sequence[Hashable] | Hashable, signatures: Any, *, empty: Any = None) -> None:
        """Add one row per key. Keys must be new and unique, else ``KeyError`` (nothing is added).

        ``empty`` (bool[n]) marks sets without features: stored, never candidates; a signature
        of ``EMPTY_VALUE`` in every slot is empty anyway. One key with one signature (shape (K,))
        or one text, and many keys with texts, are taken too (:class:`~neardup.index.base.OneOrMany`).
        """
        keys, signatures, empty = self._one_or_many(keys, signatures, empty)
        values, scheme = self._matrix(signatures, "signatures")
        keys = list(keys)
        if len(keys) != values.shape[0]:
            raise ParameterError(
                f"keys must be one per signature, got {len(keys)} keys for {values.shape[0]} signatures"
            )
        empty = check_empty(empty, len(keys))
        self._rows.check_new(keys)
        if scheme is not None and self._scheme is None:
            self._scheme = scheme
        first = self._rows.append(keys)
        self._store_rows(first, values)
        row_keys = self._band_keys(values)
        row_ids = np.arange(first, first + len(keys), dtype=np.uint32)
        banded = ~empty & (values != EMPTY_VALUE).any(axis=1)
        if not banded.all():  # empty sets are stored but never banded
            row_keys, row_ids = row_keys[banded], row_ids[banded]
        self._tables.append(row_keys.T, row_ids)
        self._refresh_kernel_args()

    def remove(self, keys: Iterable[Hashable]) -> None:
        """Remove the rows of ``keys``; a key not in the index raises ``KeyError`` (nothing is removed)."""
        self._rows.remove(keys)
        if self._rows.should_compact():
            self._compact()
        self._refresh_kernel_args()

    # -- queries ---------------------------------------------------------------------------

    def query(self, signature: Any, *, min_similarity: float | None = None, limit: int | None = None) -> list[Match]:
        """The stored keys that are candidates of ``signature`` with estimated Jaccard >= ``min_similarity``.

        ``min_similarity`` defaults to the index threshold; 0.0 returns every candidate. Results are
        ``(key, estimate)`` sorted by estimate descending, then insertion order; at most ``limit``
        (None: all).

        A uint32 row (shape (K,) or (1, K)), or a one-row ``Signatures`` of the index's own scheme
        object, goes straight to the compiled kernel (a few microseconds at 1M rows); anything else
        is validated and converted first. A text (``str``) is sketched with the index's config
        (an index made from one); an empty text finds nothing.
        """
        cls = type(signature)
        if cls is str:
            sketched = self._sketched([signature])
            if sketched.empty[0]:
                return []
            signature, cls = sketched.values, np.ndarray
        fn = None
        if cls is Signatures:
            q = signature.values  # uint32 of shape (n, K), checked when the Signatures was made
            if signature.scheme is self._scheme and q.ndim == 2:
                fn = self._query_matrix_fn
        elif cls is np.ndarray and signature.dtype is _UINT32:
            q = signature
            ndim = q.ndim
            fn = self._query_row_fn if ndim == 1 else self._query_matrix_fn if ndim == 2 else None
        if fn is _UNRESOLVED:
            fn = self._resolve_entry_point(q.ndim)
        if min_similarity is None:
            min_matches = self._default_min_matches
        else:
            cacheable = type(min_similarity) is float  # not bool, Decimal, ... which compare equal to floats
            min_matches = self._min_match_cache.get(min_similarity) if cacheable else None
            if min_matches is None:
                min_matches = self._min_matches(min_similarity)
                if cacheable and len(self._min_match_cache) < 256:
                    self._min_match_cache[min_similarity] = min_matches
        limit = -1 if limit is None else check_limit(limit)
        if fn is not None:  # the kernel checks the shape and layout of q itself (n = -1: it cannot take q)
            n, first, matches, pairs = fn(q, self._state, min_matches, limit)
        if fn is None or n < 0:
            q = self._matrix(signature, "signature", single=True)[0]
            n, first, matches, pairs = query_one(q, self._state, min_matches, limit)
        if n <= 1:
            if n == 0:
                return []
            return [(first if self._keys_mapped else self._keys[first], matches / self._num_perm_float)]
        k = self._num_perm_float
        if self._keys_mapped:
            return [(key, m / k) for key, m in pairs.tolist()]
        keys = self._keys
        return [(keys[r], m / k) for r, m in pairs.tolist()]

    def query_batch(
        self, signatures: Signatures | np.ndarray, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[list[Match]]:
        """``[query(s) for s in signatures]``, in one kernel call; texts (a list of ``str``) too."""
        signatures, _ = self._text_batch(signatures)
        values, _ = self._matrix(signatures, "signatures")
        min_matches = self._default_min_matches if min_similarity is None else self._min_matches(min_similarity)
        offsets, rows, matches = query_kernel(values, *self._kernel_args, min_matches, check_limit(limit))
        estimates = (matches / self._num_perm_float).tolist()
        found = list(zip(self._rows.lookup(rows), estimates))
        bounds = offsets.tolist()
        return [found[a:b] for a, b in itertools.pairwise(bounds)]

    # -- helpers ---------------------------------------------------------------------------

    def __getstate__(self) -> dict:
        """The index's arrays and settings; the compiled query state and entry points are rebuilt
        when it is loaded (a numba structref does not pickle)."""
        state = dict(self.__dict__)
        for name in ("_state", "_kernel_args", "_query_row_fn", "_query_matrix_fn", "_array_types"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._refresh_kernel_args()

    def _refresh_kernel_args(self) -> None:
        """The arguments of the query kernels -- the arrays for ``query_batch``, the same in one
        ``_QueryState`` for ``query`` -- gathered once per change instead of once per query."""
        t = self._tables
        rk = self._rows
        self._kernel_args = (self._params.rows, t.keys, t.ids, t.dirs, t.runs, self._sigs, rk.alive)
        self._state = query_state(*self._kernel_args, rk.values)
        self._keys_mapped = rk.mapped
        self._keys = rk.keys  # row -> key when not mapped (the query path reads it directly)
        arrays = (*self._kernel_args[1:], rk.values)
        if all(a.flags.carray for a in arrays):
            self._array_types = tuple((a.dtype, a.ndim) for a in arrays)
            self._query_row_fn = self._query_matrix_fn = _UNRESOLVED
        else:
            self._query_row_fn = self._query_matrix_fn = None

    def _resolve_entry_point(self, ndim: int):
        """``query_one`` compiled for a C-contiguous uint32 query of ``ndim`` dimensions and for the
        types of the index arrays, to be called without numba's per-call type dispatch (~0.3 us).

        The caller guarantees the query is a uint32 ndarray of that ndim; its shape, strides and
        alignment are checked by ``query_one``. The index arrays keep their types (every one is
        C-contiguous, aligned and writeable, checked in ``_refresh_kernel_args``; the key of
        ``_ENTRY_POINTS`` holds their dtypes and ndims) until the next ``_refresh_kernel_args``.
        """
        key = (ndim, self._array_types)
        fn = _ENTRY_POINTS.get(key)
        if fn is None:
            query_type = types.Array(types.uint32, ndim, "C")
            try:
                fn = query_one.compile((query_type, nb.typeof(self._state), types.int64, types.int64))
            except Exception:  # pragma: no cover - a numba whose Dispatcher.compile returns no function
                fn = query_one
            _ENTRY_POINTS[key] = fn
        if ndim == 1:
            self._query_row_fn = fn
        else:
            self._query_matrix_fn = fn
        return fn

    def _min_matches(self, min_similarity: float) -> int:
        """The fewest equal slots m with m / K >= min_similarity (the same float comparison users make)."""
        s = check_similarity(min_similarity)
        k = self._num_perm
        m = max(0, math.ceil(s * k) - 1)
        while m / k < s:
            m += 1
        return m

    def _matrix(self, signatures: Any, what: str, single: bool = False) -> tuple[np.ndarray, MinHashScheme | None]:
        """Validate ``signatures`` into a C-contiguous, aligned uint32 (n, K) matrix and its scheme."""
        scheme = None
        if isinstance(signatures, Signatures):
            scheme = signatures.scheme
            if self._scheme is not None:
                self._scheme.check_compatible(scheme)
            values = signatures.values
        else:
            values = np.asarray(signatures)
        if single and values.ndim == 1:
            values = values[None, :]
        if values.ndim != 2 or (single and values.shape[0] != 1):
            want = "a 1-D row" if single else "a 2-D (n, num_perm) array"
            raise ParameterError(f"{what} must be {want}, got shape {values.shape}")
        if values.shape[1] != self._num_perm:
            raise ParameterError(f"{what} have {values.shape[1]} slots, expected num_perm={self._num_perm}")
        if scheme is not None and scheme.num_perm != self._num_perm:
            raise IncompatibleSketchError(f"scheme has num_perm={scheme.num_perm}, the index {self._num_perm}")
        if values.dtype != np.uint32:
            raise ParameterTypeError(f"{what} must be uint32 MinHash values, got dtype {values.dtype}")
        return np.require(values, requirements=("C", "A")), scheme  # C-contiguous and aligned

    def _band_keys(self, values: np.ndarray) -> np.ndarray:
        """``band_keys`` of the rows, computed in chunks on ``workers`` threads for large batches."""
        bands, rows = self._params.bands, self._params.rows
        out = np.empty((values.shape[0], bands), dtype=np.uint64)
        if values.shape[0] < PARALLEL_ROWS or self._workers == 1:
            return band_keys_kernel(values, bands, rows, out)
        step = max(PARALLEL_ROWS // 4, -(-values.shape[0] // self._workers))

        def chunk(lo: int) -> None:
            band_keys_kernel(values[lo : lo + step], bands, rows, out[lo : lo + step])

        run_each(chunk, range(0, values.shape[0], step), self._workers)
        return out

    def _store_rows(self, first: int, values: np.ndarray) -> None:
        n_new = first + values.shape[0]
        if n_new > self._sigs.shape[0]:
            capacity = max(n_new, self._sigs.shape[0] + self._sigs.shape[0] // 2, 256)
            sigs = zeros((capacity, self._num_perm), np.uint32)  # a spill file past the budget
            copy(sigs[:first], self._sigs[:first])
            self._sigs = sigs
        self._sigs[first:n_new] = values

    def _compact(self) -> None:
        """Drop removed rows: renumber rows densely (keeping insertion order) everywhere."""
        n = self._rows.n
        keep, remap = self._rows.compact()
        self._tables.compact(remap)
        live = self._rows.n
        sigs = np.zeros((max(live + live // 2, 256), self._num_perm), dtype=np.uint32)
        sigs[:live] = self._sigs[:n][keep]
        self._sigs = sigs
