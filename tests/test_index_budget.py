"""The durable index under a memory budget: arrays past it in spill files, the same answers.

An index grown under a tiny budget (``neardup.core.budget.using(Spill(...))``, which ``neardup
index add --memory`` sets) holds its signatures, fingerprints, tables, row keys and ids in
mapped spill files; every query must answer exactly as the index grown in memory, before and
after its snapshot is written and reopened, and the file must pass its check.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import neardup
from neardup.core.budget import Spill, using
from neardup.index import growth
from neardup.index.durable import DurableIndex
from neardup.methods.exact.config import ExactConfig
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.simhash.config import SimHashConfig

from conftest import run_cli as run

CONFIGS = {
    "minhash": lambda: MinHashConfig(threshold=0.6, num_perm=64),
    "simhash": lambda: SimHashConfig(weighting="count"),
    "exact": lambda: ExactConfig(),
}


def near_dup_corpus(n: int, seed: int) -> list[tuple[str, str]]:
    """(id, text): clusters of copies with a word or two changed, and exact copies."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(400)]
    docs: list[tuple[str, str]] = []
    for i in range(n):
        if i % 3 and docs:
            words = docs[int(rng.integers(len(docs)))][1].split()
            if i % 5:
                words[int(rng.integers(len(words)))] = vocab[int(rng.integers(len(vocab)))]
            text = " ".join(words)
        else:
            text = " ".join(vocab[k] for k in rng.integers(0, len(vocab), 40))
        docs.append((f"doc-{i}", text))
    return docs


def build(path, config, docs, spill=None, batch=700):
    with using(spill), DurableIndex.create(path, config) as index:
        for a in range(0, len(docs), batch):
            part = docs[a : a + batch]
            index.add([i for i, _ in part], [t for _, t in part])
        index.save_snapshot()


def answers(path, queries):
    with DurableIndex.open(path) as index:
        assert index.snapshot_status == "used"
        return [index.query(q, min_similarity=0.0 if index.config.name == "minhash" else None) for q in queries]


@pytest.mark.parametrize("method", sorted(CONFIGS))
def test_an_index_grown_past_a_tiny_budget_answers_as_one_grown_in_memory(tmp_path, method, monkeypatch):
    monkeypatch.setattr(growth, "_SLICE", 1000)  # grown arrays copied in many slices
    docs = near_dup_corpus(3000, 7)
    spill = Spill(limit=16_000, tmp_dir=tmp_path, work=4096, cap=0)
    build(tmp_path / "memory.ndx", CONFIGS[method](), docs)
    build(tmp_path / "budget.ndx", CONFIGS[method](), docs, spill)
    assert spill.spilled  # the arrays went to spill files
    queries = [t for _, t in docs[::7]] + [t + " w1 w2" for _, t in docs[::11]]
    expected = answers(tmp_path / "memory.ndx", queries)
    assert sum(map(len, expected)) > len(queries) // 2  # the queries find something
    assert answers(tmp_path / "budget.ndx", queries) == expected
    assert DurableIndex.check_file(tmp_path / "budget.ndx") == []
    assert spill.disk_now == 0  # the index let go of its arrays: every spill file is gone


def test_an_index_reopened_and_grown_under_a_budget_answers_the_same(tmp_path):
    docs = near_dup_corpus(2000, 3)
    config = CONFIGS["minhash"]()
    build(tmp_path / "memory.ndx", config, docs)
    build(tmp_path / "budget.ndx", config, docs[:900])
    with (
        using(Spill(limit=8_000, tmp_dir=tmp_path, work=4096, cap=0)),
        DurableIndex.open(tmp_path / "budget.ndx", "a") as index,
    ):
        assert index.snapshot_status == "used"  # grown from the mapped snapshot
        index.add([i for i, _ in docs[900:]], [t for _, t in docs[900:]])
        index.save_snapshot()
    queries = [t for _, t in docs[::5]]
    assert answers(tmp_path / "budget.ndx", queries) == answers(tmp_path / "memory.ndx", queries)


def test_index_add_with_a_tiny_memory_budget_stores_and_answers_the_same(tmp_path):
    docs = near_dup_corpus(2500, 11)
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    for name, extra in (("memory", []), ("budget", ["--memory", "64KB", "--tmp-dir", spill_dir])):
        ix = tmp_path / f"{name}.ndx"
        run("index", "create", ix, "--method", "minhash", "--threshold", "0.6", "--num-perm", "64")
        run("index", "add", ix, src, "--batch-size", "500", *extra)
        run("index", "check", ix)
    queries = [t for _, t in docs[::9]]
    with neardup.Index.open(tmp_path / "budget.ndx") as a, neardup.Index.open(tmp_path / "memory.ndx") as b:
        assert len(a) == len(b) == len(docs)
        assert [a.query(q) for q in queries] == [b.query(q) for q in queries]
    assert list(spill_dir.iterdir()) == []  # unnamed spill files: nothing left behind


def test_index_add_refuses_a_memory_size_that_is_not_one(tmp_path):
    ix = tmp_path / "x.ndx"
    run("index", "create", ix, "--method", "minhash")
    res = run("index", "add", ix, tmp_path / "none.jsonl", "--memory", "lots", code=2)
    assert "not a size" in res.output


@pytest.mark.parametrize("shape", [(0,), (1,), (5000,), (300, 7), (3, 2000)])
def test_a_copy_under_a_budget_is_a_copy_in_slices(tmp_path, shape, monkeypatch):
    monkeypatch.setattr(growth, "_SLICE", 256)
    src = np.random.default_rng(0).integers(0, 2**63, size=shape, dtype=np.uint64)
    with using(Spill(limit=0, tmp_dir=tmp_path, work=4096, cap=0)):
        dst = growth.zeros(shape, np.uint64)
        assert not dst.flags.owndata or dst.size == 0  # a spill file (an empty array stays in memory)
        growth.copy(dst, src)
    assert np.array_equal(dst, src)
