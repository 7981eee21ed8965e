"""Exact duplicates: equal 128-bit keys of the normalized text; also the pre-pass of every method.

Modules: ``keys`` (nd128 and the exact key of a text), ``groups`` (grouping equal keys, the
streaming pre-pass), ``scheme``, ``plan`` (the batch job) and ``config`` (the settings).
"""

from .config import ExactConfig

__all__ = ["ExactConfig"]
