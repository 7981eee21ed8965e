"""The counting scans' reducers, as the Dask engine uses them on the workers: a partition's parts
are added to a reducer where they were made, the reducer is pickled, and reducers of consecutive
partitions are merged (left to right, into a fresh one). Merging must give what adding every part
to one reducer gives, and must not change the reducers it merges (a retried merge counts once)."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.documents import DocBatch
from neardup.methods.imatch.config import IMatchConfig
from neardup.methods.simhash.config import SimHashConfig
from neardup.methods.spotsigs.config import SpotSigsConfig

_WORDS = ["the", "a", "is", "of", "there", "cat", "dog", "sat", "mat", "ran", "far", "red", "sun", "old", "sea"]
"""A few antecedents and stopwords (where spot signatures start) and other words."""

_CONFIGS = {
    "imatch": IMatchConfig(),
    "simhash-idf": SimHashConfig(weighting="idf"),
    "spotsigs-idf": SpotSigsConfig(idf_band=(0.0, 0.9)),
}


def _counting_scan(config):
    """The plan's scan whose result is a table (its first)."""
    stages = config.plan().stages
    [scan] = [stage for stage in stages if getattr(stage, "table", False)]
    assert scan is stages[0]
    return scan


def _table(name: str, out: dict) -> tuple:
    """The reducer's result as plain arrays and numbers."""
    if name == "imatch":
        return out["terms"].tolist(), out["df"].tolist(), out["documents"]
    frequencies = out["frequencies"]
    if name == "simhash-idf":
        table = frequencies.table(min_df=1)
        return table.hashes.tolist(), table.df.tolist(), table.n_docs
    keys, df = frequencies.table()
    return keys.tolist(), df.tolist(), frequencies.n_docs


def _reduced(scan, config, parts):
    reducer = scan.reduce(config)
    for part in parts:
        reducer.add(part)
    return reducer


texts_strategy = st.lists(
    st.lists(st.sampled_from(_WORDS), min_size=0, max_size=30).map(" ".join), min_size=0, max_size=60
)


@settings(max_examples=60, deadline=None)
@given(
    texts=texts_strategy,
    batch=st.integers(1, 7),
    cuts=st.lists(st.integers(0, 60), max_size=12),
    fan_in=st.integers(2, 8),
)
def test_merging_reducers_of_consecutive_stretches_equals_adding_every_part(texts, batch, cuts, fan_in):
    for name, config in _CONFIGS.items():
        scan = _counting_scan(config)
        parts = [
            scan.map(config, DocBatch(s, [f"d{i}" for i in range(s, min(s + batch, len(texts)))], texts[s : s + batch]))
            for s in range(0, len(texts), batch)
        ]
        expected = _table(name, _reduced(scan, config, parts).result())
        bounds = sorted({0, len(parts), *(c % (len(parts) + 1) for c in cuts)})
        stretches = [
            pickle.loads(pickle.dumps(_reduced(scan, config, parts[a:b]))) for a, b in itertools.pairwise(bounds)
        ]
        before = [_table(name, pickle.loads(pickle.dumps(r)).result()) for r in stretches]
        level = stretches
        while len(level) > 1:  # a tree, fan_in at a time, each merge into a fresh reducer
            merged = []
            for i in range(0, len(level), fan_in):
                into = scan.reduce(config)
                for r in level[i : i + fan_in]:
                    into.merge(r)
                merged.append(pickle.loads(pickle.dumps(into)))
            level = merged
        got = level[0].result() if level else scan.reduce(config).result()
        assert _table(name, got) == expected, name
        assert [_table(name, r.result()) for r in stretches] == before, f"{name}: a merge changed its input"


def test_the_merged_table_is_not_empty_for_a_real_corpus():
    """The generated property above is not vacuous: the words give every method a table."""
    texts = ["the cat sat on the mat", "there is a red sun over the old sea", "a dog ran far"]
    for name, config in _CONFIGS.items():
        scan = _counting_scan(config)
        left = _reduced(scan, config, [scan.map(config, DocBatch(0, ["a", "b"], texts[:2]))])
        right = _reduced(scan, config, [scan.map(config, DocBatch(2, ["c"], texts[2:]))])
        into = scan.reduce(config)
        into.merge(left)
        into.merge(right)
        terms, df, documents = _table(name, into.result())
        assert documents == 3 and len(terms) > 0 and np.sum(df) >= len(terms), name


def test_the_scans_marked_table_are_the_counting_scans():
    """Every plan's scan marked ``table`` is one of the counting scans tested above; the scans of
    per-document rows are not marked."""
    from neardup.methods.exact.config import ExactConfig
    from neardup.methods.minhash.config import MinHashConfig

    configs = [
        IMatchConfig(),
        SimHashConfig(),
        SimHashConfig(weighting="idf"),
        SimHashConfig(weighting="idf", verify="edit"),
        SpotSigsConfig(),
        SpotSigsConfig(idf_band=(0.0, 0.9)),
        SpotSigsConfig(idf_band=(0.0, 0.9), verify="edit"),
        MinHashConfig(),
        MinHashConfig(verify="exact"),
        MinHashConfig(verify="edit"),
        ExactConfig(),
    ]
    tested = {type(_counting_scan(c).reduce(c)) for c in _CONFIGS.values()}
    for config in configs:
        scans = [s for s in config.plan().stages if hasattr(s, "reduce")]
        marked = [type(s.reduce(config)) for s in scans if s.table]
        assert set(marked) <= tested, config
        counts = (
            isinstance(config, IMatchConfig)
            or getattr(config, "weighting", None) == "idf"
            or getattr(config, "idf_band", None) is not None
        )
        assert len(marked) == int(counts), config


def test_a_rows_reducer_merges_after_pickling_out_of_band():
    """:class:`~neardup.core.plan.Rows` pickles its rows only (not the buffer's capacity), and a
    reducer unpickled as Dask does (protocol 5, out-of-band buffers: arrays that do not own their
    memory) still grows and merges."""
    from neardup.core.plan import Rows

    def rows(start: int, n: int) -> dict:
        return {"v": np.arange(start, start + n, dtype=np.int64)[:, None] * np.ones(2, np.int64)}

    left, right = Rows({"v": ((2,), np.int64)}), Rows({"v": ((2,), np.int64)})
    left.add(rows(0, 3))
    right.add(rows(3, 2))
    assert len(pickle.dumps(right)) < 1024 * 2 * 8, "not the 1024 rows of capacity"
    moved = []
    for reducer in (left, right):
        buffers: list = []
        data = pickle.dumps(reducer, protocol=5, buffer_callback=buffers.append)
        moved.append(pickle.loads(data, buffers=buffers))
    moved[0].add(rows(5, 2000))  # grows past what was unpickled
    into = Rows({"v": ((2,), np.int64)})
    into.merge(moved[1])
    into.merge(moved[0])
    assert into.result()["v"][:, 0].tolist() == [3, 4, *range(3), *range(5, 2005)]
