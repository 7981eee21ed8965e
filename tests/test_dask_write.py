"""The kept records of a Dask job written by the workers, one part per input partition
(:mod:`neardup.io.dask_write`): the parts, concatenated, are the local engine's output."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from neardup.methods.minhash.config import MinHashConfig

from conftest import REPO, make_corpus

pytest.importorskip("dask.distributed")

CONFIG = MinHashConfig(threshold=0.6)


def _lines(data, rows, ids: bool, broken: dict[int, str]) -> str:
    """JSONL of the documents ``rows``, a blank line every 17, ``broken`` rows replaced."""
    out = []
    for i in rows:
        record = {"id": data.ids[i], "text": data.texts[i], "n": i} if ids else {"text": data.texts[i], "n": i}
        out.append(broken.get(i, json.dumps(record)))
        if i % 17 == 0:
            out.append("")
    return "\n".join(out) + "\n"


def _inputs(kind: str, folder: Path) -> tuple[list[str], str]:
    """The input paths of a case, and its on_error."""
    data = make_corpus(n=300, seed=17)
    folder.mkdir()
    if kind in ("ranges", "skipped", "skipped-ids"):
        # with ids, the ranges before the bad line are read without line numbers (first_line None)
        broken = {} if kind == "ranges" else {220: '{"id": "x", "text": oops', 250: '{"body": "no text"}'}
        (folder / "in.jsonl").write_text(_lines(data, range(300), kind == "skipped-ids", broken))
        return [str(folder / "in.jsonl")], "fail" if kind == "ranges" else "skip"
    if kind == "files":  # two JSONL files (cut into ranges), a gzip file and a CSV file (whole)
        (folder / "a.jsonl").write_text(_lines(data, range(120), True, {}))
        with gzip.open(folder / "b.jsonl.gz", "wt") as f:
            f.write(_lines(data, range(120, 200), True, {}))
        (folder / "c.jsonl").write_text(_lines(data, range(200, 260), True, {}))
        rows = "".join(f'{data.ids[i]},"{data.texts[i]}"\n' for i in range(260, 300))
        (folder / "d.csv").write_text("id,text\n" + rows)
        return [str(folder)], "fail"
    if kind == "txt":  # a folder of text files: one partition
        for i, text in enumerate(data.texts):
            (folder / f"{i:03d}.txt").write_text(text)
        return [str(folder)], "fail"
    import pyarrow as pa
    import pyarrow.parquet as pq

    for k, rows in enumerate((range(170), range(170, 300))):
        table = pa.table(
            {
                "id": [data.ids[i] for i in rows],
                "text": [data.texts[i] for i in rows],
                "score": [i / 7 if i % 5 else float("nan") for i in rows],
            }
        )
        pq.write_table(table, folder / f"p{k}.parquet")
    return [str(folder)], "fail"


def _write(paths, out, engine=None, *, annotate=False, keep="first", on_error="fail", clusters=None):
    """The dedup job of the CLI, and its outputs written by ``write_all`` (a Dask ``engine``:
    the workers write an output folder's parts)."""
    import neardup
    from neardup.cli.dedup_outputs import Outputs, ReadOptions, write_all

    workers = 1 if engine is None else None
    result = neardup.dedup(paths, CONFIG, engine=engine, workers=workers, keep=keep, on_error=on_error, batch_size=16)
    read = ReadOptions(tuple(paths), "text", None, on_error, None)
    outs = Outputs(str(out), clusters=clusters, annotate=annotate)
    write_all(result, result.keep_mask, outs, read, None, dict, engine=engine)
    return result


def _parts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith("part-"))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _arm(monkeypatch) -> list[int]:
    """The driver's writers made to refuse (the input is not read again here), and the writes
    of parts recorded: the list of the processes that wrote them."""
    import neardup.cli.dedup_outputs as outputs
    import neardup.io.write as write

    pids: list[int] = []
    real = outputs.write_partitions

    def refuse(*args, **kwargs):
        raise AssertionError("the driver read the input again to write it")

    def recorded(*args, **kwargs):
        written = real(*args, **kwargs)
        pids.extend(written.pids)
        return written

    monkeypatch.setattr(outputs, "write_kept", refuse)
    monkeypatch.setattr(write, "write_kept", refuse)
    monkeypatch.setattr(outputs, "write_partitions", recorded)
    return pids


CASES = [
    ("ranges", False, "first"),
    ("ranges", True, "first"),
    ("ranges", False, "longest"),
    ("skipped", False, "first"),
    ("skipped", True, "longest"),
    ("skipped-ids", True, "first"),
    ("files", False, "first"),
    ("files", True, "first"),
    ("parquet", False, "first"),
    ("parquet", True, "first"),
    ("txt", False, "first"),
]


