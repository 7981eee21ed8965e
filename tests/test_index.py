"""The index contract (neardup.index.base), checked the same way for every index.

For LSHIndex (MinHash), HammingIndex (SimHash) and ExactIndex (exact keys), on generated sketches
with planted near-copies, exact copies and empty rows, against a brute-force model of each
method (band equality + estimate, Hamming distance, equal keys):

- query == brute force, as a set and in order (similarity descending, then insertion order),
  for the default and other min_similarity, with limit; query_batch == [query(q) ...];
- remove, re-add after remove (a re-added key counts as inserted anew), compaction;
- rows marked empty (and the sketches an index recognises as empty) are stored but never found;
- from_config takes the batch job's settings and the classes' defaults are the configs';
- index_for(config) + config.sketch_texts(texts) find what the batch job pairs (dedup with pairs).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import neardup
from neardup._kernels.minhash import EMPTY_VALUE
from neardup.core.validation import ParameterError, ParameterTypeError
from neardup.index import Index, index_for
from neardup.index.exact import ExactIndex
from neardup.index.hamming import HammingIndex
from neardup.index.lsh import LSHIndex
from neardup.index.runs import PARALLEL_ROWS
from neardup.methods.exact.config import ExactConfig
from neardup.methods.exact.keys import EMPTY_KEY
from neardup.methods.imatch.config import IMatchConfig
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.simhash.config import DEFAULT_BITS, DEFAULT_MAX_DISTANCE, SimHashConfig
from neardup.methods.spotsigs.config import SpotSigsConfig

K, B, R = 32, 8, 4  # LSH: 8 bands of 4 slots


# ---------------------------------------------------------------------------------------------
# one brute-force model per index kind


@dataclasses.dataclass
class Kind:
    """How to make an index of one kind, its sketches, and what it must answer."""

    name: str

    def make(self, **kwargs) -> Any:
        if self.name == "lsh":
            return LSHIndex(0.6, K, bands=B, rows=R, **kwargs)
        if self.name == "hamming64":
            return HammingIndex(64, 5, **kwargs)
        if self.name == "hamming128":
            return HammingIndex(128, 9, blocks=11, **kwargs)
        return ExactIndex(**kwargs)

    def data(self, seed: int, n: int) -> np.ndarray:
        """n sketches: random ones, near-copies of earlier ones, groups of exact copies and
        sketches the index takes as empty by themselves."""
        rng = np.random.default_rng(seed)
        if self.name == "lsh":
            rows = rng.integers(0, 4, size=(n, K), dtype=np.uint32)  # small alphabet: chance band collisions
            for i in rng.choice(n, n // 2, replace=False):
                j = rng.integers(n)
                rows[i] = rows[j]
                redraw = rng.random(K) < rng.choice([0.05, 0.2, 0.4])
                rows[i, redraw] = rng.integers(0, 4, size=int(redraw.sum()))
            rows[rng.choice(n, 3, replace=False)] = EMPTY_VALUE
            return rows
        if self.name.startswith("hamming"):
            w = 1 if self.name == "hamming64" else 2
            fps = rng.integers(0, 2**64, size=(n, w), dtype=np.uint64)
            for i in rng.choice(n, n // 2, replace=False):
                fps[i] = fps[rng.integers(n)]
                for b in rng.choice(64 * w, rng.integers(0, 12), replace=False):
                    fps[i, b // 64] ^= np.uint64(1) << np.uint64(b % 64)
            return fps[:, 0].copy() if w == 1 else fps
        keys = rng.integers(0, 2**64, size=(n // 3, 2), dtype=np.uint64)
        keys[: n // 30, 0] = keys[n // 30 : 2 * (n // 30), 0]  # equal word 0, different word 1
        out = keys[rng.integers(0, len(keys), n)]  # exact copies
        out[rng.choice(n, 3, replace=False)] = EMPTY_KEY
        return out

    def queries(self, data: np.ndarray, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        picks = data[rng.integers(0, len(data), 40)].copy()
        if self.name == "lsh":
            noise = rng.random(picks.shape) < 0.1
            picks[noise] = rng.integers(0, 4, size=int(noise.sum()))
            return np.vstack([picks, np.full((1, K), EMPTY_VALUE, np.uint32)])
        if self.name.startswith("hamming"):
            for i in range(len(picks)):
                flat = picks.reshape(len(picks), -1)
                for b in rng.choice(flat.shape[1] * 64, rng.integers(0, 4), replace=False):
                    flat[i, b // 64] ^= np.uint64(1) << np.uint64(b % 64)
            return picks
        return np.vstack([picks, EMPTY_KEY[None, :], rng.integers(0, 2**64, size=(3, 2), dtype=np.uint64)])

    def similarities(self) -> list[float | None]:
        """min_similarity values to query with (None: the threshold)."""
        if self.name == "lsh":
            return [None, 0.0, 0.75, 1.0]
        if self.name == "hamming64":
            return [None, 1 - 2 / 64, 1.0]
        if self.name == "hamming128":
            return [None, 1 - 4 / 128, 1.0]
        return [None, 0.0, 1.0]

    def threshold(self) -> float:
        return {"lsh": 0.6, "hamming64": 1 - 5 / 64, "hamming128": 1 - 9 / 128, "exact": 1.0}[self.name]

    def similarities_to(self, stored: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The similarity of every stored sketch to a query, NaN where the index never finds it."""
        n = stored.shape[0]
        if self.name == "lsh":
            equal = stored == q
            found = equal[:, : B * R].reshape(n, B, R).all(axis=2).any(axis=1) & ~(stored == EMPTY_VALUE).all(axis=1)
            found &= not (q == EMPTY_VALUE).all()
            sims = equal.sum(axis=1) / K
        elif self.name.startswith("hamming"):
            bits = 64 if self.name == "hamming64" else 128
            words = stored.reshape(n, -1)
            d = np.bitwise_count(words ^ q.reshape(1, -1)).sum(axis=1)
            found, sims = np.ones(n, dtype=bool), 1 - d / bits
        else:
            found = (stored == q).all(axis=1) & ~(stored == EMPTY_KEY).all(axis=1)
            sims = np.ones(n)
        return np.where(found, sims, np.nan)

    def brute(self, model: dict, q: np.ndarray, min_similarity: float | None, limit: int | None = None) -> list:
        """The model's answer: model is key -> (sketch, empty), in insertion order."""
        s = self.threshold() if min_similarity is None else min_similarity
        if self.name.startswith("hamming"):
            bits = 64 if self.name == "hamming64" else 128
            s = 1 - math.floor((1 - s) * bits + 1e-9) / bits
        if not model:
            return []
        keys = list(model)
        stored = np.stack([model[k][0] for k in keys])
        empty = np.array([model[k][1] for k in keys])
        sims = self.similarities_to(stored, q)
        hit = np.flatnonzero(~empty & ~np.isnan(sims) & (np.nan_to_num(sims, nan=-1.0) >= s))
        order = hit[np.lexsort((hit, -sims[hit]))]
        out = [(keys[i], float(sims[i])) for i in order.tolist()]
        return out if limit is None else out[:limit]


