"""Lookup snapshots: the durable index's in-memory lookup saved beside the SQLite file, memory-mapped on open.

Opening a durable index used to rebuild its lookup (the method's index: band-key runs, permuted
tables, signatures) from every SQLite row, verifying each checksum: seconds and hundreds of MB
at a million documents. A *snapshot* (``PATH.lookup``) is that lookup as it was at some commit,
written by the writer (:meth:`DurableIndex.compact`, ``close`` after enough changes,
:meth:`DurableIndex.save_snapshot`): opening maps the file (``mmap``, copy-on-write, so the
arrays stay writeable for the kernels and a process's changes stay its own) and then applies
only the rows and tombstones SQLite committed after it, the path :meth:`DurableIndex.refresh`
takes anyway. Pages are read when a query touches them, so an open costs milliseconds and
memory grows with what is queried, not with the index.

SQLite stays the source of truth: the snapshot is derived, and it is ignored (the lookup is
rebuilt from SQLite, and rewritten when the index is open for writing) when it is

- missing, or of another format version;
- damaged: bad magic, a header that fails its CRC-32, a size other than the header says (a
  truncated or half-written file);
- stale: made for another index (``uid``), another epoch (``compact`` renumbered history), or
  ahead of the SQLite file (a file restored from an older copy).

The array data is not checksummed on open (that would read all of it); each array's CRC-32 is in
the header and :func:`verify` (``neardup index check``) reads them all.

Layout (little-endian)::

    0        magic b"NDXLKUP1", header offset u64, header length u64, header CRC-32 u32
    4096...  the arrays, each at a multiple of 4096 (zero blocks are left as holes: the slack
             capacity of growing arrays costs no disk)
    ...      the pickled lookup (protocol 5; every large array replaced by a reference)
    end      the header (JSON): what SQLite state the snapshot covers, the arrays' offsets,
             dtypes, shapes and CRC-32s, the pickle's offset, length and CRC-32, the file size

The pickle is read by an unpickler that only builds neardup, numpy and plain builtin types, so
a planted file cannot run code. A snapshot is written to a temporary file, fsynced, and renamed
over ``PATH.lookup`` (the directory fsynced too): a reader maps either the old file or the new
one, and a writer killed while writing leaves at most a stray ``PATH.lookup.tmp-PID``, removed
by the next snapshot.
"""

from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import pickle
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .growth import reliever

__all__ = ["Covered", "SnapshotInvalid", "load", "remove", "snapshot_path", "verify", "write"]

MAGIC = b"NDXLKUP1"
VERSION = 1
SUFFIX = ".lookup"
_PREFIX = struct.Struct("<8sQQI")
_ALIGN = 4096
_INLINE_BYTES = 4096  # arrays smaller than this stay inside the pickle
_BLOCK = 1 << 16  # zero blocks of this size are skipped when writing (holes)
_RELIEVE = 1 << 24  # bytes written between two reliefs of the memory budget


class SnapshotInvalid(Exception):
    """The snapshot cannot be used (missing, damaged, stale); the message says why."""


@dataclass(frozen=True)
class Covered:
    """The SQLite state a snapshot holds: the index's ``uid``, ``epoch``, and every row up to
    sequence number ``last_seq`` and tombstone up to ``last_tomb``."""

    uid: str
    epoch: int
    last_seq: int
    last_tomb: int


def snapshot_path(index_path: str) -> str:
    return index_path + SUFFIX


def write(path: str, payload: Any, covered: Covered) -> int:
    """Write ``payload`` (a picklable object whose large arrays are numpy arrays) as the snapshot
    at ``path``, atomically; returns the file's size."""
    arrays: list[np.ndarray] = []
    blob = io.BytesIO()
    _Pickler(blob, arrays).dump(payload)
    blob = blob.getvalue()
    tmp = f"{path}.tmp-{os.getpid()}"
    entries = []
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        offset = _ALIGN
        for arr in arrays:
            raw = arr.reshape(-1).view(np.uint8)
            entries.append(
                {
                    "offset": offset,
                    "dtype": arr.dtype.str,
                    "shape": list(arr.shape),
                    "crc": _crc(raw),
                }
            )
            _write_sparse(fd, raw, offset)
            offset = _aligned(offset + raw.nbytes)
        pickle_at = offset
        os.pwrite(fd, blob, pickle_at)
        header = {
            "version": VERSION,
            "covered": {
                "uid": covered.uid,
                "epoch": covered.epoch,
                "last_seq": covered.last_seq,
                "last_tomb": covered.last_tomb,
            },
            "arrays": entries,
            "pickle": {"offset": pickle_at, "length": len(blob), "crc": zlib.crc32(blob)},
        }
        header_at = pickle_at + len(blob)
        # the size is in the header; its own digits change the size, so settle it in two passes
        size = 0
        for _ in range(3):
            text = json.dumps({**header, "file_size": size}, sort_keys=True).encode()
            if header_at + len(text) == size:
                break
            size = header_at + len(text)
        os.pwrite(fd, text, header_at)
        os.ftruncate(fd, size)
        os.pwrite(fd, _PREFIX.pack(MAGIC, header_at, len(text), zlib.crc32(text)), 0)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path)
    _remove_strays(path)
    return size


