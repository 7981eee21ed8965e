"""The durable source of truth of an index: one SQLite file (standard library ``sqlite3``).

Layout of the file (format ``neardup-index`` version 1)::

    meta(key TEXT PRIMARY KEY, value TEXT)      format, format_version, method, config, scheme,
                                                neardup_version, created, epoch, store_text
    docs(seq INTEGER PRIMARY KEY AUTOINCREMENT, one row per stored document: its id, the sketch as
         id TEXT UNIQUE, sketch BLOB, empty INT,  the method's fixed-width bytes, "no features",
         crc INT, text TEXT NULL)                 CRC-32 of id + sketch, the text if kept
    tombstones(seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_seq INT)
                                                one row per removed document (readers catch up
                                                on removals by it; ``compact`` clears them)

Files are made with pages of :data:`PAGE_SIZE` bytes (a row is about 540 bytes for MinHash K=128:
large pages hold more rows each, so a bulk add splits and writes fewer of them); a file made with
SQLite's default 4 KB pages (by an older neardup) reads and writes the same: the page size is
SQLite's own, not part of this format.

Durability: the journal is WAL and ``synchronous=FULL``: a transaction that committed is on disk
(the WAL is fsynced at every commit) and survives a kill of the process and a power loss; a
transaction that did not commit leaves no trace. Every write of :class:`SQLiteStore` is one
transaction. One writer at a time: a writer holds a lock on the index file itself (one byte of
it, by an open-file-description ``fcntl`` lock on Linux, ``flock`` elsewhere) for as long as it is
open, and a second writer gets :class:`IndexLockedError`, whatever name it opens the file by (a
symbolic link, another path) and whatever side file was deleted; readers take no lock and see what
was committed when they (re)load. ``PATH.lock`` is only a note of the writer's pid for that
error's message. A file with more than one hard link is refused (:class:`IndexLinkError`): SQLite
keeps the WAL beside the name, so each name would have a journal of its own.

A store backend is anything with the methods of :class:`SQLiteStore` below the line "backend
interface" (``insert``, ``delete``, ``rows_after`` or, as here, ``columns_after``,
``tombstones_after``, ``last_tombstone``, ``lookup``, ``get``, ``meta``, ``epoch``, ``version``,
``compact``, ``check``, ``file_bytes``, ``close``) and the attributes ``path``, ``mode``, ``kind``
and ``shared``: the durable index (:mod:`neardup.index.durable`) keeps its lookup structures in
memory and asks the store only for what changed. The other backend is
:class:`~neardup.index.redis_store.RedisStore` (an index shared by several writer processes).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import struct
import threading
import time
import urllib.parse
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np

from ..core.errors import NeardupError

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "PAGE_SIZE",
    "IndexCorruptError",
    "IndexFullError",
    "IndexGoneError",
    "IndexLinkError",
    "IndexLockedError",
    "IndexReadOnlyError",
    "IndexUnavailableError",
    "IndexWriteError",
    "SQLiteStore",
    "StoredRow",
    "WriteConflict",
    "row_blobs",
    "row_crcs",
]

FORMAT = "neardup-index"
FORMAT_VERSION = 1

PAGE_SIZE = 65536
"""SQLite page size of new index files (its largest): 1 to 2 us less per stored row than 4 KB pages
in a bulk add (fewer page splits, a WAL checkpoint every 1,000 pages: 64 MB); a small commit
writes its few dirty pages whole (docs/index.md has the measurements)."""

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    sketch BLOB NOT NULL,
    empty INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    text TEXT
);
CREATE TABLE tombstones(seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_seq INTEGER NOT NULL);
"""

_REQUIRED_META = ("format", "format_version", "method", "config", "scheme", "epoch", "store_text")


class IndexLockedError(NeardupError):
    """Another process has the index open for writing."""


class IndexLinkError(NeardupError):
    """The index file has more than one hard link (a WAL index must have one name)."""


class IndexCorruptError(NeardupError):
    """The index file is damaged (not SQLite, a failed checksum, missing metadata)."""


class IndexWriteError(NeardupError):
    """A write could not be made durable (disk full, read-only file system); nothing of it was stored."""


class IndexFullError(IndexWriteError):
    """No room for a write: the disk (or the process's file size limit) is full, or Redis is at its
    ``maxmemory``; nothing of the write was stored, and writes work again once there is room."""