KINDS = [Kind("lsh"), Kind("hamming64"), Kind("hamming128"), Kind("exact")]


def check_against_model(kind: Kind, index, model: dict, queries: np.ndarray) -> int:
    """Every query, for every min_similarity and some limits, equals brute force; returns the
    number of results found (so that a test can make sure the data produces some)."""
    total = 0
    for q in queries:
        for s in kind.similarities():
            want = kind.brute(model, q, s)
            got = index.query(q, min_similarity=s)
            assert got == want, (kind.name, s)
            total += len(got)
        for limit in (0, 1, 3):
            assert index.query(q, limit=limit) == kind.brute(model, q, None, limit)
    for kwargs in ({}, {"limit": 2}, {"min_similarity": kind.similarities()[-1]}):
        assert index.query_batch(queries, **kwargs) == [index.query(q, **kwargs) for q in queries]
    assert len(index) == len(model) and list(index) == list(model)
    return total


@pytest.fixture(params=KINDS, ids=lambda k: k.name)
def kind(request) -> Kind:
    return request.param


# ---------------------------------------------------------------------------------------------
# the contract against brute force


def test_query_equals_brute_force_over_several_runs(kind):
    data = kind.data(1, 900)
    empty = np.zeros(len(data), dtype=bool)
    empty[::17] = True  # marked empty: stored, never found
    index = kind.make()
    model = {}
    for lo, hi in [(0, 1), (1, 200), (200, 230), (230, 600), (600, 900)]:  # several runs, merged as they come
        keys = [f"k{i}" for i in range(lo, hi)]
        index.add(keys, data[lo:hi], empty=empty[lo:hi])
        model.update((k, (data[i], bool(empty[i]))) for k, i in zip(keys, range(lo, hi)))
    assert isinstance(index, Index)
    assert index.threshold == kind.threshold()
    assert check_against_model(kind, index, model, kind.queries(data, 2)) > 50


