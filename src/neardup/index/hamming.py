"""SimHash index: the stored fingerprints within a Hamming distance of a query, by permuted tables.

Follows the index contract (:mod:`neardup.index.base`); the permuted-table scheme (Manku, Jain
and Das Sarma, WWW 2007) and its choice of blocks are in :mod:`neardup.methods.simhash.search`,
the query kernel in :mod:`neardup._kernels.hamming`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .._kernels.hamming import index_keys, query_kernel
from ..core.errors import IncompatibleSketchError
from ..core.parallel import MAX_WORKERS
from ..core.validation import (
    Choice,
    Instance,
    Integer,
    Optional,
    ParameterError,
    ParameterTypeError,
    check,
    check_int,
    conflict,
)
from ..methods.simhash.config import DEFAULT_BITS, DEFAULT_MAX_DISTANCE, SimHashConfig
from ..methods.simhash.scheme import Fingerprints, SimHashScheme
from ..methods.simhash.search import BlockPlan, all_pairs, block_plan, choose_blocks
from .base import Match, OneOrMany, check_empty, check_limit, check_similarity
from .growth import copy, zeros
from .keys import RowKeys
from .runs import PARALLEL_ROWS, SortedRuns, run_each

__all__ = ["HammingIndex"]

_ROUNDING = 1e-9  # min_similarity -> distance: (1 - s) * bits within this of an integer counts as it


class HammingIndex(OneOrMany):
    """Fingerprints within Hamming distance k of a query (the index contract of :mod:`neardup.index.base`).

    A query returns ``(key, 1 - d / bits)`` for every stored fingerprint at distance ``d <=
    floor((1 - min_similarity) * bits + 1e-9)`` of it: exactly the fingerprints within that
    distance (the permuted tables miss none), by distance, then insertion order.
    ``min_similarity`` defaults to ``threshold = 1 - max_distance / bits`` and may not ask for
    more than ``max_distance`` (the tables find nothing farther).

    Args:
        bits: fingerprint width, 64 or 128; defaults to ``scheme.bits``, else 128.
        max_distance: k, the largest distance a query can ask for.
        blocks: m > k blocks; ``None`` chooses m from the number of stored fingerprints (see
            :func:`~neardup.methods.simhash.search.choose_blocks`) and re-chooses it, rebuilding
            the tables, as the index grows.
        scheme: the ``SimHashScheme`` of the fingerprints; if ``None`` it is taken from the first
            ``Fingerprints`` added. Fingerprints of another scheme raise ``IncompatibleSketchError``.
        workers: threads for the keys and sorts of batches of 65,536 rows or more.

    The defaults (128 bits within 12) are the SimHash batch job's; ``from_config`` takes a
    config's. Each table is a :class:`~neardup.index.runs.SortedRuns` table of keys (the kept
    blocks' bits, at most 64) with the row of each; ``remove`` marks rows dead and compacts
    when more than half are. Memory: 8 * W bytes per fingerprint plus 14 to 16 bytes per
    fingerprint and table (C(m, k) tables). Not safe for concurrent ``add``/``remove``;
    concurrent queries are fine.

    >>> index = HammingIndex(bits=64, max_distance=3)
    >>> index.add(["a", "b", "c"], np.array([0b1111, 0b0111, 2**40], dtype=np.uint64))
    >>> index.query(np.uint64(0b1110))
    [('a', 0.984375), ('b', 0.96875)]
    >>> index.remove(["a"]); index.query(np.uint64(0b1110))
    [('b', 0.96875)]
    """

    def __init__(
        self,
        bits: int | None = None,
        max_distance: int = DEFAULT_MAX_DISTANCE,
        blocks: int | None = None,
        *,
        scheme: SimHashScheme | None = None,
        workers: int = 1,
    ) -> None:
        scheme = check("scheme", scheme, Optional(Instance(SimHashScheme)))
        if bits is None:
            bits = scheme.bits if scheme is not None else DEFAULT_BITS
        self._bits = check("bits", bits, Choice((64, 128)))
        if scheme is not None and scheme.bits != self._bits:
            raise conflict(f"bits={self._bits} disagrees with scheme.bits={scheme.bits}")
        self._k = check_int("max_distance", max_distance, 0, self._bits - 1)
        self._fixed_blocks = check("blocks", blocks, Optional(Integer(self._k + 1, self._bits)))
        self._workers = check_int("workers", workers, 1, MAX_WORKERS)
        self._scheme = scheme
        self._threshold = 1.0 - self._k / self._bits
        self._one_ndim = 0 if self._bits == 64 else 1  # one fingerprint: a scalar, or uint64[2]
        self._fps = np.empty((0, self._bits // 64), dtype=np.uint64)
        self._indexed = np.zeros(0, dtype=np.bool_)  # stored rows that are in the tables (not empty)
        self._rows = RowKeys()
        self._set_plan(self._fixed_blocks if self._fixed_blocks is not None else choose_blocks(self._bits, self._k, 1))
        self._refresh()

    @classmethod
    def from_config(cls, config: SimHashConfig, *, workers: int = 1) -> HammingIndex:
        """An index with the settings of the SimHash batch job ``config``: its bits, max_distance,
        blocks and scheme. IDF weighting is refused: its weights depend on the whole collection."""
        config = check("config", config, Instance(SimHashConfig))
        if config.weighting != "count":
            raise ParameterError(
                f"weighting must be 'count' for an index (IDF weights depend on the whole collection), "
                f"got {config.weighting!r}"
            )
        index = cls(config.bits, config.max_distance, config.blocks, scheme=config.scheme, workers=workers)
        index._config = config
        return index

    # -- properties --------------------------------------------------------------------------

    @property
    def bits(self) -> int:
        return self._bits

    @property
    def max_distance(self) -> int:
        return self._k

    @property
    def threshold(self) -> float:
        """The default ``min_similarity``: ``1 - max_distance / bits``."""
        return self._threshold

    @property
    def scheme(self) -> SimHashScheme | None:
        return self._scheme

    @property
    def plan(self) -> BlockPlan:
        """The blocks and tables in use."""
        return self._plan

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[Hashable]:
        """The stored keys in insertion order."""
        return iter(self._rows)

    def __repr__(self) -> str:
        return (
            f"HammingIndex(bits={self._bits}, max_distance={self._k}, blocks={self._plan.blocks}, "
            f"tables={len(self._plan.tables)}, size={len(self)})"
        )

    # -- mutation ----------------------------------------------------------------------------

    def add(self, keys: Sequence[Hashable] | Hashable, fps: Any, *, empty: Any = None) -> None:
        """Add one fingerprint per key. Keys must be new and unique, else ``KeyError`` (nothing added).

        ``fps``: ``Fingerprints``, uint64[n] (64 bits) or uint64[n, 2] (128 bits). ``empty``
        (bool[n]) marks documents without features: stored, never found. One key with one
        fingerprint or one text, and many keys with texts, are taken too
        (:class:`~neardup.index.base.OneOrMany`).
        """
        keys, fps, empty = self._one_or_many(keys, fps, empty)
        words = self._words(fps)
        keys = list(keys)
        if len(keys) != words.shape[0]:
            raise ParameterError(f"keys must be one per fingerprint, got {len(keys)} keys for {words.shape[0]}")
        empty = check_empty(empty, len(keys))
        self._rows.check_new(keys)
        if isinstance(fps, Fingerprints) and self._scheme is None:
            self._scheme = fps.scheme
        first = self._rows.append(keys)
        self._store(first, words, ~empty)
        m = self._fixed_blocks if self._fixed_blocks is not None else choose_blocks(self._bits, self._k, len(self))
        if m != self._plan.blocks:
            self._set_plan(m)
            self._rebuild()
        else:
            self._append(np.ascontiguousarray(words[~empty]), np.flatnonzero(~empty) + first)
        self._refresh()

    def remove(self, keys: Iterable[Hashable]) -> None:
        """Remove the fingerprints of ``keys``; an unknown key raises ``KeyError`` (nothing removed)."""
        self._rows.remove(keys)
        if self._rows.should_compact():
            self._compact()
        self._refresh()

    # -- queries -----------------------------------------------------------------------------

    def query(self, fp: Any, *, min_similarity: float | None = None, limit: int | None = None) -> list[Match]:
        """The stored keys within the distance of ``min_similarity`` of ``fp``, as ``(key, 1 - d / bits)``
        by distance, then insertion order; at most ``limit`` (None: all).

        ``fp``: one fingerprint (a uint64 or uint64[1] for 64 bits, uint64[2] or uint64[1, 2] for
        128 bits, or a one-row ``Fingerprints``), or a text (``str``) sketched with the index's
        config; an empty text finds nothing.
        """
        if isinstance(fp, str):
            sketched = self._sketched([fp])
            if sketched.empty[0]:
                return []
            fp = sketched.values
        words = self._words(fp, single=True)
        if words.shape[0] != 1:
            raise ParameterError(f"fp must be one fingerprint, got {words.shape[0]}; use query_batch")
        return self._search(words, min_similarity, limit)[0]

    def query_batch(
        self, fps: Any, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[list[Match]]:
        """``[query(fp) for fp in fps]``, in one kernel call; texts (a list of ``str``) too."""
        fps, empty = self._text_batch(fps)
        found = self._search(self._words(fps), min_similarity, limit)
        if empty is not None:  # an empty text's fingerprint (0) is valid: its query finds nothing
            found = [[] if e else f for f, e in zip(found, empty.tolist())]
        return found

    def pairs(self, *, min_similarity: float | None = None) -> list[tuple[Hashable, Hashable, float]]:
        """Every pair of stored keys within the distance of ``min_similarity`` (default: the
        threshold), as ``(key_a, key_b, 1 - d / bits)``, key_a inserted before key_b, sorted by
        (key_a, key_b) insertion order; by :func:`~neardup.methods.simhash.search.all_pairs`.
        Empty rows are in no pair."""
        kq = self._distance_for(min_similarity)
        n = self._rows.n
        rows = np.flatnonzero(self._rows.alive[:n] & self._indexed[:n])
        a, b, d = all_pairs(self._fps[rows], kq, workers=self._workers)
        keys_a = self._rows.lookup(rows[a])
        keys_b = self._rows.lookup(rows[b])
        return list(zip(keys_a, keys_b, (1.0 - d / self._bits).tolist()))

    # -- internals ---------------------------------------------------------------------------

    def _search(self, words: np.ndarray, min_similarity: Any, limit: Any) -> list[list[Match]]:
        kq = self._distance_for(min_similarity)
        offsets, rows, dist = query_kernel(words, kq, *self._kernel_args, check_limit(limit))
        bits = self._bits
        found = list(zip(self._rows.lookup(rows), [1.0 - d / bits for d in dist.tolist()]))
        return [found[a:b] for a, b in itertools.pairwise(offsets.tolist())]

    def _refresh(self) -> None:
        """Gather the arrays of the query kernel (after every change)."""
        t = self._tables
        self._kernel_args = (t.keys, t.ids, t.dirs, t.runs, *self._arrays, self._fps, self._rows.alive)

    def _distance_for(self, min_similarity: Any) -> int:
        """The largest distance d with similarity ``1 - d / bits >= min_similarity``."""
        if min_similarity is None:
            return self._k
        s = check_similarity(min_similarity)
        d = math.floor((1.0 - s) * self._bits + _ROUNDING)
        if d > self._k:
            raise ParameterError(
                f"min_similarity must be >= {self._threshold} for this index (max_distance={self._k} of "
                f"{self._bits} bits; build it with a larger max_distance to ask for less), got {min_similarity!r}"
            )
        return d

    def _words(self, fps: Any, single: bool = False) -> np.ndarray:
        """``fps`` as C-contiguous uint64[n, W], after the scheme check."""
        if isinstance(fps, Fingerprints):
            if self._scheme is not None:
                self._scheme.check_compatible(fps.scheme)
            if fps.scheme.bits != self._bits:
                raise IncompatibleSketchError(f"fingerprints have {fps.scheme.bits} bits, the index {self._bits}")
            values = fps.values
        else:
            values = np.asarray(fps)
        if values.dtype != np.uint64:
            if not (values.dtype.kind in "iu" and (values.size == 0 or values.min() >= 0)):
                raise ParameterTypeError(f"fingerprints must be uint64, got dtype {values.dtype}")
            values = values.astype(np.uint64)
        w = self._bits // 64
        if single and (values.ndim == 0 or (w == 2 and values.ndim == 1)):
            values = values.reshape(1, -1) if w == 2 else values.reshape(1)
        if w == 1 and values.ndim == 1:
            values = values.reshape(-1, 1)
        if values.ndim != 2 or values.shape[1] != w:
            want = "uint64[n]" if w == 1 else "uint64[n, 2]"
            raise ParameterError(f"fingerprints must be {self._bits}-bit ({want}), got shape {values.shape}")
        return np.ascontiguousarray(values)

    def _set_plan(self, blocks: int) -> None:
        """Use ``blocks`` blocks, with empty tables."""
        self._plan = block_plan(self._bits, self._k, blocks)
        self._arrays = self._plan.arrays()
        self._tables = SortedRuns(len(self._plan.tables), workers=self._workers)

    def _append(self, words: np.ndarray, rows: np.ndarray) -> None:
        """Add fingerprints ``words`` of ``rows`` to the tables as a new run; for large batches the
        keys are computed on ``workers`` threads, a group of tables each."""
        kstart, ksize, nkept, keybits = self._arrays[:4]
        tables = kstart.shape[0]
        workers = self._workers if words.shape[0] >= PARALLEL_ROWS else 1
        step = -(-tables // workers)

        def fill(out: np.ndarray) -> None:
            def group(lo: int) -> None:
                hi = lo + step
                index_keys(words, kstart[lo:hi], ksize[lo:hi], nkept[lo:hi], keybits[lo:hi], out[lo:hi])

            run_each(group, range(0, tables, step), workers)

        self._tables.append_filled(fill, rows.astype(np.uint32))

    def _store(self, first: int, words: np.ndarray, indexed: np.ndarray) -> None:
        n_new = first + words.shape[0]
        if n_new > self._fps.shape[0]:
            cap = max(n_new, self._fps.shape[0] * 3 // 2, 256)
            fps = zeros((cap, self._fps.shape[1]), np.uint64)  # spill files past the budget
            copy(fps[:first], self._fps[:first])
            mask = zeros(cap, np.bool_)
            mask[:first] = self._indexed[:first]
            self._fps, self._indexed = fps, mask
        self._fps[first:n_new] = words
        self._indexed[first:n_new] = indexed

    def _rebuild(self) -> None:
        """Rebuild every table from the live, non-empty rows, as one run."""
        self._tables = SortedRuns(len(self._plan.tables), workers=self._workers)
        n = self._rows.n
        rows = np.flatnonzero(self._rows.alive[:n] & self._indexed[:n])
        self._append(np.ascontiguousarray(self._fps[rows]), rows)

    def _compact(self) -> None:
        """Drop removed rows: renumber rows densely (keeping insertion order); the tables are
        compacted, or rebuilt if the number of blocks is re-chosen."""
        n = self._rows.n
        keep, remap = self._rows.compact()
        live = self._rows.n
        cap = max(live + live // 2, 256)
        fps = np.zeros((cap, self._fps.shape[1]), dtype=np.uint64)
        fps[:live] = self._fps[:n][keep]
        indexed = np.zeros(cap, dtype=np.bool_)
        indexed[:live] = self._indexed[:n][keep]
        self._fps, self._indexed = fps, indexed
        if self._fixed_blocks is None:
            m = choose_blocks(self._bits, self._k, live)
            if m != self._plan.blocks:
                self._set_plan(m)
                self._rebuild()
                return
        self._tables.compact(remap)
