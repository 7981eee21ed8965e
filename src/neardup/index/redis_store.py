"""An index stored in Redis, shared by several processes or machines (redis-py).

The store has the backend interface of :class:`~neardup.index.store.SQLiteStore` (the durable
index, :mod:`neardup.index.durable`, keeps its lookup structures in memory and asks the store
only for what changed); it is chosen by an index path of the form
``redis://[:PASSWORD@]HOST:PORT/DB/NAME`` (``rediss://`` for TLS).

Layout: every key of index NAME starts with ``neardup:{NAME}:`` (the braces are a Redis Cluster
hash tag: all keys of one index would share a node, as one Lua script touching them all needs;
the store itself connects to one server address)::

    meta    hash    format, format_version, method, config, scheme, neardup_version, created,
                    store_text (the same fields as the SQLite file's meta table)
    seq     string  the last document sequence number handed out (INCRBY; never reused)
    tseq    string  the last tombstone sequence number handed out
    epoch   string  bumped by ``compact`` (readers then reload everything)
    ids     hash    id -> seq of every stored document
    docs    hash    seq -> record: CRC-32 (u32 LE), empty (u8), id length (u32 LE), id (UTF-8), sketch
    texts   hash    seq -> text (only when the index keeps texts)
    live    zset    seq scored by seq: the stored documents in order (``rows_after``)
    tombs   zset    removed doc seq scored by its tombstone seq (readers catch up on removals)
    op:*    string  the answer to a write already applied (for 10 minutes): a write that redis-py
                    retries after a lost connection is not applied twice

Every write is one Lua script (atomic: other clients see all of it or none of it). Several writer
processes may write at once; a check-and-add (``add_if_unique``) passes ``expect_seq``, and the
script refuses (:class:`~neardup.index.store.WriteConflict`) when any document was added since
the writer last caught up, so the writer catches up and checks again: two near-identical
documents added concurrently from two processes are never both added.

Durability is Redis's own: an acknowledged write is in the server's memory, and on disk as the
server's persistence settings say (``appendonly yes`` with ``appendfsync always``: fsynced before
the reply; ``everysec``, Redis's default for the AOF: at most about a second lost on a power
loss; no persistence: lost when the server stops). See docs/index.md.
"""

from __future__ import annotations

import contextlib
import re
import struct
import uuid
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..core.errors import NeardupError
from .store import (
    _REQUIRED_META,
    FORMAT,
    FORMAT_VERSION,
    IndexCorruptError,
    IndexFullError,
    IndexGoneError,
    IndexReadOnlyError,
    IndexUnavailableError,
    IndexWriteError,
    StoredRow,
    WriteConflict,
    row_crc,
)

__all__ = ["RedisStore", "is_redis_url", "parse_redis_url", "shown_path"]

SCHEMES = ("redis://", "rediss://")
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_HEAD = struct.Struct("<IBI")  # crc, empty, id length
_OP_TTL_S = 600
_KEYS = ("meta", "seq", "tseq", "epoch", "ids", "docs", "texts", "live", "tombs")


def is_redis_url(path: object) -> bool:
    """Whether an index path names a Redis index (``redis://`` or ``rediss://``)."""
    return isinstance(path, str) and path.lower().startswith(SCHEMES)


_URL_SECRET = re.compile(r"(rediss?://[^:@/\s]*:)[^@/\s]*@", re.I)
_QUERY_SECRET = re.compile(r"([?&](?:password|pass|pwd|auth|token)=)[^&#\s]*", re.I)


def shown_path(path: str) -> str:
    """An index path (or any message holding Redis URLs) as messages show it: every password of a
    Redis URL, in its user part or as a ``?password=`` parameter, as ``***``.

    >>> shown_path("redis://:s3cret@db:6379/0/news"), shown_path("news.ndx")
    ('redis://:***@db:6379/0/news', 'news.ndx')
    >>> shown_path("cannot reach rediss://app:pw@db:6380/1/x?password=pw2&ssl_cert_reqs=none")
    'cannot reach rediss://app:***@db:6380/1/x?password=***&ssl_cert_reqs=none'
    """
    if "redis" not in path.lower():
        return path
    return _QUERY_SECRET.sub(r"\1***", _URL_SECRET.sub(r"\1***@", path))


