"""Lookup snapshots of the durable index (PATH.lookup): used on open, never a wrong answer when
stale or damaged, safe against kill -9; the sorted key prefix of RowKeys; sketching on threads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_durable_index import corpus  # the same texts with near-duplicates

import neardup
from neardup.index import durable, snapshot
from neardup.index.keys import RowKeys
from neardup.index.store import SQLiteStore
from neardup.methods.exact.config import ExactConfig
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.simhash.config import SimHashConfig

CONFIGS = {
    "minhash": MinHashConfig(threshold=0.6, num_perm=64),
    "simhash": SimHashConfig(),
    "exact": ExactConfig(),
}


def answers(index, queries):
    return len(index), list(index), index.query_batch(queries)


def rebuilt(path, queries):
    """The answers of a reader that rebuilds the lookup from SQLite (the snapshot moved aside)."""
    lookup = snapshot.snapshot_path(str(path))
    aside = lookup + ".aside"
    moved = os.path.exists(lookup)
    if moved:
        os.replace(lookup, aside)
    try:
        with neardup.Index.open(path) as index:
            assert not index.snapshot_status.startswith("used")
            return answers(index, queries)
    finally:
        if moved:
            os.replace(aside, lookup)


class CountingRows:
    """Counts the rows SQLiteStore reads for the lookup (columns_after)."""

    def __init__(self, monkeypatch):
        self.rows = 0
        monkeypatch.setattr(SQLiteStore, "columns_after", self._counted(SQLiteStore.columns_after))

    def _counted(self, original):
        def counted(store, *args, **kw):
            for batch in original(store, *args, **kw):
                self.rows += len(batch.seqs)
                yield batch

        return counted


# ---------------------------------------------------------------------- RowKeys


def test_row_keys_sorted_prefix_behaves_like_a_dict():
    """Random adds (mostly ascending ints, some out of order, a few strings), removes and
    compactions: len, in, iteration order, rows and keys agree with a plain model."""
    for seed in range(30):
        rng = np.random.default_rng(seed)
        rk = RowKeys()
        model: dict = {}  # key -> row, insertion order
        next_key = int(rng.integers(-5, 5))
        use_strings = seed % 5 == 4
        for _ in range(200):
            op = rng.random()
            if op < 0.55:
                keys = []
                for _ in range(int(rng.integers(1, 6))):
                    if rng.random() < 0.15:
                        k = int(rng.integers(-50, next_key + 1))  # out of order, maybe a removed key again
                    else:
                        next_key += int(rng.integers(1, 4))
                        k = next_key
                    if use_strings and rng.random() < 0.05:
                        k = f"s{k}"
                    if k not in model and k not in keys:
                        keys.append(k)
                if not keys:
                    continue
                rk.check_new(keys)
                first = rk.append(keys)
                for j, k in enumerate(keys):
                    model[k] = first + j
            elif op < 0.9 and model:
                keys = list({list(model)[int(i)] for i in rng.integers(0, len(model), int(rng.integers(1, 4)))})
                rows = rk.remove(keys)
                assert rows == [model.pop(k) for k in keys]
            else:
                keep, remap = rk.compact()
                model = {k: int(remap[r]) for k, r in model.items()}
            assert len(rk) == len(model)
            assert list(rk) == list(model)
            for k, r in list(model.items())[:20]:
                assert k in rk and rk.row(k) == r and rk.key(r) == k
            for k in (next_key + 1, -1000, "nope", 2**70):
                assert (k in rk) == (k in model)
            with pytest.raises(KeyError):
                rk.check_new([next(iter(model))] if model else [1, 1])
        if not use_strings:
            assert rk.keys is None  # ints only: no list of keys
            assert len(rk.ids) <= len(model)


def test_row_keys_of_ascending_ints_need_no_dict():
    rk = RowKeys()
    for lo in range(0, 10_000, 1000):
        rk.append(list(range(lo, lo + 1000)))
    rk.remove([5, 7, 9999])
    assert rk.ids == {} and rk.base == 10_000 and len(rk) == 9997
    assert 5 not in rk and 6 in rk and rk.row(6) == 6
    rk.append([-1])  # out of order: the dict
    rk.remove([-1])
    rk.append([20_000, 20_001])  # in order again after a removed row: the prefix grows over it
    assert rk.ids == {} and rk.row(20_001) == 10_002 and -1 not in rk


def test_id_table_matches_a_dict(monkeypatch):
    """seq -> id through the arrays, the recent dict, folding, extend and live(): the same as a dict,
    for ids with non-ASCII characters and lone surrogates too."""
    from neardup.index import idtable

    monkeypatch.setattr(idtable, "_FOLD_MIN", 50)
    rng = np.random.default_rng(1)
    table, model = idtable.IdTable(), {}
    seq = 0
    for step in range(60):
        n = int(rng.integers(1, 120))
        seqs = [seq + int(g) for g in np.cumsum(rng.integers(1, 4, n))]
        seq = seqs[-1]
        ids = [f"d{s}-é" + ("\ud800" if s % 7 == 0 else "") for s in seqs]
        if step % 3 == 0:
            table.extend(seqs, [i.encode("utf-8", "surrogatepass") for i in ids])
        else:
            table.add(seqs, ids)
        model.update(zip(seqs, ids))
        gone = rng.choice(list(model), min(len(model), 10), replace=False).tolist()
        table.discard(gone)
        for g in gone:
            del model[g]
        if step % 10 == 9:
            table = table.live(np.array(sorted(model), dtype=np.int64))
        keys = list(model)
        assert table.many(keys) == [model[k] for k in keys]
        assert table.many(keys[:5]) == [model[k] for k in keys[:5]]  # (the short way: one search per id)
        assert all(table[k] == model[k] for k in keys[:50])
    with pytest.raises(KeyError):
        table[seq + 1]


# ---------------------------------------------------------------------- snapshots used


def test_open_maps_the_snapshot_and_reads_only_the_rows_after_it(tmp_path, monkeypatch):
    config = CONFIGS["minhash"]
    texts = corpus(400)
    queries = corpus(40, seed=1) + texts[:40]
    path = tmp_path / "x.ndx"
    with neardup.Index.create(path, config) as index:
        index.add([f"d{i}" for i in range(300)], texts[:300])
        index.remove(["d4", "d8"])
        assert index.save_snapshot() > 0
        index.add([f"d{i}" for i in range(300, 307)], texts[300:307])
        index.remove(["d10", "d301"])
        expected = answers(index, queries)
    counter = CountingRows(monkeypatch)
    with neardup.Index.open(path) as index:
        assert index.snapshot_status == "used"
        assert counter.rows == 6  # the rows committed after the snapshot (one since removed), not the 300 before
        assert answers(index, queries) == expected
        assert "d10" not in index and "d301" not in index and "d306" in index and "d4" not in index
        assert index.check() == []
        stats = index.stats()["snapshot"]
        assert stats["status"] == "used" and stats["bytes"] == os.path.getsize(str(path) + ".lookup")
    assert rebuilt(path, queries) == expected


def test_close_writes_the_snapshot_after_enough_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(durable, "SNAPSHOT_MIN_CHANGES", 50)
    texts = corpus(120)
    path = tmp_path / "x.ndx"
    lookup = str(path) + ".lookup"
    with neardup.Index.create(path, CONFIGS["exact"]) as index:
        index.add([f"d{i}" for i in range(40)], texts[:40])
    assert not os.path.exists(lookup)  # 40 changes: not due
    with neardup.Index.open(path, "a") as index:
        index.add([f"d{i}" for i in range(40, 100)], texts[40:100])
    assert os.path.exists(lookup)
    with neardup.Index.open(path) as index:
        assert index.snapshot_status == "used" and len(index) == 100


@pytest.mark.parametrize("method", sorted(CONFIGS))
def test_random_histories_answer_as_a_rebuild_does(tmp_path, method):
    """Random add / remove / replace / snapshot / compact / reopen sequences, with a reader that
    refreshes: after each step the writer, the reader and a fresh open (snapshot used, stale or
    absent) give the answers of a lookup rebuilt from SQLite."""
    config = CONFIGS[method]
    texts = corpus(600)
    queries = corpus(30, seed=1) + texts[::20]
    for seed in range(5):
        rng = np.random.default_rng(seed)
        path = tmp_path / f"{seed}.ndx"
        writer = neardup.Index.create(path, config)
        reader = neardup.Index.open(path)
        live: list[str] = []
        counter = 0
        try:
            for _step in range(16):
                op = rng.choice(["add", "add", "remove", "replace", "snapshot", "compact", "reopen"])
                if op == "add":
                    n = int(rng.integers(1, 60))
                    ids = [f"d{counter + j}" for j in range(n)]
                    writer.add(ids, [texts[int(rng.integers(len(texts)))] for _ in ids])
                    live += ids
                    counter += n
                elif op == "remove" and live:
                    gone = sorted(set(rng.choice(live, int(rng.integers(1, min(20, len(live)) + 1))).tolist()))
                    writer.remove(gone)
                    live = [d for d in live if d not in set(gone)]
                elif op == "replace" and live:
                    ids = sorted(set(rng.choice(live, 3).tolist()))
                    writer.add(ids, [texts[int(rng.integers(len(texts)))] for _ in ids], replace=True)
                    live = [d for d in live if d not in set(ids)] + ids
                elif op == "snapshot":
                    writer.save_snapshot()
                elif op == "compact":
                    writer.compact()
                elif op == "reopen":
                    writer.close()
                    writer = neardup.Index.open(path, "a")
                expected = rebuilt(path, queries)
                assert expected[1] == live
                assert answers(writer, queries) == expected
                reader.refresh()
                assert answers(reader, queries) == expected
                with neardup.Index.open(path) as fresh:
                    assert answers(fresh, queries) == expected
        finally:
            writer.close()
            reader.close()
        assert neardup.Index.check_file(path) == []


# ---------------------------------------------------------------------- damaged and stale snapshots


def _index_with_snapshot(path, config, texts):
    with neardup.Index.create(path, config) as index:
        index.add([f"d{i}" for i in range(len(texts))], texts)
        index.remove(["d3"])
        index.save_snapshot()


def _damage_cases(path, other):
    """(name, how to damage PATH.lookup) pairs."""
    lookup = str(path) + ".lookup"
    size = os.path.getsize(lookup)

    def flip(offset):
        def go():
            with open(lookup, "r+b") as f:
                f.seek(offset)
                b = f.read(1)
                f.seek(offset)
                f.write(bytes([b[0] ^ 0x5A]))

        return go

    def truncate(n):
        def go():
            os.truncate(lookup, n)

        return go

    def header_at():
        with open(lookup, "rb") as f:
            return int.from_bytes(f.read(16)[8:16], "little")

    def replace_with(data):
        def go():
            with open(lookup, "wb") as f:
                f.write(data)

        return go

    def from_other_index():
        shutil.copy(str(other) + ".lookup", lookup)

    return [
        ("empty file", replace_with(b"")),
        ("garbage", replace_with(os.urandom(10_000))),
        ("bad magic", flip(0)),
        ("cut in half", truncate(size // 2)),
        ("last byte cut", truncate(size - 1)),
        ("header byte flipped", flip(header_at() + 5)),
        ("pickle byte flipped", flip(header_at() - 3)),
        ("header offset flipped", flip(9)),
        ("snapshot of another index", from_other_index),
    ]


@pytest.mark.parametrize("method", ["minhash", "simhash"])
def test_a_damaged_or_foreign_snapshot_is_ignored_and_rebuilt(tmp_path, method, monkeypatch):
    config = CONFIGS[method]
    texts = corpus(200)
    queries = corpus(30, seed=1) + texts[:30]
    other = tmp_path / "other.ndx"
    _index_with_snapshot(other, config, corpus(150, seed=5))
    path = tmp_path / "x.ndx"
    _index_with_snapshot(path, config, texts)
    pristine = Path(str(path) + ".lookup").read_bytes()
    expected = rebuilt(path, queries)
    with neardup.Index.open(path) as index:
        assert index.snapshot_status == "used" and answers(index, queries) == expected
    monkeypatch.setattr(durable, "SNAPSHOT_MIN_CHANGES", 1)
    for name, damage in _damage_cases(path, other):
        with open(str(path) + ".lookup", "wb") as f:
            f.write(pristine)
        damage()
        with neardup.Index.open(path) as index:
            assert index.snapshot_status.startswith("ignored"), name
            assert answers(index, queries) == expected, name
        with neardup.Index.open(path, "a") as index:  # a writer rebuilds, and rewrites it on close
            assert answers(index, queries) == expected, name
        with neardup.Index.open(path) as index:
            assert index.snapshot_status == "used", name
            assert answers(index, queries) == expected, name


def test_a_damaged_array_is_found_by_check(tmp_path):
    path = tmp_path / "x.ndx"
    _index_with_snapshot(path, CONFIGS["minhash"], corpus(200))
    assert neardup.Index.check_file(path) == []
    with open(str(path) + ".lookup", "r+b") as f:
        f.seek(4096 + 10)  # inside the first array
        f.write(b"\xff\xfe")
    problems = neardup.Index.check_file(path)
    assert len(problems) == 1 and "fails its checksum" in problems[0] and ".lookup" in problems[0]


def test_a_stale_snapshot_of_another_epoch_or_ahead_of_the_file_is_ignored(tmp_path):
    config = CONFIGS["minhash"]
    texts = corpus(200)
    queries = corpus(30, seed=1) + texts[:30]
    path = tmp_path / "x.ndx"
    lookup = str(path) + ".lookup"
    _index_with_snapshot(path, config, texts[:100])
    old_file = tmp_path / "old.ndx"
    with neardup.Index.open(path, "a") as index:
        index.compact()  # checkpoints the WAL: the main file is the whole index
    shutil.copy(path, old_file)  # the index as it was (a backup)
    old_snapshot = Path(lookup).read_bytes()
    with neardup.Index.open(path, "a") as index:
        index.add([f"n{i}" for i in range(100)], texts[100:])
        index.save_snapshot()
        index.remove(["d5"])
        index.compact()  # another epoch
    with open(lookup, "wb") as f:
        f.write(old_snapshot)  # a snapshot of the previous epoch
    expected = rebuilt(path, queries)
    with neardup.Index.open(path) as index:
        assert index.snapshot_status.startswith("ignored") and "epoch" in index.snapshot_status
        assert answers(index, queries) == expected
    # the newer snapshot beside the restored older file: ahead of it
    with neardup.Index.open(path, "a") as index:
        index.save_snapshot()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(path) + suffix):
            os.unlink(str(path) + suffix)
    shutil.copy(old_file, path)
    expected_old = rebuilt(path, queries)
    assert expected_old[0] == 99
    with neardup.Index.open(path) as index:
        assert index.snapshot_status.startswith("ignored"), index.snapshot_status
        assert answers(index, queries) == expected_old


def test_a_planted_snapshot_cannot_run_code(tmp_path):
    path = tmp_path / "x.ndx"
    _index_with_snapshot(path, CONFIGS["exact"], corpus(50))
    marker = tmp_path / "ran"
    with neardup.Index.open(path) as index:
        covered = snapshot.Covered(index._uid, index._epoch, 1, 0)
    snapshot.write(str(path) + ".lookup", {"method": "exact", "memory": _Evil(str(marker))}, covered)
    with neardup.Index.open(path) as index:
        assert index.snapshot_status.startswith("ignored") and "posix.system" in index.snapshot_status
        assert len(index) == 49
    assert not marker.exists()


class _Evil:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


# ---------------------------------------------------------------------- kill -9 while writing


WRITER = textwrap.dedent(
    """
    import sys, time
    import neardup
    from neardup.index import snapshot

    path, name, point, stop_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    step = {"i": 0}
    write_sparse = snapshot._write_sparse

    def stop(where):
        if where == point and step["i"] == stop_at:
            print("at", where, flush=True)  # the test kills the process now
            time.sleep(600)

    def stopping_write_sparse(*args):
        write_sparse(*args)
        stop("writing")  # the first array is in the temporary file, the rest is not

    snapshot._write_sparse = stopping_write_sparse
    with neardup.Index.open(path, "a") as index:
        print("ready", flush=True)
        for i in range(stop_at + 1):
            step["i"] = i
            index.add([f"k{name}-{i}"], [f"text number {i} of writer {name} " * 20])
            stop("added")
            index.save_snapshot()
            print(f"saved k{name}-{i}", flush=True)
            stop("saved")
    print("missed", point, flush=True)
    sys.exit(3)
    """
)
POINTS = ("writing", "added", "saved")  # in the snapshot's temporary file; added, no snapshot; saved


@pytest.mark.slow
def test_kill_9_while_writing_the_snapshot_leaves_a_usable_index(tmp_path):
    """Writers killed at points of their loop of add and snapshot (each writer waits at its point
    until killed, so every point is reached): with the snapshot's temporary file half written,
    after an add not yet in the snapshot, after a saved snapshot. Every open after that answers as
    a rebuild does, `check` passes, and stray temporary files go away."""
    rng = np.random.default_rng(3)
    config = MinHashConfig(threshold=0.6)
    texts = corpus(20_000)
    queries = corpus(20, seed=1) + texts[:20]
    path = tmp_path / "x.ndx"
    _index_with_snapshot(path, config, texts)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    acknowledged: set[str] = set()
    for trial in range(12):
        point = POINTS[trial % 3]
        args = [sys.executable, str(script), str(path), str(trial), point, str(int(rng.integers(0, 3)))]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline().strip() == "ready"
        for line in proc.stdout:
            if line.startswith("saved "):
                acknowledged.add(line.split()[1])
            else:
                assert line.strip() == f"at {point}", line
                break
        proc.kill()
        proc.communicate()
        stray = [f for f in os.listdir(tmp_path) if f.endswith(f".lookup.tmp-{proc.pid}")]
        assert bool(stray) == (point == "writing"), (point, stray)  # killed with its temporary file half written
        expected = rebuilt(path, queries)
        with neardup.Index.open(path) as index:
            assert answers(index, queries) == expected
            assert acknowledged <= set(index)
        assert neardup.Index.check_file(path) == []
    with neardup.Index.open(path, "a") as index:
        index.save_snapshot()
    assert not [f for f in os.listdir(tmp_path) if ".lookup.tmp-" in f]


# ---------------------------------------------------------------------- sketching on threads


@pytest.mark.parametrize("method", sorted(CONFIGS))
def test_two_workers_sketch_and_store_what_one_does(tmp_path, method):
    config = CONFIGS[method]
    texts = corpus(9000)
    ids = [f"d{i}" for i in range(len(texts))]
    queries = texts[::300]
    other = corpus(4500, seed=9)
    found = []
    for workers in (1, 2):
        path = tmp_path / f"{workers}.ndx"
        with neardup.Index.create(path, config, workers=workers, store_text=True) as index:
            values, empty = index._sketch(texts)
            s = config.sketch_texts(texts)
            assert np.array_equal(values, s.values) and np.array_equal(empty, np.asarray(s.empty, dtype=bool))
            index.add(ids, texts)  # with two workers: sketched while stored (one transaction)
            with pytest.raises(KeyError, match="d4499"):
                index.add([f"n{i}" for i in range(4499)] + ["d4499"], other)
            assert len(index) == len(texts) and "n0" not in index
            index.add(ids[:4500], other, replace=True)
            assert index.get("d7")["text"] == other[7] and len(index) == len(texts)
            found.append((list(index), index.query_batch(queries + other[:50])))
        with neardup.Index.open(path) as index:
            assert (list(index), index.query_batch(queries + other[:50])) == found[-1]
        assert neardup.Index.check_file(path) == []
    assert found[0] == found[1]


# ---------------------------------------------------------------------- memory and the command line


OPEN_MEMORY = textwrap.dedent(
    """
    import json, sys
    import neardup

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    neardup.Index.open(sys.argv[1]).query("warm up the kernels " * 5)  # imports and kernels first
    before = rss()
    index = neardup.Index.open(sys.argv[2])
    grown = rss() - before
    found = index.query(sys.argv[3])
    print(json.dumps({"grown": grown, "status": index.snapshot_status, "found": found}))
    """
)


def test_open_with_a_snapshot_maps_it_instead_of_reading_it(tmp_path):
    """In a process that has its kernels loaded, opening an index through its snapshot adds a
    small fraction of the snapshot's size to the RSS; rebuilding adds more than the signatures."""
    config = MinHashConfig(threshold=0.8)  # K=128: 512 bytes of signature per document
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(5000)])
    texts = [" ".join(vocab[rng.integers(0, 5000, 25)]) for _ in range(60_000)]
    small, big = tmp_path / "small.ndx", tmp_path / "big.ndx"
    with neardup.Index.create(small, config) as index:
        index.add(["a"], [texts[0]])
    with neardup.Index.create(big, config) as index:
        for lo in range(0, len(texts), 20_000):
            index.add([f"d{i}" for i in range(lo, lo + 20_000)], texts[lo : lo + 20_000])
        index.save_snapshot()
    script = tmp_path / "open.py"
    script.write_text(OPEN_MEMORY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    signatures = 60_000 * 512
    snapshot_bytes = os.path.getsize(str(big) + ".lookup")

    def measure():
        out = subprocess.run(
            [sys.executable, str(script), str(small), str(big), texts[123]],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return json.loads(out.stdout)

    mapped = measure()
    assert mapped["status"] == "used" and mapped["found"][0] == ["d123", 1.0]
    assert mapped["grown"] < snapshot_bytes / 10, (mapped, snapshot_bytes)
    os.replace(str(big) + ".lookup", str(big) + ".aside")
    rebuilt_ = measure()
    assert rebuilt_["status"].startswith("ignored") and rebuilt_["found"] == mapped["found"]
    assert rebuilt_["grown"] > signatures, (rebuilt_, signatures)
    print(
        {"snapshot_bytes": snapshot_bytes, "open_grew_mapped": mapped["grown"], "open_grew_rebuilt": rebuilt_["grown"]}
    )


def test_cli_compact_writes_the_snapshot_and_check_verifies_it(tmp_path):
    from click.testing import CliRunner

    from neardup.cli.main import main

    def run(*args, code=0):
        res = CliRunner().invoke(main, [str(a) for a in args])
        assert res.exit_code == code, res.output
        return res

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(corpus(300))))
    ix = tmp_path / "x.ndx"
    lookup = Path(str(ix) + ".lookup")
    run("index", "create", ix, "--method", "minhash", "--threshold", "0.7")
    run("index", "add", ix, docs)
    assert not lookup.exists()  # 300 changes: a snapshot is not due
    run("index", "compact", ix)
    assert lookup.exists()
    stats = json.loads(run("index", "stats", ix).output)
    assert stats["snapshot"]["status"] == "used" and stats["snapshot"]["bytes"] == lookup.stat().st_size
    assert json.loads(run("index", "check", ix).output)["ok"] is True
    found = run("index", "query", ix, "--text", corpus(300)[7]).output
    data = bytearray(lookup.read_bytes())
    data[4096 + 100] ^= 0xFF  # inside the signatures
    lookup.write_bytes(bytes(data))
    out = run("index", "check", ix, code=1).output
    assert ".lookup" in out and "fails its checksum" in out
    lookup.write_bytes(b"not a snapshot" * 10)
    out = run("index", "check", ix, code=1).output
    assert "not a lookup snapshot" in out
    assert run("index", "query", ix, "--text", corpus(300)[7]).output == found  # ignored: rebuilt
    run("index", "compact", ix)
    assert json.loads(run("index", "check", ix).output)["ok"] is True


def test_an_array_referenced_twice_is_stored_once_and_loads_as_one(tmp_path):
    """HammingIndex keeps its tables both in SortedRuns and in a tuple of kernel arguments."""
    path = tmp_path / "x.ndx"
    _index_with_snapshot(path, CONFIGS["simhash"], corpus(3000))
    payload, _ = snapshot.load(str(path) + ".lookup")
    memory = payload["memory"]
    assert memory._kernel_args[0] is memory._tables.keys and memory._kernel_args[1] is memory._tables.ids
    assert memory._kernel_args[-2] is memory._fps  # (before: a second copy of each, 1.9x the file)