def test_remove_readd_and_compaction(kind):
    data = kind.data(3, 3000)
    index = kind.make()
    index.add(range(3000), data)
    model = {i: (data[i], False) for i in range(3000)}
    rng = np.random.default_rng(3)
    gone = rng.choice(3000, 400, replace=False).tolist()
    index.remove(gone)  # 400 dead: not compacted yet
    for k in gone:
        del model[k]
    assert index._rows.n == 3000
    queries = kind.queries(data, 4)
    check_against_model(kind, index, model, queries)
    back = gone[:100]
    index.add(back, data[back])  # re-added keys count as inserted now
    model.update((k, (data[k], False)) for k in back)
    check_against_model(kind, index, model, queries)
    more = [k for k in model if k % 3 != 0][:1600]
    index.remove(more)  # more than half dead and at least 1024: compacted
    for k in more:
        del model[k]
    assert index._rows.n == len(model)
    check_against_model(kind, index, model, queries)
    index.add(["new"], data[:1])
    model["new"] = (data[0], False)
    check_against_model(kind, index, model, queries)
    everything = list(model)
    index.remove(everything)
    assert len(index) == 0 and index.query_batch(queries) == [[] for _ in queries]
    index.add(everything[:5], np.stack([model[k][0] for k in everything[:5]]))
    assert list(index) == everything[:5]


def test_empty_rows_are_stored_but_never_found(kind):
    data = kind.data(5, 60)
    index = kind.make()
    empty = np.zeros(60, dtype=bool)
    empty[30:] = True
    both = np.concatenate([data[:30], data[:30]])  # every sketch twice: once empty
    index.add(range(60), both, empty=empty)
    assert len(index) == 60 and 45 in index and list(index) == list(range(60))
    for i in range(30):
        got = index.query(both[i], min_similarity=kind.similarities()[-1])
        keys = [k for k, _ in got]
        assert (i in keys) == (not np.isnan(kind.similarities_to(both[i : i + 1], both[i])[0]))
        assert all(k < 30 for k in keys)
    index.remove([45])
    assert len(index) == 59 and 45 not in index
    with pytest.raises(ParameterTypeError, match="empty must be None or a bool array"):
        index.add([100], data[:1], empty=[1])
    with pytest.raises(ParameterError, match=r"empty must be None or a bool array of shape \(1,\)"):
        index.add([100], data[:1], empty=np.zeros(2, dtype=bool))
    assert 100 not in index


def test_random_operation_sequences(kind):
    """Interleaved add / remove / query (with compactions) agree with the model."""
    rng = np.random.default_rng(11)
    pool = kind.data(11, 2600)
    index = kind.make()
    model: dict = {}
    queries = kind.queries(pool, 12)[:8]
    for step in range(14):
        free = [k for k in range(len(pool)) if k not in model]
        keys = rng.choice(free, min(len(free), int(rng.integers(1, 700))), replace=False).tolist()
        empty = rng.random(len(keys)) < 0.05
        index.add(keys, pool[keys], empty=empty)
        model.update((k, (pool[k], bool(e))) for k, e in zip(keys, empty))
        if step % 2:
            gone = [k for k in model if rng.random() < 0.6]
            index.remove(gone)
            for k in gone:
                del model[k]
        for q in queries:
            assert index.query(q, min_similarity=kind.similarities()[1]) == kind.brute(model, q, kind.similarities()[1])
        assert len(index) == len(model)


def test_workers_give_the_same_index(kind):
    """Batches large enough for threads (sorts, then merges of runs) build the same tables with 1
    or 2 workers."""
    n = PARALLEL_ROWS + 100
    data = kind.data(13, 2 * n + 7)
    one, two = kind.make(), kind.make(workers=2)
    for lo, hi in ((0, n), (n, 2 * n), (2 * n, 2 * n + 7)):  # the second batch merges with the first
        one.add(range(lo, hi), data[lo:hi])
        two.add(range(lo, hi), data[lo:hi])
    assert two._tables.bounds.shape[0] == 3  # two runs: the merged big one, the small one
    for name in ("keys", "ids", "dirs", "runs", "bounds"):
        np.testing.assert_array_equal(getattr(one._tables, name), getattr(two._tables, name))
    queries = kind.queries(data, 14)
    assert one.query_batch(queries) == two.query_batch(queries)


