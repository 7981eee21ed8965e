"""Copying the kept records of a JSON Lines file without parsing it again.

When the first pass skipped no record, record number ``r`` is the r-th non-blank line of the
inputs, so writing the kept records of a JSONL input as JSONL is a byte copy of the lines that
``keep`` marks. :func:`copy_kept` does that for a block of whole lines in one kernel call (no
per-line Python objects), a line being blank exactly when Python's ``bytes.isspace`` says so
(ASCII space, ``\\t``, ``\\n``, ``\\v``, ``\\f``, ``\\r``) or it is empty; its Python entry is
:func:`neardup.io.jsonl.copy_kept_lines`.
"""

from __future__ import annotations

import numba as nb

from .intrinsics import copy_into


@nb.njit(cache=True, nogil=True)
def copy_kept(data, newlines, keep, start, out):
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
                copy_into(out, o, data, i, j - i)
                o += j - i
                out[o] = 10
                o += 1
            rec += 1
        i = j + 1
    return o, rec
