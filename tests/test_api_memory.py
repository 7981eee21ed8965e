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


def test_result_repr_is_short_and_stats_are_numbers(tmp_path):
    """A short repr; ``stats`` in the shape of ``--stats PATH.json`` (the same numbers as the CLI
    writes for the same input); the display lines under ``summary``."""
    from conftest import run_cli

    res = _expected(tmp_path)
    assert (
        repr(res) == f"DedupResult(method='minhash', threshold=0.8, documents=5, removed={res.n_removed}, clusters=1)"
    )
    stats = res.stats
    assert set(stats) == {"method", "counts", "skipped_by_reason", "counters", "seconds"}
    assert all(
        isinstance(v, (int, float)) for section in ("counts", "counters", "seconds") for v in stats[section].values()
    )
    assert neardup.dedup(TEXTS).stats["counts"]["verified_pairs"] is None  # not counted without pairs
    out = [str(tmp_path / name) for name in ("k.jsonl", "s.json", "p.csv")]
    run_cli("dedup", str(tmp_path / "in.jsonl"), "-o", out[0], "--stats", out[1], "--pairs", out[2])
    cli = json.loads((tmp_path / "s.json").read_text())
    assert stats["method"] == cli["method"] and stats["counters"] == cli["counters"]
    assert cli["counts"].pop("pairs_written") == stats["counts"]["verified_pairs"] == 3  # (0, 2), (0, 3), (2, 3)
    volatile = {"bytes_read", "spilled_bytes"}
    assert {k: v for k, v in stats["counts"].items() if k not in volatile} == {
        k: v for k, v in cli["counts"].items() if k not in volatile
    }
    assert set(stats["seconds"]) <= set(cli["seconds"])
    assert all(isinstance(v, str) for v in res.summary.values()) and res.summary


def test_ids_from_the_id_column_or_the_index_and_cluster_is_the_kept_id():
    """As the command line: the ``id`` column names documents, else a DataFrame's own index; the
    ``cluster`` column is the kept document's id."""
    pd = pytest.importorskip("pandas")
    ids = [f"doc-{i}" for i in range(len(TEXTS))]
    with_column = neardup.dedup(pa.table({"id": ids, "text": TEXTS}))
    assert with_column.ids == ids
    by_index = neardup.dedup(pd.DataFrame({"text": TEXTS}, index=pd.Index(ids, name="key")))
    assert by_index.ids == ids
    assert neardup.dedup(pd.DataFrame({"text": TEXTS})).ids == [str(i) for i in range(len(TEXTS))]
    t = with_column.to_arrow()
    kept = with_column.kept
    assert t.column("cluster").to_pylist() == [ids[k] for k in kept.tolist()]
    assert t.column("cluster").to_pylist()[3] == "doc-0"  # an exact copy of document 0


def test_kept_and_removed_rows_come_back_as_the_same_type():
    """``kept_rows``/``removed_rows`` give the rows of the data itself, as its own type."""
    pd = pytest.importorskip("pandas")
    datasets = pytest.importorskip("datasets")
    res = neardup.dedup(TEXTS)
    mask = res.keep_mask.tolist()
    want_kept = [t for t, k in zip(TEXTS, mask) if k]
    want_removed = [t for t, k in zip(TEXTS, mask) if not k]
    assert res.kept_rows(TEXTS) == want_kept and res.removed_rows(TEXTS) == want_removed and want_removed

    df = pd.DataFrame({"text": TEXTS}, index=[10, 11, 12, 13, 14])
    kept = res.kept_rows(df)
    assert isinstance(kept, pd.DataFrame) and kept["text"].tolist() == want_kept
    assert kept.index.tolist() == [10 + i for i, k in enumerate(mask) if k]

    table = pa.table({"text": TEXTS})
    assert res.kept_rows(table).column("text").to_pylist() == want_kept
    assert res.removed_rows(table.to_batches()[0]).column("text").to_pylist() == want_removed

    ds = datasets.Dataset.from_dict({"text": TEXTS})
    kept_ds = res.kept_rows(ds)
    assert isinstance(kept_ds, datasets.Dataset) and kept_ds["text"] == want_kept

    with pytest.raises(ValueError, match="data has 4 rows, the result 5 documents"):
        res.kept_rows(TEXTS[:4])
    with pytest.raises(TypeError, match="in-memory data"):
        res.kept_rows(["in.jsonl"])


