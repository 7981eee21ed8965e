"""Exact-key index: the stored documents whose 128-bit exact key equals a query's.

Follows the index contract (:mod:`neardup.index.base`). Keys are ``uint64[n, 2]`` from
:func:`neardup.methods.exact.keys.exact_keys` (or ``ExactConfig.sketch_texts``); the query kernel
is in :mod:`neardup._kernels.exact`.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .._kernels.exact import index_query_kernel
from ..core.parallel import MAX_WORKERS
from ..core.validation import Instance, Optional, ParameterError, ParameterTypeError, check, check_int
from ..methods.exact.config import ExactConfig
from ..methods.exact.keys import nonempty
from ..methods.exact.scheme import ExactScheme
from .base import Match, OneOrMany, check_empty, check_limit, check_similarity
from .growth import copy, zeros
from .keys import RowKeys
from .runs import SortedRuns

__all__ = ["ExactIndex"]


class ExactIndex(OneOrMany):
    """Documents with equal exact keys (the index contract of :mod:`neardup.index.base`).

    A query returns ``(key, 1.0)`` for every stored row whose 128-bit key equals the query key,
    in insertion order (every similarity is 1.0, so ``min_similarity``, checked to be in [0, 1],
    removes nothing; ``threshold`` is 1.0). The key of the empty text
    (:data:`~neardup.methods.exact.keys.EMPTY_KEY`) and rows marked ``empty`` in ``add`` are
    stored but never found, and a query with the empty text's key finds nothing, as in the exact
    batch job.

    Storage: one :class:`~neardup.index.runs.SortedRuns` table keyed by word 0 of the keys (hash
    output, so the bucket directories split it evenly); an equal word 0 is verified by word 1.
    Memory: 16 bytes per row for the keys, 14 to 16 for the table.

    Args:
        scheme: the ``ExactScheme`` of the keys (kept for reference: raw key arrays carry none).
        workers: threads for the sorts of batches of 65,536 rows or more.

    >>> from neardup.methods.exact.keys import exact_keys
    >>> index = ExactIndex()
    >>> index.add(["a", "b", "c"], exact_keys(["Hello  world", "other", "hello world!"]))
    >>> index.query(exact_keys(["HELLO WORLD"])[0])
    [('a', 1.0)]
    """

    def __init__(self, *, scheme: ExactScheme | None = None, workers: int = 1) -> None:
        self._scheme = check("scheme", scheme, Optional(Instance(ExactScheme)))
        self._workers = check_int("workers", workers, 1, MAX_WORKERS)
        self._words = np.empty((0, 2), dtype=np.uint64)
        self._rows = RowKeys()
        self._tables = SortedRuns(1, workers=self._workers)

    @classmethod
    def from_config(cls, config: ExactConfig, *, workers: int = 1) -> ExactIndex:
        """An index for the keys of the exact batch job ``config`` (its scheme: raw or normalized)."""
        config = check("config", config, Instance(ExactConfig))
        index = cls(scheme=config.scheme, workers=workers)
        index._config = config
        return index

    # -- properties --------------------------------------------------------------------------

    @property
    def threshold(self) -> float:
        """The default ``min_similarity``: 1.0, equal keys."""
        return 1.0

    @property
    def scheme(self) -> ExactScheme | None:
        return self._scheme

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[Hashable]:
        """The stored keys in insertion order."""
        return iter(self._rows)

    def __repr__(self) -> str:
        return f"ExactIndex(scheme={self._scheme}, size={len(self)})"

    # -- mutation ----------------------------------------------------------------------------

    def add(self, keys: Sequence[Hashable] | Hashable, exact_keys: Any, *, empty: Any = None) -> None:
        """Add one exact key (a row of uint64[n, 2]) per user key. User keys must be new and
        unique, else ``KeyError`` (nothing added). ``empty`` (bool[n]) marks documents without
        text: stored, never found; the empty text's key is empty anyway. One key with one exact
        key or one text, and many keys with texts, are taken too (:class:`~neardup.index.base.OneOrMany`)."""
        keys, exact_keys, empty = self._one_or_many(keys, exact_keys, empty)
        words = self._matrix(exact_keys)
        keys = list(keys)
        if len(keys) != words.shape[0]:
            raise ParameterError(f"keys must be one per exact key, got {len(keys)} keys for {words.shape[0]}")
        indexed = ~check_empty(empty, len(keys)) & nonempty(words)
        self._rows.check_new(keys)
        first = self._rows.append(keys)
        n_new = first + len(keys)
        if n_new > self._words.shape[0]:
            grown = zeros((max(n_new, self._words.shape[0] * 3 // 2, 256), 2), np.uint64)  # spilled past the budget
            copy(grown[:first], self._words[:first])
            self._words = grown
        self._words[first:n_new] = words
        rows = (np.flatnonzero(indexed) + first).astype(np.uint32)
        self._tables.append(words[indexed, 0][None, :], rows)

    def remove(self, keys: Iterable[Hashable]) -> None:
        """Remove the rows of ``keys``; an unknown key raises ``KeyError`` (nothing removed)."""
        self._rows.remove(keys)
        if self._rows.should_compact():
            n = self._rows.n
            keep, remap = self._rows.compact()
            self._tables.compact(remap)
            live = self._rows.n
            words = np.zeros((max(live + live // 2, 256), 2), dtype=np.uint64)
            words[:live] = self._words[:n][keep]
            self._words = words

    # -- queries -----------------------------------------------------------------------------

    def query(self, key: Any, *, min_similarity: float | None = None, limit: int | None = None) -> list[Match]:
        """The stored keys whose exact key equals ``key`` (uint64[2] or uint64[1, 2]), as
        ``(key, 1.0)`` in insertion order; at most ``limit`` (None: all). A text (``str``) is
        hashed with the index's config."""
        if isinstance(key, str):
            key = self._sketched([key]).values
        words = self._matrix(key, single=True)
        return self.query_batch(words, min_similarity=min_similarity, limit=limit)[0]

    def query_batch(
        self, exact_keys: Any, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[list[Match]]:
        """``[query(k) for k in exact_keys]``, in one kernel call; texts (a list of ``str``) too."""
        exact_keys, _ = self._text_batch(exact_keys)
        words = self._matrix(exact_keys)
        if min_similarity is not None:
            check_similarity(min_similarity)
        t = self._tables
        offsets, rows = index_query_kernel(
            words, t.keys, t.ids, t.dirs, t.runs, self._words, self._rows.alive, check_limit(limit)
        )
        found = [(k, 1.0) for k in self._rows.lookup(rows)]
        bounds = offsets.tolist()
        return [found[a:b] for a, b in itertools.pairwise(bounds)]

    # -- internals ---------------------------------------------------------------------------

    def _matrix(self, exact_keys: Any, single: bool = False) -> np.ndarray:
        """``exact_keys`` as C-contiguous uint64[n, 2] (one row when ``single``)."""
        values = np.asarray(exact_keys)
        if values.dtype != np.uint64:
            raise ParameterTypeError(f"exact keys must be uint64, got dtype {values.dtype}")
        if single and values.ndim == 1:
            values = values[None, :]
        if values.ndim != 2 or values.shape[1] != 2 or (single and values.shape[0] != 1):
            want = "uint64[2] (one key)" if single else "uint64[n, 2]"
            raise ParameterError(f"exact keys must be {want}, got shape {values.shape}")
        return np.ascontiguousarray(values)
