"""The durable index (neardup.Index): the in-memory contract on disk, persistence, errors, concurrency.

The tests that take ``index_path`` run on both stores: a SQLite file and an index in a real
redis-server (tests/conftest.py); tests/test_redis_index.py has what only Redis does.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import neardup
from neardup.core.errors import IncompatibleSketchError
from neardup.index import index_for
from neardup.index.durable import DurableIndex, IndexCorruptError, IndexLockedError, IndexWriteError
from neardup.methods.exact.config import ExactConfig
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.simhash.config import SimHashConfig

CONFIGS = {
    "minhash": MinHashConfig(threshold=0.6),
    "oph": MinHashConfig(threshold=0.6, sketch="oph"),
    "simhash": SimHashConfig(),
    "exact": ExactConfig(),
}


def corpus(n: int, seed: int = 0) -> list[str]:
    """Texts with near-duplicates: every third text is an edited copy of an earlier one."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(400)]
    texts: list[str] = []
    for i in range(n):
        if i % 3 == 2 and texts:
            words = texts[int(rng.integers(len(texts)))].split()
            j = int(rng.integers(len(words)))
            words[j] = vocab[int(rng.integers(len(vocab)))]
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(vocab[k] for k in rng.integers(0, len(vocab), 40)))
    return texts


@pytest.fixture(params=sorted(CONFIGS))
def config(request):
    return CONFIGS[request.param]


def test_queries_equal_the_in_memory_index_and_survive_reopening(index_path, config):
    texts = corpus(120)
    ids = [f"d{i}" for i in range(len(texts))]
    memory = index_for(config)
    s = config.sketch_texts(texts)
    memory.add(ids, s.values, empty=s.empty)
    queries = corpus(30, seed=1) + texts[:20]
    expected = [
        [] if e else m
        for m, e in zip(memory.query_batch(config.sketch_texts(queries).values), config.sketch_texts(queries).empty)
    ]
    path = index_path()
    with neardup.Index.create(path, config) as index:
        for lo in range(0, len(texts), 50):  # several transactions
            index.add(ids[lo : lo + 50], texts[lo : lo + 50])
        assert index.query_batch(queries) == expected
        assert index.threshold == memory.threshold
    with neardup.Index.open(path) as index:
        assert len(index) == len(texts) and list(index) == ids and "d5" in index and "zz" not in index
        assert index.query_batch(queries) == expected
        assert index.query(texts[3]) == expected[30 + 3]
        top = index.query(texts[3], limit=1)
        assert top == expected[30 + 3][:1] and top[0][0] == "d3"
        assert index.check() == []


def test_limit_and_min_similarity(index_path):
    config = MinHashConfig(threshold=0.5)
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma"
    variants = [base, base + " tau", base + " tau upsilon", base + " tau upsilon phi chi psi omega"]
    with neardup.Index.create(index_path(), config) as index:
        index.add(["a", "b", "c", "d"], variants)
        all_matches = index.query(base)
        sims = [s for _, s in all_matches]
        assert sims == sorted(sims, reverse=True) and all_matches[0] == ("a", 1.0)
        assert index.query(base, limit=2) == all_matches[:2]
        assert index.query(base, limit=0) == []
        assert all(s >= 0.9 for _, s in index.query(base, min_similarity=0.9))
        assert index.query(base, min_similarity=0.9) == [m for m in all_matches if m[1] >= 0.9]


def test_remove_replace_get_and_errors(index_path):
    path = index_path()
    texts = corpus(10)
    with neardup.Index.create(path, MinHashConfig(), store_text=True) as index:
        index.add([f"d{i}" for i in range(10)], texts)
        with pytest.raises(KeyError, match="d3"):
            index.add(["new", "d3"], ["x y z", "x y z"])
        assert len(index) == 10 and "new" not in index  # nothing of a refused add is stored
        with pytest.raises(KeyError, match="nope"):
            index.remove(["d1", "nope"])
        assert "d1" in index
        index.remove(["d1", "d2"])
        assert "d1" not in index and index.query(texts[1]) == []
        index.add(["d1"], [texts[1]])  # a removed id may come back
        assert index.query(texts[1])[0] == ("d1", 1.0)
        index.add(["d1"], [texts[4]], replace=True)
        assert index.get("d1") == {"id": "d1", "empty": False, "text": texts[4]}
        assert index.get("missing") is None
        with pytest.raises(TypeError):
            index.add([1], ["text"])
        with pytest.raises(ValueError, match="same length"):
            index.add(["a", "b"], ["text"])
    with neardup.Index.open(path) as index:
        assert sorted(index) == sorted(["d0", *[f"d{i}" for i in range(3, 10)], "d1"])
        assert index.query(texts[4])[:2] == [("d4", 1.0), ("d1", 1.0)] or index.query(texts[4])[0][1] == 1.0
        with pytest.raises(PermissionError, match="read-only"):
            index.add(["z"], ["z"])
        stats = index.stats()
        assert stats["documents"] == 9 and stats["method"] == "minhash" and stats["pending_tombstones"] == 3