def test_argument_checks(kind):
    index = kind.make()
    data = kind.data(7, 10)
    index.add(range(10), data)
    with pytest.raises(ParameterError, match="limit must be an integer >= 0, got -1"):
        index.query(data[0], limit=-1)
    with pytest.raises(ParameterTypeError, match="limit"):
        index.query_batch(data, limit=1.5)
    with pytest.raises(ParameterError, match="min_similarity must be a number in"):
        index.query(data[0], min_similarity=1.5)
    with pytest.raises(ParameterTypeError, match="min_similarity"):
        index.query_batch(data, min_similarity="0.9")
    with pytest.raises(ParameterError, match="keys must be one per"):
        index.add(["x"], data[:2])
    with pytest.raises(KeyError, match="already in the index"):
        index.add([3], data[:1])
    with pytest.raises(KeyError, match="given twice"):
        index.add(["y", "y"], data[:2])
    with pytest.raises(KeyError, match="not in the index"):
        index.remove([3, "zz"])
    assert 3 in index and len(index) == 10
    with pytest.raises(ParameterTypeError, match="workers"):
        kind.make(workers=1.0)
    with pytest.raises(ParameterError, match="workers"):
        kind.make(workers=0)
    assert index.query(data[0], limit=0) == []


def test_hamming_min_similarity_maps_to_a_distance():
    index = HammingIndex(64, 3)
    base = np.uint64(0b1011 << 20)
    fps = np.array([base ^ np.uint64((1 << d) - 1) for d in range(5)], dtype=np.uint64)  # distance d from base
    index.add(list("abcde"), fps)
    assert index.threshold == 1 - 3 / 64
    assert index.query(base) == [("a", 1.0), ("b", 1 - 1 / 64), ("c", 1 - 2 / 64), ("d", 1 - 3 / 64)]
    assert index.query(base, min_similarity=1 - 2 / 64) == [("a", 1.0), ("b", 1 - 1 / 64), ("c", 1 - 2 / 64)]
    assert index.query(base, min_similarity=0.97) == [("a", 1.0), ("b", 1 - 1 / 64)]  # floor(0.03 * 64) = 1
    assert index.query(base, min_similarity=1.0) == [("a", 1.0)]
    with pytest.raises(ParameterError, match=r"min_similarity must be >= 0.953125 for this index \(max_distance=3"):
        index.query(base, min_similarity=0.9)
    want = [("abcde"[i], "abcde"[j], 1 - (j - i) / 64) for i in range(5) for j in range(i + 1, 5) if j - i <= 3]
    assert index.pairs() == want  # d(fps[i], fps[j]) = j - i
    assert index.pairs(min_similarity=1 - 1 / 64) == [p for p in want if p[2] >= 1 - 1 / 64]
    assert index.pairs(min_similarity=1.0) == []
    for blocks in (0, 3, 65):
        with pytest.raises(ParameterError, match=r"blocks must be an integer in \[4, 64\]"):
            HammingIndex(64, 3, blocks)
    with pytest.raises(ParameterError, match="bits must be one of 64 or 128"):
        HammingIndex(96)
    with pytest.raises(ParameterTypeError, match="fingerprints must be uint64"):
        index.query(np.float64(3.0))
    with pytest.raises(ParameterError, match="use query_batch"):
        index.query(fps[:2])


def test_exact_index_verifies_the_second_word():
    keys = np.array([[5, 1], [5, 2], [5, 1], [6, 1]], dtype=np.uint64)
    index = ExactIndex()
    index.add(["a", "b", "c", "d"], keys)
    assert index.query(keys[0]) == [("a", 1.0), ("c", 1.0)]
    assert index.query(keys[1:2]) == [("b", 1.0)]
    assert index.query(np.array([6, 2], dtype=np.uint64)) == []
    index.add(["empty"], EMPTY_KEY[None, :])
    assert index.query(EMPTY_KEY) == [] and "empty" in index
    with pytest.raises(ParameterError, match=r"exact keys must be uint64\[2\] \(one key\)"):
        index.query(keys)
    with pytest.raises(ParameterTypeError, match="exact keys must be uint64"):
        index.add(["x"], keys[:1].astype(np.int64))


