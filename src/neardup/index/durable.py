"""A durable index of texts that grows: SQLite (or Redis) holds the truth, the lookup lives in memory.

:class:`DurableIndex` (``neardup.Index``) keeps every document's id and sketch (and optionally
its text) in one SQLite file (:mod:`neardup.index.store`), or in Redis when the path is
``redis://HOST:PORT/DB/NAME`` (:mod:`neardup.index.redis_store`), and answers queries with the in-memory
index of its method (:class:`~neardup.index.lsh.LSHIndex` for MinHash,
:class:`~neardup.index.hamming.HammingIndex` for SimHash, :class:`~neardup.index.exact.ExactIndex`
for exact keys), built from the file when it is opened and kept up to date by every change. A
query finds what the batch job (``neardup dedup``) with the same config would pair with the
document; similarities are the method's own (estimated Jaccard, ``1 - d / bits``, 1.0).

The index is made with a method config and refuses to be opened with another one
(``IncompatibleSketchError`` naming both). Texts are sketched by ``config.sketch_texts``.

The lookup is saved beside the file as a snapshot (``PATH.lookup``, :mod:`neardup.index.snapshot`)
by :meth:`compact`, by :meth:`save_snapshot`, and by a writer's :meth:`close` after
:data:`SNAPSHOT_MIN_CHANGES` changes; opening maps it and applies only the rows committed after it
(a missing, damaged or stale snapshot is ignored: the lookup is rebuilt from SQLite).

Concurrency: a SQLite file has one writer process at a time (mode ``"a"`` takes a lock; a second
writer gets :class:`~neardup.index.store.IndexLockedError`) and any number of readers (mode
``"r"``), which see the writer's committed changes after :meth:`refresh`. An index in Redis has
any number of writers and readers, in any processes on any machines; each catches up with the
others' changes before it answers (one round trip to read three counters when nothing changed),
and ``add_if_unique`` stays atomic across them (the store refuses the add when another writer
added something since the check; the check then runs again). Within a process, every method is
thread-safe (one lock; queries of many threads are serialized).

>>> import tempfile, os
>>> from neardup.methods.minhash.config import MinHashConfig
>>> path = os.path.join(tempfile.mkdtemp(), "docs.ndx")
>>> text = "the quick brown fox jumps over the lazy dog near the river bank this morning"
>>> with DurableIndex.create(path, MinHashConfig(threshold=0.5)) as index:
...     index.add(["a"], [text])
...     index.query(text + " again")
[('a', 0.84375)]
>>> with DurableIndex.open(path) as index:
...     len(index), "a" in index
(1, True)
"""

from __future__ import annotations

import collections
import datetime
import functools
import json
import os
import secrets
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import IncompatibleSketchError, NeardupError
from ..core.parallel import Threads
from ..core.validation import ParameterError, ParameterTypeError
from ..methods.base import MethodConfig
from ..methods.registry import config_from_dict, config_to_dict
from . import index_for
from . import snapshot as snapshots
from .growth import relieve
from .idtable import IdTable
from .keys import RowKeys
from .store import (
    IndexCorruptError,
    IndexFullError,
    IndexGoneError,
    IndexLinkError,
    IndexLockedError,
    IndexReadOnlyError,
    IndexUnavailableError,
    IndexWriteError,
    SQLiteStore,
    WriteConflict,
    row_blobs,
)

__all__ = [
    "DurableIndex",
    "Index",
    "IndexCorruptError",
    "IndexFullError",
    "IndexGoneError",
    "IndexLinkError",
    "IndexLockedError",
    "IndexReadOnlyError",
    "IndexUnavailableError",
    "IndexWriteError",
    "UniqueResult",
]

CHECK_AND_ADD_TIMEOUT_S = 30.0
"""How long ``add_if_unique`` on a shared store retries while other writers keep adding."""


def _is_redis(path: str) -> bool:
    return path.lower().startswith(("redis://", "rediss://"))


def create_store(path: str | os.PathLike, meta: dict[str, str]) -> Any:
    """A new store at ``path``: an index file, or an index in Redis for ``redis://...``."""
    path = os.fspath(path)
    if _is_redis(path):
        from .redis_store import RedisStore

        return RedisStore.create(path, meta)
    return SQLiteStore.create(path, meta)