def load(path: str, expected: Covered | None = None) -> tuple[Any, Covered]:
    """The payload of the snapshot at ``path`` (its arrays memory-mapped, copy-on-write) and what
    it covers. ``SnapshotInvalid`` when it is missing, damaged, or (given ``expected``) of
    another index or epoch. The caller checks ``last_seq``/``last_tomb`` against the store."""
    header, fd, size = _read_header(path)
    try:
        covered = Covered(**header["covered"])
        if expected is not None and (covered.uid, covered.epoch) != (expected.uid, expected.epoch):
            raise SnapshotInvalid(
                f"{path}: made for index {covered.uid} epoch {covered.epoch}, "
                f"the index is {expected.uid} epoch {expected.epoch}"
            )
        p = header["pickle"]
        blob = os.pread(fd, p["length"], p["offset"])
        if len(blob) != p["length"] or zlib.crc32(blob) != p["crc"]:
            raise SnapshotInvalid(f"{path}: the pickled lookup fails its checksum")
        mm = mmap.mmap(fd, size, access=mmap.ACCESS_COPY) if size else None
    finally:
        os.close(fd)
    arrays = []
    for e in header["arrays"]:
        dtype = np.dtype(e["dtype"])
        shape = tuple(e["shape"])
        count = int(np.prod(shape))
        if e["offset"] + count * dtype.itemsize > size:
            raise SnapshotInvalid(f"{path}: an array lies beyond the end of the file")
        arrays.append(np.frombuffer(mm, dtype=dtype, count=count, offset=e["offset"]).reshape(shape))
    try:
        payload = _Unpickler(io.BytesIO(blob), arrays).load()
    except SnapshotInvalid:
        raise
    except Exception as exc:
        raise SnapshotInvalid(f"{path}: cannot read the pickled lookup ({exc})") from None
    return payload, covered


def verify(path: str) -> list[str]:
    """What is wrong with the snapshot at ``path`` (its header and every array's checksum);
    empty when it is sound or absent (a missing snapshot is not a problem: it is derived)."""
    if not os.path.exists(path):
        return []
    try:
        header, fd, _ = _read_header(path)
    except SnapshotInvalid as exc:
        return [f"{exc} (it is ignored and rebuilt; `neardup index compact` rewrites it)"]
    problems = []
    try:
        for i, e in enumerate(header["arrays"]):
            nbytes = int(np.prod(e["shape"])) * np.dtype(e["dtype"]).itemsize
            crc, done = 0, 0
            while done < nbytes:
                chunk = os.pread(fd, min(1 << 24, nbytes - done), e["offset"] + done)
                if not chunk:
                    break
                crc = zlib.crc32(chunk, crc)
                done += len(chunk)
            if done != nbytes or crc != e["crc"]:
                problems.append(
                    f"{path}: array {i} fails its checksum (remove the file or run `neardup index compact`)"
                )
    finally:
        os.close(fd)
    return problems