@pytest.mark.parametrize(("kind", "annotate", "keep"), CASES, ids=lambda x: str(x))
def test_the_workers_parts_concatenated_are_the_local_engines_output(
    tmp_path, dask_client, monkeypatch, kind, annotate, keep
):
    """One part per input partition (several for one JSONL file cut into byte ranges), written
    in the worker processes, never by the driver; in order they are the local engine's bytes."""
    from neardup.engine.dask_engine import DaskEngine

    paths, on_error = _inputs(kind, tmp_path / "in")
    local = _write(paths, tmp_path / "local.jsonl", annotate=annotate, keep=keep, on_error=on_error)
    expected = (tmp_path / "local.jsonl").read_bytes()
    assert local.n_removed > 0 and (local.read_stats.skipped > 0) == kind.startswith("skipped")

    engine = DaskEngine(dask_client, partitions=6)
    pids = _arm(monkeypatch)
    _write(paths, str(tmp_path / "out") + "/", engine, annotate=annotate, keep=keep, on_error=on_error)
    parts = _parts(tmp_path / "out")
    assert [p.name for p in parts] == [f"part-{k:05d}.jsonl" for k in range(engine.input_partitions)]
    assert b"".join(p.read_bytes() for p in parts) == expected
    if kind in ("ranges", "skipped", "skipped-ids"):
        assert engine.input_partitions == 6, "one file in byte ranges"
    if kind == "skipped-ids":
        assert any(part.first_line is None for part, _ in engine.last_partitions), "ranges read without lines"
    if kind == "parquet":
        assert engine.input_partitions == 2, "a Parquet file is one partition"
    if kind == "txt":
        assert engine.input_partitions == 1, "a folder of text files is one partition"
    if kind == "files":
        assert engine.input_partitions > 4, "the JSONL files in byte ranges, the gzip and CSV files whole"
    workers = set(dask_client.run(os.getpid).values())
    assert len(pids) == len(parts) and set(pids) <= workers and os.getpid() not in pids
    assert _leftovers(tmp_path / "out") == []