class IndexReadOnlyError(IndexWriteError):
    """The index cannot be written now: a read-only file system, an immutable file, refused
    permission, a read-only Redis replica; nothing of the write was stored."""


class IndexUnavailableError(NeardupError):
    """The store of the index cannot be reached (a Redis server down, refused credentials)."""


class IndexGoneError(IndexUnavailableError, FileNotFoundError):
    """The index was removed under an open handle: its file unlinked, renamed or replaced by another
    file, or its keys deleted from Redis. Writes are refused (they would go to a file nobody can
    find again); they work again if the same file is put back under its name."""


class WriteConflict(NeardupError):
    """A conditional write found that another writer added documents since the caller last caught
    up (nothing was stored; catch up and try again)."""


@dataclass(frozen=True)
class StoredRow:
    """One stored document as the store returns it."""

    seq: int
    id: str
    sketch: bytes
    empty: bool


@dataclass(frozen=True)
class RowColumns:
    """A batch of stored rows as columns (:meth:`SQLiteStore.columns_after`): sequence numbers,
    ids, their UTF-8 bytes, the sketches joined end to end, the empty flags."""

    seqs: list[int]
    ids: list[str]
    encoded: list[bytes]
    sketches: bytes
    empty: list[int]


def row_crc(doc_id: str, sketch: bytes) -> int:
    """CRC-32 of the UTF-8 id followed by the sketch bytes (stored with each row)."""
    return zlib.crc32(sketch, zlib.crc32(doc_id.encode("utf-8", "surrogatepass")))


def row_crcs(ids: Sequence[str], sketches: Sequence[bytes]) -> list[int]:
    """``[row_crc(i, s) for i, s in zip(ids, sketches)]`` by ``map`` over the batch: the loop runs
    in C (no Python frame per row; zlib's CRC of a 512-byte sketch is ~0.4 us, the frame cost more)."""
    encoded = map(str.encode, ids, repeat("utf-8"), repeat("surrogatepass"))
    return list(map(zlib.crc32, sketches, map(zlib.crc32, encoded)))


def row_blobs(values: np.ndarray) -> list[bytes]:
    """``[values[i].tobytes() for i in range(n)]`` in one numpy call: the rows viewed as
    fixed-width void scalars, whose ``tolist`` gives each row's bytes (trailing zero bytes kept)."""
    n = values.shape[0]
    if n == 0:
        return []
    rows = np.ascontiguousarray(values).reshape(n, -1).view(np.uint8)
    return rows.view(np.dtype((np.void, rows.shape[1]))).ravel().tolist()


