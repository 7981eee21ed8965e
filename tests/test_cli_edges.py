"""CLI edges (issue 34, deliverable 4): every failure answered as what it is.

A broken link in an input folder is named, never dropped; ``--against`` with another method is
refused naming both; an empty id in ``index add`` follows ``--on-error`` with file and line; two
``dedup`` runs writing the same outputs at once leave one run's complete set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.io.transaction import folders_locked

from conftest import run_cli as run


def write_jsonl(path: Path, docs) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    return path


def docs(prefix: str, n: int) -> list[tuple[str, str]]:
    """``n`` documents, every third a copy of the one before (so some are removed)."""
    out = []
    for i in range(n):
        k = i - 1 if i % 3 == 2 else i
        out.append((f"{prefix}{i}", f"{prefix} document {k} about topic {k % 7} with words w{k} x{k} y{k} z{k} end"))
    return out


# --------------------------------------------------------------------------------------------
# broken links in an input folder


@pytest.fixture
def folder_with_broken_links(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "good.jsonl", docs("d", 6))
    (folder / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")  # dangling
    (folder / "loop.jsonl").symlink_to("loop.jsonl")  # a loop
    return folder


def test_a_dangling_link_in_an_input_folder_is_an_error_naming_it(folder_with_broken_links, tmp_path):
    res = run("dedup", folder_with_broken_links, "-o", tmp_path / "kept.jsonl", "-q", code=1)
    assert "in/gone.jsonl: cannot read the file: a symbolic link to" in res.output
    assert "nowhere.jsonl', which leads to nothing there" in res.output
    assert not (tmp_path / "kept.jsonl").exists()


def test_with_skip_each_broken_link_is_one_skipped_file_counted_and_named(folder_with_broken_links, tmp_path):
    out, skipped, stats = tmp_path / "kept.jsonl", tmp_path / "skipped.jsonl", tmp_path / "stats.json"
    res = run(
        "dedup", folder_with_broken_links, "-o", out, "--on-error", "skip", "--skipped", skipped, "--stats", stats
    )
    assert "skipped: " in res.output and "gone.jsonl" in res.output and "loop.jsonl" in res.output
    rows = [json.loads(line) for line in skipped.read_text().splitlines()]
    assert [(Path(r["file"]).name, r["line"], r["reason"]) for r in rows] == [
        ("gone.jsonl", None, "unreadable file"),
        ("loop.jsonl", None, "unreadable file"),
    ]
    assert "leads to nothing there" in rows[0]["message"] and "a loop of links" in rows[1]["message"]
    body = json.loads(stats.read_text())
    assert body["skipped_by_reason"] == {"unreadable file": 2}
    assert len(out.read_text().splitlines()) == 4  # the good file's 6 documents, 2 of them copies


def test_a_broken_link_in_a_folder_of_text_files_and_in_a_glob_is_named(tmp_path):
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "a.txt").write_text("one text of a few words here")
    (texts / "b.txt").symlink_to("missing.txt")
    res = run("dedup", texts, "-o", tmp_path / "kept.jsonl", "-q", code=1)
    assert "texts/b.txt: cannot read the file: a symbolic link to 'missing.txt'" in res.output
    shards = tmp_path / "shards"
    shards.mkdir()
    write_jsonl(shards / "a.jsonl", docs("a", 3))
    (shards / "b.jsonl").symlink_to("missing.jsonl")
    res = run("dedup", str(shards / "*.jsonl"), "-o", tmp_path / "kept.jsonl", "-q", code=1)
    assert "shards/b.jsonl: cannot read the file: a symbolic link" in res.output


def test_index_add_names_the_files_it_skipped(folder_with_broken_links, tmp_path):
    path = tmp_path / "x.ndx"
    run("index", "create", path, "--method", "exact")
    res = run("index", "add", path, folder_with_broken_links, code=1)
    assert "gone.jsonl: cannot read the file" in res.output
    res = run("index", "add", path, folder_with_broken_links, "--on-error", "skip")
    assert "2 records skipped" in res.output
    assert "skipped: " in res.output and "gone.jsonl" in res.output and "loop.jsonl" in res.output
    with neardup.Index.open(path) as index:
        assert len(index) == 6


# --------------------------------------------------------------------------------------------
# --against an index of another method


@pytest.mark.parametrize("method", ["simhash", "exact"])
def test_against_an_index_of_another_method_is_refused_naming_both(tmp_path, method):
    corpus = write_jsonl(tmp_path / "in.jsonl", docs("d", 6))
    path = tmp_path / "m.ndx"
    run("index", "create", path, "--method", "minhash")
    out = tmp_path / "kept.jsonl"
    res = run("dedup", corpus, "-o", out, "--against", path, "--method", method, code=2)
    assert f"--method {method} disagrees with the index" in res.output and "made with minhash" in res.output
    assert not out.exists()
    run("dedup", corpus, "-o", out, "--against", path, "--method", "minhash", "-q")
    run("dedup", corpus, "-o", out, "--against", path, "-q")  # no --method: the index's


@pytest.mark.slow
def test_against_a_simhash_index_with_method_minhash_is_refused(tmp_path):
    corpus = write_jsonl(tmp_path / "in.jsonl", docs("d", 6))
    path = tmp_path / "s.ndx"
    run("index", "create", path, "--method", "simhash")
    res = run("dedup", corpus, "-o", tmp_path / "k.jsonl", "--against", path, "--method", "minhash", code=2)
    assert "--method minhash disagrees with the index" in res.output and "made with simhash" in res.output
    run("dedup", corpus, "-o", tmp_path / "k.jsonl", "--against", path, "-q")


# --------------------------------------------------------------------------------------------
# an empty id in index add


def _with_an_empty_id(tmp_path: Path, fmt: str) -> tuple[Path, int]:
    """Three records, the second with the empty id: the file and the line that holds it."""
    rows = [("a", "one two three four"), ("", "five six seven eight"), ("c", "nine ten eleven twelve")]
    if fmt == "jsonl":
        return write_jsonl(tmp_path / "in.jsonl", rows), 2
    if fmt == "csv":
        path = tmp_path / "in.csv"
        path.write_text("id,text\n" + "".join(f"{i},{t}\n" for i, t in rows))
        return path, 3  # the header is line 1
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [r[0] for r in rows], "text": [r[1] for r in rows]}), path)
    return path, 2  # the row


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_an_empty_id_in_index_add_follows_on_error_with_file_and_line(tmp_path, fmt):
    corpus, line = _with_an_empty_id(tmp_path, fmt)
    path = tmp_path / "x.ndx"
    run("index", "create", path, "--method", "exact")
    res = run("index", "add", path, corpus, "--id-field", "id", code=1)
    assert f"{corpus}:{line}: the id is an empty string" in res.output
    assert "Traceback" not in res.output
    with neardup.Index.open(path) as index:
        assert len(index) == 0  # the batch that held it: nothing stored
    res = run("index", "add", path, corpus, "--id-field", "id", "--on-error", "skip")
    assert "added 2 documents" in res.output and "1 records skipped" in res.output
    assert f"1 records with an empty id skipped: {corpus}:{line}" in res.output
    with neardup.Index.open(path) as index:
        assert sorted(index) == ["a", "c"]
    run("dedup", corpus, "-o", tmp_path / "kept.jsonl", "--id-field", "id", "-q")  # the batch job accepts it


def test_dedup_update_with_an_empty_kept_id_names_it_and_writes_nothing(tmp_path):
    corpus, line = _with_an_empty_id(tmp_path, "jsonl")
    path = tmp_path / "x.ndx"
    run("index", "create", path, "--method", "exact")
    out = tmp_path / "kept.jsonl"
    res = run("dedup", corpus, "-o", out, "--against", path, "--update", code=1)
    assert f"{corpus}:{line}: a kept document has an empty id" in res.output and "nothing was written" in res.output
    assert not out.exists()
    with neardup.Index.open(path) as index:
        assert len(index) == 0
    run("dedup", corpus, "-o", out, "--against", path, "-q")  # without --update nothing is stored: fine


def test_empty_ids_across_batches_are_all_named_and_the_rest_stored(tmp_path):
    rows = [(f"d{i}" if i % 5 else "", f"text number {i} with its own words {i}") for i in range(23)]
    corpus = write_jsonl(tmp_path / "in.jsonl", rows)
    path = tmp_path / "x.ndx"
    run("index", "create", path, "--method", "exact")
    res = run("index", "add", path, corpus, "--on-error", "skip", "--batch-size", "4")
    assert "added 18 documents" in res.output and "5 records skipped" in res.output
    assert f"{corpus}:1; {corpus}:6; {corpus}:11; {corpus}:16; {corpus}:21" in res.output
    with neardup.Index.open(path) as index:
        assert len(index) == 18


# --------------------------------------------------------------------------------------------
# concurrent runs writing the same outputs


def _command(corpus: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "neardup", "dedup", str(corpus), "-q", "--workers", "1", "--method", "exact",
        "-o", str(out / "kept.jsonl"), "--removed", str(out / "removed.jsonl"), "--stats", str(out / "stats.json"),
    ]  # fmt: skip


def _which_run(out: Path) -> str:
    """The one run whose complete set the three outputs are (fails on a mix)."""
    kept = [json.loads(line)["id"] for line in (out / "kept.jsonl").read_text().splitlines()]
    removed = [json.loads(line)["id"] for line in (out / "removed.jsonl").read_text().splitlines()]
    stats = json.loads((out / "stats.json").read_text())
    runs = {i[0] for i in kept} | {i[0] for i in removed} | {Path(stats["inputs"][0]).stem}
    assert len(runs) == 1, f"a mixed set: {runs}"
    assert len(kept) == stats["counts"]["kept"] and len(removed) == stats["counts"]["removed"]
    return runs.pop()


@pytest.fixture(scope="module")
def two_corpora(tmp_path_factory):
    folder = tmp_path_factory.mktemp("concurrent")
    return write_jsonl(folder / "a.jsonl", docs("a", 300)), write_jsonl(folder / "b.jsonl", docs("b", 420))


def _waiting_on_the_lock(pid: int, folder: Path) -> bool:
    """Whether process ``pid`` is blocked on a lock of ``folder`` (a ``->`` line of /proc/locks)."""
    inode = os.stat(folder).st_ino
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "->" in fields and str(pid) in fields and any(x.endswith(f":{inode}") for x in fields):
                return True
    return False


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs /proc/locks to see the waiting run")
def test_a_run_waits_for_the_commit_lock_and_then_replaces_the_whole_set(tmp_path, two_corpora):
    a, b = two_corpora
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(_command(a, out), check=True)
    assert _which_run(out) == "a"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with folders_locked([out]):  # another run's commit, held
        proc = subprocess.Popen(_command(b, out), stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 300
            while not _waiting_on_the_lock(proc.pid, out):
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the run never reached its commit"
                time.sleep(0.05)
            # it has written all its temporaries and waits: nothing of the set replaced yet
            assert {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")} == before
            assert sorted(p.name for p in out.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))
        except BaseException:
            proc.kill()
            raise
    assert proc.wait(timeout=300) == 0, proc.stderr.read()
    assert _which_run(out) == "b"
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_concurrent_runs_writing_the_same_outputs_leave_one_runs_complete_set(tmp_path, two_corpora):
    """8 rounds of two real `neardup dedup` processes started together on different inputs and
    the same three outputs: both exit 0 and the outputs are one run's complete set every time."""
    a, b = two_corpora
    out = tmp_path / "out"
    out.mkdir()
    winners = []
    for _ in range(8):
        procs = [subprocess.Popen(_command(c, out), stderr=subprocess.PIPE, text=True) for c in (a, b)]
        for proc in procs:
            assert proc.wait(timeout=300) == 0, proc.stderr.read()
        winners.append(_which_run(out))
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    print("runs whose set was left:", winners)