# ---------------------------------------------------------------------------------------------
# configs: from_config, index_for, sketch_texts


def test_defaults_are_the_batch_jobs():
    mh = MinHashConfig()
    lsh = LSHIndex()
    assert lsh.threshold == mh.threshold and lsh.num_perm == mh.num_perm and lsh.params == mh.lsh
    from_mh = LSHIndex.from_config(mh)
    assert (from_mh.threshold, from_mh.num_perm, from_mh.params, from_mh.scheme) == (
        mh.threshold,
        mh.num_perm,
        mh.lsh,
        mh.scheme,
    )
    tuned = MinHashConfig(threshold=0.7, num_perm=64, bands=8, rows=8, seed=5)
    index = LSHIndex.from_config(tuned)
    assert (index.threshold, index.num_perm, index.params.bands, index.params.rows) == (0.7, 64, 8, 8)
    assert index.scheme == tuned.scheme
    assert LSHIndex.from_config(MinHashConfig(threshold=1.0)).threshold == 1.0

    sh = SimHashConfig()
    ham = HammingIndex()
    assert (ham.bits, ham.max_distance) == (sh.bits, sh.max_distance) == (DEFAULT_BITS, DEFAULT_MAX_DISTANCE)
    assert ham.threshold == 1 - sh.max_distance / sh.bits
    from_sh = HammingIndex.from_config(SimHashConfig(bits=64, max_distance=4, blocks=6, seed=3))
    assert (from_sh.bits, from_sh.max_distance, from_sh.plan.blocks) == (64, 4, 6)
    assert from_sh.scheme == SimHashConfig(bits=64, max_distance=4, seed=3).scheme
    with pytest.raises(ParameterError, match="weighting must be 'count' for an index"):
        HammingIndex.from_config(SimHashConfig(weighting="idf"))

    ex = ExactIndex.from_config(ExactConfig(raw=True))
    assert ex.threshold == 1.0 and ex.scheme == ExactConfig(raw=True).scheme

    for config, cls in [(MinHashConfig(), LSHIndex), (SimHashConfig(), HammingIndex), (ExactConfig(), ExactIndex)]:
        index = index_for(config, workers=2)
        assert type(index) is cls and isinstance(index, Index) and index.scheme == config.scheme
    for config in (SpotSigsConfig(), IMatchConfig()):
        with pytest.raises(ParameterError, match=f"got method '{config.name}'"):
            index_for(config)
    with pytest.raises(ParameterTypeError, match="config must be a MinHashConfig"):
        LSHIndex.from_config(SimHashConfig())
    assert neardup.index_for is index_for and neardup.ExactIndex is ExactIndex


@pytest.mark.parametrize("config", [MinHashConfig(), SimHashConfig(), ExactConfig()], ids=lambda c: c.name)
def test_index_for_and_sketch_texts_find_what_the_batch_job_pairs(config, corpus, tmp_path: Path):
    """Texts sketched by ``config.sketch_texts`` into ``index_for(config)``: every text finds
    itself first, the empty texts find nothing, and the pairs the index finds are the batch job's."""
    texts = [*corpus.texts[:150], "", "  ", *corpus.texts[150:200], corpus.texts[3]]
    ids = list(range(len(texts)))
    index = index_for(config)
    s = config.sketch_texts(texts)
    assert s.empty.tolist() == [not t.strip() for t in texts]
    index.add(ids, s.values, empty=s.empty)
    found = index.query_batch(s.values)
    for i, res in enumerate(found):
        if s.empty[i]:
            assert res == []
        else:
            assert res[0][1] == 1.0 and i in [k for k, sim in res if sim == 1.0]
    assert found == [index.query(v) for v in s.values]
    pairs = {(i, k): sim for i, res in enumerate(found) for k, sim in res if i < k}
    assert len(pairs) > (20 if config.name != "exact" else 3) and (3, 202) in pairs  # 202: a copy of 3

    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    batch_config = config if config.name == "exact" else dataclasses.replace(config, exact_prepass=False)
    result = neardup.dedup([str(path)], batch_config, want_pairs=True, workers=1)
    a, b, sim = result.pairs
    batch = dict(zip(zip(a.tolist(), b.tolist()), sim.tolist()))
    assert batch.keys() == pairs.keys()
    assert all(math.isclose(batch[p], pairs[p], abs_tol=1e-12) for p in pairs)