class SQLiteStore:
    """An index file: open it with :meth:`create` or :meth:`open` (``mode`` ``"r"`` or ``"a"``)."""

    shared = False
    """One writer process at a time: nobody else changes the index behind a writer's back."""

    kind = "sqlite"

    def __init__(self, path: str, conn: sqlite3.Connection, mode: str, file_key: tuple[int, int] | None) -> None:
        self.path, self._conn, self.mode, self._file_key = path, conn, mode, file_key

    # ---------------------------------------------------------------- opening

    @classmethod
    def create(cls, path: str, meta: dict[str, str]) -> SQLiteStore:
        """A new index file at ``path`` (an existing file is an error) holding ``meta``."""
        path = os.fspath(path)
        if os.path.exists(path):
            raise FileExistsError(f"{path}: an index or another file exists there already")
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{path}: the directory {parent} does not exist")
        try:  # made here, empty, so that the writer lock is on it before SQLite opens it
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise FileExistsError(f"{path}: an index or another file exists there already") from None
        try:
            key = _acquire(path, writer=True, fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        conn = None
        try:
            conn = _connect(path, readonly=False, page_size=PAGE_SIZE)
            with _writing(path):
                conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA)
                rows = {"format": FORMAT, "format_version": str(FORMAT_VERSION), "epoch": "0", **meta}
                conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(rows.items()))
                conn.execute("COMMIT")
        except BaseException:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            _release(key, writer=True)
            with contextlib.suppress(OSError):
                for suffix in ("", "-wal", "-shm"):
                    os.unlink(path + suffix)
            raise
        return cls(path, conn, "a", key)

    @classmethod
    def open(cls, path: str, mode: str = "r") -> SQLiteStore:
        """Open an existing index file; ``mode="a"`` takes the writer lock."""
        path = os.fspath(path)
        if mode not in ("r", "a"):
            raise ValueError(f"mode must be 'r' or 'a', got {mode!r}")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no index there (create one with `neardup index create`)")
        if os.path.isdir(path):
            raise IsADirectoryError(f"{path}: is a directory, not an index file")
        _refuse_links(path)
        key = _acquire(path, writer=mode == "a")
        store = None
        try:
            immutable = mode == "r" and _no_writer_possible(path)
            store = cls(path, _connect(path, readonly=mode == "r", immutable=immutable), mode, key)
            store.meta()  # reads and checks the metadata: a file that is not an index fails here
        except BaseException:
            if store is not None:
                store.close()
            else:
                _release(key, writer=mode == "a")
            raise
        return store

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        _release(self._file_key, writer=self.mode == "a")
        self._file_key = None

    # ---------------------------------------------------------------- backend interface

    def meta(self) -> dict[str, str]:
        """The metadata table (checked: an index file of this format, every key present)."""
        try:
            rows = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise IndexCorruptError(f"{self.path}: not a neardup index or damaged ({exc})") from None
        if rows.get("format") != FORMAT:
            raise IndexCorruptError(f"{self.path}: not a neardup index (format {rows.get('format')!r})")
        missing = [k for k in _REQUIRED_META if k not in rows]
        if missing:
            raise IndexCorruptError(f"{self.path}: index metadata lacks {', '.join(missing)}")
        if int(rows["format_version"]) > FORMAT_VERSION:
            raise IndexCorruptError(
                f"{self.path}: index format version {rows['format_version']}; this neardup reads version "
                f"{FORMAT_VERSION} and older: upgrade neardup"
            )
        return rows

    def epoch(self) -> int:
        """Changes when ``compact`` renumbers history (readers then reload everything)."""
        return int(self._query("SELECT value FROM meta WHERE key = 'epoch'")[0][0])

    def version(self) -> tuple[int, int, int]:
        """``(epoch, last document seq, last tombstone seq)``: unchanged when nothing was written."""
        rows = self._query("SELECT seq FROM sqlite_sequence WHERE name = 'docs'")
        return self.epoch(), rows[0][0] if rows else 0, self.last_tombstone()

    def insert(
        self,
        ids: Sequence[str],
        sketches: Sequence[bytes],
        empty: Sequence[bool],
        texts: Sequence[str] | None = None,
        *,
        replace: bool = False,
        expect_seq: int | None = None,
    ) -> list[int]:
        """Store rows in one transaction and return their sequence numbers. ``sketches`` and
        ``empty`` may be iterators (consumed in step with ``ids``, one row at a time).

        An id already stored is a ``KeyError`` (nothing stored) unless ``replace``: then the old
        row is removed (a tombstone) and the new one stored, in the same transaction. With
        ``expect_seq``: :class:`WriteConflict` (nothing stored) unless the last sequence number
        handed out is ``expect_seq`` (with one writer it always is).
        """
        if isinstance(sketches, (list, tuple)) and isinstance(empty, (list, tuple)):
            return self._insert(ids, [(sketches, empty)], texts, True, replace, expect_seq)  # rows built in bulk
        rows = (  # a generator: sketches and empty may be iterators, made while SQLite writes
            (doc_id, sk, int(e), row_crc(doc_id, sk), None if texts is None else texts[i])
            for i, (doc_id, sk, e) in enumerate(zip(ids, sketches, empty))
        )
        return self._insert(ids, rows, texts, False, replace, expect_seq)

    def insert_chunks(
        self,
        ids: Sequence[str],
        chunks: Iterable[tuple[list[bytes], list[bool]]],
        texts: Sequence[str] | None = None,
        *,
        replace: bool = False,
    ) -> list[int]:
        """:meth:`insert` of rows that arrive in chunks, ``(sketches, empty)`` of the next rows
        of ``ids`` each (an iterator: chunks still being made are stored as they come, in the
        same one transaction). Each chunk's rows and checksums are built in bulk (``zip`` and
        ``map`` over the chunk), so the Python work per row is SQLite's own."""
        return self._insert(ids, chunks, texts, True, replace, None)

    def _insert(
        self,
        ids: Sequence[str],
        source: Iterable,
        texts: Sequence[str] | None,
        chunked: bool,
        replace: bool,
        expect_seq: int | None,
    ) -> list[int]:
        self._writable()
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))
            raise KeyError(f"id {dup!r} appears twice in one add")
        rows = chain.from_iterable(_chunk_rows(ids, source, texts)) if chunked else source
        with self._transaction():
            if expect_seq is not None and self._sequence("docs") != expect_seq:
                raise WriteConflict(f"{self.path}: another writer added documents")
            if replace:
                self._delete(ids, missing_ok=True)
            seq0 = self._sequence("docs") + 1  # AUTOINCREMENT: the rows get seq0, seq0 + 1, ... in order
            try:
                self._conn.executemany("INSERT INTO docs(id, sketch, empty, crc, text) VALUES (?, ?, ?, ?, ?)", rows)
            except sqlite3.IntegrityError:
                # the id's UNIQUE index refused a row: an id stored already (checked by the
                # insert itself rather than a look-up of every id first); name the first one
                self._conn.execute("ROLLBACK")
                present = self.lookup(ids)
                first = next((i for i in ids if i in present), None)
                if first is None:
                    raise
                raise KeyError(f"id {first!r} is in the index already (--replace / replace=True overwrites)") from None
            stored = self._sequence("docs") - seq0 + 1
            if stored != len(ids):
                raise ValueError(f"{len(ids)} ids but {stored} sketches; nothing stored")
        return list(range(seq0, seq0 + len(ids)))

    def delete(self, ids: Sequence[str]) -> list[int]:
        """Remove the rows of ``ids`` in one transaction (an unknown id: ``KeyError``, nothing
        removed); returns their sequence numbers."""
        self._writable()
        with self._transaction():
            return self._delete(ids, missing_ok=False)

    def columns_after(self, seq: int, sketch_bytes: int, *, batch: int = 65536) -> Iterator[RowColumns]:
        """Stored rows with a sequence number above ``seq``, in order, in batches, as columns (the
        backend interface's ``rows_after`` for this store), with no Python object made per row
        beyond SQLite's own (what loading a whole index reads); every sketch's size
        (``sketch_bytes``) and checksum verified, the checksums computed by ``map`` over the batch
        rather than a loop in Python."""
        cursor = self._conn.execute("SELECT seq, id, sketch, empty, crc FROM docs WHERE seq > ? ORDER BY seq", (seq,))
        while True:
            try:
                chunk = cursor.fetchmany(batch)
            except sqlite3.DatabaseError as exc:
                raise IndexCorruptError(f"{self.path}: damaged ({exc}); run `neardup index check`") from None
            if not chunk:
                return
            seqs, ids, sketches, empty, crcs = zip(*chunk)
            if set(map(type, sketches)) != {bytes} or set(map(len, sketches)) != {sketch_bytes}:
                bad = next(i for i, sk in enumerate(sketches) if not isinstance(sk, bytes) or len(sk) != sketch_bytes)
                raise IndexCorruptError(
                    f"{self.path}: the sketch of id {ids[bad]!r} has {len(sketches[bad] or b'')} bytes, "
                    f"expected {sketch_bytes}; run `neardup index check`"
                )
            encoded = list(map(str.encode, ids, repeat("utf-8"), repeat("surrogatepass")))
            computed = list(map(zlib.crc32, sketches, map(zlib.crc32, encoded)))
            if computed != list(crcs):
                bad = next(i for i, (a, b) in enumerate(zip(computed, crcs)) if a != b)
                raise IndexCorruptError(
                    f"{self.path}: the stored sketch of id {ids[bad]!r} fails its checksum; "
                    "run `neardup index check` (restore the file or remove that id)"
                )
            yield RowColumns(list(seqs), list(ids), encoded, b"".join(sketches), list(empty))

    def tombstones_after(self, seq: int) -> list[tuple[int, int]]:
        """``(tombstone seq, removed doc seq)`` with a tombstone seq above ``seq``."""
        return self._query("SELECT seq, doc_seq FROM tombstones WHERE seq > ? ORDER BY seq", (seq,))

    def last_tombstone(self) -> int:
        return self._query("SELECT COALESCE(MAX(seq), 0) FROM tombstones")[0][0]

    def high_water(self) -> tuple[int, int]:
        """The highest sequence numbers ever given to a row and to a tombstone (AUTOINCREMENT
        never reuses them; a derived file that claims more is of a newer state than this file)."""
        found = dict(self._query("SELECT name, seq FROM sqlite_sequence WHERE name IN ('docs', 'tombstones')"))
        return int(found.get("docs", 0)), int(found.get("tombstones", 0))

    def lookup(self, ids: Sequence[str]) -> dict[str, int]:
        """The sequence numbers of the ids that are stored."""
        out: dict[str, int] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            out.update(self._query(f"SELECT id, seq FROM docs WHERE id IN ({marks})", chunk))
        return out

    def get(self, doc_id: str) -> dict[str, Any] | None:
        """``{"id", "seq", "empty", "text"?}`` of a stored id, or None."""
        rows = self._query("SELECT seq, empty, text FROM docs WHERE id = ?", (doc_id,))
        if not rows:
            return None
        seq, empty, text = rows[0]
        out: dict[str, Any] = {"id": doc_id, "seq": seq, "empty": bool(empty)}
        if text is not None:
            out["text"] = text
        return out

    def compact(self) -> None:
        """Drop the tombstones (readers reload: the epoch changes) and rewrite the file without free pages."""
        self._writable()
        with self._transaction():
            self._conn.execute("DELETE FROM tombstones")
            self._conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'epoch'")
        try:
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.DatabaseError as exc:
            error = write_error(self.path, exc)
            raise type(error)(f"{self.path}: could not compact ({exc}); the index is unchanged") from None

    def check(self, sketch_bytes: int) -> list[str]:
        """Everything wrong with the file (empty when it is consistent)."""
        problems: list[str] = []
        try:
            result = [r[0] for r in self._conn.execute("PRAGMA integrity_check").fetchall()]
            if result != ["ok"]:
                problems += [f"SQLite integrity: {r}" for r in result[:20]]
            self.meta()
            for seq, doc_id, sketch, crc in self._conn.execute("SELECT seq, id, sketch, crc FROM docs ORDER BY seq"):
                if not isinstance(sketch, bytes) or len(sketch) != sketch_bytes:
                    problems.append(
                        f"id {doc_id!r} (row {seq}): sketch of {len(sketch or b'')} bytes, expected {sketch_bytes}"
                    )
                elif row_crc(doc_id, sketch) != crc:
                    problems.append(f"id {doc_id!r} (row {seq}): checksum mismatch")
                if len(problems) > 100:
                    problems.append("... (stopped after 100 problems)")
                    break
            live = self._query("SELECT COUNT(*) FROM tombstones t JOIN docs d ON d.seq = t.doc_seq")[0][0]
            if live:
                problems.append(f"{live} tombstone(s) point at stored documents")
        except (sqlite3.DatabaseError, NeardupError) as exc:
            problems.append(f"cannot read the index: {exc}")
        return problems

    def file_bytes(self) -> int:
        real = os.path.realpath(self.path)  # SQLite keeps the WAL beside the file a symbolic link names
        return sum(os.path.getsize(real + s) for s in ("", "-wal") if os.path.exists(real + s))

    # ---------------------------------------------------------------- internals

    def _writable(self) -> None:
        if self.mode != "a":
            raise PermissionError(f"{self.path}: the index is open read-only (open it with mode='a' to change it)")

    def _sequence(self, table: str) -> int:
        rows = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchall()
        return rows[0][0] if rows else 0

    def _delete(self, ids: Sequence[str], *, missing_ok: bool) -> list[int]:
        present = self.lookup(ids)
        if not missing_ok:
            missing = [i for i in ids if i not in present]
            if missing:
                raise KeyError(f"id {missing[0]!r} is not in the index")
        seqs = [present[i] for i in dict.fromkeys(ids) if i in present]
        self._conn.executemany("DELETE FROM docs WHERE seq = ?", [(s,) for s in seqs])
        self._conn.executemany("INSERT INTO tombstones(doc_seq) VALUES (?)", [(s,) for s in seqs])
        return seqs

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise IndexCorruptError(f"{self.path}: damaged or unreadable ({exc}); run `neardup index check`") from None

    def present(self) -> None:
        """Raise :class:`IndexGoneError` when the index's name no longer leads to the file this
        store has open (removed, renamed or replaced under it: what is written now would be lost)."""
        if self._file_key is None:
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._file_key:
            raise IndexGoneError(
                f"{self.path}: the index file was removed or replaced under this process; writes are refused "
                "so that none is lost (put the file back under its name, or restart the server)"
            )

    @contextlib.contextmanager
    def _transaction(self):
        self.present()
        with _writing(self.path):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # SQLite rolls back by itself on some errors (disk full)
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise


