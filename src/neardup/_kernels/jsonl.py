"""A numba scanner that pulls the text and id fields out of a block of JSON Lines.

Reading JSONL with ``orjson.loads`` per line costs a Python dict per record; :func:`scan` does the
common case in one nogil kernel call per block and leaves Python only the decoding of the
extracted UTF-8 spans to ``str``. The kernel never reports errors: a line it is not certain about
is marked ``FALLBACK`` and the caller parses it with ``orjson`` as before, which produces the
exact error (or the value, for the rare valid lines the kernel declines). Its Python entry, and
what each line's result means, is :func:`neardup.io.jsonl_scan.scan_block`.

A line is ``OK`` only if all of these hold (anything else is ``FALLBACK``):

* the whole line is RFC 8259 JSON whose top-level value is an object (every nested value is
  validated: UTF-8 without overlongs, surrogates or code points above U+10FFFF, escapes
  including surrogate pairs, no raw control characters in strings, number grammar, literals),
  surrounded only by space, tab or CR;
* orjson would accept it: nesting at most ``MAX_DEPTH`` deep (orjson allows 1024), and no
  number that could overflow a double (more than ``MAX_DIGITS`` integer digits, or a positive
  decimal exponent that could reach ``10**MAX_DIGITS``);
* the text key occurs exactly once among the top-level keys and its value is a string; the id
  key at most once, with a string, null, or an integer of at most 18 digits other than ``-0``
  as value (larger integers may become floats in orjson; other kinds are left to ``str()``);
* no top-level key contains a backslash escape (keys are matched as raw bytes); nested keys are
  not looked at.

Speed: the kernel validates and unescapes strings 8 bytes at a time (a SWAR test for ``"``,
``\\``, control and non-ASCII bytes): ~2.6-3 GB/s on one core on the benchmark corpus, against
~0.6 GB/s for ``orjson.loads`` plus dict access per line.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.core.cpu import CPUTargetOptions

from .intrinsics import copy_into, ctz, load8, store8
from .warmup import Warmup

BLANK, OK, FALLBACK = 0, 1, 2


ID_ABSENT_OR_NULL, ID_STRING, ID_INTEGER = 0, 1, 2


MAX_DEPTH = 200


MAX_DIGITS = 300


_MAX_ID_DIGITS = 18


_FAIL = -1


_ONES = np.uint64(0x0101010101010101)


_HIGHS = np.uint64(0x8080808080808080)


_QUOTES = np.uint64(0x2222222222222222)


_BACKSLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)


_SPACES = np.uint64(0x2020202020202020)


def _hex_table() -> np.ndarray:
    """Value of each byte as a hex digit, -1 for the others."""
    table = np.full(256, -1, dtype=np.int64)
    for i, ch in enumerate(b"0123456789abcdef"):
        table[ch] = i
    for i, ch in enumerate(b"ABCDEF"):
        table[ch] = 10 + i
    return table


def _escape_table() -> np.ndarray:
    """Byte each one-character escape (``\\n`` ...) stands for, -1 for ``u`` and invalid ones."""
    table = np.full(256, -1, dtype=np.int64)
    for esc, val in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t'):
        table[esc] = val
    return table


_HEX = _hex_table()


_ESCAPE = _escape_table()


if hasattr(CPUTargetOptions, "_nrt"):
    _helper = nb.njit(cache=True, _nrt=False)
else:  # pragma: no cover - a numba without the (private) option: slower, same results
    _helper = nb.njit(cache=True)
"""Decorator of the kernel's helpers. They never allocate, and without NRT, passing arrays to
them costs no reference counting (which took ~40% of the scan time)."""


@_helper
def _special_mask(w):
    """High bit set in the lowest byte of ``w`` that is ``"``, ``\\``, < 0x20 or >= 0x80 (bits of
    higher bytes may be spurious); zero if there is none."""
    q = w ^ _QUOTES
    b = w ^ _BACKSLASHES
    m = ((q - _ONES) & ~q) | ((b - _ONES) & ~b) | ((w - _SPACES) & ~w) | w
    return m & _HIGHS


# --------------------------------------------------------------------------------------------
# Tokens. Each returns the position after the token, or _FAIL.
@_helper
def _skip_ws(data, i, n):
    """Skip JSON whitespace other than ``\\n`` (which ends the line)."""
    while i < n:
        c = data[i]
        if c != 32 and c != 9 and c != 13:
            break
        i += 1
    return i


@_helper
def _put_code_point(out, o, cp):
    """UTF-8 encode ``cp`` at ``out[o]``; returns the new ``o``."""
    if cp < 0x80:
        out[o] = cp
        return o + 1
    if cp < 0x800:
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@_helper
def _hex4(data, i, n):
    """The value of the 4 hex digits at ``data[i:i+4]``, or a negative number (an invalid digit
    is -1, whose bits are all set)."""
    if i + 4 > n:
        return -1
    return (_HEX[data[i]] << 12) | (_HEX[data[i + 1]] << 8) | (_HEX[data[i + 2]] << 4) | _HEX[data[i + 3]]


@_helper
def _unicode_escape(data, i, n, out, o):
    """Decode ``\\uXXXX`` (with its low surrogate if it is a high one) at ``data[i]`` (the
    backslash) into ``out[o]``; returns (new i, new o), i = _FAIL on a bad or lone surrogate."""
    cp = _hex4(data, i + 2, n)
    if cp < 0:
        return _FAIL, o
    if 0xDC00 <= cp < 0xE000:
        return _FAIL, o
    if 0xD800 <= cp < 0xDC00:
        if i + 8 > n or data[i + 6] != 92 or data[i + 7] != 117:
            return _FAIL, o
        lo = _hex4(data, i + 8, n)
        if lo < 0xDC00 or lo >= 0xE000:
            return _FAIL, o
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
        return i + 12, _put_code_point(out, o, cp)
    return i + 6, _put_code_point(out, o, cp)


@_helper
def _is_cont(c):
    return (c & 0xC0) == 0x80


@_helper
def _utf8_len(data, i, n):
    """Length of the valid UTF-8 sequence starting with the non-ASCII byte ``data[i]``, or 0."""
    c = data[i]
    if c < 0xC2 or c > 0xF4:
        return 0
    if c < 0xE0:
        return 2 if i + 1 < n and _is_cont(data[i + 1]) else 0
    lo, hi = 0x80, 0xBF
    if c == 0xE0 or c == 0xF0:
        lo = 0xA0 if c == 0xE0 else 0x90
    elif c == 0xED or c == 0xF4:
        hi = 0x9F if c == 0xED else 0x8F
    size = 3 if c < 0xF0 else 4
    if i + size > n:
        return 0
    c1 = data[i + 1]
    if c1 < lo or c1 > hi or not _is_cont(data[i + 2]):
        return 0
    if size == 4 and not _is_cont(data[i + 3]):
        return 0
    return size


@_helper
def _string(data, i, n, out, o):
    """Validate and unescape the string body starting at ``data[i]`` (just after the opening
    quote) into ``out[o:]``. Returns (position after the closing quote or _FAIL, new o, whether
    the string had an escape). Needs ``o <= i`` so that 8-byte stores stay inside ``out``."""
    escaped = False
    while True:
        while i + 8 <= n:
            w = load8(data, i)
            store8(out, o, w)
            m = _special_mask(w)
            if m != 0:
                k = ctz(m) >> 3
                i += k
                o += k
                break
            i += 8
            o += 8
        if i >= n:
            return _FAIL, o, escaped
        c = data[i]
        if c == 34:
            return i + 1, o, escaped
        if c == 92:
            escaped = True
            if i + 1 >= n:
                return _FAIL, o, escaped
            e = _ESCAPE[data[i + 1]]
            if e >= 0:
                out[o] = e
                i += 2
                o += 1
            elif data[i + 1] == 117:
                i, o = _unicode_escape(data, i, n, out, o)
                if i < 0:
                    return _FAIL, o, escaped
            else:
                return _FAIL, o, escaped
        elif c < 0x20:
            return _FAIL, o, escaped
        elif c < 0x80:
            out[o] = c
            i += 1
            o += 1
        else:
            size = _utf8_len(data, i, n)
            if size == 0:
                return _FAIL, o, escaped
            for k in range(size):
                out[o + k] = data[i + k]
            i += size
            o += size


@_helper
def _digits(data, i, n):
    """Position after the run of ASCII digits at ``data[i]``."""
    while i < n and 48 <= data[i] <= 57:
        i += 1
    return i


@_helper
def _number(data, i, n):
    """Validate the JSON number at ``data[i]``. Returns (end or _FAIL, whether it is an integer
    whose digits are its ``str()`` in Python: no fraction or exponent, at most 18 digits, not
    ``-0``). Fails on numbers that might overflow a double (orjson rejects infinity)."""
    negative = data[i] == 45
    if negative:
        i += 1
    if i >= n:
        return _FAIL, False
    start = i
    if data[i] == 48:
        i += 1
    elif 49 <= data[i] <= 57:
        i = _digits(data, i, n)
    else:
        return _FAIL, False
    int_digits = i - start
    if int_digits > MAX_DIGITS:
        return _FAIL, False
    integer = True
    if i < n and data[i] == 46:
        frac = i + 1
        i = _digits(data, frac, n)
        if i == frac:
            return _FAIL, False
        integer = False
    if i < n and (data[i] == 101 or data[i] == 69):
        integer = False
        i += 1
        exp_negative = False
        if i < n and (data[i] == 43 or data[i] == 45):
            exp_negative = data[i] == 45
            i += 1
        exp_start = i
        exp = 0
        while i < n and 48 <= data[i] <= 57:
            if exp < 1_000_000:
                exp = exp * 10 + (data[i] - 48)
            i += 1
        if i == exp_start:
            return _FAIL, False
        if not exp_negative and int_digits + exp > MAX_DIGITS:
            return _FAIL, False
    if integer and (int_digits > _MAX_ID_DIGITS or (negative and data[start] == 48)):
        integer = False
    return i, integer


@_helper
def _literal(data, i, n):
    """Position after the literal true, false or null at ``data[i]``, or _FAIL."""
    c = data[i]
    if c == 116:
        ok = i + 4 <= n and data[i + 1] == 114 and data[i + 2] == 117 and data[i + 3] == 101
        return i + 4 if ok else _FAIL
    if c == 102:
        ok = i + 5 <= n and data[i + 1] == 97 and data[i + 2] == 108 and data[i + 3] == 115 and data[i + 4] == 101
        return i + 5 if ok else _FAIL
    if c == 110:
        ok = i + 4 <= n and data[i + 1] == 117 and data[i + 2] == 108 and data[i + 3] == 108
        return i + 4 if ok else _FAIL
    return _FAIL


@_helper
def _member_key(data, i, n, out, o):
    """After ``{`` or ``,`` inside an object: skip whitespace, the key string and the colon and
    the whitespace after it. Returns the position of the value, or _FAIL."""
    i = _skip_ws(data, i, n)
    if i >= n or data[i] != 34:
        return _FAIL
    i = _string(data, i + 1, n, out, o)[0]
    if i < 0:
        return _FAIL
    i = _skip_ws(data, i, n)
    if i >= n or data[i] != 58:
        return _FAIL
    i = _skip_ws(data, i + 1, n)
    return i if i < n else _FAIL


@_helper
def _skip_value(data, i, n, out, o, stack, depth0):
    """Validate the JSON value at ``data[i]`` (``i < n``, not whitespace), nested in ``depth0``
    containers; returns the position after it or _FAIL. ``out[o:]`` is scratch space for its
    strings; ``stack`` records the open containers (1 = object, 0 = array)."""
    depth = 0
    while True:
        c = data[i]
        if c == 34:
            i = _string(data, i + 1, n, out, o)[0]
        elif c == 123 or c == 91:
            if depth0 + depth >= MAX_DEPTH:
                return _FAIL
            is_object = c == 123
            stack[depth] = is_object
            depth += 1
            j = _skip_ws(data, i + 1, n)
            if j < n and data[j] == (125 if is_object else 93):
                depth -= 1
                i = j + 1
            elif is_object:
                i = _member_key(data, i + 1, n, out, o)
                if i < 0:
                    return _FAIL
                continue
            else:
                if j >= n:
                    return _FAIL
                i = j
                continue
        elif c == 45 or 48 <= c <= 57:
            i = _number(data, i, n)[0]
        else:
            i = _literal(data, i, n)
        if i < 0:
            return _FAIL
        while depth > 0:
            i = _skip_ws(data, i, n)
            if i >= n:
                return _FAIL
            c = data[i]
            is_object = stack[depth - 1] == 1
            if c == 44:
                if is_object:
                    i = _member_key(data, i + 1, n, out, o)
                else:
                    i = _skip_ws(data, i + 1, n)
                    if i >= n:
                        return _FAIL
                break
            if c != (125 if is_object else 93):
                return _FAIL
            depth -= 1
            i += 1
        if i < 0:
            return _FAIL
        if depth == 0:
            return i


@_helper
def _key_is(data, start, end, key):
    """Whether ``data[start:end]`` equals ``key``."""
    if end - start != key.shape[0]:
        return False
    for k in range(key.shape[0]):
        if data[start + k] != key[k]:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Lines
@_helper
def _id_value(data, i, n, out, o):
    """Parse the id value at ``data[i]``. Returns (end or _FAIL, kind, start, end, new o)."""
    c = data[i]
    if c == 34:
        start = o
        i, o, _ = _string(data, i + 1, n, out, o)
        return i, ID_STRING, start, o, o
    if c == 110:
        i = _literal(data, i, n)
        return i, ID_ABSENT_OR_NULL, 0, 0, o
    if c == 45 or 48 <= c <= 57:
        end, integer = _number(data, i, n)
        if integer:
            return end, ID_INTEGER, i, end, o
    return _FAIL, ID_ABSENT_OR_NULL, 0, 0, o


@_helper
def _object(data, i, n, text_key, id_key, out, o, stack, row):
    """Parse the top-level object whose ``{`` is at ``data[i]``, filling ``row`` (text start and
    end, id kind, id start and end). Returns (position after ``}`` or _FAIL, new o)."""
    have_text = False
    have_id = False
    row[0] = row[1] = row[2] = row[3] = row[4] = 0
    j = _skip_ws(data, i + 1, n)
    if j < n and data[j] == 125:
        return _FAIL, o
    i += 1
    while True:
        i = _skip_ws(data, i, n)
        if i >= n or data[i] != 34:
            return _FAIL, o
        key_start = i + 1
        i, _, escaped = _string(data, key_start, n, out, o)
        if i < 0 or escaped:
            return _FAIL, o
        key_end = i - 1
        i = _skip_ws(data, i, n)
        if i >= n or data[i] != 58:
            return _FAIL, o
        i = _skip_ws(data, i + 1, n)
        if i >= n:
            return _FAIL, o
        if _key_is(data, key_start, key_end, text_key):
            if have_text or data[i] != 34:
                return _FAIL, o
            have_text = True
            row[0] = o
            i, o, _ = _string(data, i + 1, n, out, o)
            row[1] = o
        elif _key_is(data, key_start, key_end, id_key):
            if have_id:
                return _FAIL, o
            have_id = True
            i, row[2], row[3], row[4], o = _id_value(data, i, n, out, o)
        else:
            i = _skip_value(data, i, n, out, o, stack, 1)
        if i < 0:
            return _FAIL, o
        i = _skip_ws(data, i, n)
        if i >= n:
            return _FAIL, o
        if data[i] == 125:
            return (i + 1 if have_text else _FAIL), o
        if data[i] != 44:
            return _FAIL, o
        i += 1


@_helper
def _line_end(data, i, n):
    """Position of the next ``\\n`` at or after ``i``, or ``n``."""
    while i < n and data[i] != 10:
        i += 1
    return i


@_helper
def _line(data, i, n, text_key, id_key, out, o, stack, row):
    """Scan the line starting at ``data[i]``. Returns (status, line end, new o); OK lines get
    their fields in ``row``."""
    start = i
    odd_space = False
    while i < n:
        c = data[i]
        if c == 32 or c == 9 or c == 13:
            i += 1
        elif c == 11 or c == 12:
            odd_space = True
            i += 1
        else:
            break
    if i >= n or data[i] == 10:
        return BLANK, i, o
    if not odd_space and data[i] == 123:
        end, new_o = _object(data, i, n, text_key, id_key, out, o, stack, row)
        if end >= 0:
            end = _skip_ws(data, end, n)
            if end >= n or data[end] == 10:
                return OK, end, new_o
    return FALLBACK, _line_end(data, start, n), o


@nb.njit(cache=True)
def _grow(rows):
    """``rows`` copied into an array of twice as many rows."""
    grown = np.empty((2 * rows.shape[0], rows.shape[1]), dtype=rows.dtype)
    for r in range(rows.shape[0]):
        for c in range(rows.shape[1]):
            grown[r, c] = rows[r, c]
    return grown


@nb.njit(cache=True, nogil=True)
def scan(data, text_key, id_key, out):
    """Scan every line of ``data``, unescaping into ``out`` (at least ``max(len(data), 8)``
    bytes). Returns ``rows``: ``rows[i]`` = status, line start, line end, text start, text end,
    id kind, id start, id end."""
    n = data.shape[0]
    rows = np.empty((16 + n // 1024, 8), dtype=np.int64)
    stack = np.empty(MAX_DEPTH + 1, dtype=np.uint8)
    row = np.zeros(5, dtype=np.int64)
    o = np.int64(0)  # not the literal 0, which would compile every helper twice
    i = np.int64(0)
    count = 0
    while i < n:
        if count == rows.shape[0]:
            rows = _grow(rows)
        status, end, o = _line(data, i, n, text_key, id_key, out, o, stack, row)
        rows[count, 0] = status
        rows[count, 1] = i
        rows[count, 2] = end
        for k in range(5):
            rows[count, 3 + k] = row[k] if status == OK else 0
        count += 1
        i = end + 1
    return rows[:count]


SCAN_WARMUP = Warmup(scan, hot=64 << 20)
""":func:`scan` on a cold cache only after 64 MiB of JSON Lines were parsed without it (by
``orjson``, line by line, as :func:`~neardup.io.jsonl._parse_lines`; about 0.1 s at orjson's
0.6 GB/s, against 5 s of one core to compile the scanner): a small job never compiles it."""


@nb.njit(cache=True, nogil=True)
def gather_spans(src, starts, ends, stable_table, out, offsets, stable, chars):
    """Pack the spans ``src[starts[d]:ends[d]]`` (valid UTF-8: the scanner's unescaped texts) one
    after another into ``out``: text ``d`` is ``out[offsets[d]:offsets[d + 1]]``. ``chars[d]``:
    its length in characters, i.e. its bytes less its continuation bytes (``0b10xxxxxx``), which
    is ``len()`` of its ``str``. ``stable[d]``: every code point ``c`` of it is ASCII or has
    ``stable_table[c]`` set (:func:`neardup.text.utf8.stable_table`: the text is its own NFKC
    form and case-folds to itself up to ASCII case). The copy is a ``memmove`` and the ASCII
    test reads 8 bytes at a time; only texts with other bytes are decoded."""
    size = stable_table.shape[0]
    o = 0
    for d in range(starts.shape[0]):
        s = starts[d]
        n = ends[d] - s
        offsets[d] = o
        copy_into(out, o, src, s, n)
        high = np.uint64(0)
        i = 0
        while i + 8 <= n:
            high |= load8(src, s + i)
            i += 8
        while i < n:
            high |= np.uint64(src[s + i])
            i += 1
        cont = 0
        ok = True
        if high & _HIGHS:
            i = s
            while i < s + n:
                c = np.int64(src[i])
                if c < 0x80:
                    i += 1
                    continue
                if c < 0xE0:
                    cp = ((c & 0x1F) << 6) | (np.int64(src[i + 1]) & 0x3F)
                    k = 2
                elif c < 0xF0:
                    cp = ((c & 0x0F) << 12) | ((np.int64(src[i + 1]) & 0x3F) << 6) | (np.int64(src[i + 2]) & 0x3F)
                    k = 3
                else:
                    cp = size  # beyond every table
                    k = 4
                if cp >= size or not stable_table[cp]:
                    ok = False
                cont += k - 1
                i += k
        stable[d] = ok
        chars[d] = n - cont
        o += n
    offsets[starts.shape[0]] = o
