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

from ._kernels.cache import choose_cache_dir, drop_stale_kernels

__version__ = "0.1.0"

choose_cache_dir()
drop_stale_kernels()

# public name -> module that defines it
_EXPORTS = {
    "IncompatibleSketchError": "core.errors",
    "InputError": "core.errors",
    "NeardupError": "core.errors",
    "containment": "core.measures",
    "jaccard": "core.measures",
    "weighted_jaccard": "core.measures",
    "Shingling": "text.shingles",
    "shingle": "text.shingles",
    "shingle_batch": "text.shingles",
    "normalize": "text.normalize",
    "tokenize": "text.normalize",
    "edit_similarity": "text.edit",
    "edit_diff": "text.edit",
    "MinHashConfig": "methods.minhash.config",
    "MinHasher": "methods.minhash.sketch",
    "MinHashScheme": "methods.minhash.scheme",
    "Signatures": "methods.minhash.scheme",
    "Estimate": "methods.minhash.estimate",
    "acceptance_probability": "methods.minhash.estimate",
    "confidence_interval": "methods.minhash.estimate",
    "estimate_from_rows": "methods.minhash.estimate",
    "LSHParams": "methods.minhash.lsh",
    "candidate_probability": "methods.minhash.lsh",
    "effective_threshold": "methods.minhash.lsh",
    "optimal_params": "methods.minhash.lsh",
    "params_for": "methods.minhash.lsh",
    "SimHashConfig": "methods.simhash.config",
    "Fingerprints": "methods.simhash.scheme",
    "SimHashScheme": "methods.simhash.scheme",
    "SimHasher": "methods.simhash.sketch",
    "SpotSigsConfig": "methods.spotsigs.config",
    "ExactConfig": "methods.exact.config",
    "IMatchConfig": "methods.imatch.config",
    "LSHIndex": "index.lsh",
    "HammingIndex": "index.hamming",
    "ExactIndex": "index.exact",
    "index_for": "index",
    "Index": "index.durable",
    "DedupResult": "api",
    "dedup": "api",
    "LocalEngine": "engine.local",
    "ReferenceEngine": "engine.reference",
    "get_method": "methods.registry",
    "method_names": "methods.registry",
    "scheme_from_dict": "methods.registry",
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