def test_index_modules_leave_the_thread_count_to_the_caller():
    """Indexes use the ``workers`` they are given, never the machine's core count."""
    for path in Path(neardup.index.__file__).parent.glob("*.py"):
        assert "cpu_count" not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize("name", ["minhash", "simhash", "exact"])
def test_indexes_pickle_and_answer_the_same(name):
    """An index can be saved with pickle (the LSH index rebuilds its compiled query state)."""
    import pickle

    from neardup.index import index_for
    from neardup.methods.registry import get_method

    config = get_method(name)()
    texts = [
        "the cat sat on the mat today and it rained hard",
        "the cat sat on the mat today and it rained hard!",
        "another text here that is long enough to shingle",
    ]
    sketched = config.sketch_texts(texts)
    index = index_for(config)
    index.add(["a", "b", "c"], sketched.values, empty=sketched.empty)
    again = pickle.loads(pickle.dumps(index))
    assert again.query_batch(sketched.values) == index.query_batch(sketched.values)
    again.add(["d"], sketched.values[:1])
    assert [k for k, _ in again.query(sketched.values[0])] == [k for k, _ in index.query(sketched.values[0])] + ["d"]


# ---------------------------------------------------------------------------------------------
# one item or many, sketches or texts (index.base.OneOrMany)


def test_one_key_with_one_sketch_is_one_row(kind):
    """``add(key, sketch)`` stores the same row as ``add([key], sketch[None])``, for every kind and
    key type; a list of one key works too; a str key is never iterated as keys."""
    data = kind.data(7, 40)
    one, many = kind.make(), kind.make()
    many.add([f"k{i}" for i in range(len(data))], data)
    for i, row in enumerate(data):
        one.add(f"k{i}" if i % 3 else [f"k{i}"], row)
    assert list(one) == list(many)
    for q in kind.queries(data, 8):
        assert one.query(q) == many.query(q)
    tuple_key = kind.make()
    tuple_key.add(("site", 1), data[0])  # one sketch: the tuple is the key
    assert list(tuple_key) == [("site", 1)]
    with pytest.raises(ParameterError, match=r"one key \(str\) for 40 sketches"):
        kind.make().add("rain", data)
    with pytest.raises(ParameterError, match="one sketch or text was given for 2 keys"):
        kind.make().add(["a", "b"], data[0])


TEXTS = [
    "the cat sat on the mat and looked out of the window at the rain",
    "the cat sat on the mat and looked out of the window at the rain!",
    "a completely different sentence about something else entirely here",
    "",
]


@pytest.mark.parametrize("config", [MinHashConfig(), SimHashConfig(), ExactConfig()], ids=lambda c: c.name)
def test_an_index_made_from_a_config_takes_texts(config):
    """Texts, one or many, are sketched with the index's config: the same rows and answers as
    ``config.sketch_texts`` and sketches; an empty text is stored and finds nothing."""
    by_text, by_sketch = index_for(config), index_for(config)
    assert by_text.config is config
    by_text.add("a", TEXTS[0])
    by_text.add(["b", "c", "d"], TEXTS[1:])
    s = config.sketch_texts(TEXTS)
    by_sketch.add(["a", "b", "c", "d"], s.values, empty=s.empty)
    assert list(by_text) == ["a", "b", "c", "d"]
    for i, text in enumerate(TEXTS):
        want = [] if s.empty[i] else by_sketch.query(s.values[i])
        assert by_text.query(text) == want
        assert by_text.query(text, limit=1) == want[:1]
    assert by_text.query("") == [] and by_text.query_batch(TEXTS) == [by_text.query(t) for t in TEXTS]
    assert by_text.query(TEXTS[2])[0][0] == "c"


def test_texts_need_an_index_that_knows_its_config(kind):
    """An index made from settings (no config) refuses texts with a message naming the way out."""
    index = kind.make()
    for call in (
        lambda: index.add("a", "some text"),
        lambda: index.query("some text"),
        lambda: index.query_batch(["x y"]),
    ):
        with pytest.raises(ValueError, match=r"was not made from a method config.*index_for"):
            call()
    assert index.config is None and len(index) == 0
