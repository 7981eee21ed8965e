"""The I-Match signature kernel: nd128 of each document's lexicon terms, under each of L lexicons.

:func:`imatch_kernel` folds the 64-bit hashes of a document's terms that are in the lexicon
(``kept``), in the order given (ascending), into the two nd128 lanes of :mod:`neardup._kernels.exact`;
signature 0 takes every such term, signature j > 0 only the terms ``t`` with ``fmix64(t ^ salt_j)``
below the threshold (a sub-lexicon), and a document with fewer than ``min_terms`` of them gets no
signature. :func:`lexicon_salt_array` turns
SplitMix64 states into the salts. I-Match and its multi-lexicon variant: :mod:`neardup.methods.imatch`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .exact import SEED_B, lane_a, lane_b
from .hashing import SEED, fmix64, splitmix64


@nb.njit(cache=True)
def lexicon_salt_array(states):
    out = np.empty_like(states)
    for j in range(states.shape[0]):
        out[j] = splitmix64(states[j])
    return out


@nb.njit(cache=True, nogil=True)
def imatch_kernel(values, offsets, kept, salts, threshold, keep_all, min_terms, sigs, has):
    ndoc = offsets.shape[0] - 1
    for d in range(ndoc):
        for j in range(salts.shape[0]):
            a = SEED
            b = SEED_B
            count = 0
            for p in range(offsets[d], offsets[d + 1]):
                if not kept[p]:
                    continue
                t = values[p]
                if j > 0 and not keep_all and fmix64(t ^ salts[j]) >= threshold:
                    continue
                a = lane_a(a, t)
                b = lane_b(b, t)
                count += 1
            if count >= min_terms and count > 0:
                n = np.uint64(8 * count)
                sigs[d, j, 0] = fmix64(a ^ n)
                sigs[d, j, 1] = fmix64(b ^ n)
                has[d, j] = True
            else:
                sigs[d, j, 0] = 0
                sigs[d, j, 1] = 0
                has[d, j] = False
