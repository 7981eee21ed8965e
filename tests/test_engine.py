"""The engines and the plan vocabulary, with toy plans whose answer is known."""

from __future__ import annotations

import pickle
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from neardup.core.components import components
from neardup.core.documents import DocBatch, InMemorySource
from neardup.core.errors import InputChangedError
from neardup.core.parallel import Threads
from neardup.core.plan import GroupBy, Plan, Prepass, Rows, Scan, Step
from neardup.core.validation import ParameterError
from neardup.engine import LocalEngine, ReferenceEngine
from neardup.methods.exact.config import ExactConfig
from neardup.methods.minhash.config import MinHashConfig

# --------------------------------------------------------------------------------------------
# a toy method: documents are near-duplicates when their first words are equal


@dataclass(frozen=True)
class FirstWord:
    name: str = "first-word"
    prepass: bool = False


def first_words(config: FirstWord, batch: DocBatch) -> dict[str, np.ndarray]:
    words = [t.split()[0].lower() if t.split() else "" for t in batch.texts]
    keys = np.array([hash(w) & 0xFFFFFFFFFFFF for w in words], dtype=np.uint64)
    return {"key": keys, "empty": np.array([w == "" for w in words])}


def first_word_rows(config: FirstWord) -> Rows:
    return Rows({"key": ((), np.uint64), "empty": ((), bool)})


def by_key(config: FirstWord, key: np.ndarray, empty: np.ndarray):
    return key.reshape(-1, 1), ~empty.reshape(-1, 1)


def all_pairs(config: FirstWord, members: np.ndarray, key: np.ndarray, empty: np.ndarray):
    members = np.sort(members)
    a, b = np.triu_indices(len(members), k=1)
    return members[a], members[b], np.ones(len(a))


def locally(config: FirstWord, ctx, key: np.ndarray, empty: np.ndarray) -> dict[str, Any]:
    n = len(key)
    a, b = [], []
    first: dict[int, int] = {}
    for i in range(n):
        if empty[i]:
            continue
        j = first.setdefault(int(key[i]), i)
        if j != i:
            a.append(j)
            b.append(i)
    out = {
        "root": components(n, np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)),
        "counters": {"groups": len(set(first.values()))},
    }
    if ctx.want_pairs:
        ga, gb, _ = all_pairs(config, np.flatnonzero(~empty), key, empty)
        keep = key[ga] == key[gb]
        out["pairs"] = (ga[keep], gb[keep], np.ones(int(keep.sum())))
    return out


