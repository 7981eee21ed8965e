"""Indexes: "which stored documents are like this one?", online, for the methods that have one.

Every index follows one contract (:class:`~neardup.index.base.Index`, documented in
:mod:`neardup.index.base`): ``add(keys, sketches, *, empty=None)``, ``remove(keys)``,
``query(sketch, *, min_similarity=None, limit=None) -> [(key, similarity), ...]`` and
``query_batch``; they share one storage engine (:class:`~neardup.index.runs.SortedRuns`).

- :class:`~neardup.index.lsh.LSHIndex`: MinHash signatures, LSH banding (method ``minhash``);
- :class:`~neardup.index.hamming.HammingIndex`: SimHash fingerprints, permuted tables (``simhash``);
- :class:`~neardup.index.exact.ExactIndex`: exact 128-bit keys (``exact``).

:class:`~neardup.index.durable.DurableIndex` (``neardup.Index``) keeps documents in a SQLite file
and one of these in memory: an index that survives the process and grows (:mod:`neardup.index.durable`).

:func:`index_for` builds the index of a method config with the batch job's settings::

    config = MinHashConfig(threshold=0.9)
    index = index_for(config)
    s = config.sketch_texts(texts)
    index.add(ids, s.values, empty=s.empty)
    index.query_batch(config.sketch_texts(new_texts).values)

The classes are imported on first use, so that importing this package loads no kernels.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..core.validation import Instance, ParameterError, check
from ..methods.base import MethodConfig

__all__ = ["DurableIndex", "ExactIndex", "HammingIndex", "Index", "LSHIndex", "SortedRuns", "index_for"]

_CLASSES = {
    "Index": "base",
    "LSHIndex": "lsh",
    "HammingIndex": "hamming",
    "ExactIndex": "exact",
    "SortedRuns": "runs",
    "DurableIndex": "durable",
}

_BY_METHOD = {"minhash": "LSHIndex", "simhash": "HammingIndex", "exact": "ExactIndex"}
"""The index class of each method that has one."""


def index_for(config: MethodConfig, *, workers: int = 1) -> Any:
    """The index of ``config``'s method, built with its settings (``Index.from_config``).

    >>> from neardup.methods.exact.config import ExactConfig
    >>> index_for(ExactConfig())
    ExactIndex(scheme=nd128/1 normalized, size=0)
    """
    config = check("config", config, Instance(MethodConfig))
    name = _BY_METHOD.get(config.name)
    if name is None:
        known = ", ".join(repr(m) for m in _BY_METHOD)
        raise ParameterError(
            f"config must be the config of a method with an index ({known}), got method {config.name!r}"
        )
    return __getattr__(name).from_config(config, workers=workers)


def __getattr__(name: str) -> Any:
    module = _CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_CLASSES))
