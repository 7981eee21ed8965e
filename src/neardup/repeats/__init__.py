"""Repeats inside documents: spans of at least L tokens found twice or more by a suffix array,
lines and paragraphs seen ``min_count`` times (an exact table or a counting Bloom filter), cut
from the text. :func:`find_repeats` finds them, :func:`clean` cuts them; the command is
``neardup repeats`` (:mod:`neardup.cli.repeats`). Modules: ``config``, ``tokens`` and ``spans``
(the span mode), ``units`` and ``bloom`` (lines and paragraphs), ``job``.
"""

from .config import RepeatsConfig
from .job import Removed, RepeatsResult, clean, find_repeats

__all__ = ["Removed", "RepeatsConfig", "RepeatsResult", "clean", "find_repeats"]