def parse_redis_url(url: str) -> tuple[str, str, str]:
    """``(connection URL, index name, URL to show)`` of ``redis://[:PASSWORD@]HOST:PORT/DB/NAME``;
    the URL to show has the password masked. A malformed URL is a ``ValueError`` saying the form."""
    form = "expected redis://HOST:PORT/DB/NAME (DB a number, NAME of letters, digits, '.', '_', '-')"
    parts = urlsplit(url)
    shown_netloc = parts.netloc
    if parts.password is not None:
        shown_netloc = shown_netloc.replace(f":{parts.password}@", ":***@", 1)
    shown = urlunsplit((parts.scheme, shown_netloc, parts.path, "", ""))
    segments = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    if not parts.hostname or len(segments) != 2:
        raise ValueError(f"{shown}: {form}")
    db, name = segments
    if not db.isdigit():
        raise ValueError(f"{shown}: the database {db!r} is not a number; {form}")
    if not _NAME.match(name):
        raise ValueError(f"{shown}: the index name {name!r} is not allowed; {form}")
    connect = urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, ""))
    return connect, name, shown


def _import_redis():
    try:
        import redis
    except ImportError:
        raise NeardupError("an index in Redis needs the redis package: pip install 'neardup[redis]'") from None
    return redis


# ---------------------------------------------------------------------- Lua scripts
# KEYS of the write scripts: meta, seq, tseq, epoch, ids, docs, texts, live, tombs, op

_REMOVE_FN = """
local function remove(id)
  local s = redis.call('HGET', KEYS[5], id)
  redis.call('HDEL', KEYS[5], id)
  redis.call('HDEL', KEYS[6], s)
  redis.call('HDEL', KEYS[7], s)
  redis.call('ZREM', KEYS[8], s)
  redis.call('ZADD', KEYS[9], redis.call('INCR', KEYS[3]), s)
  return tonumber(s)
end
local done = redis.call('GET', KEYS[10])
if done then return cjson.decode(done) end
if redis.call('EXISTS', KEYS[1]) == 0 then return {-3} end
"""

_CREATE = """
if redis.call('EXISTS', KEYS[1], KEYS[5], KEYS[6], KEYS[8]) > 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('SET', KEYS[2], 0)
redis.call('SET', KEYS[3], 0)
redis.call('SET', KEYS[4], 0)
return 1
"""

# ARGV: replace (0/1), expect_seq (-1: none), has_text (0/1), n, then per document id, record[, text]
# answer: {seq0, removed seqs...} | {-1, last seq} conflict | {-2, i} id i stored already | {-3} no index
_INSERT = (
    _REMOVE_FN
    + """
local replace, expect, has_text, n = ARGV[1] == '1', tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local step = has_text and 3 or 2
local last = tonumber(redis.call('GET', KEYS[2]))
if expect >= 0 and last ~= expect then return {-1, last} end
local result = {0}
for i = 0, n - 1 do
  local id = ARGV[5 + i * step]
  if redis.call('HEXISTS', KEYS[5], id) == 1 then
    if not replace then return {-2, i} end
    result[#result + 1] = remove(id)
  end
end
local seq0 = redis.call('INCRBY', KEYS[2], n) - n + 1
for i = 0, n - 1 do
  local base, s = 5 + i * step, seq0 + i
  redis.call('HSET', KEYS[5], ARGV[base], s)
  redis.call('HSET', KEYS[6], s, ARGV[base + 1])
  if has_text then redis.call('HSET', KEYS[7], s, ARGV[base + 2]) end
  redis.call('ZADD', KEYS[8], s, s)
end
result[1] = seq0
redis.call('SET', KEYS[10], cjson.encode(result), 'EX', OP_TTL)
return result
""".replace("OP_TTL", str(_OP_TTL_S))
)