def remove(path: str) -> None:
    """Delete the snapshot at ``path`` (and stray temporary files), if any."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    _remove_strays(path)


# ---------------------------------------------------------------------- internals


def _read_header(path: str) -> tuple[dict, int, int]:
    """``(header, fd, size)``; the fd is the caller's to close."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise SnapshotInvalid(f"{path}: no snapshot") from None
    except OSError as exc:
        raise SnapshotInvalid(f"{path}: cannot open ({exc})") from None
    try:
        size = os.fstat(fd).st_size
        prefix = os.pread(fd, _PREFIX.size, 0)
        if len(prefix) != _PREFIX.size:
            raise SnapshotInvalid(f"{path}: truncated ({size} bytes)")
        magic, at, length, crc = _PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise SnapshotInvalid(f"{path}: not a lookup snapshot of this version (magic {magic!r})")
        if at + length != size:
            raise SnapshotInvalid(f"{path}: truncated or damaged ({size} bytes, the header says {at + length})")
        text = os.pread(fd, length, at)
        if zlib.crc32(text) != crc:
            raise SnapshotInvalid(f"{path}: the header fails its checksum")
        try:
            header = json.loads(text)
            if header["version"] != VERSION or header["file_size"] != size:
                raise SnapshotInvalid(f"{path}: version {header['version']} or size does not match")
            header["covered"], header["arrays"], header["pickle"]
        except (ValueError, KeyError, TypeError) as exc:
            raise SnapshotInvalid(f"{path}: unreadable header ({exc})") from None
    except BaseException:
        os.close(fd)
        raise
    return header, fd, size


def _crc(raw: np.ndarray) -> int:
    """``zlib.crc32(raw)``, read in slices of ``_RELIEVE`` bytes with the memory budget relieved
    between them (an array in a spill file is not made resident whole)."""
    relieve = reliever()
    crc = 0
    for lo in range(0, raw.nbytes, _RELIEVE):
        crc = zlib.crc32(raw[lo : lo + _RELIEVE], crc)
        relieve()
    return crc


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _write_sparse(fd: int, raw: np.ndarray, offset: int) -> None:
    """Write the bytes ``raw`` at ``offset``, skipping all-zero blocks (they read back as zeros)."""
    n = raw.nbytes
    relieve = reliever()
    for lo in range(0, n, _BLOCK):
        if lo % _RELIEVE == 0:
            relieve()  # an array in a spill file (past a memory budget): the pages read so far
        block = raw[lo : lo + _BLOCK]
        if block.any():
            view = memoryview(block)
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], offset + lo + done)


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _remove_strays(path: str) -> None:
    """Temporary files of writers that died while writing (not of a live process)."""
    folder, name = os.path.split(os.path.abspath(path))
    with contextlib.suppress(OSError):
        for entry in os.listdir(folder):
            if not entry.startswith(name + ".tmp-"):
                continue
            pid = entry.rsplit("-", 1)[-1]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, entry))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class _Pickler(pickle.Pickler):
    """Pickles with every large numpy array replaced by a reference to its place in the file."""

    def __init__(self, file: io.BytesIO, arrays: list[np.ndarray]) -> None:
        super().__init__(file, protocol=5)
        self._arrays = arrays
        self._seen: dict[int, tuple[np.ndarray, int]] = {}  # id -> (the array, kept alive; its number)

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is np.ndarray and obj.nbytes >= _INLINE_BYTES and not obj.dtype.hasobject:
            # persistent_id comes before pickle's memo: an array referenced twice (a table and a
            # tuple of kernel arguments) is stored once and loads as one object
            seen = self._seen.get(id(obj))
            if seen is None:
                self._arrays.append(np.ascontiguousarray(obj))
                seen = self._seen[id(obj)] = (obj, len(self._arrays) - 1)
            return ("array", seen[1])
        return None


_SAFE_BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "slice", "complex", "bytearray", "range"})


class _Unpickler(pickle.Unpickler):
    """Builds neardup and numpy objects and plain builtins only; array references resolve to the
    memory-mapped arrays."""

    def __init__(self, file: io.BytesIO, arrays: list[np.ndarray]) -> None:
        super().__init__(file)
        self._arrays = arrays

    def persistent_load(self, pid: Any) -> Any:
        try:
            kind, i = pid
            if kind != "array":
                raise ValueError(kind)
            return self._arrays[i]
        except (ValueError, TypeError, IndexError):
            raise SnapshotInvalid(f"bad array reference {pid!r}") from None

    def find_class(self, module: str, name: str) -> Any:
        top = module.split(".", 1)[0]
        if top in ("neardup", "numpy") or (module == "builtins" and name in _SAFE_BUILTINS):
            return super().find_class(module, name)
        if module == "copyreg" and name == "_reconstructor":
            return super().find_class(module, name)
        raise SnapshotInvalid(f"the pickled lookup names {module}.{name}, which a snapshot never holds")
