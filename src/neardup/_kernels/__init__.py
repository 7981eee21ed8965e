"""Every numba kernel and LLVM intrinsic of neardup, a file per concern.

Nothing here imports the rest of neardup; the Python side (:mod:`neardup.text`, :mod:`neardup.methods`,
:mod:`neardup.index`, :mod:`neardup.io`, :mod:`neardup.core`) calls in. Modules: ``hashing`` (nd64 and
SplitMix64, the base of every sketch), ``intrinsics`` (LLVM IR for what numba cannot express:
AVX-512 byte compression, eight hashes at once, unaligned words, prefetches), ``charclass`` (the
tokenizer's character classes, from the generated ``unicode_data``), ``shingles`` (normalizing
and hashing the shingles of UTF-8 texts), ``minhash`` and ``oph`` (shingle hashes into classic and
one-permutation MinHash signatures), ``lsh`` (band keys and the LSH index's probes),
``candidates`` (MinHash candidates: buckets, verification, clusters), ``simhash`` (fingerprint
words, hyperplanes, document frequencies), ``hamming`` (permuted-table keys, scans and probes),
``sorting`` (radix sorts and run merges), ``spotsigs`` (spot signature extraction and the pruned
all-pairs probe), ``exact`` (nd128 keys, equal-key groups, the pre-pass table), ``imatch``
(lexicon signatures), ``measures`` (exact Jaccard and containment of sorted arrays),
``unionfind``, ``jsonl`` (the JSON Lines block scanner), ``lines`` (copying kept JSON Lines) and
``cache``. Kernels are compiled with ``cache=True`` into ``__pycache__`` beside these files, but
numba keys a cached kernel on its own file only, while kernels inline functions of other modules
here: so ``import neardup`` deletes the cached kernels whenever any module of this package has
changed (:mod:`neardup._kernels.cache`), which is why every numba function, and everything a kernel
reads at compile time, lives here.
"""