def test_create_refuses_existing_and_open_refuses_other_settings(index_path):
    path = index_path()
    neardup.Index.create(path, MinHashConfig(threshold=0.7)).close()
    with pytest.raises(FileExistsError):
        neardup.Index.create(path, MinHashConfig())
    with pytest.raises(IncompatibleSketchError, match=r"0\.7.*0\.9|threshold"):
        neardup.Index.open(path, config=MinHashConfig(threshold=0.9))
    neardup.Index.open(path, config=MinHashConfig(threshold=0.7)).close()
    with pytest.raises(FileNotFoundError, match="no index"):
        neardup.Index.open(index_path("missing"))
    with pytest.raises(ValueError, match="mode"):
        neardup.Index.open(path, "w")


def test_one_writer_at_a_time_and_readers_refresh(tmp_path):
    path = tmp_path / "x.ndx"
    texts = corpus(20)
    writer = neardup.Index.create(path, ExactConfig())
    try:
        with pytest.raises(IndexLockedError, match="locked by another writer"):
            neardup.Index.open(path, "a")
        reader = neardup.Index.open(path)
        writer.add(["a", "b"], texts[:2])
        assert len(reader) == 0
        reader.refresh()
        assert sorted(reader) == ["a", "b"] and reader.query(texts[0]) == [("a", 1.0)]
        writer.remove(["a"])
        writer.add(["c"], texts[2:3])
        reader.refresh()
        assert sorted(reader) == ["b", "c"] and reader.query(texts[0]) == []
        writer.compact()
        writer.add(["d"], texts[3:4])
        reader.refresh()
        assert sorted(reader) == ["b", "c", "d"]
        reader.close()
    finally:
        writer.close()
    neardup.Index.open(path, "a").close()  # the lock went with the writer


def test_a_reader_in_another_process_sees_committed_adds(tmp_path):
    path = tmp_path / "x.ndx"
    texts = corpus(5)
    with neardup.Index.create(path, MinHashConfig()) as index:
        index.add(["a"], texts[:1])
        code = (
            f"import neardup; ix = neardup.Index.open({str(path)!r}); print(sorted(ix)); print(ix.query({texts[0]!r}))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.splitlines() == ["['a']", "[('a', 1.0)]"]
        code = f"import neardup; neardup.Index.open({str(path)!r}, 'a')"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode != 0 and "IndexLockedError" in proc.stderr and "locked by another writer" in proc.stderr


def test_add_if_unique_is_atomic_under_concurrency(index_path):
    base = " ".join(f"w{i}" for i in range(60))
    with neardup.Index.create(index_path(), MinHashConfig(threshold=0.8)) as index:
        index.add(["old"], ["something else entirely " * 5])
        results = []

        def worker(k: int) -> None:
            results.append(index.add_if_unique([f"t{k}"], [base + f" x{k}"]))

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        added = [r.added for r in results if r.added]
        assert len(added) == 1 and len(index) == 2  # near-identical texts: exactly one got in
        assert sum(len(r.duplicates) for r in results) == 7
        # within one call: the second copy matches the first, by id
        r = index.add_if_unique(["n1", "n2", "n3"], ["fresh words " * 10, "fresh words " * 10, base])
        assert r.added == ["n1"]
        assert r.duplicates[0][0] == "n2" and r.duplicates[0][1][0][0] == "n1"
        assert r.duplicates[1][0] == "n3" and r.duplicates[1][1][0][0] == added[0][0]
        assert sorted(index) == sorted(["old", added[0][0], "n1"])


def test_damaged_files_give_clear_errors(tmp_path):
    path = tmp_path / "x.ndx"
    with neardup.Index.create(path, MinHashConfig()) as index:
        index.add(["a", "b"], corpus(2))
    # a flipped byte in a stored sketch: check names the id, open refuses (never wrong answers)
    conn = sqlite3.connect(path)
    blob = bytearray(conn.execute("SELECT sketch FROM docs WHERE id = 'b'").fetchone()[0])
    blob[5] ^= 0xFF
    conn.execute("UPDATE docs SET sketch = ? WHERE id = 'b'", (bytes(blob),))
    conn.commit()
    conn.close()
    problems = DurableIndex.check_file(path)
    assert len(problems) == 1 and "'b'" in problems[0] and "checksum" in problems[0]
    with pytest.raises(IndexCorruptError, match=r"'b'.*checksum"):
        neardup.Index.open(path)
    # not an index at all, and a truncated file
    junk = tmp_path / "junk.ndx"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorruptError, match="not a neardup index"):
        neardup.Index.open(junk)
    assert DurableIndex.check_file(junk)
    good = tmp_path / "good.ndx"
    with neardup.Index.create(good, ExactConfig()) as index:
        index.add([f"d{i}" for i in range(300)], corpus(300))
    data = good.read_bytes()
    cut = tmp_path / "cut.ndx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexCorruptError):
        neardup.Index.open(cut)
    assert DurableIndex.check_file(cut)


