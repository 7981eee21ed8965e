"""SimHash: random-hyperplane fingerprints, near-duplicates within a Hamming distance.

Modules: ``scheme`` (what determines a fingerprint), ``sketch`` (texts, weights and vectors to
fingerprints), ``search`` (all pairs within distance k by permuted tables), ``plan`` (the batch
job) and ``config`` (the settings).
"""

from .config import SimHashConfig

__all__ = ["SimHashConfig"]
