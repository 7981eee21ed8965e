"""The memory budget: arrays past it go to unnamed spill files, with the in-memory job's answer.

The contract suite runs every method under a tiny budget (``test_contract.py``); here: sizes,
the spill's own bookkeeping, the packed ids, and the command line (byte-identical outputs, a
disk that fills, interrupts and kills leaving nothing behind).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from neardup.api import dedup
from neardup.core.budget import Spill, SpillError, format_size, parse_size, using
from neardup.core.ids import IdBuffer, IdColumn, id_array, repeated_ids
from neardup.engine import LocalEngine

from conftest import run_cli as run


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """About 20k generated documents, a fifth of them near or exact copies of earlier ones."""
    path = tmp_path_factory.mktemp("data") / "in.jsonl"
    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i}" for i in range(4000)] + ["the", "a", "of", "is", "to", "and"] * 300)
    texts: list[str] = []
    with open(path, "w") as f:
        for i in range(20000):
            if texts and rng.random() < 0.2:
                words = texts[int(rng.integers(len(texts)))].split()
                words[int(rng.integers(len(words)))] = "changed"
                text = " ".join(words) if rng.random() < 0.7 else texts[-1]
            else:
                text = " ".join(vocab[rng.integers(0, len(vocab), 80)])
            texts.append(text)
            f.write(json.dumps({"id": f"doc-{i}-é", "text": text}) + "\n")
    return path


# --------------------------------------------------------------------------------------------
# sizes


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2GB", 2 * 10**9), ("2 gb", 2 * 10**9), ("512MiB", 512 * 2**20), ("1.5G", 1_500_000_000), ("64k", 64_000)],
)
def test_sizes_are_read_in_decimal_and_binary_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "lots", "2XB", "-1GB", "0", "1.2.3G"])
def test_a_size_that_is_not_one_is_refused_with_what_was_expected(text):
    with pytest.raises(ValueError, match=r"size|more than 0"):
        parse_size(text)


def test_sizes_are_printed_for_people():
    assert format_size(2_000_000_000) == "2.0 GB" and format_size(12) == "12 B"


# --------------------------------------------------------------------------------------------
# the spill


def test_arrays_past_the_budget_are_mapped_files_that_behave_as_arrays(tmp_path):
    spill = Spill(limit=10_000, tmp_dir=tmp_path)
    small = spill.array(100, np.int64)
    assert small.flags.owndata and spill.held == 800 and not spill.spilled
    big = spill.array((1000, 3), np.uint64)
    assert not big.flags.owndata and big.flags.c_contiguous and big.flags.writeable
    assert spill.spilled and spill.disk_now == big.nbytes == spill.disk_peak
    big[:] = np.arange(3000, dtype=np.uint64).reshape(1000, 3)
    spill.release()  # the pages leave this process; the data stays in the file
    assert int(big.sum()) == 3000 * 2999 // 2
    assert os.listdir(tmp_path) == [], "spill files have no names"
    del small, big
    gc.collect()
    assert spill.held == 0 and spill.disk_now == 0 and spill.disk_peak == 24_000


def test_rows_go_to_a_file_from_the_batch_that_does_not_fit(tmp_path):
    spill = Spill(limit=50_000, tmp_dir=tmp_path)
    rows = spill.rows((4,), np.uint32)
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, 2**32, size=(int(rng.integers(0, 900)), 4), dtype=np.uint32) for _ in range(40)]
    for p in parts:
        rows.append(p)
    out = rows.finish()
    assert spill.spilled and not out.flags.owndata
    assert np.array_equal(out, np.concatenate(parts)) and out.dtype == np.uint32
    assert spill.held == 0, "the rows held in memory before the switch are given back"


def test_rows_within_the_budget_stay_in_memory_and_are_counted(tmp_path):
    spill = Spill(limit=1 << 20, tmp_dir=tmp_path)
    rows = spill.rows((), np.int64)
    rows.append(np.arange(10))
    out = rows.finish()
    assert out.tolist() == list(range(10)) and spill.held == 80 and not spill.spilled


def test_an_empty_spilled_column_keeps_its_shape(tmp_path):
    spill = Spill(limit=0, tmp_dir=tmp_path)
    rows = spill.rows((128,), np.uint32)
    rows.append(np.zeros((0, 128), np.uint32))
    assert rows.finish().shape == (0, 128)


def test_a_spill_folder_that_cannot_be_written_is_a_clear_error(tmp_path):
    spill = Spill(limit=0, tmp_dir=tmp_path / "missing")
    with pytest.raises(SpillError, match=r"past its memory budget .*cannot write in .*missing.*--tmp-dir"):
        spill.array(1000, np.int64)


# --------------------------------------------------------------------------------------------
# ids


def test_packed_ids_read_back_as_the_strings_they_were():
    ids = ["a", "", "bé", "日本語", "x" * 300, "a"]
    col = IdColumn.of(ids)
    assert len(col) == 6 and list(col) == ids and col[3] == "日本語" and col[-1] == "a"
    assert col[1:3] == ["", "bé"] and col == ids
    assert id_array(col).to_pylist() == ids and str(id_array(col).type) == "string"
    assert repeated_ids(col) == repeated_ids(ids) == 1
    with pytest.raises(IndexError):
        col[6]


def test_ids_are_a_list_within_the_budget_and_packed_past_it(tmp_path):
    ids = [f"id-{i}" for i in range(5000)]
    with using(Spill(limit=None)):
        buf = IdBuffer()
        buf.extend(ids)
        assert buf.finish() is not None and isinstance(buf.finish(), list)
    with using(Spill(limit=20_000, tmp_dir=tmp_path)):
        buf = IdBuffer()
        for lo in range(0, 5000, 700):
            buf.extend(ids[lo : lo + 700])
        out = buf.finish()
    assert isinstance(out, IdColumn) and list(out) == ids


# --------------------------------------------------------------------------------------------
# the job


def test_the_library_takes_a_budget_and_refuses_one_beside_an_engine(corpus, tmp_path):
    base = dedup([str(corpus)], workers=2)
    small = dedup([str(corpus)], workers=2, memory="1MB", tmp_dir=str(tmp_path))
    assert small.job.spilled_bytes > 0 and base.job.spilled_bytes == 0
    assert np.array_equal(small.kept, base.kept) and small.ids == base.ids
    assert small.to_arrow().equals(base.to_arrow())
    with pytest.raises(ValueError, match="engine or memory"):
        dedup([str(corpus)], engine=LocalEngine(1), memory="1GB")
    with pytest.raises(ValueError, match="memory"):
        LocalEngine(1, memory="a lot")


@pytest.mark.parametrize("method", ["minhash", "simhash", "spotsigs", "exact", "imatch"])
def test_every_output_is_the_same_bytes_under_a_tiny_budget(corpus, tmp_path, method):
    outs = {}
    memory = "64MB" if method == "spotsigs" else "1MB"  # SpotSigs' search is held in memory: about 30 MB here
    for name, extra in (("free", []), ("bounded", ["--memory", memory, "--tmp-dir", tmp_path])):
        d = tmp_path / name
        d.mkdir()
        args = ["dedup", corpus, "-o", d / "kept.jsonl", "--removed", d / "removed.jsonl", "--method", method]
        args += ["--clusters", d / "clusters.csv", "--pairs", d / "pairs.parquet", "--stats", d / "stats.json"]
        run(*args, "--workers", 2, "-q", *extra)
        run("dedup", corpus, "-o", d / "annotated.jsonl", "--annotate", "--method", method, "-q", *extra)
        outs[name] = {p.name: p.read_bytes() for p in d.iterdir() if p.name != "stats.json"}
        outs[name]["stats"] = json.loads((d / "stats.json").read_text())
    free, bounded = outs["free"], outs["bounded"]
    assert bounded["stats"]["counts"].pop("spilled_bytes") > 0 and free["stats"]["counts"].pop("spilled_bytes") == 0
    assert bounded["stats"]["counts"] == free["stats"]["counts"] and free["stats"]["counts"]["removed"] > 500
    assert bounded["stats"]["counters"] == free["stats"]["counters"]
    for name in ("kept.jsonl", "removed.jsonl", "clusters.csv", "pairs.parquet", "annotated.jsonl"):
        assert bounded[name] == free[name], f"{name} differs under the budget"
    assert os.listdir(tmp_path) == ["bounded", "free"], "nothing of the spill is left"


def test_spotsigs_past_its_bound_is_refused_with_one_line(corpus, tmp_path):
    res = run("dedup", corpus, "-o", tmp_path / "k.jsonl", "--method", "spotsigs", "--memory", "1MB", code=1)
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "SpotSigs' all-pairs search of" in lines[0] and "--memory" in lines[0], res.output
    assert not (tmp_path / "k.jsonl").exists()


def test_a_bad_budget_is_a_usage_error(corpus, tmp_path):
    assert "is not a size" in run("dedup", corpus, "-o", tmp_path / "k.jsonl", "--memory", "lots", code=2).output
    # --engine dask takes a budget too (tests/test_dask_budget.py)


_CHILD = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2_000_000, 2_000_000))
from neardup.__main__ import run
sys.argv = ["neardup"] + sys.argv[1:]
run()
"""


