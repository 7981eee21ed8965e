"""TODO: docstring."""

from __future__ import annotations

import numpy as np

from . import unicode_data as _uc

OTHER, WORD, IDEOGRAPH, SPACE, PUNCT, IGNORE = 0, 1, 2, 3, 4, 5


UNICODE_VERSION = _uc.UNICODE_VERSION


def _build_class_table() -> np.ndarray:
    starts = np.asarray(_uc.STARTS + (0x110000,), dtype=np.int64)
    return np.repeat(np.asarray(_uc.CLASSES, dtype=np.uint8), np.diff(starts))


CHAR_CLASS: np.ndarray = _build_class_table()
"""uint8[0x110000]: the class of every code point."""
