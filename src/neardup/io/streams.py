"""Binary input streams: files opened with decompression by extension, read in blocks of whole lines.

gzip (multi-member) and zstd (multi-frame) are decompressed on the way, by readers that hand over
every byte they could decompress before reporting a stream that ends early (cut inside a member
or frame: :class:`Truncated`) or is corrupt; the error comes on the next read. So a truncated
file keeps every complete record before the cut. :func:`raw_blocks` cuts the stream after a
newline about every :data:`BLOCK` bytes and drops a leading UTF-8 byte order mark; a read error
ends the file: rejected by the policy (an error, or a skipped unreadable file), or, for scanners
that count their records (``damage=True``), raised as :class:`StreamDamage` after the last
complete line so that the scanner words it with the records it read (:func:`damaged`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import numpy as np
import zstandard

from ..core.errors import InputError
from .formats import compression
from .paths import open_binary
from .policy import Policy, unreadable, unreadable_errors

BLOCK = 1 << 20  # bytes of (decompressed) input split into lines at a time
WRITE_ROWS = 4096  # CSV records per chunk, and Parquet rows per batch when re-reading for write_kept
_RAW = 1 << 16  # compressed bytes read at a time


BOM = b"\xef\xbb\xbf"


class Truncated(EOFError):
    """A compressed stream that ends inside a gzip member or a zstd frame."""


class StreamDamage(Exception):
    """A stream that could not be read to its end: ``offset`` bytes of (decompressed) data were
    read before it; ``truncated`` when it ended early rather than being corrupt."""

    def __init__(self, cause: BaseException, offset: int) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.offset = offset
        self.truncated = isinstance(cause, EOFError)


def damaged(path: str, exc: StreamDamage, records: int) -> InputError:
    """The error of a file read only up to ``exc.offset``, after ``records`` records."""
    if exc.truncated:
        return InputError(
            path,
            None,
            f"truncated compressed stream after {records:,} records (byte offset {exc.offset:,} of the "
            "decompressed data); the file was cut short (an interrupted download or copy?)",
            reason="truncated file",
        )
    cause = exc.cause
    detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
    corrupt = "" if isinstance(cause, OSError) and not isinstance(cause, EOFError) else " (corrupt?)"
    of = " of the decompressed data" if compression(path) else ""
    return InputError(
        path,
        None,
        f"cannot read the file{corrupt} after {records:,} records (byte offset {exc.offset:,}{of}): {detail}",
        reason="unreadable file",
    )


class _Deferred:
    """A reader that returns the data it has before raising a read error (on the next read)."""

    _error: BaseException | None = None

    def read(self, size: int) -> bytes:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        out: list[bytes] = []
        try:
            self._fill(out, size)
        except unreadable_errors() as exc:
            if not out:
                raise
            self._error = exc
        return b"".join(out)

    def _fill(self, out: list[bytes], size: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _GzipReader(_Deferred):
    """``read(n)`` over a (multi-member) gzip file; output is bounded by ``n`` per call (a small
    file that decompresses to gigabytes is not held at once). Zero bytes between members are
    skipped, as :mod:`gzip` does."""

    def __init__(self, raw):
        self._raw = raw
        self._d = zlib.decompressobj(31)
        self._tail = b""  # compressed bytes read but not yet decompressed
        self._in_member = False
        self._members = 0
        self._eof = False

    def _fill(self, out: list[bytes], size: int) -> None:
        got = 0
        while got < size:
            data, self._tail = self._tail, b""
            if not data:
                if self._eof:
                    return
                data = self._raw.read(_RAW)
                if not data:
                    self._eof = True
                    if self._in_member:
                        raise Truncated("gzip stream ends before the end of its last member")
                    return
            if not self._in_member:
                if self._members:
                    data = data.lstrip(b"\0")
                    if not data:
                        continue
                self._in_member = True
            piece = self._d.decompress(data, size - got)
            if piece:
                out.append(piece)
                got += len(piece)
            if self._d.eof:
                self._tail = self._d.unused_data
                self._d = zlib.decompressobj(31)
                self._in_member = False
                self._members += 1
            else:
                self._tail = self._d.unconsumed_tail


class _ZstdReader(_Deferred):
    """``read(n)`` over a (multi-frame) zstd file that reports truncation.

    ``zstandard``'s ``stream_reader`` returns end-of-file silently when a file is cut in the
    middle of a frame; this reader raises :class:`Truncated` instead.
    """

    def __init__(self, raw):
        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False
        self._eof = False

    def _fill(self, out: list[bytes], size: int) -> None:
        got = 0
        while got < size and not self._eof:
            data = self._raw.read(_RAW)
            if not data:
                self._eof = True
                if self._in_frame:
                    raise Truncated("zstd stream ends in the middle of a frame")
                return
            while data:
                piece = self._obj.decompress(data)
                out.append(piece)
                got += len(piece)
                self._in_frame = True
                if not self._obj.eof:
                    break
                data = self._obj.unused_data
                self._obj = self._dctx.decompressobj()
                self._in_frame = False


def open_input(name: str, pol: Policy):
    """Open a file for binary reading, decompressing by extension; None if skipped."""
    pol.stats.files += 1
    pol.opening(name)
    comp = compression(name)
    try:
        if comp == "gz":
            return _GzipReader(open_binary(name))
        if comp == "zst":
            return _ZstdReader(open_binary(name))
        return open_binary(name)
    except OSError as exc:
        pol.reject(unreadable(name, exc))
        return None


def raw_blocks(stream, name: str, pol: Policy, damage: bool = False, *, bom: bool = True) -> Iterator[bytes]:
    """Yield a binary stream a few MiB at a time, cut after a ``\\n`` so that every block holds
    whole lines (only the last block may end without one). A block is ``bytes``, or a
    ``bytearray`` when it holds a line longer than :data:`BLOCK` (grown in place: a 200 MB line
    costs 200 MB here, not twice that).

    A leading UTF-8 byte order mark is dropped (with ``bom``: the stream starts the file). A read
    error ends the file: after ``reject``, or with ``damage`` by raising :class:`StreamDamage`
    once the complete lines before it are yielded (the incomplete line at the cut is dropped).
    """
    pending = bytearray()  # a line longer than a block grows here in place (no list + join copy)
    first = bom
    offset = 0
    while True:
        try:
            data = stream.read(BLOCK)
        except unreadable_errors() as exc:
            if damage:
                raise StreamDamage(exc, offset) from exc
            pol.reject(unreadable(name, exc))
            return
        if not data:
            break
        offset += len(data)
        pol.stats.bytes_read += len(data)
        if first:
            first = False
            if data.startswith(BOM):
                data = data[3:]
        cut = data.rfind(b"\n") + 1
        if not cut:  # part of a long line
            pending += data
            continue
        if pending:
            pending += memoryview(data)[:cut]
            head, pending = pending, bytearray(memoryview(data)[cut:])
        else:
            head = data[:cut] if cut < len(data) else data
            if cut < len(data):
                pending += memoryview(data)[cut:]
        yield head
    if pending:
        yield pending


def count_newlines(data) -> int:
    """The ``\\n`` bytes of a bytes-like object: NumPy compares about 3x faster than
    ``bytes.count``'s byte loop, mostly without the GIL; 1 MiB at a time, so that the comparison's
    mask of a line of hundreds of MB stays small."""
    view = np.frombuffer(data, dtype=np.uint8)
    return sum(int(np.count_nonzero(view[i : i + _NEWLINE_STEP] == 10)) for i in range(0, len(view), _NEWLINE_STEP))


_NEWLINE_STEP = 1 << 20


def reused_blocks(stream, name: str, pol: Policy, damage: bool = False, *, bom: bool = True) -> Iterator[bytearray]:
    """:func:`raw_blocks` (the same blocks, damage and byte counts) read with ``readinto`` into
    one buffer and each handed out in one ``bytearray`` that is reused: a block is valid only
    until the next one is asked for, so the caller must keep nothing that refers to it (a
    ``str`` made from it is a copy). Fresh blocks each cost new pages (under a small
    ``MALLOC_TRIM_THRESHOLD_``, as Dask's workers have, every allocation of 128 KiB or more is a
    new ``mmap``: ~512 page faults a MiB read, for the read and for the block cut from it); these
    two buffers are faulted once per stream. A stream without ``readinto`` gets :func:`raw_blocks`.
    """
    if not hasattr(stream, "readinto"):
        yield from raw_blocks(stream, name, pol, damage, bom=bom)
        return
    store = bytearray(2 * BLOCK)  # store[:end]: the bytes read and not yet handed out
    out = bytearray(BLOCK + BLOCK // 4)  # lengths from about 0.6 to 1.25 blocks keep its memory
    end = 0
    first = bom
    offset = 0
    while True:
        if len(store) - end < BLOCK:  # a line longer than the room: grow (rare)
            store += bytes(len(store))
        try:
            with memoryview(store) as view:
                n = stream.readinto(view[end : end + BLOCK])
        except unreadable_errors() as exc:
            if damage:
                raise StreamDamage(exc, offset) from exc
            pol.reject(unreadable(name, exc))
            return
        if not n:
            break
        offset += n
        pol.stats.bytes_read += n
        if first:
            first = False
            if store.startswith(BOM):
                n -= 3
                store[0:n] = bytes(store[3 : n + 3])
        end += n
        cut = store.rfind(b"\n", 0, end) + 1
        if not cut:  # part of a long line
            continue
        out = _refill(out, store, cut)
        yield out
        store[0 : end - cut] = bytes(store[cut:end])  # the partial line to the front
        end -= cut
    if end:
        yield _refill(out, store, end)


def _refill(out: bytearray, store: bytearray, n: int) -> bytearray:
    """``out`` holding ``store[:n]``, or a new ``bytearray`` of them while the last block is still
    exported. A caller keeps no view of a block, yet something held one in a Dask worker: a
    ``BufferError`` when ``out`` was resized, in 2 of the 11 first-scan tasks of one 200k-document
    CLI run (Dask retried them; none in 10 runs after, with and without the workers' profiler;
    the holder was not found: a frame kept by a traceback or a sampling profiler keeps the
    parser's ``memoryview`` of the block alive). Whoever holds it, its bytes must not change
    under it, also when the next block has the same length (no resize, so no error): a resize
    is tried first, and only an unshared ``out`` is overwritten."""
    with memoryview(store) as view:
        try:
            out.append(0)  # fails while the buffer is exported
            del out[-1]
        except BufferError:
            return bytearray(view[:n])
        out[:] = view[:n]
    return out


def line_blocks(stream, name: str, pol: Policy, damage: bool = False, *, bom: bool = True) -> Iterator[list[bytes]]:
    """The lines of :func:`raw_blocks`, without their ``\\n``, a block at a time."""
    for block in raw_blocks(stream, name, pol, damage, bom=bom):
        lines = block.split(b"\n")
        if not lines[-1]:
            lines.pop()
        yield lines