def test_keyword_shortcuts_make_the_config():
    """``dedup(data, threshold=...)``, a method by name with its settings, a config with settings
    replaced; a misspelt keyword is an error naming the method's settings."""
    a = neardup.dedup(TEXTS, threshold=0.9)
    assert a.config == neardup.MinHashConfig(threshold=0.9)
    b = neardup.dedup(TEXTS, "simhash", max_distance=8)
    assert b.config == neardup.get_method("simhash")(max_distance=8)
    c = neardup.dedup(TEXTS, neardup.MinHashConfig(num_perm=64), threshold=0.7)
    assert c.config == neardup.MinHashConfig(num_perm=64, threshold=0.7)
    assert neardup.dedup(TEXTS, "exact").config == neardup.get_method("exact")()
    with pytest.raises(TypeError, match=r"unknown option\(s\) 'treshold'.*threshold, shingling"):
        neardup.dedup(TEXTS, treshold=0.9)
    with pytest.raises(ValueError, match="threshold"):
        neardup.dedup(TEXTS, threshold=1.5)


class _Recorder:
    """A display that records what the job told it."""

    def __init__(self) -> None:
        self.stages, self.documents, self.compiles, self.done = [], 0, [], []

    def stage(self, name: str) -> None:
        self.stages.append(name)

    def advance(self, n: int) -> None:
        self.documents += n

    def compiling(self, message: str, seconds: float, kernel: str) -> None:
        self.compiles.append((message, kernel))

    def compiled(self, seconds: float) -> None:
        self.done.append(seconds)


def _a_kernel_compiles_in_the_job(monkeypatch) -> str:
    """Make the next job compile a fresh numba function (as a first run compiles the job's
    kernels), by calling it at the start of LocalEngine.run; returns its name."""
    import numba

    from neardup.engine.local import LocalEngine

    def fresh_kernel_for_the_api_notice(x):
        return x + 1

    kernel = numba.njit(cache=False)(fresh_kernel_for_the_api_notice)
    run = LocalEngine.run

    def compiling_run(self, *args, **kwargs):
        kernel(1)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(LocalEngine, "run", compiling_run)
    return "fresh_kernel_for_the_api_notice"


def test_progress_display_follows_the_job_and_the_compile(monkeypatch):
    """A display given as ``progress`` sees every stage, every document once, and the compile
    notice with the kernel's name and its end."""
    name = _a_kernel_compiles_in_the_job(monkeypatch)
    rec = _Recorder()
    res = neardup.dedup(TEXTS, progress=rec)
    assert rec.stages and rec.documents == res.n_documents
    assert rec.compiles == [(neardup.core.progress.compile_message("minhash"), name)] and len(rec.done) == 1


def test_a_first_call_says_it_is_compiling_unless_silenced(monkeypatch, capsys):
    """By default (no notebook) a call whose kernels compile says so in one line on stderr, and
    nothing else; ``progress=False`` says nothing; a call with nothing to compile says nothing."""
    neardup.dedup(TEXTS)
    assert capsys.readouterr().err == ""  # compiled and cached by now
    _a_kernel_compiles_in_the_job(monkeypatch)
    neardup.dedup(TEXTS)
    assert capsys.readouterr().err == "neardup: compiling kernels (first run only, about 9 s)\n"
    _a_kernel_compiles_in_the_job(monkeypatch)
    neardup.dedup(TEXTS, progress=False)
    assert capsys.readouterr().err == ""


def test_progress_true_shows_bars_and_bad_displays_are_refused(capsys):
    pytest.importorskip("tqdm")
    from neardup.core.progress import TqdmDisplay, display_for

    assert isinstance(display_for(True), TqdmDisplay)
    neardup.dedup(TEXTS, progress=True)
    assert "documents" in capsys.readouterr().err  # tqdm's bars, on stderr
    with pytest.raises(TypeError, match="progress must be None, True, False or a display"):
        neardup.dedup(TEXTS, progress="yes")