def test_a_spill_that_does_not_fit_on_disk_ends_with_one_line_and_the_outputs_untouched(corpus, tmp_path):
    """Files may not grow past 2 MB in the child (RLIMIT_FSIZE): every spill file past that
    fails to be made as on a full disk (EFBIG), and the job says so in one line."""
    kept = tmp_path / "kept.jsonl"
    kept.write_text("previous\n")
    spill = tmp_path / "spill"
    spill.mkdir()
    cmd = [sys.executable, "-c", _CHILD, "dedup", str(corpus), "-o", str(kept), "--memory", "64KB"]
    res = subprocess.run([*cmd, "--tmp-dir", str(spill), "-q"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "past its memory budget" in lines[0] and str(spill) in lines[0], res.stderr
    assert "Traceback" not in res.stderr
    assert kept.read_text() == "previous\n" and os.listdir(spill) == []


def _maps_from(pid: int, folder: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any(folder in line for line in f)
    except OSError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc (Linux)")
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -9)])
def test_an_interrupted_or_killed_spilling_job_leaves_nothing(corpus, tmp_path, sig, code):
    """The signal is sent once the job has mapped a spill file from its folder (read off
    /proc/PID/maps), so it lands while spill files exist; afterwards none is left and no space
    is held: they had no names, and went with the process."""
    spill = tmp_path / "spill"
    spill.mkdir()
    kept = tmp_path / "kept.jsonl"
    cmd = [sys.executable, "-m", "neardup", "dedup", str(corpus), str(corpus), str(corpus), "-o", str(kept)]
    proc = subprocess.Popen(
        [*cmd, "--memory", "64KB", "--tmp-dir", str(spill), "-q", "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _maps_from(proc.pid, str(spill)):
            assert proc.poll() is None, f"the job ended before it spilled: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "no spill file was mapped within 120 s"
            time.sleep(0.01)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, proc.stderr.read()
    assert os.listdir(spill) == [] and not kept.exists()


def test_the_pre_pass_table_grows_in_stretches_under_a_budget_with_the_same_groups(tmp_path, monkeypatch):
    from neardup.methods.exact import groups as exact_groups
    from neardup.methods.exact.keys import exact_keys

    rng = np.random.default_rng(3)
    texts = [f"text {int(x)}" for x in rng.integers(0, 3000, 6000)]
    batches = [exact_keys(texts[lo : lo + 500]) for lo in range(0, len(texts), 500)]

    def admitted():
        table = exact_groups.ExactPrepass()
        masks = [table.admit(keys) for keys in batches]
        return np.concatenate(masks), table.groups().rep

    free_mask, free_rep = admitted()
    monkeypatch.setattr(exact_groups, "_REHASH_STEP", 100)
    spill = Spill(limit=0, tmp_dir=tmp_path, cap=0)
    with using(spill):
        mask, rep = admitted()
    assert spill.spilled and not rep.flags.owndata
    assert np.array_equal(mask, free_mask) and np.array_equal(rep, free_rep)
    assert np.array_equal(rep, exact_groups.exact_duplicate_groups(np.concatenate(batches)).rep)