def _chunk_rows(ids: Sequence[str], chunks: Iterable, texts: Sequence[str] | None) -> Iterator[Iterator[tuple]]:
    """The rows of each chunk ``(sketches, empty)`` as one ``zip`` (ids taken in order)."""
    at = 0
    for sketches, empty in chunks:
        end = at + len(sketches)
        part = ids[at:end]
        text = repeat(None) if texts is None else texts[at:end]
        yield zip(part, sketches, map(int, empty), row_crcs(part, sketches), text)
        at = end


_FULL_CODES = {13}  # SQLITE_FULL (ENOSPC, or a short write at the file size limit)
_READONLY_CODES = {3, 8, 14, 23}  # SQLITE_PERM, SQLITE_READONLY (and its extended codes), SQLITE_CANTOPEN, SQLITE_AUTH


def write_error(path: str, exc: sqlite3.Error) -> NeardupError:
    """SQLite's error of a write as neardup's: full, read-only, locked, damaged or another write
    error (each says that nothing of the change was stored)."""
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in _FULL_CODES or "full" in text:
        return IndexFullError(f"{path}: disk full; nothing of this change was stored ({text})")
    if code in _READONLY_CODES or "readonly" in text or "read-only" in text:
        return IndexReadOnlyError(f"{path}: the index cannot be written ({text}); nothing of this change was stored")
    if "locked" in text or "busy" in text:
        return IndexLockedError(f"{path}: the index is locked by another process ({text})")
    if isinstance(exc, sqlite3.OperationalError):
        return IndexWriteError(f"{path}: could not write ({text}); nothing of this change was stored")
    return IndexCorruptError(f"{path}: damaged ({exc}); run `neardup index check`")