def _on_workers(client, mode: str, part: str, marker: str) -> None:
    """Make the workers' writer of ``part`` (a file name) write half its bytes and then fail:
    ``raise`` (once: ``marker`` is created by the first attempt), ``kill`` its worker (once) or
    ``always`` raise; ``off`` restores it."""

    def install(mode=mode, part=part, marker=marker):
        import neardup.io.dask_write as m

        real = getattr(m, "_real_write", m.write_kept_part)
        m._real_write = real
        if mode == "off":
            m.write_kept_part = real
            return

        def flaky(part_, keep, out_path, tmp, **kwargs):
            if os.path.basename(out_path) == part:
                first = True
                if mode != "always":
                    try:
                        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
                    except FileExistsError:
                        first = False
                if first:
                    real(part_, keep, out_path, tmp, **kwargs)
                    with open(tmp, "r+b") as f:
                        f.truncate(os.path.getsize(tmp) // 2)
                    if mode == "kill":
                        os.kill(os.getpid(), signal.SIGKILL)
                    raise OSError(f"a planned failure writing {part}")
            return real(part_, keep, out_path, tmp, **kwargs)

        m.write_kept_part = flaky

    client.run(install)


@pytest.mark.parametrize("mode", ["raise", "kill"])
def test_a_write_that_failed_once_is_done_again_and_the_set_is_whole(tmp_path, dask_client, mode):
    """A part's task raises after writing half its bytes (Dask retries it) or its worker is
    killed there (Dask runs it again elsewhere): the second attempt replaces the same temporary,
    and the set is the local output, without leftovers."""
    from neardup.engine.dask_engine import DaskEngine

    paths, _ = _inputs("ranges", tmp_path / "in")
    _write(paths, tmp_path / "local.jsonl")
    marker = str(tmp_path / "failed-once")
    _on_workers(dask_client, mode, "part-00002.jsonl", marker)
    try:
        _write(paths, str(tmp_path / "out") + "/", DaskEngine(dask_client, partitions=6))
    finally:
        if mode == "kill":
            dask_client.wait_for_workers(2, timeout=60)
        _on_workers(dask_client, "off", "", "")
    assert os.path.exists(marker), "the planned failure happened"
    parts = _parts(tmp_path / "out")
    assert len(parts) == 6
    assert b"".join(p.read_bytes() for p in parts) == (tmp_path / "local.jsonl").read_bytes()
    assert _leftovers(tmp_path / "out") == []


def test_a_failed_write_leaves_the_previous_outputs(tmp_path, dask_client):
    """A part that cannot be written fails the run: the parts and the other outputs of the run
    before stay as they were (not replaced), and no temporary or journal is left."""
    from neardup.engine.dask_engine import DaskEngine

    paths, _ = _inputs("ranges", tmp_path / "in")
    out = tmp_path / "out"
    clusters = str(out / "clusters.csv")
    _write(paths, str(out) + "/", DaskEngine(dask_client, partitions=4), clusters=clusters)
    before = {p.name: (p.stat().st_ino, p.read_bytes()) for p in out.iterdir()}
    assert len(before) == 5
    _on_workers(dask_client, "always", "part-00003.jsonl", "")
    try:
        with pytest.raises(OSError, match="planned failure"):
            _write(paths, str(out) + "/", DaskEngine(dask_client, partitions=6), clusters=clusters, annotate=True)
    finally:
        _on_workers(dask_client, "off", "", "")
    assert {p.name: (p.stat().st_ino, p.read_bytes()) for p in out.iterdir()} == before


def test_parts_of_an_earlier_run_with_more_partitions_are_removed(tmp_path, dask_client):
    from neardup.engine.dask_engine import DaskEngine

    paths, _ = _inputs("ranges", tmp_path / "in")
    out = tmp_path / "out"
    _write(paths, str(out) + "/", DaskEngine(dask_client, partitions=6))
    assert len(_parts(out)) == 6
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed_run = out / f".part-00004.jsonl.{int(gone.stdout)}.tmp"  # a temporary of a run that died
    killed_run.write_bytes(b"half")
    _write(paths, str(out) + "/", DaskEngine(dask_client, partitions=3))
    _write(paths, tmp_path / "local.jsonl")
    parts = _parts(out)
    assert [p.name for p in parts] == ["part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]
    assert b"".join(p.read_bytes() for p in parts) == (tmp_path / "local.jsonl").read_bytes()
    assert _leftovers(out) == []


def test_cli_output_folder_with_engine_dask_has_one_part_per_partition(tmp_path):
    """``neardup dedup FILE -o DIR/ --engine dask``: the parts of the workers, their number the
    input partitions', their bytes the local engine's ``-o FILE``."""
    data = make_corpus(n=300, seed=5)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(data.ids, data.texts)))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    base = [sys.executable, "-m", "neardup", "dedup", str(src), "-q"]
    r = subprocess.run([*base, "-o", str(tmp_path / "kept.jsonl")], capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    args = ["-o", str(tmp_path / "out") + "/", "--engine", "dask", "--workers", "2", "--partitions", "4"]
    args += ["--stats", str(tmp_path / "stats.json")]
    r = subprocess.run([*base, *args], capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    parts = _parts(tmp_path / "out")
    assert len(parts) == 4
    assert b"".join(p.read_bytes() for p in parts) == (tmp_path / "kept.jsonl").read_bytes()
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["counts"]["kept"] == len((tmp_path / "kept.jsonl").read_text().splitlines()) < 300
    assert stats["seconds"]["write"] > 0


def test_a_part_this_process_does_not_see_is_an_error(tmp_path, dask_client, monkeypatch):
    """Workers that write where this process does not see (no shared filesystem) fail the run
    with an error saying so; nothing is replaced."""
    import neardup.io.dask_write as dask_write
    from neardup.core.errors import NeardupError
    from neardup.engine.dask_engine import DaskEngine

    paths, _ = _inputs("ranges", tmp_path / "in")
    real = os.path.exists
    monkeypatch.setattr(dask_write.os.path, "exists", lambda p: ".part-" not in str(p) and real(p))
    with pytest.raises(NeardupError, match="shared filesystem"):
        _write(paths, str(tmp_path / "out") + "/", DaskEngine(dask_client, partitions=3))
    monkeypatch.undo()
    assert _parts(tmp_path / "out") == [] and _leftovers(tmp_path / "out") == []


def test_staging_many_parts_lists_their_folder_once_and_removes_only_stale_temporaries(tmp_path, monkeypatch):
    """An output set staging parts lists and recovers their folder once (not once per part,
    which is quadratic in the parts), and still removes the temporaries of runs that died (of
    the outputs it stages), not those of a live process."""
    import neardup.io.transaction as transaction
    from neardup.io.transaction import OutputSet

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = int(gone.stdout), os.getppid()
    for name in (f".part-00001.jsonl.{dead}.tmp", f".part-00002.jsonl.{alive}.tmp", f".other.jsonl.{dead}.tmp"):
        (tmp_path / name).write_bytes(b"x")
    listed = []
    real = transaction._stale_temporaries
    monkeypatch.setattr(transaction, "_stale_temporaries", lambda folder: listed.append(folder) or real(folder))
    outputs = OutputSet()
    for k in range(50):
        outputs.stage(tmp_path / f"part-{k:05d}.jsonl")
    assert listed == [tmp_path]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".other.jsonl.{dead}.tmp", f".part-00002.jsonl.{alive}.tmp"]
    with pytest.raises(ValueError, match="staged twice"):
        outputs.stage(tmp_path / "part-00007.jsonl")
