"""neardup: near-duplicate detection for text, sets and vectors.

The public names below are imported on first use (PEP 562), so that ``import neardup`` and the
command line start fast and load only the methods they run.

>>> import neardup
>>> mh = neardup.MinHasher(num_perm=128)
>>> sigs = mh.sign(["the cat sat on the mat today", "the cat sat on the mat today!"])
>>> sigs.jaccard(0, j=1)
1.0
"""

from __future__ import annotations

import importlib

from ._kernel_cache import drop_stale_kernels

__version__ = "0.1.0"

drop_stale_kernels()

# public name -> module that defines it
_EXPORTS = {
    "IncompatibleSketchError": "errors", "InputError": "errors", "NeardupError": "errors",
    "LSHIndex": "lsh", "LSHParams": "lsh", "candidate_probability": "lsh", "effective_threshold": "lsh",
    "optimal_params": "lsh", "params_for": "lsh",
    "containment": "measures", "jaccard": "measures", "weighted_jaccard": "measures",
    "Estimate": "minhash", "MinHasher": "minhash", "MinHashScheme": "minhash", "Signatures": "minhash",
    "acceptance_probability": "minhash", "confidence_interval": "minhash", "estimate_from_rows": "minhash",
    "ExactConfig": "dedup_exact", "IMatchConfig": "dedup_exact",
    "MinHashConfig": "dedup_minhash",
    "SimHashConfig": "dedup_simhash",
    "SpotSigsConfig": "dedup_spotsigs",
    "HammingIndex": "hamming",
    "Fingerprints": "simhash", "SimHasher": "simhash", "SimHashScheme": "simhash",
    "DedupResult": "pipeline", "dedup": "pipeline",
    "Shingling": "shingles", "shingle": "shingles", "shingle_batch": "shingles",
    "normalize": "text", "tokenize": "text",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
