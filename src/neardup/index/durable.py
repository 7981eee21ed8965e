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

import datetime
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import IncompatibleSketchError, NeardupError
from ..core.validation import ParameterError, ParameterTypeError
from ..methods.base import MethodConfig
from ..methods.registry import config_from_dict, config_to_dict
from . import index_for
from .store import (
    IndexCorruptError,
    IndexLockedError,
    IndexUnavailableError,
    IndexWriteError,
    SQLiteStore,
    WriteConflict,
)

__all__ = [
    "DurableIndex",
    "Index",
    "IndexCorruptError",
    "IndexLockedError",
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
        probe = config.sketch_texts([""]).values
        self._row_shape, self._dtype = probe.shape[1:], probe.dtype
        self._row_bytes = int(np.prod(self._row_shape)) * self._dtype.itemsize
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
        with self._lock:
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
            return len(self._ids)

    def __contains__(self, doc_id: object) -> bool:
        with self._lock:
            self._sync()
            return doc_id in self._seq_of

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            self._sync()
            return iter([self._ids[s] for s in self._memory])

    def __repr__(self) -> str:
        return f"DurableIndex({self.path!r}, method={self._config.name}, size={len(self)}, mode={self.mode!r})"

    # ------------------------------------------------------------------ changes

    def add(self, ids: Sequence[str], texts: Sequence[str], *, replace: bool = False) -> None:
        """Store documents (one transaction: when this returns they are stored). An id already
        stored is a ``KeyError`` (nothing stored) unless ``replace``."""
        ids, texts = _check_docs(ids, texts)
        sketched = self._config.sketch_texts(texts)
        with self._lock:
            self._commit(ids, texts, sketched.values, sketched.empty, replace=replace)

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
        sketched = self._config.sketch_texts(texts)
        values, empty = sketched.values, np.asarray(sketched.empty, dtype=np.bool_)
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
        present = [i for i in ids if i in self._seq_of]
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
        """Drop tombstones and free pages (readers reload on their next :meth:`refresh`)."""
        with self._lock:
            self._store.compact()
            if self._shared:  # tombstones of others' removals went with the compaction: reload
                self._load()
                return
            self._epoch = self._store.epoch()
            self._tomb = 0
            self._version = self._store.version()

    def refresh(self) -> None:
        """Catch up with changes committed by a writer since this index was opened or refreshed
        (an index in Redis does this by itself before every answer)."""
        with self._lock:
            self._catch_up(self._store.version())

    def _sync(self) -> None:
        """On a shared store: catch up when anything changed (one round trip when nothing did)."""
        if self._shared:
            version = self._store.version()
            if version != self._version:
                self._catch_up(version)

    def _catch_up(self, version: tuple[int, int, int]) -> None:
        """Load what changed since the last catch-up; ``version`` was read before (so nothing
        written before it is missed)."""
        if version[0] != self._epoch:
            self._load()
            return
        self._load_rows_after(self._last)
        removed = self._store.tombstones_after(self._tomb)
        self._forget([doc for _, doc in removed if doc in self._ids])
        if removed:
            self._tomb = removed[-1][0]
        self._version = version

    # ------------------------------------------------------------------ queries

    def query(self, text: str, *, min_similarity: float | None = None, limit: int | None = None) -> Matches:
        """The stored documents like ``text``: ``[(id, similarity), ...]``, best first."""
        return self.query_batch([text], min_similarity=min_similarity, limit=limit)[0]

    def query_batch(
        self, texts: Sequence[str], *, min_similarity: float | None = None, limit: int | None = None
    ) -> list[Matches]:
        """:meth:`query` for each text, in one call."""
        _, texts = _check_docs(None, texts)
        sketched = self._config.sketch_texts(texts)
        with self._lock:
            self._sync()
            return self._query_rows(sketched.values, min_similarity, limit, (), empty=sketched.empty)

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
            self._sync()
            meta = self._store.meta()
            return {
                "path": self.path,
                "store": self._store.kind,
                "documents": len(self._ids),
                "method": self._config.name,
                "config": json.loads(meta["config"]),
                "scheme": json.loads(meta["scheme"]),
                "threshold": self.threshold,
                "pending_tombstones": len(self._store.tombstones_after(0)),
                "texts_stored": self._store_text,
                "file_bytes": self._store.file_bytes(),
                "format_version": int(meta["format_version"]),
                "created": meta.get("created"),
                "created_by": meta.get("neardup_version"),
            }

    def check(self) -> list[str]:
        """What is wrong with the index file (an empty list when nothing is)."""
        with self._lock:
            return self._store.check(self._row_bytes)

    @staticmethod
    def check_file(path: str | os.PathLike) -> list[str]:
        """What is wrong with the index at ``path``, without loading it (so a damaged index
        can be checked): SQLite integrity (or Redis's keys agreeing), metadata, every sketch's
        size and checksum."""
        try:
            store = open_store(path, "r")
        except (OSError, NeardupError) as exc:
            return [str(exc)]
        try:
            config = config_from_dict(json.loads(store.meta()["config"]))
            probe = config.sketch_texts([""]).values
            return store.check(int(np.prod(probe.shape[1:])) * probe.dtype.itemsize)
        except Exception as exc:
            return [f"cannot read the index's settings: {exc}"]
        finally:
            store.close()

    # ------------------------------------------------------------------ internals

    def _load(self) -> None:
        self._memory = index_for(self._config, workers=self._workers)
        self._ids: dict[int, str] = {}
        self._seq_of: dict[str, int] = {}
        self._version = self._store.version()  # read first: rows written after it are loaded too
        self._epoch, _, self._tomb = self._version
        self._last = 0
        self._load_rows_after(0)

    def _load_rows_after(self, seq: int) -> None:
        for rows in self._store.rows_after(seq):
            bad = next((r for r in rows if len(r.sketch) != self._row_bytes), None)
            if bad is not None:
                raise IndexCorruptError(
                    f"{self.path}: the sketch of id {bad.id!r} has {len(bad.sketch)} bytes, expected {self._row_bytes}"
                )
            values = np.frombuffer(b"".join(r.sketch for r in rows), dtype=self._dtype).reshape(
                (len(rows), *self._row_shape)
            )
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
        values = np.ascontiguousarray(values, dtype=self._dtype)
        empty = np.asarray(empty, dtype=np.bool_)
        blobs = [values[i].tobytes() for i in range(len(ids))]
        old = [self._seq_of[i] for i in ids if i in self._seq_of] if replace else []
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

    def _remember(self, seqs: list[int], ids: list[str], values: np.ndarray, empty: np.ndarray) -> None:
        """Rows stored under ``seqs`` (ascending, above every row held) join the in-memory lookup."""
        self._memory.add(seqs, values, empty=empty)
        for seq, doc_id in zip(seqs, ids):
            self._ids[seq] = doc_id
            self._seq_of[doc_id] = seq
        self._last = max(self._last, seqs[-1])

    def _forget(self, seqs: list[int]) -> None:
        """Rows removed from the store leave the in-memory lookup."""
        if seqs:
            self._memory.remove(seqs)
            for seq in seqs:
                del self._seq_of[self._ids.pop(seq)]

    def _query_rows(
        self, values: np.ndarray, min_similarity: float | None, limit: int | None, staged: Sequence[str], empty=None
    ) -> list[Matches]:
        """Matches as ids; in-memory keys below 0 are the rows staged by ``add_if_unique``
        (key -(j + 1) is ``staged[j]``)."""
        found = self._memory.query_batch(values, min_similarity=min_similarity, limit=limit)
        out = []
        for i, row in enumerate(found):
            if empty is not None and empty[i]:
                out.append([])  # a document without features is never a near-duplicate (SimHash's 0)
                continue
            out.append([(self._ids[k] if k >= 0 else staged[-k - 1], sim) for k, sim in row])
        return out


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
