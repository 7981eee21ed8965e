"""The JSON Lines scanner, and the copy of kept JSONL lines.

Without a payload to keep, each block of lines is scanned by one kernel call
(:func:`neardup.io.jsonl_scan.scan_block`) and ``orjson`` parses only the lines it declines; with
one (for :func:`neardup.io.write.write_kept`), every line is parsed. Both give the same records and
the same errors. :func:`copy_kept_jsonl` writes the kept lines of a file whose every non-blank line
is a valid record as bytes, without parsing them again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import orjson

from .._kernels.lines import copy_kept
from ..core.errors import InputError, LinesNeeded
from ..text.utf8 import UTF8_TEXT_MIN, PackedTexts, Utf8Text
from .policy import (
    MISSING,
    Chunk,
    Policy,
    bad_utf8,
    empty_id,
    kind_of,
    missing_id,
    missing_text,
    text_not_str,
)
from .streams import StreamDamage, count_newlines, damaged, line_blocks, open_input, raw_blocks, reused_blocks

if TYPE_CHECKING:
    from .write import JsonlSink


def _json_error(path: str, line: int, raw: bytes, exc: orjson.JSONDecodeError) -> InputError:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as uexc:
        return bad_utf8(path, line, uexc, "line")
    return InputError(
        path,
        line,
        f"malformed JSON at column {exc.colno}: {exc.msg} (expected one JSON object per line)",
        reason="malformed JSON",
    )


def _parse_record(line: bytes, path: str, lineno: int, pol: Policy) -> tuple[str, str, dict] | None:
    """(id, text, object) of one non-blank JSONL line, or None after ``pol.reject``-ing it."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        pol.reject(_json_error(path, lineno, bytes(line), exc))
        return None
    if type(obj) is not dict:
        pol.reject(
            InputError(path, lineno, f"expected a JSON object per line, got {kind_of(obj)}", reason="not a JSON object")
        )
        return None
    text = obj.get(pol.text_field, MISSING)
    if type(text) is not str:
        if text is MISSING:
            pol.reject(missing_text(path, lineno, obj, pol.text_field))
        else:
            pol.reject(text_not_str(path, lineno, text, pol.text_field))
        return None
    id_field = pol.id_field
    if id_field is None:
        doc_id = obj.get("id")
        if doc_id is None:
            doc_id = f"{path}:{lineno}"
        elif type(doc_id) is not str:
            doc_id = json_text_id(line, "id", doc_id)
    else:
        doc_id = obj.get(id_field)
        if doc_id is None and pol.id_policy == "field":
            pol.reject(missing_id(path, lineno, obj, id_field, id_field in obj))
            return None
        if doc_id is not None and type(doc_id) is not str:
            doc_id = json_text_id(line, id_field, doc_id)
        if pol.id_policy == "line":
            doc_id = pol.line_id(doc_id, path, lineno)
    if pol.reject_empty_ids and doc_id == "":
        pol.reject(empty_id(path, lineno))
        return None
    return doc_id, text, obj


