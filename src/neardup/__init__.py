"""neardup: near-duplicate detection for text, sets and vectors.

>>> import neardup
>>> mh = neardup.MinHasher(num_perm=128)
>>> sigs = mh.sign(["the cat sat on the mat today", "the cat sat on the mat today!"])
>>> sigs.jaccard(0, j=1)
1.0
"""

__version__ = "0.1.0"

from .errors import IncompatibleSketchError, InputError, NeardupError
from .lsh import LSHIndex, LSHParams, candidate_probability, effective_threshold, optimal_params, params_for
from .measures import containment, jaccard, weighted_jaccard
from .minhash import (Estimate, MinHasher, MinHashScheme, Signatures, acceptance_probability,
                      confidence_interval, estimate_from_rows)
from .dedup_exact import ExactConfig, IMatchConfig
from .dedup_minhash import MinHashConfig
from .dedup_simhash import SimHashConfig
from .dedup_spotsigs import SpotSigsConfig
from .hamming import HammingIndex
from .simhash import Fingerprints, SimHasher, SimHashScheme
from .pipeline import DedupResult, dedup
from .shingles import Shingling, shingle, shingle_batch
from .text import normalize, tokenize

__all__ = [
    "ExactConfig", "Fingerprints", "HammingIndex", "IMatchConfig", "SimHashConfig", "SimHashScheme", "SimHasher",
    "SpotSigsConfig",
    "DedupResult", "Estimate", "IncompatibleSketchError", "InputError", "LSHIndex", "LSHParams",
    "MinHashConfig", "MinHashScheme", "MinHasher", "NeardupError", "Shingling", "Signatures", "acceptance_probability",
    "candidate_probability", "confidence_interval", "containment", "dedup", "effective_threshold",
    "estimate_from_rows", "jaccard", "normalize", "optimal_params", "params_for", "shingle", "shingle_batch",
    "tokenize", "weighted_jaccard",
]