# --------------------------------------------------------------------------------------------
# repeated ids in `index add`


@pytest.mark.parametrize("batch", ["4096", "1"])
def test_a_repeated_or_stored_id_in_index_add_follows_on_error_with_file_and_line(tmp_path, batch):
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "text": f"text {k} of {i}"}) + "\n" for k, i in enumerate("abac")))
    csv = tmp_path / "b.csv"
    csv.write_text("id,text\nd,text of d\nb,other text of b\n")
    index = tmp_path / "i.ndx"
    run("index", "create", index, "--method", "minhash")
    res = run("index", "add", index, jsonl, "--batch-size", batch, code=1)
    assert "a.jsonl:3: id 'a' repeats an earlier record's id in this add" in res.output or (
        batch == "1" and "a.jsonl:3: id 'a' is in the index already" in res.output
    )
    res = run("index", "add", index, jsonl, csv, "--batch-size", batch, "--on-error", "skip")
    assert "skipped: " in res.output and "b.csv:3: id 'b'" in res.output
    with neardup.Index.open(index) as opened:
        stored = sorted(opened)
    assert stored == ["a", "b", "c", "d"]  # (with one record a batch, a and b were stored before line 3 failed)
    res = run("index", "add", index, csv, code=1)
    assert "b.csv:2: id 'd' is in the index already (--replace overwrites)" in res.output
    run("index", "add", index, csv, "--replace")


def test_a_named_pipe_in_an_input_folder_or_glob_is_an_error_naming_it(tmp_path):
    """Reading a pipe of a folder would wait for a writer: it is refused by name, never skipped unseen."""
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "good.jsonl", docs("d", 6))
    os.mkfifo(folder / "pipe.jsonl")
    for given in (folder, f"{folder}/*.jsonl"):
        for extra in ([], ["--on-error", "skip"]):
            res = run("dedup", given, "-o", tmp_path / "kept.jsonl", "-q", *extra, code=1)
            assert "pipe.jsonl: not a regular file (a named pipe)" in res.output
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "a.txt").write_text("a text document here")
    os.mkfifo(texts / "b.txt")
    res = run("dedup", texts, "-o", tmp_path / "kept.jsonl", "-q", code=1)
    assert "b.txt: not a regular file (a named pipe)" in res.output