def test_disk_full_is_a_clear_error_and_loses_nothing_acknowledged(tmp_path):
    path = tmp_path / "x.ndx"
    texts = corpus(400)
    acknowledged = []
    with neardup.Index.create(path, MinHashConfig()) as index:
        pages = index._store._conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = index._store._conn.execute("PRAGMA page_size").fetchone()[0]
        extra = max(1, 32768 // page_size)  # a small disk: 32 KB more than the empty index
        index._store._conn.execute(f"PRAGMA max_page_count = {pages + extra}")
        with pytest.raises(IndexWriteError, match="disk full"):
            for lo in range(0, 400, 10):
                index.add([f"d{i}" for i in range(lo, lo + 10)], texts[lo : lo + 10])
                acknowledged += [f"d{i}" for i in range(lo, lo + 10)]
        assert acknowledged and len(index) == len(acknowledged)
    with neardup.Index.open(path) as index:
        assert sorted(index) == sorted(acknowledged) and index.check() == []


WRITER = textwrap.dedent(
    """
    import sys, neardup
    from neardup.methods.exact.config import ExactConfig
    path, start = sys.argv[1], int(sys.argv[2])
    with neardup.Index.open(path, "a") as index:
        i = start
        while True:
            ids = [f"d{i + k}" for k in range(5)]
            index.add(ids, [f"text number {i + k} " * 20 for k in range(5)])
            print(" ".join(ids), flush=True)  # acknowledged: add() returned
            i += 5
    """
)


def test_kill_9_during_adds_loses_no_acknowledged_add(tmp_path, index_path):
    """Writer processes killed at random points (50 on a file, 20 on Redis): every acknowledged
    add is there, nothing half-written."""
    rng = np.random.default_rng(7)
    path = index_path()
    trials = 20 if path.startswith("redis://") else 50
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    neardup.Index.create(path, ExactConfig()).close()
    acknowledged: set[str] = set()
    start = 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for _trial in range(trials):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(path), str(start)], stdout=subprocess.PIPE, text=True, env=env
        )
        first = proc.stdout.readline()  # the writer is running and has committed once
        assert first, "the writer died before its first add"
        acknowledged.update(first.split())
        threading.Event().wait(float(rng.uniform(0, 0.03)))
        proc.kill()
        rest, _ = proc.communicate()
        for line in rest.splitlines():
            if line.endswith(tuple("0123456789")) and len(line.split()) == 5:  # a complete acknowledgement
                acknowledged.update(line.split())
        start += 100_000
    assert DurableIndex.check_file(path) == []
    with neardup.Index.open(path) as index:
        stored = set(index)
        assert acknowledged <= stored
        # nothing half-written: every stored batch is whole
        by_batch: dict[int, int] = {}
        for d in stored:
            by_batch[(int(d[1:]) // 5)] = by_batch.get(int(d[1:]) // 5, 0) + 1
        assert set(by_batch.values()) == {5}
        assert index.query("text number 5 " * 20) == [("d5", 1.0)]
    print(json.dumps({"trials": trials, "acknowledged": len(acknowledged), "stored": len(stored)}))
