"""neardup.dedup on data held in memory: texts, pandas, pyarrow, Hugging Face datasets."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

import neardup
from neardup.core.errors import InputError

BASE = "the quick brown fox jumps over the lazy dog near the river bank on a sunny day in june"
TEXTS = [
    BASE,
    "completely different words about databases indexes and query planners in sql engines",
    BASE + " again",
    BASE,
    "another unrelated sentence on gardening tomatoes peppers and compost heaps in spring",
]


def _expected(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    return neardup.dedup([str(path)], want_pairs=True)


def test_list_of_texts_matches_the_same_file(tmp_path):
    ref = _expected(tmp_path)
    res = neardup.dedup(TEXTS, want_pairs=True)
    assert res.keep_mask.tolist() == ref.keep_mask.tolist()
    assert res.n_removed == ref.n_removed >= 1
    assert res.ids == [str(i) for i in range(len(TEXTS))]
    assert not res.keep_mask[3]  # exact copy of document 0


def test_result_tables(tmp_path):
    res = neardup.dedup(TEXTS, want_pairs=True)
    t = res.to_arrow()
    assert t.column_names == ["id", "cluster", "cluster_size", "similarity", "kept"]
    assert t.num_rows == len(TEXTS)
    assert t.column("kept").to_pylist() == res.keep_mask.tolist()
    root = res.root
    sizes = t.column("cluster_size").to_pylist()
    for i in range(len(TEXTS)):  # brute force: size = members sharing the root
        assert sizes[i] == int(np.sum(root == root[i]))
    assert sizes[0] >= 2 and sizes[1] == 1
    df = res.to_pandas()
    assert list(df.columns) == t.column_names and len(df) == len(TEXTS)
    pairs = res.pairs_table()
    assert pairs.column_names == ["a", "b", "similarity", "id_a", "id_b"]
    assert (0, 3) in set(zip(pairs.column("a").to_pylist(), pairs.column("b").to_pylist()))
    assert neardup.dedup(TEXTS).pairs_table() is None


@pytest.mark.parametrize("kind", ["arrow", "reader", "pandas", "datasets"])
def test_tabular_inputs_with_fields(kind):
    table = pa.table({"body": TEXTS, "key": [f"k{i}" for i in range(len(TEXTS))]})
    if kind == "arrow":
        data = table
    elif kind == "reader":
        data = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))
    elif kind == "pandas":
        data = table.to_pandas()
    else:
        datasets = pytest.importorskip("datasets")
        data = datasets.Dataset.from_dict({"body": TEXTS, "key": [f"k{i}" for i in range(len(TEXTS))]})
    res = neardup.dedup(data, text_field="body", id_field="key")
    assert res.ids == [f"k{i}" for i in range(len(TEXTS))]
    assert res.keep_mask.tolist() == neardup.dedup(TEXTS).keep_mask.tolist()


def test_datasets_round_trip_filter():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": TEXTS})
    res = neardup.dedup(ds)
    kept = ds.filter(lambda _row, i: bool(res.keep_mask[i]), with_indices=True)
    assert len(kept) == len(TEXTS) - res.n_removed
    # a filtered Dataset is read through its index mapping, not its whole backing table
    again = neardup.dedup(kept)
    assert again.n_removed == 0 and again.n_documents == len(kept)


def test_clear_errors(tmp_path):
    with pytest.raises(InputError, match="'body' not found"):
        neardup.dedup(pa.table({"text": ["a"]}), text_field="body")
    with pytest.raises(InputError, match="null in row 1"):
        neardup.dedup(pa.table({"text": ["a", None]}))
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "x"}\n')
    with pytest.raises(InputError, match="mixes a path"):
        neardup.dedup([str(p), "a text with spaces"])
    with pytest.raises(InputError, match=r"typo\.jsonl"):  # a missing path stays a path, named
        neardup.dedup([str(p), str(tmp_path / "typo.jsonl")])
    with pytest.raises(TypeError, match="texts or paths"):
        neardup.dedup(["a", 3])


def test_paths_still_work(tmp_path):
    assert _expected(tmp_path).n_documents == len(TEXTS)