def json_text_id(line: bytes, field: str, value: object) -> str:
    """A non-string id as its JSON text, so that distinct ids stay distinct: ``true``, ``12``,
    ``12345678901234567890123`` (digits as written, not a rounded float), ``{"a":1}`` (compact)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # numbers exactly as written: parse the line again with numbers kept as their text
        return json.loads(bytes(line), parse_int=str, parse_float=str, parse_constant=str)[field]
    return orjson.dumps(value).decode()


def scan_jsonl(path: str, pol: Policy, full: bool) -> Iterator[Chunk]:
    """JSON Lines. payload (full): (raw line bytes, parsed dicts) of the valid records.

    Without ``full``, each block goes through :func:`neardup.io.jsonl_scan.scan_block` (one kernel
    call finds and unescapes the text and id of every ordinary line); the lines it declines are
    parsed here with orjson, which also words the errors. Both give the same records.
    """
    stream = open_input(path, pol)
    if stream is None:
        return
    with stream:
        if not full and pol.id_policy == "field" and not pol.reject_empty_ids:
            records = 0
            try:
                for chunk in _scan_jsonl_blocks(stream, path, pol):
                    records += len(chunk.ids)
                    yield chunk
            except StreamDamage as exc:  # the records before the damage are read
                pol.reject(damaged(path, exc, records))
            return
        yield from full_jsonl_chunks(stream, path, pol)


def full_jsonl_chunks(stream, path: str, pol: Policy, lineno: int = 0, bom: bool = True) -> Iterator[Chunk]:
    """The records of an open JSONL stream, every line parsed: payload (raw line bytes, parsed
    dicts). ``lineno``: the lines of the file before the stream's first (a byte range of a file
    starts later); ``bom``: the stream starts the file (a byte order mark there is dropped)."""
    records = 0
    try:
        for block in line_blocks(stream, path, pol, damage=True, bom=bom):
            ids: list[str] = []
            texts: list[str] = []
            raws: list[bytes] = []
            objs: list[dict] = []
            for line in block:
                lineno += 1
                if not line or line.isspace():
                    continue
                record = _parse_record(line, path, lineno, pol)
                if record is not None:
                    ids.append(record[0])
                    texts.append(record[1])
                    raws.append(line)
                    objs.append(record[2])
            if ids:
                records += len(ids)
                yield Chunk(ids, texts, (raws, objs))
    except StreamDamage as exc:  # the records before the damage are read
        pol.reject(damaged(path, exc, records))


def _scan_jsonl_blocks(
    stream, path: str, pol: Policy, base: int | None = 0, bom: bool = True, reuse: bool = False
) -> Iterator[Chunk]:
    """The records of an open JSONL stream, a block at a time, via the scanning kernel; ``base``:
    the lines of the file before the stream's first (a byte range of a file starts later), or
    None when not known: the lines are then not counted, and :class:`LinesNeeded` is raised at
    the first line whose record would need its number. ``reuse``: the blocks are read into
    reused buffers (:func:`~neardup.io.streams.reused_blocks`). With ``pol.utf8_texts`` the texts
    of a block the kernel reads whole are packed spans (:class:`~neardup.text.utf8.PackedTexts`,
    copied out of the kernel's buffer), and a block long enough to hold a
    :class:`~neardup.text.utf8.Utf8Text` (a view of the block) is copied out of a reused buffer."""
    keys = _field_keys(pol)
    buffer = None  # the kernel's output buffer, reused block after block
    blocks = reused_blocks if reuse else raw_blocks
    for block in blocks(stream, path, pol, damage=True, bom=bom):  # base: lines before this block
        if reuse and pol.utf8_texts and len(block) >= UTF8_TEXT_MIN:
            block = bytes(block)
        ids, texts, buffer = _parse_block(block, path, pol, base, keys, buffer, packed=pol.utf8_texts)
        if base is not None:
            base += block_lines(block)
        if ids:
            yield Chunk(ids, texts, None)


def _field_keys(pol: Policy) -> tuple[bytes, bytes]:
    """The UTF-8 names of the text and id fields, as the scanning kernel takes them."""
    return pol.text_field.encode("utf-8", "surrogatepass"), (pol.id_field or "id").encode("utf-8", "surrogatepass")


def block_lines(block) -> int:
    """Lines of a non-empty block of :func:`~neardup.io.streams.raw_blocks`: its newlines, plus
    one when it ends without a newline (a final newline ends the last line, it starts none).
    Counted by :func:`~neardup.io.streams.count_newlines` (the threaded reader's calling thread
    counts every block)."""
    return count_newlines(block) + (block[-1] != 10)


def _parse_block(
    block, path: str, pol: Policy, base: int | None, keys: tuple[bytes, bytes], buffer, packed: bool = False
):
    """``(ids, texts, buffer)`` of the records of one block whose first line is line ``base + 1``
    of ``path``: one kernel call, then ``orjson`` on the lines it declines; ``buffer``: the
    kernel's output buffer to reuse (returned, possibly grown). ``base`` None: the block's
    records must not need a line number (:class:`LinesNeeded`). ``packed``: when the kernel read
    every line, the texts are its unescaped UTF-8 spans copied into a
    :class:`~neardup.text.utf8.PackedTexts`, no ``str`` made (the ids are ``str`` as always)."""
    from .._kernels.jsonl import FALLBACK, ID_ABSENT_OR_NULL, ID_INTEGER, OK, SCAN_WARMUP
    from .jsonl_scan import scan_block

    # a line of many MiB: orjson makes its text without a kernel buffer; a cold cache and little
    # read so far: orjson, the scanner not being worth its compile yet
    if len(block) > _HUGE_BLOCK or not SCAN_WARMUP.use_kernel(len(block)):
        if base is None:
            raise LinesNeeded(path)
        ids, texts, _ = _parse_lines(block, path, pol, base)
        return ids, texts, buffer
    r = scan_block(block, keys[0], keys[1], buffer)
    status = r.status
    if pol.id_field is not None:  # a missing id is an error: orjson's path words it
        status = np.where((status == OK) & (r.id_kind == ID_ABSENT_OR_NULL), np.uint8(FALLBACK), status)
    ok = np.flatnonzero(status == OK)
    declined = np.flatnonzero(status == FALLBACK)
    if base is None and (len(declined) or (r.id_kind[ok] == ID_ABSENT_OR_NULL).any()):
        raise LinesNeeded(path)  # an id FILE:LINE, or a line for orjson (which may name it in an error)
    out, raw = memoryview(r.out), memoryview(block)
    if packed and not len(declined):
        texts = PackedTexts.gather(r.out, r.text_start[ok], r.text_end[ok])
    else:
        texts = [str(out[s:e], "utf-8") for s, e in zip(r.text_start[ok].tolist(), r.text_end[ok].tolist())]
    kinds = r.id_kind[ok]
    if len(ok) and kinds[0] != ID_ABSENT_OR_NULL and (kinds == kinds[0]).all():
        # every id a string, or every id an integer: decoded at once
        ids = _decode_spans(
            np.frombuffer(block, np.uint8) if kinds[0] == ID_INTEGER else r.out, r.id_start[ok], r.id_end[ok]
        )
    else:
        lines = (ok + (base + 1)).tolist() if base is not None else [0] * len(ok)  # None: no id made from a line
        ids = [
            f"{path}:{line}"
            if kind == ID_ABSENT_OR_NULL
            else str(raw[s:e] if kind == ID_INTEGER else out[s:e], "utf-8")
            for kind, line, s, e in zip(kinds.tolist(), lines, r.id_start[ok].tolist(), r.id_end[ok].tolist())
        ]
    if len(declined):
        ids, texts = _merge_declined(block, r, ok, declined, ids, texts, path, base, pol)
    return ids, texts, r.out


def _decode_spans(src: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str]:
    """The ``str`` of every span ``src[starts[i]:ends[i]]`` (valid UTF-8): the spans packed and
    decoded as one string, cut at their character offsets (a slice of a ``str`` costs less than
    decoding each span on its own)."""
    packed = PackedTexts.gather(src, starts, ends)
    whole = str(memoryview(packed.data), "utf-8")
    bounds = [0, *np.cumsum(packed.chars).tolist()]
    return [whole[a:b] for a, b in pairwise(bounds)]


_HUGE_BLOCK = 32 << 20
"""Blocks longer than this (they hold a line of many MiB: blocks are cut after about 1 MiB) are
parsed line by line with orjson from views of the block: the scanning kernel would write the text
into a buffer as large as the block and then copy it into a str (three copies of a 200 MB
document at once, against two this way)."""


def _parse_lines(block: bytes, path: str, pol: Policy, base: int) -> tuple[list[str], list[str], int]:
    """(ids, texts, lines) of a block, parsed line by line with ``orjson`` (the scanning kernel's
    results, without it), a very long text without copying its line."""
    view = memoryview(block)
    ids: list[str] = []
    texts: list[str] = []
    at = 0
    lineno = base
    size = len(block)
    while at < size:
        end = block.find(b"\n", at)
        end = size if end < 0 else end
        lineno += 1
        line = view[at:end]
        start, at = at, end + 1
        if not line or (bytes(line[:64]).isspace() and bytes(line).isspace()):
            continue
        handled, record = (False, None)
        if end - start >= _PLAIN_LINE:
            handled, record = _plain_text_record(block, start, end, path, lineno, pol)
        if not handled:
            record = _parse_record(line, path, lineno, pol)
        if record is not None:
            ids.append(record[0])
            texts.append(record[1])
    return ids, texts, lineno - base  # a final newline ends the last line, it starts none


_PLAIN_LINE = 1 << 20
"""Lines from this long are tried with :func:`_plain_text_record` (its text decoded once from the
line's bytes); shorter ones go to orjson directly, which costs them about a third less (the plain
path parses the rest of the line twice) and a copy of a short text does not matter."""


def _has_control(body: memoryview) -> bool:
    """True if the bytes hold one below 0x20 (not allowed raw in a JSON string), 16 MiB at a time."""
    step = 1 << 24
    return any(np.frombuffer(body[k : k + step], dtype=np.uint8).min() < 0x20 for k in range(0, len(body), step))


def _plain_text_record(block, start: int, end: int, path: str, lineno: int, pol: Policy):
    """(True, (id, text, object) or None if rejected) for the line ``block[start:end]`` when its
    text field is a string without escapes; else (False, None): the caller parses it with orjson.

    orjson makes a string through a buffer of its own, so a 200 MB text costs 400 MB for a
    moment; here the text is decoded from the line's bytes once, or not at all with
    ``pol.utf8_texts``: a text of :data:`~neardup.text.utf8.UTF8_TEXT_MIN` bytes or more is then a
    :class:`~neardup.text.utf8.Utf8Text`, a view of the line. The rest of the line, with
    the text replaced by ``""``, is parsed by orjson: the record is taken only if that is a
    JSON object whose text field is that empty string (so the value found is the object's own
    text field, not a look-alike inside another value or a repeated key), and the text bytes
    hold no control character, no backslash and valid UTF-8: then orjson would have read the
    same record.
    """
    if pol.text_field == (pol.id_field or "id"):
        return False, None  # the id is the text
    key = orjson.dumps(pol.text_field)
    k = block.find(key, start, end)
    if k < 0:
        return False, None
    b = k - 1
    while b >= start and block[b] in b" \t\r\n":
        b -= 1
    if b < start or block[b] not in b"{,":  # a key follows '{' or ',' (never a backslash)
        return False, None
    i = k + len(key)
    while i < end and block[i] in b" \t\r\n":
        i += 1
    if i >= end or block[i] != 0x3A:  # ':'
        return False, None
    i += 1
    while i < end and block[i] in b" \t\r\n":
        i += 1
    if i >= end or block[i] != 0x22:  # '"'
        return False, None
    close = block.find(b'"', i + 1, end)
    if close < 0:
        return False, None
    view = memoryview(block)
    body = view[i + 1 : close]
    if block.find(b"\\", i + 1, close) >= 0 or _has_control(body):
        return False, None  # escapes or control characters: orjson's business
    rest = bytes(view[start : i + 1]) + bytes(view[close:end])
    try:
        obj = orjson.loads(rest)
    except orjson.JSONDecodeError:
        return False, None
    if type(obj) is not dict or obj.get(pol.text_field) != "":
        return False, None
    try:
        text = Utf8Text(body) if pol.utf8_texts and len(body) >= UTF8_TEXT_MIN else str(body, "utf-8")
    except UnicodeDecodeError:
        return False, None
    record = _parse_record(rest, path, lineno, pol)  # the id, and its errors, as for the line
    if record is None:
        return True, None
    obj = record[2]
    obj[pol.text_field] = text
    return True, (record[0], text, obj)


def _merge_declined(
    block: bytes,
    r,
    ok: np.ndarray,
    declined: np.ndarray,
    ids: list[str],
    texts: list[str],
    path: str,
    base: int,
    pol: Policy,
) -> tuple[list[str], list[str]]:
    """Parse the lines the kernel declined and put their records among the others, in line order."""
    parsed: dict[int, tuple[str, str]] = {}
    for i in declined.tolist():
        record = _parse_record(block[r.line_start[i] : r.line_end[i]], path, base + i + 1, pol)
        if record is not None:
            parsed[i] = record[:2]
    if not parsed:
        return ids, texts
    order = sorted([*zip(ok.tolist(), ids, texts), *((i, d, t) for i, (d, t) in parsed.items())])
    return [d for _, d, _ in order], [t for _, _, t in order]


def copy_kept_jsonl(path: str, pol: Policy, keep: np.ndarray, start: int, sink: JsonlSink) -> int:
    """Write the kept lines of a JSON Lines file known to hold only valid records (every
    non-blank line is one, numbered from ``start``); return the next record number."""

    stream = open_input(path, pol)
    if stream is None:
        return start
    with stream:
        return copy_kept_stream(stream, path, pol, keep, start, sink)


def copy_kept_stream(stream, path: str, pol: Policy, keep: np.ndarray, start: int, sink, bom: bool = True) -> int:
    """:func:`copy_kept_jsonl` of an open stream (``bom``: it starts the file), such as a byte
    range of a file; return the next record number."""
    out = np.empty(0, dtype=np.uint8)
    for block in raw_blocks(stream, path, pol, bom=bom):
        if len(block) > _HUGE_BLOCK:  # a very long line: write views of the block, no copy
            start = _copy_kept_views(block, keep, start, sink)
            continue
        if len(out) <= len(block):
            out = np.empty(len(block) + 1, dtype=np.uint8)
        n, start = copy_kept_lines(block, keep, start, out)
        if n:
            sink.write_bytes(memoryview(out)[:n])
    return start


def _copy_kept_views(block, keep: np.ndarray, start: int, sink: JsonlSink) -> int:
    """:func:`copy_kept_lines` for a block of very long lines: each kept line is written from a
    view of the block, with its ``\\n``; returns the next record number."""
    view = memoryview(block)
    at, size = 0, len(block)
    while at < size:
        end = block.find(b"\n", at)
        end = size if end < 0 else end
        line = view[at:end]
        at = end + 1
        if not line or (bytes(line[:64]).isspace() and bytes(line).isspace()):
            continue
        if start < len(keep) and keep[start]:
            sink.write_bytes(line)
            sink.write_bytes(b"\n")
        start += 1
    return start


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
    return copy_kept(data, np.flatnonzero(data == 10), keep, start, out)
