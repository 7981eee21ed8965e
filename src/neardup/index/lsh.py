"""TODO: docstring."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any

import numba as nb
import numpy as np
from numba.core import types

from .._kernels.lsh import band_keys_kernel, query_kernel, query_one, query_state
from .._kernels.minhash import EMPTY_VALUE
from ..core.errors import IncompatibleSketchError
from ..methods.minhash.lsh import (
    DEFAULT_FN_WEIGHT,
    DEFAULT_FP_WEIGHT,
    LSHParams,
    check_int,
    check_similarity,
    params_for,
)
from ..methods.minhash.scheme import MinHashScheme, Signatures
from .runs import PARALLEL_ROWS, BandTables, run_each

_UINT32 = np.dtype(np.uint32)


_NO_KEY_VALUES = np.empty(0, dtype=np.int64)


_UNRESOLVED = object()  # an entry point that LSHIndex._resolve_entry_point has not looked up yet


_ENTRY_POINTS: dict = {}  # compiled query_one by argument types (see LSHIndex._resolve_entry_point)


# --------------------------------------------------------------------------------------------
# the index


class _Removed:
    """Marks an internal row whose key was removed (``None`` is a valid user key)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<removed>"


_REMOVED = _Removed()


class LSHIndex:
    """An in-memory MinHash LSH index: "which stored sets are like this one?".

    Signatures are banded as chosen by ``params_for(threshold, num_perm, bands, rows, ...)``; a
    stored row is a *candidate* of a query when at least one band of the two is equal. ``query``
    returns the candidates whose estimated Jaccard similarity (equal slots / num_perm) is at least
    ``min_similarity``. An empty set (every slot ``EMPTY_VALUE``) is stored but is never a
    candidate, and querying with it returns nothing.

    Args:
        threshold: the Jaccard similarity the banding targets; the default ``min_similarity``.
        num_perm: K, the signature length; defaults to ``scheme.num_perm``, else 128.
        bands, rows: set the banding by hand (see ``params_for``).
        fp_weight, fn_weight: weights for ``optimal_params``.
        scheme: the ``MinHashScheme`` of the signatures; if ``None`` it is taken from the first
            ``Signatures`` added. Signatures of another scheme raise ``IncompatibleSketchError``.

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
    """

    def __init__(
        self,
        threshold: float = 0.8,
        num_perm: int | None = None,
        *,
        bands: int | None = None,
        rows: int | None = None,
        fp_weight: float = DEFAULT_FP_WEIGHT,
        fn_weight: float = DEFAULT_FN_WEIGHT,
        scheme: MinHashScheme | None = None,
    ) -> None:
        if scheme is not None:
            if not isinstance(scheme, MinHashScheme):
                raise TypeError(f"scheme must be a MinHashScheme or None, got {type(scheme).__name__}")
            if num_perm is None:
                num_perm = scheme.num_perm
            elif num_perm != scheme.num_perm:
                raise ValueError(f"num_perm={num_perm} disagrees with scheme.num_perm={scheme.num_perm}")
        self._num_perm = check_int("num_perm", 128 if num_perm is None else num_perm)
        self._params = params_for(threshold, self._num_perm, bands, rows, fp_weight=fp_weight, fn_weight=fn_weight)
        self._scheme = scheme
        self._sigs = np.empty((0, self._num_perm), dtype=np.uint32)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._n = 0  # internal rows, removed ones included
        self._ids: dict[Hashable, int] = {}  # user key -> internal row id
        # While every key is a Python int of 64 bits, the keys are kept in an array only
        # (``_key_values``, row -> key): queries then return keys without reading key objects
        # (two more cache misses), and the garbage collector has no list of n keys to walk
        # (~28 ms a full collection at 1M keys; a dict of ints is not tracked). Otherwise
        # ``_keys`` is the list row -> user key (or _REMOVED).
        self._int_keys = True
        self._key_values = _NO_KEY_VALUES
        self._keys: list[Hashable] | None = None
        self._tables = BandTables(self._params.bands)
        self._default_min_matches = self._min_matches(self._params.threshold)
        self._min_match_cache: dict[float, int] = {}
        self._num_perm_float = float(self._num_perm)
        self._refresh_kernel_args()

    # -- properties ------------------------------------------------------------------------

    @property
    def params(self) -> LSHParams:
        """The banding in use."""
        return self._params

    @property
    def threshold(self) -> float:
        return self._params.threshold

    @property
    def num_perm(self) -> int:
        return self._num_perm

    @property
    def scheme(self) -> MinHashScheme | None:
        return self._scheme

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._ids

    def __iter__(self) -> Iterator[Hashable]:
        """The stored keys in insertion order."""
        return iter(list(self._ids))

    def __repr__(self) -> str:
        p = self._params
        return (
            f"LSHIndex(threshold={p.threshold}, num_perm={self._num_perm}, "
            f"bands={p.bands}, rows={p.rows}, size={len(self)})"
        )

    # -- mutation --------------------------------------------------------------------------

    def add(self, keys: Sequence[Hashable], signatures: Signatures | np.ndarray) -> None:
        """Add one row per key. Keys must be new and unique, else ``KeyError`` (nothing is added)."""
        values, scheme = self._matrix(signatures, "signatures")
        keys = list(keys)
        if len(keys) != values.shape[0]:
            raise ValueError(f"got {len(keys)} keys for {values.shape[0]} signatures")
        self._check_new_keys(keys)
        if scheme is not None and self._scheme is None:
            self._scheme = scheme
        first = self._n
        if first + len(keys) >= 2**32 - 1:
            raise OverflowError("an LSHIndex holds fewer than 2**32 - 1 rows")
        self._store_rows(values, self._int_key_values(keys))
        if self._keys is not None:
            self._keys.extend(keys)
        self._n = first + len(keys)
        self._ids.update(zip(keys, range(first, first + len(keys))))
        row_keys = self._band_keys(values)
        row_ids = np.arange(first, first + len(keys), dtype=np.uint32)
        nonempty = (values != EMPTY_VALUE).any(axis=1)
        if not nonempty.all():  # empty sets are stored but never banded
            row_keys, row_ids = row_keys[nonempty], row_ids[nonempty]
        self._tables.append(row_keys, row_ids)
        self._refresh_kernel_args()

    def remove(self, keys: Iterable[Hashable]) -> None:
        """Remove the rows of ``keys``; a key not in the index raises ``KeyError`` (nothing is removed)."""
        keys = list(keys)
        missing = [k for k in keys if k not in self._ids]
        if missing:
            raise KeyError(f"key {missing[0]!r} is not in the index")
        if len(set(keys)) != len(keys):
            raise KeyError("a key is listed twice in remove()")
        for k in keys:
            row = self._ids.pop(k)
            if self._keys is not None:
                self._keys[row] = _REMOVED
            self._alive[row] = False
        dead = self._n - len(self._ids)
        if dead >= 1024 and dead > len(self._ids):
            self._compact()
        self._refresh_kernel_args()

    # -- queries ---------------------------------------------------------------------------

    def query(
        self, signature: Signatures | np.ndarray, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[tuple[Hashable, float]]:
        """The stored keys that are candidates of ``signature`` with estimated Jaccard >= ``min_similarity``.

        ``min_similarity`` defaults to the index threshold; 0.0 returns every candidate. Results are
        ``(key, estimate)`` sorted by estimate descending, then insertion order; at most ``limit``.

        A uint32 row (shape (K,) or (1, K)), or a one-row ``Signatures`` of the index's own scheme
        object, goes straight to the compiled kernel (a few microseconds at 1M rows); anything else
        is validated and converted first.
        """
        cls = type(signature)
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
        limit = -1 if limit is None else check_int("limit", limit, minimum=0)
        if fn is not None:  # the kernel checks the shape and layout of q itself (n = -1: it cannot take q)
            n, first, matches, pairs = fn(q, self.query_state, min_matches, limit)
        if fn is None or n < 0:
            q = self._matrix(signature, "signature", single=True)[0]
            n, first, matches, pairs = query_one(q, self.query_state, min_matches, limit)
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
    ) -> list[list[tuple[Hashable, float]]]:
        """``query`` for every row of ``signatures``, in one pass."""
        values, _ = self._matrix(signatures, "signatures")
        min_matches = self._min_matches(self.threshold if min_similarity is None else min_similarity)
        limit = -1 if limit is None else check_int("limit", limit, minimum=0)
        offsets, rows, matches = query_kernel(values, *self._kernel_args, min_matches, limit)
        estimates = (matches / float(self._num_perm)).tolist()
        if self._keys_mapped:
            found = list(zip(self._key_values[rows].tolist(), estimates))
        else:
            keys = self._keys
            found = [(keys[r], e) for r, e in zip(rows.tolist(), estimates)]
        bounds = offsets.tolist()
        return [found[a:b] for a, b in itertools.pairwise(bounds)]

    # -- helpers ---------------------------------------------------------------------------

    def _refresh_kernel_args(self) -> None:
        """The arguments of the query kernels -- the arrays for ``query_batch``, the same in one
        ``_QueryState`` for ``query`` -- gathered once per change instead of once per query."""
        t = self._tables
        self._kernel_args = (self._params.rows, t.keys, t.ids, t.dirs, t.runs, self._sigs, self._alive)
        self.query_state = query_state(*self._kernel_args, self._key_values)
        self._keys_mapped = self._key_values.shape[0] > 0
        arrays = (*self._kernel_args[1:], self._key_values)
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
                fn = query_one.compile((query_type, nb.typeof(self.query_state), types.int64, types.int64))
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
        s = check_similarity("min_similarity", min_similarity)
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
            raise ValueError(f"{what} must be {want}, got shape {values.shape}")
        if values.shape[1] != self._num_perm:
            raise ValueError(f"{what} have {values.shape[1]} slots, expected num_perm={self._num_perm}")
        if scheme is not None and scheme.num_perm != self._num_perm:
            raise IncompatibleSketchError(f"scheme has num_perm={scheme.num_perm}, the index {self._num_perm}")
        if values.dtype != np.uint32:
            raise TypeError(f"{what} must be uint32 MinHash values, got dtype {values.dtype}")
        return np.require(values, requirements=("C", "A")), scheme  # C-contiguous and aligned

    def _check_new_keys(self, keys: list) -> None:
        if self._ids.keys().isdisjoint(keys) and len(set(keys)) == len(keys):
            return
        seen: set = set()
        for k in keys:
            if k in self._ids:
                raise KeyError(f"key {k!r} is already in the index")
            if k in seen:
                raise KeyError(f"key {k!r} is given twice")
            seen.add(k)

    def _band_keys(self, values: np.ndarray) -> np.ndarray:
        """``band_keys`` of the rows, computed in chunks on threads for large batches."""
        bands, rows = self._params.bands, self._params.rows
        out = np.empty((values.shape[0], bands), dtype=np.uint64)
        if values.shape[0] < PARALLEL_ROWS:
            return band_keys_kernel(values, bands, rows, out)
        step = max(PARALLEL_ROWS // 4, -(-values.shape[0] // (os.cpu_count() or 1)))

        def chunk(lo: int) -> None:
            band_keys_kernel(values[lo : lo + step], bands, rows, out[lo : lo + step])

        run_each(chunk, range(0, values.shape[0], step), parallel=values.shape[0] >= PARALLEL_ROWS)
        return out

    def _int_key_values(self, keys: list) -> np.ndarray | None:
        """``keys`` as int64 while every key added so far is a Python int that fits, else None."""
        if self._int_keys and set(map(type, keys)) <= {int}:
            try:
                return np.array(keys, dtype=np.int64)
            except OverflowError:
                pass
        if self._int_keys:  # from now on the keys live in a list
            n = self._n
            self._keys = self._key_values[:n].tolist()
            for row in np.flatnonzero(~self._alive[:n]).tolist():
                self._keys[row] = _REMOVED
        self._int_keys = False
        self._key_values = _NO_KEY_VALUES
        return None

    def _store_rows(self, values: np.ndarray, key_values: np.ndarray | None) -> None:
        n_old = self._n
        n_new = n_old + values.shape[0]
        if n_new > self._sigs.shape[0]:
            capacity = max(n_new, self._sigs.shape[0] + self._sigs.shape[0] // 2, 256)
            sigs = np.empty((capacity, self._num_perm), dtype=np.uint32)
            sigs[:n_old] = self._sigs[:n_old]
            alive = np.zeros(capacity, dtype=np.bool_)
            alive[:n_old] = self._alive[:n_old]
            self._sigs, self._alive = sigs, alive
        if key_values is not None and self._key_values.shape[0] < self._sigs.shape[0]:
            grown = np.empty(self._sigs.shape[0], dtype=np.int64)
            grown[:n_old] = self._key_values[:n_old]
            self._key_values = grown
        self._sigs[n_old:n_new] = values
        self._alive[n_old:n_new] = True
        if key_values is not None:
            self._key_values[n_old:n_new] = key_values

    def _compact(self) -> None:
        """Drop removed rows: renumber rows densely (keeping insertion order) everywhere."""
        n = self._n
        keep = self._alive[:n]
        remap = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
        self._tables.compact(remap)
        live = int(keep.sum())
        capacity = max(live + live // 2, 256)
        sigs = np.empty((capacity, self._num_perm), dtype=np.uint32)
        sigs[:live] = self._sigs[:n][keep]
        self._sigs = sigs
        self._alive = np.zeros(capacity, dtype=np.bool_)
        self._alive[:live] = True
        self._n = live
        if self._int_keys:
            key_values = np.empty(capacity, dtype=np.int64)
            key_values[:live] = self._key_values[:n][keep]
            self._key_values = key_values
            self._ids = dict(zip(key_values[:live].tolist(), range(live)))
        else:
            self._keys = [k for k in self._keys if k is not _REMOVED]
            self._ids = {k: i for i, k in enumerate(self._keys)}
