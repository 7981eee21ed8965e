"""MinHash + LSH: Jaccard similarity of shingle sets, estimated by MinHash, candidates by banding.

Modules: ``scheme`` (what determines a signature), ``sketch`` (texts and sets to signatures),
``oph`` (the one-permutation option), ``estimate`` (Jaccard estimates and their intervals),
``lsh`` (the S-curve and the choice of bands), ``candidates`` (bucketing, verification,
clusters), ``plan`` (the batch job) and ``config`` (the settings).
"""

from .config import MinHashConfig

__all__ = ["MinHashConfig"]
