"""Binary input streams: files opened with decompression by extension, read in blocks of whole lines.

gzip and zstd (multi-frame; a file cut inside a frame is reported as truncated, not read as
shorter) are decompressed on the way. :func:`raw_blocks` cuts the stream after a newline about
every :data:`BLOCK` bytes and drops a leading UTF-8 byte order mark; a read error ends the file,
rejected by the policy (an error, or a skipped unreadable file).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import zstandard

from .formats import compression
from .paths import open_binary
from .policy import Policy, unreadable, unreadable_errors

BLOCK = 1 << 20  # bytes of (decompressed) input split into lines at a time
WRITE_ROWS = 4096  # CSV records per chunk, and Parquet rows per batch when re-reading for write_kept


BOM = b"\xef\xbb\xbf"


class _ZstdReader:
    """``read(n)`` over a (multi-frame) zstd file that reports truncation.

    ``zstandard``'s ``stream_reader`` returns end-of-file silently when a file is cut in the
    middle of a frame; this reader raises ``EOFError`` instead.
    """

    def __init__(self, raw):
        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False
        self._eof = False

    def read(self, size: int) -> bytes:
        out: list[bytes] = []
        got = 0
        while got < size and not self._eof:
            data = self._raw.read(1 << 20)
            if not data:
                self._eof = True
                if self._in_frame:
                    raise EOFError("zstd stream ends in the middle of a frame")
                break
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
        return b"".join(out)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_input(name: str, pol: Policy):
    """Open a file for binary reading, decompressing by extension; None if skipped."""
    pol.stats.files += 1
    comp = compression(name)
    try:
        if comp == "gz":
            return gzip.open(open_binary(name), "rb")
        if comp == "zst":
            return _ZstdReader(open_binary(name))
        return open_binary(name)
    except OSError as exc:
        pol.reject(unreadable(name, exc))
        return None


def raw_blocks(stream, name: str, pol: Policy, *, bom: bool = True) -> Iterator[bytes]:
    """Yield a binary stream a few MiB at a time, cut after a ``\\n`` so that every block holds
    whole lines (only the last block may end without one).

    A leading UTF-8 byte order mark is dropped (with ``bom``: the stream starts the file). A
    read error ends the file (after ``reject``).
    """
    pending: list[bytes] = []
    first = bom
    while True:
        try:
            data = stream.read(BLOCK)
        except unreadable_errors() as exc:
            pol.reject(unreadable(name, exc))
            return
        if not data:
            break
        pol.stats.bytes_read += len(data)
        if first:
            first = False
            if data.startswith(BOM):
                data = data[3:]
        cut = data.rfind(b"\n") + 1
        if not cut:  # part of a long line
            pending.append(data)
            continue
        head = data[:cut] if cut < len(data) else data
        if pending:
            pending.append(head)
            head = b"".join(pending)
            pending = []
        if cut < len(data):
            pending.append(data[cut:])
        yield head
    if pending:
        yield b"".join(pending)


def line_blocks(stream, name: str, pol: Policy) -> Iterator[list[bytes]]:
    """The lines of :func:`raw_blocks`, without their ``\\n``, a block at a time."""
    for block in raw_blocks(stream, name, pol):
        lines = block.split(b"\n")
        if not lines[-1]:
            lines.pop()
        yield lines