# ARGV: ids; answer: {0, removed seqs...} | {-2, i} id i is not stored | {-3} no index
_DELETE = (
    _REMOVE_FN
    + """
for i = 1, #ARGV do
  if redis.call('HEXISTS', KEYS[5], ARGV[i]) == 0 then return {-2, i - 1} end
end
local result = {0}
for i = 1, #ARGV do result[#result + 1] = remove(ARGV[i]) end
redis.call('SET', KEYS[10], cjson.encode(result), 'EX', OP_TTL)
return result
""".replace("OP_TTL", str(_OP_TTL_S))
)

_COMPACT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -3 end
redis.call('DEL', KEYS[9])
return redis.call('INCR', KEYS[4])
"""

# KEYS: live, docs; ARGV: after, batch. Answer: {seqs, records}, read at one instant.
_ROWS_AFTER = """
local seqs = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
local records = {}
for i = 1, #seqs do records[i] = redis.call('HGET', KEYS[2], seqs[i]) end
return {seqs, records}
"""

# KEYS: ids, docs, texts; ARGV: id. Answer: {} | {seq, record, text or false}
_GET = """
local s = redis.call('HGET', KEYS[1], ARGV[1])
if not s then return {} end
return {s, redis.call('HGET', KEYS[2], s), redis.call('HGET', KEYS[3], s)}
"""

# KEYS: tombs, docs. Answer: the number of tombstones whose document is stored.
_LIVE_TOMBSTONES = """
local count = 0
for _, s in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('HEXISTS', KEYS[2], s) == 1 then count = count + 1 end
end
return count
"""

# KEYS: ids, docs; ARGV: seq, id. Answer: 1 when seq is stored and ids maps id to it, or seq is gone.
_CONSISTENT = """
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 1 end
if redis.call('HGET', KEYS[1], ARGV[2]) == ARGV[1] then return 1 end
return 0
"""


class RedisStore:
    """An index in Redis: open it with :meth:`create` or :meth:`open` (``mode`` ``"r"`` or ``"a"``).

    Unlike the SQLite file, any number of processes may open it with ``mode="a"`` at once.
    """

    shared = True
    """Other processes write to the same index: the durable index catches up before it answers."""

    kind = "redis"

    def __init__(self, url: str, mode: str) -> None:
        if mode not in ("r", "a"):
            raise ValueError(f"mode must be 'r' or 'a', got {mode!r}")
        redis = _import_redis()
        self._redis_mod = redis
        connect, self.name, self.path = parse_redis_url(url)
        self.mode = mode
        prefix = f"neardup:{{{self.name}}}:"
        self._keys = {k: prefix + k for k in _KEYS}
        self._write_keys = [self._keys[k] for k in _KEYS]
        self._op_prefix = prefix + "op:"
        self._client = redis.Redis.from_url(
            connect, socket_connect_timeout=5, socket_timeout=60, health_check_interval=30
        )
        s = self._client.register_script
        self._create, self._insert, self._delete = s(_CREATE), s(_INSERT), s(_DELETE)
        self._compact, self._rows_after, self._get = s(_COMPACT), s(_ROWS_AFTER), s(_GET)
        self._live_tombstones, self._consistent = s(_LIVE_TOMBSTONES), s(_CONSISTENT)

    # ---------------------------------------------------------------- opening

    @classmethod
    def create(cls, url: str, meta: dict[str, str]) -> RedisStore:
        """A new index named by ``url`` holding ``meta`` (an existing index of that name is an error)."""
        store = cls(url, "a")
        rows = {"format": FORMAT, "format_version": str(FORMAT_VERSION), **meta}
        flat = [x for kv in sorted(rows.items()) for x in kv]
        try:
            with store._calls():
                made = store._create(keys=store._write_keys, args=flat)
            if not made:
                raise FileExistsError(f"{store.path}: an index named {store.name!r} exists there already")
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open(cls, url: str, mode: str = "r") -> RedisStore:
        """Open an existing index; ``mode="a"`` to write too (several writers may)."""
        store = cls(url, mode)
        try:
            store.meta()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()

    # ---------------------------------------------------------------- backend interface

    def meta(self) -> dict[str, str]:
        """The metadata hash (checked: an index of this format, every key present)."""
        with self._calls():
            raw = self._client.hgetall(self._keys["meta"])
        if not raw:
            raise FileNotFoundError(
                f"{self.path}: no index named {self.name!r} there (create one with `neardup index create`)"
            )
        rows = {k.decode(): v.decode() for k, v in raw.items()}
        if rows.get("format") != FORMAT:
            raise IndexCorruptError(f"{self.path}: not a neardup index (format {rows.get('format')!r})")
        missing = [k for k in _REQUIRED_META if k not in rows and k != "epoch"]
        if missing:
            raise IndexCorruptError(f"{self.path}: index metadata lacks {', '.join(missing)}")
        if int(rows["format_version"]) > FORMAT_VERSION:
            raise IndexCorruptError(
                f"{self.path}: index format version {rows['format_version']}; this neardup reads version "
                f"{FORMAT_VERSION} and older: upgrade neardup"
            )
        rows["epoch"] = str(self.epoch())
        return rows

    def version(self) -> tuple[int, int, int]:
        """``(epoch, last document seq, last tombstone seq)`` in one round trip: when it has not
        changed, nothing was written since it was last read."""
        with self._calls():
            values = self._client.mget([self._keys["epoch"], self._keys["seq"], self._keys["tseq"]])
        if any(v is None for v in values):
            raise IndexGoneError(f"{self.path}: the index named {self.name!r} is gone (deleted from Redis)")
        return tuple(int(v) for v in values)  # type: ignore[return-value]

    def epoch(self) -> int:
        return self.version()[0]

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
        """Store rows in one script and return their sequence numbers (consecutive).

        An id already stored is a ``KeyError`` (nothing stored) unless ``replace``. With
        ``expect_seq``, nothing is stored and :class:`WriteConflict` is raised when the last
        sequence number handed out is not ``expect_seq`` (another writer added documents).
        """
        self._writable()
        ids = list(ids)
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))
            raise KeyError(f"id {dup!r} appears twice in one add")
        if not ids:
            return []
        args: list[Any] = [
            "1" if replace else "0",
            -1 if expect_seq is None else expect_seq,
            "0" if texts is None else "1",
        ]
        args.append(len(ids))
        for i, (doc_id, sketch, e) in enumerate(zip(ids, sketches, empty)):
            encoded = doc_id.encode("utf-8", "surrogatepass")
            args += [encoded, _HEAD.pack(row_crc(doc_id, sketch), int(bool(e)), len(encoded)) + encoded + sketch]
            if texts is not None:
                args.append(texts[i].encode("utf-8", "surrogatepass"))
        answer = self._write(self._insert, args)
        if answer[0] == -1:
            raise WriteConflict(f"{self.path}: another writer added documents (last seq {answer[1]})")
        if answer[0] == -2:
            raise KeyError(f"id {ids[answer[1]]!r} is in the index already (--replace / replace=True overwrites)")
        return list(range(answer[0], answer[0] + len(ids)))

    def delete(self, ids: Sequence[str]) -> list[int]:
        """Remove the rows of ``ids`` in one script (an unknown id: ``KeyError``, nothing removed);
        returns their sequence numbers."""
        self._writable()
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        answer = self._write(self._delete, [i.encode("utf-8", "surrogatepass") for i in ids])
        if answer[0] == -2:
            raise KeyError(f"id {ids[answer[1]]!r} is not in the index")
        return [int(s) for s in answer[1:]]

    def rows_after(self, seq: int, *, batch: int = 8192) -> Iterator[list[StoredRow]]:
        """Stored rows with a sequence number above ``seq``, in order, in batches; checksums verified."""
        while True:
            with self._calls():
                seqs, records = self._rows_after(keys=[self._keys["live"], self._keys["docs"]], args=[seq, batch])
            if not seqs:
                return
            out = []
            for s, record in zip(seqs, records):
                s = int(s)
                if record is None:
                    raise IndexCorruptError(f"{self.path}: row {s} is listed but not stored; run `neardup index check`")
                out.append(self._row(s, record))
            yield out
            seq = out[-1].seq

    def tombstones_after(self, seq: int) -> list[tuple[int, int]]:
        """``(tombstone seq, removed doc seq)`` with a tombstone seq above ``seq``."""
        with self._calls():
            pairs = self._client.zrangebyscore(self._keys["tombs"], f"({seq}", "+inf", withscores=True)
        return [(int(t), int(doc)) for doc, t in pairs]

    def last_tombstone(self) -> int:
        return self.version()[2]

    def lookup(self, ids: Sequence[str]) -> dict[str, int]:
        """The sequence numbers of the ids that are stored."""
        ids = list(ids)
        out: dict[str, int] = {}
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            with self._calls():
                found = self._client.hmget(self._keys["ids"], [i.encode("utf-8", "surrogatepass") for i in chunk])
            out.update((i, int(s)) for i, s in zip(chunk, found) if s is not None)
        return out

    def get(self, doc_id: str) -> dict[str, Any] | None:
        """``{"id", "seq", "empty", "text"?}`` of a stored id, or None."""
        keys = [self._keys["ids"], self._keys["docs"], self._keys["texts"]]
        with self._calls():
            answer = self._get(keys=keys, args=[doc_id.encode("utf-8", "surrogatepass")])
        if not answer:
            return None
        row = self._row(int(answer[0]), answer[1])
        out: dict[str, Any] = {"id": doc_id, "seq": row.seq, "empty": row.empty}
        if answer[2] is not None:
            out["text"] = answer[2].decode("utf-8", "surrogatepass")
        return out

    def compact(self) -> None:
        """Drop the tombstones (readers reload: the epoch changes). Redis frees memory by itself."""
        self._writable()
        with self._calls():
            if self._compact(keys=self._write_keys, args=[]) == -3:
                raise IndexGoneError(f"{self.path}: the index named {self.name!r} is gone (deleted from Redis)")

    def check(self, sketch_bytes: int) -> list[str]:
        """Everything wrong with the index (empty when it is consistent): metadata, every record's
        size and checksum, the id map, the order set and the tombstones agree. Safe while others write."""
        problems: list[str] = []
        try:
            self.meta()
            with self._calls():
                pipe = self._client.pipeline(transaction=True)
                pipe.hlen(self._keys["ids"]).hlen(self._keys["docs"]).zcard(self._keys["live"])
                n_ids, n_docs, n_live = pipe.execute()
            if not n_ids == n_docs == n_live:
                problems.append(f"{n_ids} ids, {n_docs} stored sketches and {n_live} ordered rows disagree")
            cursor = 0
            while True:
                with self._calls():
                    cursor, chunk = self._client.hscan(self._keys["docs"], cursor, count=2000)
                problems += self._check_records(chunk, sketch_bytes)
                if cursor == 0 or len(problems) > 100:
                    break
            if len(problems) > 100:
                problems.append("... (stopped after 100 problems)")
            with self._calls():
                live = self._live_tombstones(keys=[self._keys["tombs"], self._keys["docs"]], args=[])
            if live:
                problems.append(f"{live} tombstone(s) point at stored documents")
        except (NeardupError, OSError) as exc:
            problems.append(f"cannot read the index: {exc}")
        return problems

    def file_bytes(self) -> int:
        """Redis's estimate of the memory the index takes (``MEMORY USAGE`` of its keys, sampled)."""
        with self._calls():
            pipe = self._client.pipeline(transaction=False)
            for key in self._keys.values():
                pipe.memory_usage(key)
            return sum(v or 0 for v in pipe.execute())

    # ---------------------------------------------------------------- internals

    def _row(self, seq: int, record: bytes) -> StoredRow:
        if len(record) < _HEAD.size:
            raise IndexCorruptError(f"{self.path}: the record of row {seq} is truncated; run `neardup index check`")
        crc, empty, n = _HEAD.unpack_from(record)
        doc_id = record[_HEAD.size : _HEAD.size + n].decode("utf-8", "surrogatepass")
        sketch = record[_HEAD.size + n :]
        if row_crc(doc_id, sketch) != crc:
            raise IndexCorruptError(
                f"{self.path}: the stored sketch of id {doc_id!r} fails its checksum; "
                "run `neardup index check` (restore the data or remove that id)"
            )
        return StoredRow(seq, doc_id, sketch, bool(empty))

    def _check_records(self, chunk: dict[bytes, bytes], sketch_bytes: int) -> list[str]:
        """The problems of a chunk of ``docs``: checksums and sizes, and the id map pointing at each
        row (one ``HMGET`` per chunk; a row that looks wrong is looked at again atomically, since
        another writer may have replaced or removed it after the scan read it)."""
        problems, rows = [], []
        for s, record in chunk.items():
            seq = int(s)
            try:
                row = self._row(seq, record)
            except (IndexCorruptError, UnicodeDecodeError, struct.error) as exc:
                problems.append(f"row {seq}: {exc}".replace(f"{self.path}: ", ""))
                continue
            if len(row.sketch) != sketch_bytes:
                size = len(row.sketch)
                problems.append(f"id {row.id!r} (row {seq}): sketch of {size} bytes, expected {sketch_bytes}")
            else:
                rows.append(row)
        if not rows:
            return problems
        encoded = [r.id.encode("utf-8", "surrogatepass") for r in rows]
        with self._calls():
            mapped = self._client.hmget(self._keys["ids"], encoded)
            for row, enc, seq in zip(rows, encoded, mapped):
                if seq is not None and int(seq) == row.seq:
                    continue
                if not self._consistent(keys=[self._keys["ids"], self._keys["docs"]], args=[row.seq, enc]):
                    problems.append(f"id {row.id!r} (row {row.seq}): the id map does not point at this row")
        return problems

    def _writable(self) -> None:
        if self.mode != "a":
            raise PermissionError(f"{self.path}: the index is open read-only (open it with mode='a' to change it)")

    def _write(self, script, args: list[Any]) -> list[int]:
        """Run a write script under a fresh operation key (a retried call answers what it did)."""
        keys = [*self._write_keys, self._op_prefix + uuid.uuid4().hex]
        with self._calls():
            answer = [int(x) for x in script(keys=keys, args=args)]
        if answer[0] == -3:
            raise IndexGoneError(f"{self.path}: the index named {self.name!r} is gone (deleted from Redis)")
        return answer

    @contextlib.contextmanager
    def _calls(self):
        """redis-py's errors as neardup's: unreachable server, refused write, wrong data."""
        errors = self._redis_mod.exceptions
        try:
            yield
        except errors.AuthenticationError as exc:
            raise IndexUnavailableError(f"{self.path}: Redis refused the credentials ({exc})") from None
        except (errors.ConnectionError, errors.TimeoutError) as exc:
            raise IndexUnavailableError(f"{self.path}: cannot reach Redis ({exc})") from None
        except errors.ResponseError as exc:
            text = str(exc)
            if text.startswith("WRONGTYPE"):
                raise IndexCorruptError(f"{self.path}: a key of the index holds other data ({text})") from None
            if text.startswith(("NOAUTH", "NOPERM", "WRONGPASS")):
                raise IndexUnavailableError(f"{self.path}: Redis refused access ({text})") from None
            if (
                isinstance(exc, getattr(errors, "OutOfMemoryError", ()))
                or text.startswith("OOM")
                or "maxmemory" in text
            ):
                raise IndexFullError(
                    f"{self.path}: Redis is at its maxmemory ({text}); nothing of it was stored"
                ) from None
            if isinstance(exc, getattr(errors, "ReadOnlyError", ())) or text.startswith("READONLY"):
                raise IndexReadOnlyError(
                    f"{self.path}: Redis refused the write ({text}); nothing of it was stored"
                ) from None
            if text.startswith(("LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN")):
                raise IndexUnavailableError(f"{self.path}: Redis cannot answer now ({text})") from None
            raise IndexWriteError(
                f"{self.path}: Redis refused the command ({text}); nothing of it was stored"
            ) from None
        except errors.RedisError as exc:
            raise IndexUnavailableError(f"{self.path}: Redis error ({exc})") from None
