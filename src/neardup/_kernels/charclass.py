"""The tokenizer's character classes: one uint8 class per Unicode code point (:data:`CHAR_CLASS`).

``WORD``: letters, marks and digits, the parts of word tokens; ``IDEOGRAPH``: characters of
scripts written without spaces (Han, Hiragana, Katakana), one token each; ``SYLLABLE``: letters
and digits of scripts written without spaces whose letters take combining marks (Thai, Lao,
Khmer, Myanmar), each starting a token that the ``WORD`` characters after it (its marks) join; ``SPACE``: whitespace;
``PUNCT``: punctuation and symbols; ``IGNORE``: invisible format characters (soft hyphen,
zero-width space), dropped; ``OTHER``: everything else (control characters, unassigned code
points), separators like ``SPACE``. The table is expanded from the runs of
:mod:`neardup._kernels.unicode_data`, generated once from Unicode 14.0 by
``scripts/gen_unicode_classes.py`` and shipped with the package, so tokenization does not change
with the Python version. The rules built on the classes are in :mod:`neardup.text.normalize`.
"""

from __future__ import annotations

import numpy as np

from . import unicode_data as _uc

OTHER, WORD, IDEOGRAPH, SPACE, PUNCT, IGNORE, SYLLABLE = 0, 1, 2, 3, 4, 5, 6


UNICODE_VERSION = _uc.UNICODE_VERSION


def _build_class_table() -> np.ndarray:
    starts = np.asarray(_uc.STARTS + (0x110000,), dtype=np.int64)
    return np.repeat(np.asarray(_uc.CLASSES, dtype=np.uint8), np.diff(starts))


CHAR_CLASS: np.ndarray = _build_class_table()
"""uint8[0x110000]: the class of every code point."""
