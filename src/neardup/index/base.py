"""The index contract: "which stored documents are like this one?", the same for every method.

An index holds one *sketch* per user key (a MinHash signature, a SimHash fingerprint, an exact
128-bit key) and answers queries with the stored keys whose similarity to the query sketch
reaches ``min_similarity``. :class:`Index` is the protocol that :class:`~neardup.index.lsh.LSHIndex`,
:class:`~neardup.index.hamming.HammingIndex` and :class:`~neardup.index.exact.ExactIndex` follow:

- ``add(keys, sketches, *, empty=None)`` stores one row per key; keys are any hashables, new to
  the index and unique (else ``KeyError``, and nothing is added). ``empty`` (bool per row,
  optional) marks documents without features: they are stored (they count in ``len``, ``in``,
  iteration and ``remove``) but are never returned by a query. Sketches an index recognises as
  empty by themselves (an all-``EMPTY_VALUE`` MinHash signature, the exact key of the empty
  text) are empty whatever ``empty`` says.
- ``remove(keys)`` drops the rows of ``keys`` (a key not in the index: ``KeyError``, nothing is
  removed); a removed key may be added again, and then counts as inserted anew.
- ``query(sketch, *, min_similarity=None, limit=None)`` returns a list of ``(key, similarity)``
  plain tuples: every stored key found by the index whose similarity to ``sketch`` is at least
  ``min_similarity``, sorted by similarity descending, then insertion order; at most ``limit``
  of them (``None``: all; 0 is allowed and returns nothing). The similarity is the method's
  own: the estimated Jaccard (equal slots / K) for MinHash, ``1 - d / bits`` for SimHash at
  Hamming distance d, 1.0 for equal exact keys. ``min_similarity`` defaults to ``threshold``.
- ``query_batch(sketches, *, min_similarity=None, limit=None)`` is ``[query(s) for s in
  sketches]``, computed in one call.
- ``len(index)``, ``key in index``, ``iter(index)`` (the keys in insertion order).
- ``scheme``: what made the sketches (sketches of another scheme raise
  ``IncompatibleSketchError``); ``None`` until known.
- ``threshold``: the default ``min_similarity``, the same as the batch job's for the same
  method and settings (``from_config(config)`` builds an index with a method config's settings,
  and :func:`neardup.index.index_for` picks the index class of a config).

A query finds what the method's batch job would pair with the query document, through the same
candidate generation (LSH banding; permuted tables, which find every fingerprint within the
distance; equal keys). ``config.sketch_texts(texts)`` makes sketches of texts for an index as
``Sketched(values, empty)``: ``index.add(keys, s.values, empty=s.empty)``, ``index.query_batch(s.values)``.
A query sketch of an empty document finds nothing for MinHash (all-``EMPTY_VALUE``) and exact
keys (the empty text's key), which recognise it; a SimHash fingerprint of an empty document is
0, a valid fingerprint too, so callers skip such queries (``Sketched.empty``).

Indexes are in memory, not safe for concurrent ``add``/``remove``; concurrent queries are fine.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.validation import ParameterError, ParameterTypeError, check_int, check_real, conflict

__all__ = ["Index", "Match", "OneOrMany", "check_empty", "check_limit", "check_similarity"]

Match = tuple[Hashable, float]
"""One query result: ``(key, similarity)``."""


@runtime_checkable
class Index(Protocol):
    """What every index offers (see the module docs for the behaviour)."""

    @property
    def scheme(self) -> Any:
        """The scheme of the stored sketches, or None until known."""
        ...

    @property
    def threshold(self) -> float:
        """The default ``min_similarity`` of queries."""
        ...

    # keys and sketches are positional: each index names its sketches (signatures, fps, exact_keys)

    def add(self, keys: Sequence[Hashable], sketches: Any, /, *, empty: Any = None) -> None: ...

    def remove(self, keys: Iterable[Hashable], /) -> None: ...

    def query(
        self, sketch: Any, /, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[Match]: ...

    def query_batch(
        self, sketches: Any, /, *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[list[Match]]: ...

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    def __iter__(self) -> Iterator[Hashable]: ...


def check_limit(limit: Any) -> int:
    """``limit`` as the kernels take it: -1 for None (all), else an int >= 0."""
    return -1 if limit is None else check_int("limit", limit, 0)


def check_similarity(value: Any, name: str = "min_similarity") -> float:
    """A similarity in [0, 1]."""
    return check_real(name, value, 0.0, 1.0)


def check_empty(empty: Any, n: int) -> np.ndarray:
    """``empty`` as bool[n] (None: no row is empty)."""
    if empty is None:
        return np.zeros(n, dtype=np.bool_)
    arr = np.asarray(empty)
    if arr.dtype != np.bool_:
        raise ParameterTypeError(f"empty must be None or a bool array of shape ({n},), got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ParameterError(f"empty must be None or a bool array of shape ({n},), got shape {arr.shape}")
    return arr


class OneOrMany:
    """What the in-memory indexes share: ``add`` and ``query`` of one item or of many, and of texts
    where the index knows its method config (it was made by ``from_config`` or
    :func:`neardup.index.index_for`).

    The shapes are read as follows, and anything else is an error that says what was expected:

    - ``add(key, text)``, ``add(keys, texts)``: texts (a ``str``, or a list or tuple of ``str``)
      are sketched with the index's config (``config.sketch_texts``), their empty flags included.
    - ``add(key, sketch)``: one sketch (a MinHash signature of shape (K,), an exact key of shape
      (2,), a 64-bit fingerprint as a scalar or a 128-bit one of shape (2,)) is one row, and
      ``key`` is its key (a list of exactly one key is accepted too); a ``str`` key is never
      iterated as keys.
    - ``add(keys, sketches)``: one row per key, as before.
    - ``query(text)``: the text sketched with the config; an empty text (no features) finds
      nothing. ``query_batch(texts)`` likewise, one list per text.
    """

    _config: Any = None
    _one_ndim: int = 1  # the ndim of one sketch given as an array (a row of the index's matrix)

    @property
    def config(self) -> Any:
        """The method config the index sketches texts with (None: the index takes sketches only)."""
        return self._config

    def _sketched(self, texts: list[str]) -> Any:
        if self._config is None:
            raise conflict(
                f"{type(self).__name__} was not made from a method config, so it cannot sketch texts: make it with "
                "neardup.index_for(config) (or from_config), or give sketches (config.sketch_texts(texts).values)"
            )
        return self._config.sketch_texts(texts)

    def _one_or_many(self, keys: Any, sketches: Any, empty: Any) -> tuple[list, Any, Any]:
        """``(keys, sketches, empty)`` of an ``add`` as rows: a list of keys and a batch of sketches."""
        single = False
        if isinstance(sketches, str) or _is_texts(sketches):
            single = isinstance(sketches, str)
            texts = [sketches] if single else list(sketches)
            sketched = self._sketched(texts)
            sketches = sketched.values
            empty = sketched.empty if empty is None else check_empty(np.atleast_1d(empty), len(texts)) | sketched.empty
        elif isinstance(sketches, (np.ndarray, np.generic, int, list, tuple)) and np.ndim(sketches) == self._one_ndim:
            sketches, single = np.asarray(sketches)[None, ...], True
            if empty is not None and np.ndim(empty) == 0:
                empty = np.array([empty])
        if single:
            if isinstance(keys, (list, np.ndarray)):
                if len(keys) != 1:
                    raise ParameterError(f"one sketch or text was given for {len(keys)} keys: give one key")
                return list(keys), sketches, empty
            return [keys], sketches, empty
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Iterable):
            rows = _rows(sketches)
            if rows != 1:
                raise ParameterError(
                    f"keys is one key ({type(keys).__name__}) for {rows} sketches: give a list of keys, one per "
                    "sketch (a str is not iterated as keys)"
                )
            return [keys], sketches, empty
        return list(keys), sketches, empty

    def _text_batch(self, sketches: Any) -> tuple[Any, np.ndarray | None]:
        """Texts given to ``query_batch`` sketched (with their empty flags); other input as it is."""
        if _is_texts(sketches):
            sketched = self._sketched(list(sketches))
            return sketched.values, sketched.empty
        return sketches, None


def _rows(sketches: Any) -> int | str:
    """How many rows a batch of sketches has (``"several"`` when it cannot tell)."""
    try:
        return len(sketches)
    except TypeError:
        return "several"


def _is_texts(x: Any) -> bool:
    """A non-empty list or tuple of str (texts rather than sketches)."""
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(t, str) for t in x)
