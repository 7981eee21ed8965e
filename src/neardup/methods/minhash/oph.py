"""TODO: docstring."""

from __future__ import annotations

import numpy as np

from ..._kernels.oph import TABLE_ATTEMPTS, oph_param_array, sequence

OPH_FAMILY = "nd64/oph-dens-32"


def oph_params(seed: int) -> np.ndarray:
    """The seeded constants (salt, c, d) of the definition above, as uint64[3]."""
    return oph_param_array(np.uint64(seed))


def oph_sequence(params: np.ndarray, num_perm: int) -> np.ndarray:
    """The first 8 attempts of every bin's densification sequence, uint32[K, 8]: a table the
    kernels read instead of hashing, since the sequence depends on the seed and K only."""
    return sequence(params[1], params[2], num_perm, TABLE_ATTEMPTS)