def same_key(config: FirstWord, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    key = state["key"]
    return np.where((key[docs] == key[others]) | (docs == others), 1.0, 0.0)


def first_word_plan(config: FirstWord) -> Plan:
    return Plan(
        config,
        (Scan("read", first_words, first_word_rows), GroupBy("group", by_key, all_pairs, locally, ("key", "empty"))),
        same_key,
        Prepass() if config.prepass else None,
    )


TEXTS = ["Alpha one", "beta two", "alpha three", "", "gamma", "Beta four", "alpha one", "ALPHA  ONE"]


@pytest.mark.parametrize("engine", [LocalEngine(1), LocalEngine(2), LocalEngine(4), ReferenceEngine()], ids=repr)
@pytest.mark.parametrize("prepass", [False, True])
def test_toy_plan_on_every_engine(engine, prepass):
    result = engine.run(
        first_word_plan(FirstWord(prepass=prepass)), InMemorySource(TEXTS, batch_size=3), want_pairs=True
    )
    assert result.root.tolist() == [0, 1, 0, 3, 4, 1, 0, 0]
    assert result.kept.tolist() == result.root.tolist()
    assert result.empty.tolist() == [False, False, False, True, False, False, False, False]
    assert result.similarity.tolist() == [1.0] * 8
    a, b, _ = result.pairs
    assert list(zip(a.tolist(), b.tolist())) == [(0, 2), (0, 6), (0, 7), (1, 5), (2, 6), (2, 7), (6, 7)]
    assert result.lengths.tolist() == [len(t) for t in TEXTS]
    assert pickle.loads(pickle.dumps(result)).root.tolist() == result.root.tolist()
    if prepass:
        # "alpha one" is "Alpha one" case-folded; "ALPHA  ONE" keeps its two spaces in the pre-pass key
        assert result.counters["exact_duplicates"] == 1


def test_keep_longest_and_callbacks():
    stages, batches = [], []

    class Progress:
        def stage(self, name):
            stages.append(name)

        def advance(self, n):
            batches.append(n)

    result = LocalEngine(2).run(
        first_word_plan(FirstWord()), InMemorySource(TEXTS, batch_size=3), keep="longest", progress=Progress()
    )
    assert result.kept.tolist() == [2, 5, 2, 3, 4, 5, 2, 2]
    assert stages == ["read", "group"]
    assert batches == [3, 3, 2]
    assert set(result.timings) == {"read", "group"}


def test_keep_and_workers_are_checked():
    plan = first_word_plan(FirstWord())
    with pytest.raises(ParameterError, match="keep must be one of 'first' or 'longest', got 'last'"):
        LocalEngine(1).run(plan, InMemorySource(TEXTS), keep="last")
    with pytest.raises(ParameterError, match="workers"):
        LocalEngine(0)
    with pytest.raises(ParameterError, match="workers"):
        LocalEngine(2.0)


def test_a_stage_reading_state_nobody_made_is_an_error():
    plan = Plan(
        FirstWord(),
        (Scan("read", first_words, first_word_rows), Step("oops", lambda config, ctx, x: {}, ("missing",))),
        same_key,
    )
    with pytest.raises(RuntimeError, match="needs missing"):
        LocalEngine(1).run(plan, InMemorySource(TEXTS))


def test_a_plan_must_end_with_roots():
    plan = Plan(FirstWord(), (Scan("read", first_words, first_word_rows),), same_key)
    with pytest.raises(RuntimeError, match="without 'root'"):
        LocalEngine(1).run(plan, InMemorySource(TEXTS))


def test_input_that_changes_between_reads_is_detected():
    reads = []

    def source():
        reads.append(1)
        texts = TEXTS if len(reads) == 1 else TEXTS[:-1]
        return InMemorySource(texts, batch_size=3)()

    config = MinHashConfig(verify="exact")  # reads its input twice
    with pytest.raises(InputChangedError, match="8 documents when first read and 7"):
        LocalEngine(1).run(config.plan(), source)


def test_every_engine_runs_on_threads_it_was_given_only():
    """With one worker nothing runs on another thread; with two, batches run on the pool."""
    seen: set[str] = set()
    lock = threading.Lock()

    def source():
        yield from InMemorySource(TEXTS * 50, batch_size=7)()

    import neardup.methods.exact.plan as exact_plan

    original = exact_plan.hash_batch

    def spy(config, batch):
        with lock:
            seen.add(threading.current_thread().name)
        return original(config, batch)

    plan = ExactConfig().plan()
    stages = (Scan(plan.stages[0].name, spy, plan.stages[0].reduce), *plan.stages[1:])
    LocalEngine(1).run(Plan(plan.config, stages, plan.similarity), source)
    assert seen == {threading.current_thread().name}
    seen.clear()
    LocalEngine(2).run(Plan(plan.config, stages, plan.similarity), source)
    assert threading.current_thread().name not in seen and 1 <= len(seen) <= 2


def test_threads():
    with Threads(1) as one:
        assert one.map(lambda x: x + 1, range(3)) == [1, 2, 3]
        assert one.submit(lambda: 5).result() == 5
        with pytest.raises(ZeroDivisionError):
            one.submit(lambda: 1 / 0).result()
    with Threads(3) as three:
        assert list(three.stream(lambda x: x * 2, iter(range(100)))) == list(range(0, 200, 2))
    with pytest.raises(ParameterError):
        Threads(0)


def test_rows_reducer_merges_in_order():
    left, right = Rows({"v": ((2,), np.int64)}), Rows({"v": ((2,), np.int64)})
    left.add({"v": np.array([[1, 1]])})
    right.add({"v": np.array([[2, 2], [3, 3]])})
    left.merge(right)
    assert left.result()["v"].tolist() == [[1, 1], [2, 2], [3, 3]]
    assert Rows({"v": ((4,), np.uint32)}).result()["v"].shape == (0, 4)
