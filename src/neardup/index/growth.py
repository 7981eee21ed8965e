"""The arrays an in-memory index grows, under the current memory budget.

An index grows its arrays (signatures, fingerprints, the tables' keys and row ids, the rows'
keys, the ids of the durable index) by making a larger one and copying. :func:`zeros` makes that
larger array as the current budget allows (:func:`neardup.core.budget.current_spill`): a plain
array in memory while the budget holds it, a spill file mapped as an array past it, so that
``neardup index add --memory SIZE`` keeps the process near its budget however many documents it
adds. Without a budget (the default for the library) it is ``np.zeros``. :func:`relieve` hands
back the pages of spill files that a stage touched, once the process is past its budget's cap;
:func:`reliever` gives a callable for worker threads (which do not see the caller's budget).

The arrays are the same either way (C-contiguous, aligned, writeable, zeros): the kernels read
them unchanged, and the answers do not depend on where they live.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.budget import current_spill

__all__ = ["copy", "relieve", "reliever", "zeros"]

_SLICE = 1 << 24  # bytes copied between two reliefs of the budget


def zeros(shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
    """An array of zeros: in memory while the current budget holds it, else a spill file."""
    spill = current_spill()
    if spill is None:
        return np.zeros(shape, dtype=dtype)
    out = spill.array(shape, dtype)
    if out.flags.owndata:  # in memory: uninitialised (a spill file reads as zeros)
        out.fill(0)
    return out


def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src``; under a budget, a slice of rows (first axis) of about ``_SLICE`` bytes
    at a time with the budget relieved after each, so that growing an array in a spill file does
    not make the old and the new one resident whole."""
    spill = current_spill()
    if spill is None or src.nbytes <= _SLICE:
        dst[...] = src
        return
    step = max(1, _SLICE // max(src[:1].nbytes, 1))
    for lo in range(0, src.shape[0], step):
        dst[lo : lo + step] = src[lo : lo + step]
        spill.relieve()


def reliever() -> Callable[[], None]:
    """A callable that relieves the current budget (:meth:`~neardup.core.budget.Spill.relieve`)
    from any thread; it does nothing without a budget."""
    spill = current_spill()
    return _nothing if spill is None else spill.relieve


def relieve() -> None:
    """Relieve the current budget now (nothing without one)."""
    reliever()()


def _nothing() -> None:
    return None