@contextlib.contextmanager
def _writing(path: str):
    """SQLite's write errors as neardup's (:func:`write_error`; the transaction is rolled back)."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise write_error(path, exc) from None


def _no_writer_possible(path: str) -> bool:
    """Whether the index file is on read-only media (or in a folder and file this process cannot
    write) with no WAL beside it: then no writer has it open (a writer's connection keeps its
    ``-wal`` file), and none can start, so it is opened as SQLite's ``immutable`` (no ``-shm``
    needed, which a reader could not create there)."""
    real = os.path.realpath(path)
    if os.path.exists(real + "-wal"):
        return False
    try:
        if os.statvfs(real).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False
    return not (os.access(real, os.W_OK) and os.access(os.path.dirname(real) or ".", os.W_OK))


def _connect(path: str, *, readonly: bool, page_size: int | None = None, immutable: bool = False) -> sqlite3.Connection:
    try:
        if immutable:
            uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?immutable=1"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        else:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        if page_size is not None:  # a new file: before its first write (WAL fixes the page size)
            conn.execute(f"PRAGMA page_size={int(page_size)}")
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise IndexWriteError(f"{path}: the file system does not support SQLite's WAL journal (got {mode})")
        conn.execute("PRAGMA synchronous=FULL")
        if readonly:
            conn.execute("PRAGMA query_only=ON")
        return conn
    except sqlite3.DatabaseError as exc:
        raise IndexCorruptError(f"{path}: not a neardup index or damaged ({exc})") from None


class _FileUse:
    """This process's use of one index file (one inode): how many stores have it open, whether one
    of them is the writer, and the descriptor that holds the writer lock."""

    __slots__ = ("fd", "pid", "users", "writer")

    def __init__(self) -> None:
        self.fd: int | None = None
        self.users = 0
        self.writer = False
        self.pid = os.getpid()
        """The process that took the lock: a child made by ``fork`` shares the descriptor's lock
        and must not release it (the parent still writes)."""


_FILES: dict[tuple[int, int], _FileUse] = {}
_FILES_LOCK = threading.Lock()

_WRITER_BYTE = 0x40000000 + 0x8000
"""The byte of the index file that the writer lock covers: in SQLite's lock-byte page (the page at
1 GiB that never holds data), away from the 512 bytes SQLite itself locks there."""


def _refuse_links(path: str) -> None:
    """A WAL index has one name: SQLite keeps ``-wal`` and ``-shm`` beside the name it was opened
    by, so two hard links would be two journals (a writer's commits invisible through the other
    name, and lost when a writer through it checkpoints)."""
    links = os.stat(path).st_nlink
    if links > 1:
        raise IndexLinkError(
            f"{path}: the index file has {links} hard links; a WAL index must have one name (SQLite keeps its "
            "journal beside the name, so each link would get a journal of its own): remove the other links, "
            "or copy the file (a symbolic link is fine)"
        )


def _lock_op(fd: int, kind: int) -> None:
    import fcntl

    ofd = getattr(fcntl, "F_OFD_SETLK", None)
    if (
        ofd is not None
    ):  # Linux: a lock of the open file description on one byte (on NFS flock is a whole-file fcntl lock)
        try:
            fcntl.fcntl(fd, ofd, struct.pack("hhqqi4x", kind, os.SEEK_SET, _WRITER_BYTE, 1, 0))
            return
        except OSError as exc:  # a file system without such locks (some FUSE ones): flock, as everywhere else
            if exc.errno not in (errno.EINVAL, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
    # BSD, macOS: flock is native there, apart from SQLite's fcntl locks
    fcntl.flock(fd, (fcntl.LOCK_EX | fcntl.LOCK_NB) if kind == fcntl.F_WRLCK else fcntl.LOCK_UN)


def _try_lock(fd: int) -> bool:
    """Take the writer lock on ``fd`` without waiting; False when another open of the file holds it."""
    import fcntl

    try:
        _lock_op(fd, fcntl.F_WRLCK)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


def _note_path(path: str) -> str:
    return os.path.realpath(path) + ".lock"


def _locked_error(path: str) -> IndexLockedError:
    try:
        with open(_note_path(path), encoding="utf-8", errors="replace") as f:
            holder = f.read(200).strip()
    except OSError:
        holder = ""
    return IndexLockedError(
        f"{path}: the index is locked by another writer ({holder or 'unknown process'}); "
        "one writer at a time (readers may open it with mode 'r')"
    )


def _acquire(path: str, *, writer: bool, fd: int | None = None) -> tuple[int, int]:
    """Count one more store of this process on the index file at ``path`` and, for a writer, take
    the writer lock on the file itself (``fd``: the descriptor of a file just made by ``create``).
    Returns the file's identity (device, inode) for :func:`_release`.

    The lock is on the inode, not on a name: a symbolic link, a deleted side file, any path to the
    same file meets the same lock. One descriptor per file and process holds it, and it is closed
    only when no store of the process has the file open any more: closing any descriptor of a file
    drops every POSIX lock the process holds on it, SQLite's own included."""
    with _FILES_LOCK:
        st = os.fstat(fd) if fd is not None else os.stat(path)
        key = (st.st_dev, st.st_ino)
        use = _FILES.setdefault(key, _FileUse())
        if fd is not None and use.fd is None:
            use.fd = fd
        if writer:
            try:
                if use.writer:
                    raise _locked_error(path)
                if use.fd is None:
                    try:
                        use.fd = os.open(path, os.O_RDWR)
                    except OSError as exc:
                        if exc.errno not in (errno.EROFS, errno.EPERM, errno.EACCES, errno.ETXTBSY):
                            raise
                        raise IndexReadOnlyError(
                            f"{path}: cannot open the index for writing ({exc.strerror}: a read-only file system, "
                            "an immutable file or no permission); readers may open it with mode 'r'"
                        ) from None
                if not _try_lock(use.fd):
                    raise _locked_error(path)
            except BaseException:
                if use.users == 0:
                    del _FILES[key]
                    if use.fd is not None:
                        os.close(use.fd)
                raise
            use.writer = True
            with contextlib.suppress(OSError), open(_note_path(path), "w", encoding="utf-8") as f:
                # a note for the error message of the next would-be writer (not the lock)
                f.write(json.dumps({"pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}))
        use.users += 1
        return key


def _release(key: tuple[int, int] | None, *, writer: bool) -> None:
    """Undo one :func:`_acquire` (after the store's SQLite connection is closed)."""
    import fcntl

    if key is None:
        return
    with _FILES_LOCK:
        use = _FILES.get(key)
        if use is None:
            return
        use.users -= 1
        if writer and use.writer:
            use.writer = False
            if use.fd is not None and use.pid == os.getpid():
                with contextlib.suppress(OSError):
                    _lock_op(use.fd, fcntl.F_UNLCK)
                with contextlib.suppress(OSError):  # and where the lock fell back to flock
                    fcntl.flock(use.fd, fcntl.LOCK_UN)
        if use.users <= 0:
            del _FILES[key]
            if use.fd is not None:
                with contextlib.suppress(OSError):
                    os.close(use.fd)
