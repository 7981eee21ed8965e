"""The text and id fields of a block of JSON Lines, found by one kernel call: :func:`scan_block`.

API::

    scan_block(data, text_key, id_key=b"id", out=None) -> ScanResult

``data`` is a uint8 array (or bytes-like) of lines separated by ``b"\\n"``; a final ``"\\n"`` does
not start another line, and an empty block has no lines. ``text_key`` and ``id_key`` are the
UTF-8 bytes of the field names (bytes or uint8 arrays); ``out`` an optional buffer to reuse for
the unescaped text (see :func:`scan_block`). For line ``i`` of the block:

* ``status[i]``: ``BLANK`` (empty, or only ASCII whitespace as ``bytes.isspace`` sees it),
  ``OK`` or ``FALLBACK``;
* ``line_start[i]``, ``line_end[i]``: the line's bytes in ``data``, without its ``"\\n"``;
* for ``OK`` lines, the text: ``bytes(out[text_start[i]:text_end[i]]).decode("utf-8")`` equals
  ``orjson.loads(line)[text_key]``;
* for ``OK`` lines, the id by ``id_kind[i]``: ``ID_ABSENT_OR_NULL`` (no id key, or null),
  ``ID_STRING`` (``out[id_start[i]:id_end[i]]`` holds it unescaped) or ``ID_INTEGER``
  (``data[id_start[i]:id_end[i]]`` holds the raw digits, which equal ``str()`` of the int
  orjson returns). When ``id_key`` equals ``text_key``, the id is the text (``ID_STRING``).

:func:`line_values` does that decoding for one line. Which lines are ``OK`` (the others are
``FALLBACK``, for the caller to parse with ``orjson``), and the scanner itself:
:mod:`neardup._kernels.jsonl`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._kernels.jsonl import ID_ABSENT_OR_NULL, ID_STRING, OK, scan


class ScanResult(NamedTuple):
    """Per-line outcome of :func:`scan_block`; every array has one entry per line of the block."""

    status: np.ndarray
    """uint8: BLANK, OK or FALLBACK."""
    line_start: np.ndarray
    """int64: offset of the line in ``data``."""
    line_end: np.ndarray
    """int64: offset of the line's end (its ``\\n`` or the end of ``data``)."""
    text_start: np.ndarray
    """int64: start of the unescaped text in ``out`` (OK lines)."""
    text_end: np.ndarray
    """int64: end of the unescaped text in ``out`` (OK lines)."""
    id_kind: np.ndarray
    """uint8: ID_ABSENT_OR_NULL, ID_STRING or ID_INTEGER (OK lines)."""
    id_start: np.ndarray
    """int64: start of the id in ``out`` (ID_STRING) or in ``data`` (ID_INTEGER)."""
    id_end: np.ndarray
    """int64: end of the id, as ``id_start``."""
    out: np.ndarray
    """uint8: unescaped UTF-8 text and string ids."""


def _readonly_bytes(value) -> np.ndarray:
    """``value`` (bytes-like or array) as a read-only contiguous uint8 array, so that every
    caller gets the one compiled (and cached) kernel."""
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value, dtype=np.uint8)
    else:
        arr = np.frombuffer(value, dtype=np.uint8)
    if arr.flags.writeable:
        arr = arr.view()
        arr.flags.writeable = False
    return arr


def _usable_out(out, size: int) -> bool:
    return (
        isinstance(out, np.ndarray)
        and out.dtype == np.uint8
        and out.ndim == 1
        and out.flags.c_contiguous
        and out.flags.writeable
        and out.shape[0] >= size
    )


def scan_block(data, text_key, id_key=b"id", out: np.ndarray | None = None) -> ScanResult:
    """Scan a block of JSON Lines; see the module docstring for the meaning of the result.

    ``out``, if given, is a uint8 array the text is written to when it has room (at least
    ``max(len(data), 8)`` bytes); else a new one is allocated. Reusing one buffer across blocks
    saves the page faults of a fresh one (~25% of the scan time) but the result then lives only
    until the next call with that buffer.

    >>> r = scan_block(b'{"id": 7, "text": "a\\\\u00e9"}\\n\\n[1]\\n', b"text")
    >>> r.status.tolist(), bytes(r.out[r.text_start[0]:r.text_end[0]]).decode()
    ([1, 0, 2], 'aé')
    """
    arr = _readonly_bytes(data)
    text = _readonly_bytes(text_key)
    ident = _readonly_bytes(id_key)
    size = max(arr.shape[0], 8)
    if not _usable_out(out, size):
        out = np.empty(size, dtype=np.uint8)
    rows = scan(arr, text, ident, out)
    cols = np.ascontiguousarray(rows.T)
    status = cols[0].astype(np.uint8)
    id_kind = cols[5].astype(np.uint8)
    id_start, id_end = cols[6], cols[7]
    if bytes(text) == bytes(ident):
        ok = status == OK
        id_kind[ok] = ID_STRING
        id_start[ok] = cols[3][ok]
        id_end[ok] = cols[4][ok]
    return ScanResult(status, cols[1], cols[2], cols[3], cols[4], id_kind, id_start, id_end, out)


def line_values(result: ScanResult, data, i: int) -> tuple[str, str | None]:
    """(text, id or None) of OK line ``i``, decoded as the caller of :func:`scan_block` would."""
    out = result.out
    text = bytes(out[result.text_start[i] : result.text_end[i]]).decode("utf-8")
    kind = result.id_kind[i]
    if kind == ID_ABSENT_OR_NULL:
        return text, None
    source = out if kind == ID_STRING else _readonly_bytes(data)
    return text, bytes(source[result.id_start[i] : result.id_end[i]]).decode("utf-8")
