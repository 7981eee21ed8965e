"""SpotSigs: stopword-anchored word chains, weighted Jaccard, every pair found exactly.

Modules: ``scheme`` (word lists and chain settings), ``signatures`` (extraction, IDF filter),
``pairs`` (all pairs by length partitions and a pruned inverted index), ``plan`` (the batch job)
and ``config`` (the settings).
"""

from .config import SpotSigsConfig

__all__ = ["SpotSigsConfig"]
