"""Repeats inside documents: spans of at least L tokens found twice or more by a suffix array,
lines and paragraphs seen ``min_count`` times (an exact table or a counting Bloom filter), cut
from the text. :func:`find_repeats` finds them, :func:`clean` cuts them; the command is
``neardup repeats`` (:mod:`neardup.cli.repeats`). Modules: ``config``, ``tokens`` and ``spans``
(the span mode), ``units`` and ``bloom`` (lines and paragraphs), ``job``.
"""

import importlib
from typing import Any

from .config import RepeatsConfig

__all__ = ["Removed", "RepeatsConfig", "RepeatsResult", "clean", "find_repeats"]

_FROM_JOB = {"Removed", "RepeatsResult", "clean", "find_repeats"}


def __getattr__(name: str) -> Any:
    # the job and its kernels load when first used, not when the command line starts
    if name in _FROM_JOB:
        value = getattr(importlib.import_module(".job", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
