"""Copying the kept records of a JSON Lines file without parsing it again.

When the first pass skipped no record, record number ``r`` is the r-th non-blank line of the
inputs, so writing the kept records of a JSONL input as JSONL is a byte copy of the lines that
``keep`` marks. :func:`copy_kept_lines` does that for a block of whole lines in one kernel
call (no per-line Python objects), a line being blank exactly when Python's ``bytes.isspace``
says so (ASCII space, ``\\t``, ``\\n``, ``\\v``, ``\\f``, ``\\r``) or it is empty.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _copy_kept(data, newlines, keep, start, out):
    n = data.shape[0]
    o = 0
    rec = start
    limit = keep.shape[0]
    i = 0
    for q in range(newlines.shape[0] + 1):
        j = newlines[q] if q < newlines.shape[0] else n
        if j <= i:  # empty line, or nothing after the last newline
            i = j + 1
            continue
        c = i
        while c < j and (data[c] == 32 or 9 <= data[c] <= 13):
            c += 1
        if c < j:
            if rec < limit and keep[rec]:
                out[o:o + j - i] = data[i:j]
                o += j - i
                out[o] = 10
                o += 1
            rec += 1
        i = j + 1
    return o, rec


def copy_kept_lines(block: bytes, keep: np.ndarray, start: int, out: np.ndarray) -> tuple[int, int]:
    """Copy the kept non-blank lines of ``block`` into ``out``, each followed by ``\\n``.

    ``block`` holds whole lines (its last line may lack its ``\\n``); its non-blank lines are the
    records ``start, start + 1, ...`` and line ``r`` is copied when ``keep[r]``. Lines are copied
    byte for byte (a ``\\r`` before the ``\\n`` included). ``out`` must hold ``len(block) + 1``
    bytes. Returns (bytes written to ``out``, the next record number); records beyond
    ``len(keep)`` are counted, not copied, so the caller can report the mismatch.

    >>> out = np.empty(32, dtype=np.uint8)
    >>> n, nxt = copy_kept_lines(b'{"a":1}\\n\\n  \\n{"a":2}\\n{"a":3}', np.array([False, True, True]), 0, out)
    >>> bytes(out[:n]), nxt
    (b'{"a":2}\\n{"a":3}\\n', 3)
    """
    data = np.frombuffer(block, dtype=np.uint8)
    return _copy_kept(data, np.flatnonzero(data == 10), keep, start, out)
