"""The outputs of `neardup dedup`: --annotate, --removed, --stats, --skipped, --id-policy line,
no empty success by accident, and the pre-flight checks of output paths (all through the CLI)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli.main import main
from neardup.io.transaction import OutputSet, recover


def run(*args, code=0):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    return res


def rows(path: Path) -> list[dict]:
    name = str(path)
    if name.endswith(".parquet"):
        return pq.read_table(path).to_pylist()
    if name.endswith(".csv"):
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


BASE = "the quick brown fox jumps over the lazy dog near the river bank on a sunny day"


@pytest.fixture
def docs(tmp_path):
    """Six records, two clusters of near-duplicates (a, b, c) and (d, e), and f alone; b and e
    are exact copies (with another id), so the expected clusters do not depend on the threshold."""
    texts = {
        "a": BASE,
        "b": BASE,
        "c": BASE + " again",
        "d": "completely different words make up this other document about cooking pasta tonight",
        "e": "completely different words make up this other document about cooking pasta tonight",
        "f": "a third unrelated text on the history of mathematics and its many famous problems",
    }
    recs = [{"id": k, "text": t, "n": i, "tags": [k, i]} for i, (k, t) in enumerate(texts.items())]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _brute_clusters(path: Path) -> dict[str, str]:
    """id -> kept id of its cluster, from the --clusters output of the same run."""
    return {r["id"]: r["cluster"] for r in rows(path)}


@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet", "jsonl.gz"])
def test_annotate_writes_every_record_with_its_cluster(tmp_path, docs, ext):
    out = tmp_path / f"all.{ext}"
    run("dedup", docs, "-o", out, "--annotate", "--clusters", tmp_path / "c.jsonl", "-q", "--threshold", "0.6")
    if ext.endswith(".gz"):
        import gzip

        got = [json.loads(line) for line in gzip.decompress(out.read_bytes()).splitlines()]
    else:
        got = rows(out)
    clusters = _brute_clusters(tmp_path / "c.jsonl")
    assert [r["id"] for r in got] == ["a", "b", "c", "d", "e", "f"]  # every record, in input order
    sizes = {k: sum(1 for v in clusters.values() if v == c) for k, c in clusters.items()}
    for r in got:
        kept = r["kept"] if ext != "csv" else r["kept"] == "true"
        assert kept == (clusters[r["id"]] == r["id"])
        assert r["cluster"] == clusters[r["id"]]
        assert int(r["cluster_size"]) == sizes[r["id"]]
        assert 0.0 < float(r["similarity"]) <= 1.0
    assert clusters["b"] == "a" and clusters["e"] == "d" and clusters["f"] == "f"
    # the records' own fields stay as they were
    assert [(r["n"] if ext != "csv" else int(r["n"])) for r in got] == list(range(6))
    if ext.startswith("jsonl"):
        assert got[0]["tags"] == ["a", 0]


def test_annotate_keeps_jsonl_bytes_and_prefix_renames_columns(tmp_path):
    src = tmp_path / "in.jsonl"
    lines = [
        '{"id": "x",   "text": "one two three four five six seven", "v": 1.50}',
        '{ "text": "one two three four five six seven", "id": "y" }  ',
        '{"id":"z","text":"eight nine ten eleven twelve thirteen","big":123456789012345678901234567890}',
    ]
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "a.jsonl"
    run("dedup", src, "-o", out, "--annotate", "--annotate-prefix", "dd_", "-q")
    got = out.read_text().splitlines()
    assert got[0].startswith('{"id": "x",   "text": "one two three four five six seven", "v": 1.50,"dd_cluster":"x"')
    assert got[1].startswith('{ "text": "one two three four five six seven", "id": "y","dd_cluster":"x"')
    assert "123456789012345678901234567890" in got[2]  # digits as written, not a rounded float
    parsed = [json.loads(line) for line in got]
    assert [p["dd_kept"] for p in parsed] == [True, False, True]
    assert [p["dd_cluster_size"] for p in parsed] == [2, 2, 1]


def test_annotate_refuses_a_column_the_records_have(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "x", "text": "one two three", "cluster": 7}\n')
    old = tmp_path / "a.jsonl"
    old.write_text("previous\n")
    res = run("dedup", src, "-o", old, "--annotate", "-q", code=1)
    assert "'cluster'" in res.output and "--annotate-prefix" in res.output
    assert old.read_text() == "previous\n"
    run("dedup", src, "-o", old, "--annotate", "--annotate-prefix", "nd_", "-q")
    assert json.loads(old.read_text())["nd_cluster"] == "x"


@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet"])
def test_removed_and_kept_partition_the_input_records(tmp_path, docs, ext):
    kept, removed = tmp_path / f"k.{ext}", tmp_path / f"r.{ext}"
    run("dedup", docs, "-o", kept, "--removed", removed, "-q", "--threshold", "0.6")
    k, r = rows(kept), rows(removed)
    assert sorted(x["id"] for x in k + r) == ["a", "b", "c", "d", "e", "f"]
    assert {x["id"] for x in r} >= {"b", "e"} and {x["id"] for x in k} >= {"a", "d", "f"}
    original = {json.loads(line)["id"]: json.loads(line) for line in docs.read_text().splitlines()}
    if ext == "jsonl":
        assert all(x == original[x["id"]] for x in k + r)  # original records, every field


def test_stats_json_has_counts_reasons_times_settings_version(tmp_path, docs):
    import neardup

    bad = tmp_path / "bad.jsonl"
    bad.write_text(docs.read_text() + '{"text": oops}\n{"no": "text"}\n{"text": 5}\n')
    stats = tmp_path / "run" / "stats.json"
    run("dedup", bad, "-o", tmp_path / "k.jsonl", "--stats", stats, "--on-error", "skip", "-q", "--threshold", "0.6")
    s = json.loads(stats.read_text())
    assert s["neardup_version"] == neardup.__version__
    assert s["counts"]["documents"] == 6 and s["counts"]["skipped"] == 3
    assert s["counts"]["kept"] + s["counts"]["removed"] == 6
    assert s["counts"]["kept"] == len(rows(tmp_path / "k.jsonl"))
    assert s["skipped_by_reason"] == {"malformed JSON": 1, "missing text field": 1, "text not a string": 1}
    assert s["method"]["method"] == "minhash" and s["method"]["threshold"] == 0.6
    assert s["settings"]["on_error"] == "skip"
    assert {"write", "total"} <= set(s["seconds"]) and all(v >= 0 for v in s["seconds"].values())
    assert s["outputs"]["--stats"] == str(stats)
    res = run("dedup", docs, "-o", tmp_path / "k.jsonl", "--stats", tmp_path / "s.txt", code=2)
    assert ".json" in res.output


@pytest.mark.parametrize("ext", ["jsonl", "csv"])
def test_skipped_lists_file_line_and_reason_of_every_skipped_record(tmp_path, ext):
    src = tmp_path / "in.jsonl"
    src.write_bytes(
        b'{"text": "good one two three"}\n{"text": oops}\n\n{"body": "x"}\n'
        b'{"text": "bad \xff utf8"}\n{"text": "good four five six"}\n[1, 2]\n'
    )
    out = tmp_path / f"skipped.{ext}"
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "--on-error", "skip", "--skipped", out, "-q")
    got = rows(out)
    assert [(r["file"], int(r["line"]), r["reason"]) for r in got] == [
        (str(src), 2, "malformed JSON"),
        (str(src), 4, "missing text field"),
        (str(src), 5, "invalid UTF-8"),
        (str(src), 7, "not a JSON object"),
    ]
    assert all(r["message"] for r in got)
    # -q still warns, in one line, that records were skipped
    assert res.output.count("\n") == 1 and "warning: 4 bad records skipped" in res.output
    assert run("dedup", src, "-o", tmp_path / "k.jsonl", "--skipped", out, code=2)


def test_no_documents_is_an_error_naming_paths_and_formats(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part-0.json.bz2").write_text("x")  # nothing neardup reads
    out = tmp_path / "k.jsonl"
    res = run("dedup", shards, "-o", out, code=1)
    assert str(shards) in res.output and ".parquet" in res.output and ".txt/.html" in res.output
    assert not out.exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    res = run("dedup", empty, "-o", out, "-q", code=1)
    assert f"{empty} (no records as jsonl)" in res.output
    run("dedup", empty, "-o", out, "-q", "--allow-empty")
    assert out.read_text() == ""


def test_every_record_skipped_is_an_error_with_the_summary(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": oops}\n{"body": "x"}\n{"body": "y"}\n')
    out = tmp_path / "k.jsonl"
    out.write_text("previous\n")
    res = run("dedup", src, "-o", out, "--on-error", "skip", "-q", code=1)
    assert "every record was skipped (3 skipped: malformed JSON: 1, missing text field: 2)" in res.output
    assert out.read_text() == "previous\n"


def test_id_policy_line_gives_file_line_to_missing_and_repeated_ids(tmp_path):
    src = tmp_path / "in.jsonl"
    recs = [
        {"key": "k1", "text": "alpha beta gamma delta epsilon zeta eta theta"},
        {"key": "k1", "text": "one two three four five six seven eight"},
        {"text": "red green blue yellow purple orange pink brown"},
        {"key": None, "text": "cat dog mouse horse cow sheep goat pig"},
        {"key": "k2", "text": "sun moon star comet planet galaxy nebula void"},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "--id-field", "key", "-q", code=1)
    assert f"{src}:3" in res.output and "'key'" in res.output  # the default stays an error
    clusters = tmp_path / "c.csv"
    run("dedup", src, "-o", tmp_path / "k.jsonl", "--id-field", "key", "--id-policy", "line", "--clusters", clusters)
    assert [r["id"] for r in rows(clusters)] == ["k1", f"{src}:2", f"{src}:3", f"{src}:4", "k2"]
    assert len(rows(tmp_path / "k.jsonl")) == 5
    stats = tmp_path / "s.json"
    csv_src = tmp_path / "in.csv"
    csv_src.write_text("key,text\nk1,alpha beta gamma delta\nk1,one two three four\n,red green blue\n")
    run("dedup", csv_src, "-o", tmp_path / "k.csv", "--id-field", "key", "--id-policy", "line",
        "--clusters", clusters, "--stats", stats, "-q")  # fmt: skip
    assert [r["id"] for r in rows(clusters)] == ["k1", f"{csv_src}:3", f"{csv_src}:4"]
    assert json.loads(stats.read_text())["counts"]["ids_from_file_line"] == 2
    pq.write_table(pa.table({"key": ["a", "a", None], "text": ["x y z", "p q r", "s t u"]}), tmp_path / "in.parquet")
    run("dedup", tmp_path / "in.parquet", "-o", tmp_path / "k.parquet", "--id-field", "key", "--id-policy", "line",
        "--clusters", clusters, "-q")  # fmt: skip
    pqp = tmp_path / "in.parquet"
    assert [r["id"] for r in rows(clusters)] == ["a", f"{pqp}:2", f"{pqp}:3"]
    assert "needs --id-field" in run("dedup", src, "-o", tmp_path / "k.jsonl", "--id-policy", "line", code=2).output


# ------------------------------------------------------------------------------------------
# pre-flight: checked before any reading (the input here would fail to read: a missing file
# would be exit 1 with another message)
def test_output_that_is_a_directory_or_under_a_file_is_refused_before_reading(tmp_path, docs):
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir.jsonl").mkdir()
    res = run("dedup", docs, "-o", tmp_path / "adir", code=2)
    assert "is a directory" in res.output
    res = run("dedup", docs, "-o", tmp_path / "adir.jsonl", code=2)
    assert "is a directory" in res.output
    res = run("dedup", docs, "-o", tmp_path / "k.jsonl", "--clusters", tmp_path / "adir.jsonl", code=2)
    assert "--clusters" in res.output and "is a directory" in res.output
    (tmp_path / "afile").write_text("x")
    res = run("dedup", docs, "-o", tmp_path / "afile" / "sub" / "k.jsonl", code=2)
    assert "is a file, not a folder" in res.output
    res = run("dedup", docs, "-o", str(tmp_path / "afile") + "/", code=2)
    assert "is a file, not a folder" in res.output
    res = run("dedup", docs, "-o", tmp_path / "k.jsonl", "--stats", tmp_path / "afile" / "s.json", code=2)
    assert "--stats" in res.output
    assert not (tmp_path / "k.jsonl").exists()


def test_outputs_equal_to_inputs_or_each_other_are_refused_for_the_new_outputs(tmp_path, docs):
    before = docs.read_bytes()
    assert "is the input" in run("dedup", docs, "-o", tmp_path / "k.jsonl", "--removed", docs, code=2).output
    assert (
        "is the input"
        in run("dedup", docs, "-o", tmp_path / "k.jsonl", "--on-error", "skip", "--skipped", docs, code=2).output
    )
    res = run("dedup", docs, "-o", tmp_path / "k.jsonl", "--removed", tmp_path / "k.jsonl", code=2)
    assert "same file" in res.output
    res = run("dedup", docs, "-o", tmp_path / "k.jsonl", "--stats", tmp_path / "x.json",
              "--clusters", tmp_path / "x.json", code=2)  # fmt: skip
    assert "same file" in res.output
    assert docs.read_bytes() == before


def _mount_tmpfs(folder: Path, options: str) -> None:
    import subprocess

    folder.mkdir(exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")


def _umount(folder: Path) -> None:
    import subprocess

    subprocess.run(["umount", str(folder)], check=False)


@pytest.fixture
def small_fs(tmp_path):
    folder = tmp_path / "small"
    _mount_tmpfs(folder, "size=256k")
    yield folder
    _umount(folder)


def test_too_little_free_space_is_refused_before_reading(tmp_path, small_fs):
    big = tmp_path / "big.jsonl"
    rng = np.random.default_rng(1)
    with open(big, "w") as f:
        for i in range(3000):
            f.write(json.dumps({"id": i, "text": " ".join(f"w{x}" for x in rng.integers(0, 999, 40))}) + "\n")
    res = run("dedup", big, "-o", small_fs / "k.jsonl", code=1)
    assert "not enough free space" in res.output and str(small_fs) in res.output
    assert res.output.count("\n") == 1 and "KB free" in res.output
    assert os.listdir(small_fs) == []


def test_a_read_only_output_folder_is_refused_before_reading(tmp_path, docs):
    folder = tmp_path / "ro"
    _mount_tmpfs(folder, "ro,size=64k")
    try:
        res = run("dedup", docs, "-o", tmp_path / "k.jsonl", "--pairs", folder / "p.csv", code=1)
        assert "cannot write" in res.output and "read-only file system" in res.output
        assert not (tmp_path / "k.jsonl").exists()
    finally:
        _umount(folder)


# ------------------------------------------------------------------------------------------
# the transaction itself
def test_output_set_commits_all_or_none_and_recovers_a_half_commit(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "sub" / "b.txt"
    a.write_text("old a")
    with pytest.raises(RuntimeError), OutputSet() as outs:
        outs.stage(a).write_text("new a")
        outs.stage(b).write_text("new b")
        raise RuntimeError("a failing writer")
    assert a.read_text() == "old a" and not b.exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.txt"]
    # a commit that died after its journal: the next stage() in that folder finishes it
    with OutputSet() as outs:
        outs.stage(a).write_text("new a")
        outs.stage(b).write_text("new b")
        outs.commit()
    assert (a.read_text(), b.read_text()) == ("new a", "new b")
    ta, tb = tmp_path / ".a.txt.999999999.tmp", tmp_path / "sub" / ".b.txt.999999999.tmp"
    ta.write_text("newer a")
    tb.write_text("newer b")
    assert not list(tmp_path.rglob(".neardup-commit.*"))  # the journals of a commit are gone after it
    body = json.dumps({"pid": 999999999, "renames": [[str(ta), str(a)], [str(tb), str(b)]]})
    journals = [tmp_path / ".neardup-commit.999999999.json", tmp_path / "sub" / ".neardup-commit.999999999.json"]
    for journal in journals:  # one in each folder the dead commit wrote to
        journal.write_text(body)
    os.replace(ta, a)  # the dead run renamed the first output only
    assert (a.read_text(), b.read_text()) == ("newer a", "new b")
    assert recover(tmp_path / "sub") == 1  # from either folder: the whole commit is finished
    assert (a.read_text(), b.read_text()) == ("newer a", "newer b")
    assert not journals[1].exists() and not tb.exists()
    assert recover(tmp_path) == 1 and not journals[0].exists()
    assert (a.read_text(), b.read_text()) == ("newer a", "newer b")


def test_parts_folder_is_one_set_with_annotations_and_no_parts_of_an_earlier_run(tmp_path, docs):
    shards = tmp_path / "shards"
    shards.mkdir()
    lines = docs.read_text().splitlines(keepends=True)
    for i in range(3):
        (shards / f"s{i}.jsonl").write_text("".join(lines[2 * i : 2 * i + 2]))
    out = tmp_path / "parts"
    run("dedup", shards, "-o", f"{out}/", "--annotate", "-q", "--threshold", "0.6")
    parts = sorted(p.name for p in out.iterdir())
    assert parts == ["part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]
    got = [r for name in parts for r in rows(out / name)]
    assert [r["id"] for r in got] == ["a", "b", "c", "d", "e", "f"]
    assert [r["kept"] for r in got] == [True, False, False, True, False, True]
    (shards / "s2.jsonl").unlink()
    run("dedup", shards, "-o", f"{out}/", "-q", "--threshold", "0.6")
    assert sorted(p.name for p in out.iterdir()) == ["part-00000.jsonl", "part-00001.jsonl"]