def open_store(path: str | os.PathLike, mode: str) -> Any:
    """The store at ``path`` (an index file, or an index in Redis for ``redis://...``)."""
    path = os.fspath(path)
    if _is_redis(path):
        from .redis_store import RedisStore

        return RedisStore.open(path, mode)
    return SQLiteStore.open(path, mode)


Matches = list[tuple[str, float]]

SNAPSHOT_MIN_CHANGES = 10_000
"""A writer's ``close`` rewrites the lookup snapshot when at least this many rows were added or
removed since the snapshot it opened (or, without one, when the index holds this many rows):
below that, applying the rows after the snapshot at open costs less than rewriting it."""

_SKETCH_CHUNK = 2048  # texts per sketching task when a query or add sketches on several threads
_ONE_ASCII_MAX = 1 << 20  # a longer text goes through encode_for_sketch (which encodes a huge one in slices)
_STREAM_CHUNK = 512  # at least this many texts per task of a streaming add (small: storing starts early)


@dataclass(frozen=True)
class UniqueResult:
    """What :meth:`DurableIndex.add_if_unique` did: the ids added, and for each other document its
    id and its matches (in the index or among the earlier documents of the same call)."""

    added: list[str]
    duplicates: list[tuple[str, Matches]]


class DurableIndex:
    """An index of texts on disk; see the module docs. Open it with :meth:`create` or :meth:`open`."""

    def __init__(self, store: Any, config: MethodConfig, *, workers: int = 1) -> None:
        self._store = store
        self._shared = bool(getattr(store, "shared", False))
        self._config = config
        self._workers = workers
        self._lock = threading.RLock()
        meta = store.meta()
        self._store_text = meta["store_text"] == "1"
        self._snapshot_file = snapshots.snapshot_path(store.path) if isinstance(store, SQLiteStore) else None
        self.snapshot_status = "none" if self._snapshot_file is not None else "not kept by this store"
        self._uid = meta.get("uid") or f"created {meta.get('created')}"
        self._closed = False
        self._load()

    # ------------------------------------------------------------------ opening

    @classmethod
    def create(
        cls, path: str | os.PathLike, config: MethodConfig, *, store_text: bool = False, workers: int = 1
    ) -> DurableIndex:
        """A new, empty index at ``path`` for ``config``'s method and settings, open for writing.

        ``store_text=True`` keeps each document's text too (``get`` returns it; the file grows by
        the texts' size).
        """
        if not isinstance(config, MethodConfig):
            raise ParameterTypeError(f"config must be a method config (such as MinHashConfig()), got {config!r}")
        try:
            config.sketch_texts(["probe"])
        except (NotImplementedError, ValueError) as exc:
            raise ParameterError(f"cannot build an index for this config: {exc}") from None
        meta = {
            "method": config.name,
            "config": json.dumps(config_to_dict(config), sort_keys=True),
            "scheme": json.dumps(config.scheme.to_dict(), sort_keys=True),
            "neardup_version": _version(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "store_text": "1" if store_text else "0",
            "uid": secrets.token_hex(16),  # names this index in its derived files (a snapshot of another is stale)
        }
        return cls(create_store(path, meta), config, workers=workers)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike,
        mode: str = "r",
        *,
        config: MethodConfig | None = None,
        workers: int = 1,
    ) -> DurableIndex:
        """Open the index at ``path``: ``mode="r"`` to read, ``"a"`` to read and write (one writer
        at a time for a file; any number for Redis). ``config``, when given, must equal the index's
        (else ``IncompatibleSketchError``)."""
        store = open_store(path, mode)
        try:
            meta = store.meta()
            try:
                stored = config_from_dict(json.loads(meta["config"]))
            except Exception as exc:
                raise IndexCorruptError(f"{store.path}: cannot read the index's method config ({exc})") from None
            if config is not None and config_to_dict(config) != config_to_dict(stored):
                raise IncompatibleSketchError(
                    f"{store.path}: the index was made with {meta['config']}, "
                    f"not with {json.dumps(config_to_dict(config), sort_keys=True)}"
                )
            return cls(store, stored, workers=workers)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Close the file; a writer first rewrites the lookup snapshot after enough changes
        (:data:`SNAPSHOT_MIN_CHANGES`; a failure to write it is a warning: it is derived)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._snapshot_due():
                    try:
                        self.save_snapshot()
                    except (OSError, NeardupError) as exc:
                        warnings.warn(f"{self.path}: could not write the lookup snapshot ({exc})", stacklevel=2)
            finally:
                self._store.close()

    def __enter__(self) -> DurableIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ properties

    @property
    def path(self) -> str:
        return self._store.path

    @property
    def mode(self) -> str:
        return self._store.mode

    @property
    def config(self) -> MethodConfig:
        return self._config

    @property
    def scheme(self) -> Any:
        return self._config.scheme

    @property
    def threshold(self) -> float:
        return self._memory.threshold

    def __len__(self) -> int:
        with self._lock:
            self._sync()
            return len(self._memory)

    def __contains__(self, doc_id: object) -> bool:
        if not isinstance(doc_id, str):
            return False
        with self._lock:
            self._sync()
            return bool(self._held([doc_id]))

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            self._sync()
            return iter(self._names.many(list(self._memory)))

    def __repr__(self) -> str:
        return f"DurableIndex({self.path!r}, method={self._config.name}, size={len(self)}, mode={self.mode!r})"

    # ------------------------------------------------------------------ changes

    def add(self, ids: Sequence[str], texts: Sequence[str], *, replace: bool = False) -> None:
        """Store documents (one transaction: when this returns they are stored). An id already
        stored is a ``KeyError`` (nothing stored) unless ``replace``. With several ``workers``,
        a large batch is sketched on them while it is stored (queries of other threads wait)."""
        ids, texts = _check_docs(ids, texts)
        if self._workers > 1 and len(texts) >= 2 * _SKETCH_CHUNK and not self._shared:
            with self._lock:
                self._add_streaming(ids, texts, replace)
            return
        values, empty = self._sketch(texts)
        with self._lock:
            self._commit(ids, texts, values, empty, replace=replace)

    def add_if_unique(
        self, ids: Sequence[str], texts: Sequence[str], *, min_similarity: float | None = None, limit: int | None = 10
    ) -> UniqueResult:
        """Add, in order, each document that has no near-duplicate in the index nor among the
        documents added before it by this call; atomic (one lock and one transaction), so two
        concurrent calls never both add near-identical texts. Returns the added ids and, for each
        other document, its matches (best first, at most ``limit``).

        On a shared store (Redis) the add is conditional on no document having been added by
        anyone since the check; when one was, the index catches up and checks again (for at most
        :data:`CHECK_AND_ADD_TIMEOUT_S` seconds of other writers adding, then ``IndexLockedError``)."""
        ids, texts = _check_docs(ids, texts)
        values, empty = self._sketch(texts)
        deadline = time.monotonic() + CHECK_AND_ADD_TIMEOUT_S
        with self._lock:
            while True:
                self._sync()
                expect = self._version[1] if self._shared else None
                accepted, duplicates = self._unique_rows(ids, values, empty, min_similarity, limit)
                added = [ids[i] for i in accepted]
                sel = np.asarray(accepted, dtype=np.int64)
                try:
                    self._commit(added, [texts[i] for i in accepted], values[sel], empty[sel], expect_seq=expect)
                except WriteConflict:
                    if time.monotonic() > deadline:
                        raise IndexLockedError(
                            f"{self.path}: other writers kept adding documents for {CHECK_AND_ADD_TIMEOUT_S:g} s; "
                            "the check-and-add did not get in (nothing was added; try again)"
                        ) from None
                    continue
                return UniqueResult(added, duplicates)

    def _unique_rows(
        self, ids: list[str], values: np.ndarray, empty: np.ndarray, min_similarity: float | None, limit: int | None
    ) -> tuple[list[int], list[tuple[str, Matches]]]:
        """The positions of the documents without a near-duplicate in the index nor among the
        accepted ones before them, and the matches of the others."""
        held = self._held(ids)
        present = [i for i in ids if i in held]
        if present:
            raise KeyError(f"id {present[0]!r} is in the index already")
        accepted: list[int] = []  # staged in memory under the keys -1, -2, ... until committed
        added: list[str] = []
        duplicates: list[tuple[str, Matches]] = []
        try:
            for i in range(len(ids)):
                row = values[i : i + 1]
                matches = [] if empty[i] else self._query_rows(row, min_similarity, limit, added)[0]
                if matches:
                    duplicates.append((ids[i], matches))
                    continue
                accepted.append(i)
                added.append(ids[i])
                self._memory.add([-len(accepted)], row, empty=empty[i : i + 1])
        finally:
            if accepted:
                self._memory.remove([-(k + 1) for k in range(len(accepted))])
        return accepted, duplicates

    def remove(self, ids: Sequence[str]) -> None:
        """Remove documents (one transaction; an unknown id is a ``KeyError`` and nothing is removed)."""
        ids = list(ids)
        with self._lock:
            removed = self._store.delete(ids)
            if self._shared:  # others may have written meanwhile: catch up (which applies these too)
                self._catch_up(self._store.version())
                return
            self._forget(removed)
            self._tomb = self._store.last_tombstone()  # this writer's own tombstones are applied

    def compact(self) -> None:
        """Drop tombstones and free pages (readers reload on their next :meth:`refresh`), and
        rewrite the lookup snapshot."""
        with self._lock:
            self._store.compact()
            if self._shared:  # tombstones of others' removals went with the compaction: reload
                self._load()
                return
            self._epoch = self._store.epoch()
            self._tomb = 0
            self._version = self._store.version()
            if self._snapshot_file is not None:
                self.save_snapshot()

    def save_snapshot(self) -> int:
        """Write the lookup snapshot (``PATH.lookup``) now, atomically; returns its size in bytes
        (0 for a store without snapshots). Writers only."""
        with self._lock:
            if self.mode != "a":
                raise PermissionError(f"{self.path}: open the index with mode='a' to write its snapshot")
            if self._snapshot_file is None:
                return 0
            live = _live_seqs(self._memory)
            self._names = self._names.live(live)
            payload = {"method": self._config.name, "memory": self._memory, "names": self._names}
            covered = snapshots.Covered(self._uid, self._epoch, self._last, self._tomb)
            try:
                size = snapshots.write(self._snapshot_file, payload, covered)
            except OSError as exc:
                raise IndexWriteError(f"{self._snapshot_file}: could not write the lookup snapshot ({exc})") from None
            self._changes = 0
            self.snapshot_status = "written"
            return size

    def refresh(self) -> None:
        """Catch up with changes committed by a writer since this index was opened or refreshed
        (an index in Redis does this by itself before every answer)."""
        with self._lock:
            self._catch_up(self._store.version())

    def check_ready(self) -> None:
        """Raise the store's error when the index cannot take writes now: its file removed or
        replaced under this handle (:class:`IndexGoneError`), Redis unreachable
        (:class:`IndexUnavailableError`) or the index's keys deleted from it (``IndexGoneError``)."""
        with self._lock:
            if self._shared:
                self._store.version()
            elif self.mode == "a":
                self._store.present()

    def _sync(self) -> None:
        """On a shared store: catch up when anything changed (one round trip when nothing did)."""
        if self._shared:
            version = self._store.version()
            if version != self._version:
                self._catch_up(version)

    # ------------------------------------------------------------------ queries

    def query(self, text: str, *, min_similarity: float | None = None, limit: int | None = None) -> Matches:
        """The stored documents like ``text``: ``[(id, similarity), ...]``, best first.

        For MinHash, one text goes the short way (the same answer as :meth:`query_batch`): its
        signature from the hasher looked up once, then the in-memory index's one-row query
        (a compiled entry point, no per-call type dispatch) and the ids of the few matches."""
        one = self._sketch_one
        if one is None or type(text) is not str:
            return self.query_batch([text], min_similarity=min_similarity, limit=limit)[0]
        row, empty = one(text)
        with self._lock:
            self._sync()
            if empty:
                return []  # a document without features is never a near-duplicate
            found = self._memory.query(row, min_similarity=min_similarity, limit=limit)
            names = self._names
            return [(names[k], sim) for k, sim in found]

    @functools.cached_property
    def _sketch_one(self) -> Any:
        """``text -> (signature row, empty)`` for a MinHash index (``None`` for other methods):
        ``config.sketch_texts([text])``, with the hasher found once instead of per call (the
        config builds its scheme, and the hasher's cache hashes it, every time), and an ASCII
        text's bytes made by one ``str.encode`` (``encode_for_sketch`` makes the same bytes: the
        kernels fold ASCII case themselves, NFKC leaves ASCII as it is) rather than its batch
        bookkeeping."""
        from ..methods.minhash.config import MinHashConfig
        from ..methods.minhash.sketch import hasher_for
        from .lsh import LSHIndex

        if type(self._config) is not MinHashConfig or not isinstance(self._memory, LSHIndex):
            return None
        hasher = hasher_for(self._config.scheme)
        sign, sign_encoded = hasher.sign_texts_with_counts, hasher.sign_encoded
        starts = np.zeros(1, dtype=np.int64)

        def one(text: str) -> tuple[np.ndarray, bool]:
            if text.isascii() and len(text) <= _ONE_ASCII_MAX:
                data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
                values, counts = sign_encoded(data, starts, np.array([len(text)], dtype=np.int64))
            else:
                values, counts = sign([text])
            return values[0], counts[0] == 0

        return one

    def query_batch(
        self, texts: Sequence[str], *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[Matches]:
        """:meth:`query` for each text, in one call (one MinHash text goes :meth:`query`'s short
        way: half the CPU of a batch of one, which is what a service's single query costs)."""
        _, texts = _check_docs(None, texts)
        if len(texts) == 1 and type(texts[0]) is str and self._sketch_one is not None:
            return [self.query(texts[0], min_similarity=min_similarity, limit=limit)]
        values, empty = self._sketch(texts)
        with self._lock:
            self._sync()
            return self._query_rows(values, min_similarity, limit, (), empty=empty)

    def get(self, doc_id: str) -> dict[str, Any] | None:
        """``{"id", "empty", "text" (when texts are kept)}`` of a stored document, or None."""
        with self._lock:
            row = self._store.get(doc_id)
        if row is not None:
            row.pop("seq")
        return row

    def stats(self) -> dict[str, Any]:
        """Size, settings and file facts (what ``neardup index stats`` prints)."""
        with self._lock:
            meta = self._store.meta()
            return {
                "path": self.path,
                "store": self._store.kind,
                "documents": len(self._memory),
                "method": self._config.name,
                "config": json.loads(meta["config"]),
                "scheme": json.loads(meta["scheme"]),
                "threshold": self.threshold,
                "pending_tombstones": len(self._store.tombstones_after(0)),
                "texts_stored": self._store_text,
                "file_bytes": self._store.file_bytes(),
                "snapshot": self._snapshot_stats(),
                "format_version": int(meta["format_version"]),
                "created": meta.get("created"),
                "created_by": meta.get("neardup_version"),
            }

    def check(self) -> list[str]:
        """What is wrong with the index file (an empty list when nothing is)."""
        with self._lock:
            problems = self._store.check(self._row_format[2])
            if self._snapshot_file is not None:
                problems += snapshots.verify(self._snapshot_file)
            return problems

    @staticmethod
    def check_file(path: str | os.PathLike) -> list[str]:
        """What is wrong with the index at ``path``, without loading it (so a damaged index
        can be checked): SQLite integrity (or Redis's keys agreeing), metadata, every sketch's
        size and checksum, and the lookup snapshot of a file."""
        try:
            store = open_store(path, "r")
        except (OSError, NeardupError) as exc:
            return [str(exc)]
        try:
            config = config_from_dict(json.loads(store.meta()["config"]))
            probe = config.sketch_texts([""]).values
            problems = store.check(int(np.prod(probe.shape[1:])) * probe.dtype.itemsize)
            if isinstance(store, SQLiteStore):
                problems += snapshots.verify(snapshots.snapshot_path(store.path))
            return problems
        except Exception as exc:
            return [f"cannot read the index's settings: {exc}"]
        finally:
            store.close()

    # ------------------------------------------------------------------ internals

    def _load(self) -> None:
        """The lookup: from the snapshot plus the rows after it, else rebuilt from every row."""
        self._version = self._store.version()  # read first: rows written after it are loaded too
        self._epoch = self._version[0]
        self._changes = 0
        if self._snapshot_file is not None and self._load_snapshot():
            return
        self._memory = index_for(self._config, workers=self._workers)
        self._names = IdTable()
        self._tomb = self._version[2]
        self._last = 0
        self._load_rows_after(0)

    @functools.cached_property
    def _row_format(self) -> tuple[tuple[int, ...], np.dtype, int]:
        """``(shape, dtype, bytes)`` of one stored sketch, from a probe sketch: asked for when a
        row is read or written, not on open (the probe loads the sketching kernels, a second)."""
        probe = self._config.sketch_texts([""]).values
        shape = probe.shape[1:]
        return shape, probe.dtype, int(np.prod(shape)) * probe.dtype.itemsize

    # -- the lookup snapshot (local SQLite files only; see neardup.index.snapshot)

    def _load_snapshot(self) -> bool:
        """Map the snapshot and catch up with SQLite; False (and why, in ``snapshot_status``)
        when it is missing, damaged or stale."""
        expected = snapshots.Covered(self._uid, self._epoch, 0, 0)
        try:
            payload, covered = snapshots.load(self._snapshot_file, expected)
            if not isinstance(payload, dict) or payload.get("method") != self._config.name:
                raise snapshots.SnapshotInvalid(f"{self._snapshot_file}: holds no lookup of method {self._config.name}")
            memory, names = payload["memory"], payload["names"]
            if type(memory) is not type(index_for(self._config)) or not isinstance(names, IdTable):
                raise snapshots.SnapshotInvalid(f"{self._snapshot_file}: holds another kind of lookup")
            last_seq, last_tomb = self._store.high_water()
            if covered.last_seq > last_seq or covered.last_tomb > last_tomb:
                raise snapshots.SnapshotInvalid(
                    f"{self._snapshot_file}: ahead of the index file (rows to {covered.last_seq}, "
                    f"the file's to {last_seq}): the file was restored from an older copy?"
                )
        except snapshots.SnapshotInvalid as exc:
            self.snapshot_status = f"ignored: {exc}"
            return False
        memory._workers = self._workers  # the threads are this process's choice, not the writer's
        memory._tables.workers = self._workers
        self._memory, self._names = memory, names
        self._last, self._tomb = covered.last_seq, covered.last_tomb
        self._catch_up(self._version)
        self.snapshot_status = "used"
        return True

    def _snapshot_due(self) -> bool:
        return self.mode == "a" and self._snapshot_file is not None and self._changes >= SNAPSHOT_MIN_CHANGES

    def _snapshot_stats(self) -> dict[str, Any] | None:
        if self._snapshot_file is None:
            return None
        try:
            size = os.path.getsize(self._snapshot_file)
        except OSError:
            size = None
        return {
            "path": self._snapshot_file,
            "bytes": size,
            "status": self.snapshot_status,
            "changes_since": self._changes,
        }

    def _catch_up(self, version: tuple[int, int, int]) -> None:
        """Apply the rows and tombstones committed after ``_last`` / ``_tomb`` (reload after a
        compaction); ``version`` was read before (so nothing written before it is missed)."""
        if version[0] != self._epoch:
            self._load()
            return
        self._load_rows_after(self._last)
        removed = self._store.tombstones_after(self._tomb)
        self._forget([doc for _, doc in removed if doc in self._memory])
        if removed:
            self._tomb = removed[-1][0]
        self._version = version

    # -- rows

    def _sketch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``config.sketch_texts`` on ``workers`` threads (chunks of texts; the kernels release
        the GIL, as in the batch job's sketch stage), as ``(values, empty)``."""
        n = len(texts)
        if self._workers <= 1 or n < 2 * _SKETCH_CHUNK:
            s = self._config.sketch_texts(texts)
            return s.values, np.asarray(s.empty, dtype=np.bool_)
        step = max(_SKETCH_CHUNK, -(-n // (4 * self._workers)))
        with Threads(self._workers) as threads:
            parts = threads.map(self._config.sketch_texts, [texts[a : a + step] for a in range(0, n, step)])
        values = np.concatenate([p.values for p in parts])
        return values, np.concatenate([np.asarray(p.empty, dtype=np.bool_) for p in parts])

    def _add_streaming(self, ids: list[str], texts: list[str], replace: bool) -> None:
        """``add`` with several workers: the texts are sketched in chunks on the worker threads
        (started before anything else) while this thread stores the rows of the chunks already
        sketched, in the same one transaction (SQLite releases the GIL while it writes), so
        sketching and storing overlap. This thread's work per chunk is in bulk (the rows' bytes
        by one numpy call, their checksums by ``map``), no Python code runs per row."""
        old = list(self._held(ids).values()) if replace else []
        with Threads(self._workers) as threads:
            stream = _SketchStream(self._config.sketch_texts, texts, threads, self._row_format[1])
            seqs = self._store.insert_chunks(ids, stream.chunks(), texts if self._store_text else None, replace=replace)
        values, empty = stream.result()
        if old:
            self._forget(old)
            self._tomb = self._store.last_tombstone()
        self._remember(seqs, ids, values, empty)

    def _held(self, ids: Sequence[str]) -> dict[str, int]:
        """id -> seq of the ids the lookup holds (SQLite's id index, then the lookup: a reader
        holds what it has loaded)."""
        return {i: s for i, s in self._store.lookup(list(ids)).items() if s in self._memory}

    def _load_rows_after(self, seq: int) -> None:
        columns = getattr(self._store, "columns_after", None)
        if columns is not None:  # the SQLite store: columns, no object per row
            if self._store.high_water()[0] <= seq:
                return  # nothing after seq (and the probe of _row_format is not needed)
            shape, dtype, row_bytes = self._row_format
            for c in columns(seq, row_bytes):
                values = np.frombuffer(c.sketches, dtype=dtype).reshape((len(c.seqs), *shape))
                self._remember(c.seqs, c.ids, values, np.array(c.empty, dtype=np.bool_), encoded=c.encoded)
            return
        for rows in self._store.rows_after(seq):
            shape, dtype, row_bytes = self._row_format
            bad = next((r for r in rows if len(r.sketch) != row_bytes), None)
            if bad is not None:
                raise IndexCorruptError(
                    f"{self.path}: the sketch of id {bad.id!r} has {len(bad.sketch)} bytes, expected {row_bytes}"
                )
            values = np.frombuffer(b"".join(r.sketch for r in rows), dtype=dtype).reshape((len(rows), *shape))
            empty = np.fromiter((r.empty for r in rows), np.bool_, len(rows))
            self._remember([r.seq for r in rows], [r.id for r in rows], values, empty)

    def _commit(
        self,
        ids: list[str],
        texts: list[str],
        values: np.ndarray,
        empty: Any,
        *,
        replace: bool = False,
        expect_seq: int | None = None,
    ) -> None:
        if not ids:
            return
        values = np.ascontiguousarray(values, dtype=self._row_format[1])
        empty = np.asarray(empty, dtype=np.bool_)
        blobs = row_blobs(values)
        old = list(self._held(ids).values()) if replace else []
        seqs = self._store.insert(
            ids, blobs, empty.tolist(), texts if self._store_text else None, replace=replace, expect_seq=expect_seq
        )
        if self._shared:
            # others may have written since the last catch-up: keep the rows directly only when
            # nothing came between; the catch-up reads the rest (and the tombstones of a replace)
            if seqs[0] == max(self._last, self._version[1]) + 1:
                self._remember(seqs, ids, values, empty)
            self._catch_up(self._store.version())
            return
        if old:
            self._forget(old)
            self._tomb = self._store.last_tombstone()
        self._remember(seqs, ids, values, empty)

    def _remember(
        self, seqs: list[int], ids: list[str], values: np.ndarray, empty: np.ndarray, encoded: list | None = None
    ) -> None:
        """Rows stored under ``seqs`` (ascending, above every row held) join the in-memory lookup
        (``encoded``: the ids' UTF-8 bytes, when a load has them)."""
        self._memory.add(seqs, values, empty=empty)
        if encoded is not None and len(seqs) >= 1024:
            self._names.extend(seqs, encoded)
        else:
            self._names.add(seqs, ids)
        self._last = max(self._last, seqs[-1])
        self._changes += len(seqs)
        relieve()  # past a memory budget: the pages of the spill files this add touched

    def _forget(self, seqs: list[int]) -> None:
        """Rows removed from the store leave the in-memory lookup."""
        if seqs:
            self._memory.remove(seqs)
            self._names.discard(seqs)
            self._changes += len(seqs)

    def _query_rows(
        self, values: np.ndarray, min_similarity: float | None, limit: int | None, staged: Sequence[str], empty=None
    ) -> list[Matches]:
        """Matches as ids; in-memory keys below 0 are the rows staged by ``add_if_unique``
        (key -(j + 1) is ``staged[j]``)."""
        found = self._memory.query_batch(values, min_similarity=min_similarity, limit=limit)
        if empty is not None and empty.any():
            # a document without features is never a near-duplicate (SimHash's 0)
            found = [[] if e else row for row, e in zip(found, empty.tolist())]
        # every match's id in one lookup (one binary search for the whole batch)
        names = iter(self._names.many([k for row in found for k, _ in row if k >= 0]))
        return [[(next(names) if k >= 0 else staged[-k - 1], sim) for k, sim in row] for row in found]


class _SketchStream:
    """The sketches of ``texts``, made in chunks on worker threads, handed out in order as
    ``(row bytes, empty flags)`` per chunk (what ``SQLiteStore.insert_chunks`` consumes). The first
    ``2 * workers`` chunks are submitted when the stream is made, so sketching starts at once;
    then one more each time a chunk is taken (a long input is never read far ahead)."""

    def __init__(self, sketch: Any, texts: list[str], threads: Threads, dtype: np.dtype) -> None:
        step = max(_STREAM_CHUNK, -(-len(texts) // (8 * threads.workers)))
        self._pieces = collections.deque(texts[a : a + step] for a in range(0, len(texts), step))
        self._sketch, self._dtype, self._threads = sketch, dtype, threads
        self._parts: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending: collections.deque = collections.deque()
        for _ in range(2 * threads.workers):
            self._submit()

    def _submit(self) -> None:
        if self._pieces:
            self._pending.append(self._threads.submit(self._sketch, self._pieces.popleft()))

    def chunks(self) -> Iterator[tuple[list[bytes], list[bool]]]:
        while self._pending:
            part = self._pending.popleft().result()
            self._submit()
            values = np.ascontiguousarray(part.values, dtype=self._dtype)
            empty = np.asarray(part.empty, dtype=np.bool_)
            self._parts.append((values, empty))
            yield row_blobs(values), empty.tolist()

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """Every sketch and empty flag, once the chunks were consumed."""
        return np.concatenate([v for v, _ in self._parts]), np.concatenate([e for _, e in self._parts])


def _live_seqs(memory: Any) -> np.ndarray:
    """The sequence numbers the lookup holds, ascending (int64): read from its row keys' sorted
    prefix when every row is in it (no Python int per row), else gathered and sorted."""
    rows = getattr(memory, "_rows", None)
    if isinstance(rows, RowKeys) and rows.keys is None and rows.base == rows.n:
        n = rows.n
        return rows.values[:n][rows.alive[:n]]  # strictly increasing over the live rows
    return np.sort(np.fromiter(memory, dtype=np.int64, count=len(memory)))


def _check_docs(ids: Sequence[str] | None, texts: Sequence[str]) -> tuple[list[str], list[str]]:
    if isinstance(texts, str):
        raise ParameterTypeError("texts must be a sequence of strings, got one string (wrap it in a list)")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ParameterTypeError(f"texts[{i}] must be a string, got {type(t).__name__}")
    if ids is None:
        return [], texts
    if isinstance(ids, str):
        raise ParameterTypeError("ids must be a sequence of strings, got one string (wrap it in a list)")
    ids = list(ids)
    if len(ids) != len(texts):
        raise ParameterError(f"ids and texts must have the same length, got {len(ids)} and {len(texts)}")
    for i, d in enumerate(ids):
        if not isinstance(d, str) or not d:
            raise ParameterTypeError(f"ids[{i}] must be a non-empty string, got {d!r}")
    return ids, texts


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("neardup")
    except Exception:
        return "unknown"


Index = DurableIndex
"""``neardup.Index``: the durable index (the name users call it by)."""
