"""Input faults of issue 18: each is a clear error naming file and line, or is skipped and counted
without silently losing or merging records.

Unterminated CSV quotes, repeated CSV columns, truncated compressed streams (every complete
record before the cut is kept), named pipes and standard input (read once, copied), single
``.txt``/``.html`` files, and inputs that change or vanish between the passes of a job.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
import zstandard

from neardup.api import dedup
from neardup.core.errors import InputChangedError, InputError
from neardup.io.policy import ReadStats
from neardup.io.read import read_documents
from neardup.io.write import write_kept
from neardup.methods.exact import ExactConfig

SRC = str(Path(__file__).resolve().parent.parent / "src")


def read_all(paths, **kw):
    stats = kw.pop("stats", None) or ReadStats()
    ids, texts = [], []
    for batch in read_documents(paths, stats=stats, **kw):
        assert batch.start == len(ids)
        ids += batch.ids
        texts += batch.texts
    return ids, texts, stats


def cli(*args: str, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=timeout,
    )


# --------------------------------------------------------------------------------------------
# CSV: an unterminated quote


def _csv_with_open_quote(path: Path) -> Path:
    path.write_text(
        'id,text\na,first record\nb,"an unterminated quote\nc,third record\nd,"a quoted\nfield over two lines"\ne,last\n'
    )
    return path


def test_an_unterminated_csv_quote_is_an_error_naming_the_line_where_it_opened(tmp_path):
    p = tmp_path / "open.csv"
    p.write_text('id,text\na,first record\nb,"an unterminated quote\nc,third record\nd,fourth\n')
    with pytest.raises(InputError) as e:
        read_all([p])
    assert e.value.path == str(p) and e.value.line == 3 and e.value.reason == "malformed CSV row"
    assert "unterminated quoted field in this CSV record" in str(e.value) and "2 line(s) after it" in str(e.value)
    r = cli(str(p), "-o", str(tmp_path / "out.csv"), "--method", "exact")
    assert r.returncode == 1 and r.stderr.decode().startswith(f"neardup: error: {p}:3: unterminated quoted field")
    assert b"Traceback" not in r.stderr and not (tmp_path / "out.csv").exists()
    ids, _, stats = read_all([p], on_error="skip")
    assert ids == ["a", "c", "d"] and stats.reasons == {"malformed CSV row": 1}
    r = cli(str(p), "-o", str(tmp_path / "out.csv"), "--method", "exact", "--on-error", "skip")
    assert r.returncode == 0 and "documents read" in r.stderr.decode()
    with open(tmp_path / "out.csv", newline="") as f:
        assert [row[0] for row in csv.reader(f)] == ["id", "a", "c", "d"]


def test_a_stray_quote_cannot_close_an_open_one_quietly(tmp_path):
    p = _csv_with_open_quote(tmp_path / "q.csv")  # the quote of line 5 would close the one of line 3
    with pytest.raises(InputError) as e:
        read_all([p])
    assert e.value.line == 3 and "malformed CSV row (lines 3-5)" in str(e.value)
    assert "a quoted field must end with a quote" in str(e.value)


def test_skipping_an_unterminated_csv_quote_keeps_the_records_after_it(tmp_path):
    p = _csv_with_open_quote(tmp_path / "q.csv")
    ids, texts, stats = read_all([p], on_error="skip")
    assert ids == ["a", "c", "d", "e"], "reading starts again on the line after the open quote"
    assert texts == ["first record", "third record", "a quoted\nfield over two lines", "last"]
    assert stats.skipped == 1 and stats.reasons == {"malformed CSV row": 1}
    keep = np.ones(len(ids), dtype=bool)
    out = tmp_path / "kept.csv"
    assert write_kept([p], keep, out, on_error="skip") == 4, "the write pass numbers records the same way"
    with open(out, newline="") as f:
        assert [row[0] for row in csv.reader(f)] == ["id", "a", "c", "d", "e"]


def test_two_unterminated_quotes_and_a_quote_in_the_header(tmp_path):
    p = tmp_path / "two.csv"
    p.write_text('id,text\na,"open\nb,ok\nc,"open again\nd,fine\n')
    ids, _, stats = read_all([p], on_error="skip")
    assert ids == ["b", "d"] and stats.reasons == {"malformed CSV row": 2}
    h = tmp_path / "header.csv"
    h.write_text('id,"text\na,b\n')
    with pytest.raises(InputError, match=r"header\.csv:1: unterminated quoted field in the CSV header"):
        read_all([h])
    ids, _, stats = read_all([h], on_error="skip")
    assert ids == [] and stats.reasons == {"malformed CSV row": 1}


def test_a_quoted_field_that_closes_on_the_last_line_is_one_record(tmp_path):
    p = tmp_path / "end.csv"
    p.write_text('id,text\na,"spans\nthe last lines"')  # no final newline: still closed
    assert read_all([p])[1] == ["spans\nthe last lines"]


# --------------------------------------------------------------------------------------------
# CSV: a column named twice


def test_a_csv_column_named_twice_is_refused(tmp_path):
    p = tmp_path / "dup.csv"
    p.write_text("id,text,text\n1,compared,written\n")
    for on_error in ("fail", "skip"):
        with pytest.raises(InputError) as e:
            read_all([p], on_error=on_error)
        assert e.value.path == str(p) and e.value.line == 1
        assert "names column 'text' 2 times (columns 2, 3)" in str(e.value)
    r = cli(str(p), "-o", str(tmp_path / "out.csv"), "--on-error", "skip")
    assert r.returncode == 1 and b"names column 'text' 2 times" in r.stderr and b"Traceback" not in r.stderr


# --------------------------------------------------------------------------------------------
# truncated compressed streams


def _records(n: int) -> bytes:
    return b"".join(
        json.dumps({"id": f"r{i}", "text": f"record {i} " + f"w{i} " * (i % 40)}).encode() + b"\n" for i in range(n)
    )


def _complete_lines(prefix: bytes) -> int:
    """The complete records in everything a decompressor can give from a truncated stream."""
    return prefix.count(b"\n")


@pytest.mark.parametrize("comp", ["gz", "zst", "csv.gz"])
@pytest.mark.parametrize("cut", [0.6, 0.9, 0.999])
def test_a_truncated_stream_keeps_every_complete_record_before_the_cut(tmp_path, comp, cut):
    data = _records(3000)
    if comp == "csv.gz":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["id", "text"])
        for line in data.splitlines():
            r = json.loads(line)
            w.writerow([r["id"], r["text"]])
        data = buf.getvalue().encode()
    if comp == "zst":
        packed = zstandard.ZstdCompressor().compress(data)
        full = packed[: int(len(packed) * cut)]
        # the oracle: all a streaming decompressor gives from the truncated bytes
        out = zstandard.ZstdDecompressor().decompressobj().decompress(full)
    else:
        packed = gzip.compress(data)
        full = packed[: int(len(packed) * cut)]
        out = zlib.decompressobj(31).decompress(full)
    assert out and len(out) < len(data)
    path = tmp_path / f"t.{'jsonl.' + comp if comp != 'csv.gz' else 'csv.gz'}"
    path.write_bytes(full)
    expect = _complete_lines(out) - (1 if comp == "csv.gz" else 0)  # minus the header
    ids, _, stats = read_all([path], on_error="skip")
    assert ids == [f"r{i}" for i in range(expect)], "every complete record before the cut"
    assert stats.reasons == {"truncated file": 1}
    assert stats.file_errors == [
        f"{path}: truncated compressed stream after {expect:,} records (byte offset {len(out):,} of the "
        "decompressed data); the file was cut short (an interrupted download or copy?)"
    ]
    with pytest.raises(InputError, match=f"truncated compressed stream after {expect:,} records"):
        read_all([path])
    keep = np.ones(len(ids), dtype=bool)
    assert write_kept([path], keep, tmp_path / "out.jsonl", on_error="skip") == expect


def test_truncated_stream_in_the_summary_and_as_an_error(tmp_path):
    data = _records(648)
    packed = gzip.compress(data)
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(packed[: len(packed) * 9 // 10])
    r = cli(str(path), "-o", str(tmp_path / "out.jsonl"), "--on-error", "skip", "--method", "exact")
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert f"skipped: {path}: truncated compressed stream after " in err and "(byte offset " in err
    r = cli(str(path), "-o", str(tmp_path / "out2.jsonl"), "--method", "exact")
    assert r.returncode == 1 and b"truncated compressed stream" in r.stderr and b"Traceback" not in r.stderr


def test_multi_member_gzip_and_zero_padding_read_whole(tmp_path):
    a, b = _records(10), _records(20)
    path = tmp_path / "m.jsonl.gz"
    path.write_bytes(gzip.compress(a) + gzip.compress(b) + b"\0" * 100)
    ids, _, stats = read_all([path])
    assert len(ids) == 30 and stats.skipped == 0


# --------------------------------------------------------------------------------------------
# streams: named pipes, standard input


def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    def write() -> None:
        with open(path, "wb") as f:  # blocks until a reader opens it
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_a_named_pipe_is_read_once_and_the_job_finishes(tmp_path):
    data = _records(300) + _records(50)  # 50 exact duplicates
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'cat > "{fifo}"'], stdin=subprocess.PIPE)
    writer.stdin.write(data)
    writer.stdin.close()
    out = tmp_path / "kept.jsonl"
    r = cli(str(fifo), "-o", str(out), "--clusters", str(tmp_path / "c.csv"), "--method", "exact", "-q", timeout=90)
    assert writer.wait(timeout=30) == 0
    assert r.returncode == 0, r.stderr
    assert [json.loads(line)["id"] for line in out.read_bytes().splitlines()] == [f"r{i}" for i in range(300)]


def test_a_named_pipe_in_process_keeps_its_name(tmp_path):
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    t = _feed_fifo(fifo, b"text\nalpha beta\nalpha beta\ngamma\n")
    done: list = []
    job = threading.Thread(target=lambda: done.append(dedup([str(fifo)], ExactConfig())), daemon=True)
    job.start()
    job.join(timeout=60)  # reading the pipe a second time would wait forever
    assert done, "the job did not finish: was the pipe read twice?"
    t.join(timeout=10)
    result = done[0]
    assert result.ids == [f"{fifo}:2", f"{fifo}:3", f"{fifo}:4"], "ids name the pipe, not its copy"
    assert result.keep_mask.tolist() == [True, False, True]
    # a later pass (the write) reads the same copy instead of waiting on the pipe
    assert write_kept([str(fifo)], result.keep_mask, tmp_path / "o.jsonl") == 2


def test_standard_input_ids_name_it_dash(tmp_path):
    r = cli("-", "--input-format", "csv", "-o", "-", "--clusters", str(tmp_path / "c.csv"), "-q", stdin=b"text\nx y\n")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "c.csv").read_text().splitlines()[1].startswith('"-:2"')


# --------------------------------------------------------------------------------------------
# single .txt / .html files


def test_a_single_text_or_html_file_is_one_document(tmp_path):
    t = tmp_path / "note.txt"
    t.write_text("a short note about cats")
    h = tmp_path / "page.HTML"
    h.write_text("<html><body><p>a short note about cats</p></body></html>")
    ids, texts, stats = read_all([str(t), str(h)])
    assert ids == [str(t), str(h)] and texts == ["a short note about cats", "a short note about cats"]
    assert stats.files == 2
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "note.txt").write_text("a short note about cats")
    assert read_all([str(folder)])[1] == read_all([str(folder / "note.txt")])[1], "as in a folder"
    out = tmp_path / "kept.jsonl"
    r = cli(str(t), str(h), "-o", str(out), "--method", "exact", "-q")
    assert r.returncode == 0, r.stderr
    assert [json.loads(line)["id"] for line in out.read_bytes().splitlines()] == [str(t)]


# --------------------------------------------------------------------------------------------
# inputs that change or vanish between passes


def test_an_input_that_vanishes_or_grows_before_the_write_pass_is_a_clear_error(tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(_records(100))
    result = dedup([str(src)], ExactConfig())
    src.write_bytes(_records(120))
    with pytest.raises(InputChangedError, match="were the inputs"):
        write_kept([str(src)], result.keep_mask, tmp_path / "o.jsonl")
    src.write_bytes(b"\xff" * 10)  # now unreadable: skipped on the write pass, which sees 0 documents
    with pytest.raises(InputChangedError, match="inputs hold 0 documents"):
        write_kept([str(src)], result.keep_mask, tmp_path / "o.jsonl", on_error="skip")
    src.unlink()
    with pytest.raises(InputError, match=r"a\.jsonl: no such file or directory"):
        write_kept([str(src)], result.keep_mask, tmp_path / "o.jsonl")
    assert not (tmp_path / "o.jsonl").exists()


# --------------------------------------------------------------------------------------------
# Parquet: damaged strings, repeated columns, binary ids


def test_parquet_string_cells_that_are_not_utf8_are_bad_records_not_a_traceback(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = pa.array([b"good one", b"bad \xff here", b"good two"], pa.binary()).view(pa.string())  # unchecked
    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"text": texts, "id": ["a", "b", "c"]}), path)
    with pytest.raises(InputError) as e:
        read_all([path])
    assert e.value.line == 2 and "invalid UTF-8 in string column 'text'" in str(e.value)
    ids, got, stats = read_all([path], on_error="skip")
    assert ids == ["a", "c"] and got == ["good one", "good two"] and stats.reasons == {"invalid UTF-8": 1}
    assert write_kept([path], np.ones(2, dtype=bool), tmp_path / "o.jsonl", on_error="skip") == 2


def test_parquet_with_a_column_named_twice_is_refused_and_binary_ids_are_text(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["x"]), pa.array(["y"])], names=["text", "text"]), path)
    for on_error in ("fail", "skip"):
        with pytest.raises(InputError, match="names column 'text' 2 times"):
            read_all([path], on_error=on_error)
    ids_path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"text": ["a", "b"], "id": pa.array([b"k1", b"\xff"], pa.binary())}), ids_path)
    ids, _, stats = read_all([ids_path], on_error="skip")
    assert ids == ["k1"] and stats.reasons == {"invalid UTF-8": 1}


# --------------------------------------------------------------------------------------------
# unreadable inputs


def _unprivileged_user() -> tuple[int, int]:
    """The uid and gid of the user .ci/run makes (``neardup-ci``), else ``nobody``."""
    import pwd

    for name in ("neardup-ci", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    pytest.fail("no unprivileged user (neardup-ci or nobody) to run the permission check as")


def as_unprivileged(check) -> None:
    """``check()`` here, or, as root (who reads a file whatever its mode), in a forked child that
    drops to ``neardup-ci`` (made by .ci/run) or ``nobody`` first; its failure fails the test."""
    import traceback

    if os.geteuid() != 0:
        check()
        return
    uid, gid = _unprivileged_user()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report a failure through the pipe, never return into pytest
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            check()
            code = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        error = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, error


def test_a_file_without_read_permission_is_a_clear_error():
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="neardup-perm-"))  # not pytest's tmp_path: that one is 0700
    try:
        folder.chmod(0o755)
        (folder / "readable.jsonl").write_bytes(_records(3))
        assert read_all([folder / "readable.jsonl"])[0] == ["r0", "r1", "r2"]  # kernels compiled here, not as the user
        p = folder / "locked.jsonl"
        p.write_bytes(_records(3))
        p.chmod(0)

        def check():
            with pytest.raises(InputError, match=r"locked\.jsonl: cannot read the file"):
                read_all([p])
            assert read_all([p], on_error="skip")[2].reasons == {"unreadable file": 1}

        as_unprivileged(check)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_file_whose_reads_fail_is_a_clear_error_even_for_root(tmp_path):
    p = tmp_path / "eio.jsonl"
    p.symlink_to("/proc/self/mem")  # opens for anyone; reading offset 0 fails with EIO
    good = tmp_path / "good.jsonl"
    good.write_bytes(_records(3))
    with pytest.raises(InputError) as e:
        read_all([str(p), str(good)])
    assert e.value.path == str(p) and "cannot read the file after 0 records" in str(e.value)
    ids, _, stats = read_all([str(p), str(good)], on_error="skip")
    assert ids == ["r0", "r1", "r2"] and stats.reasons == {"unreadable file": 1}
    r = cli(str(p), str(good), "-o", str(tmp_path / "o.jsonl"), "--method", "exact")
    assert r.returncode == 1 and b"Input/output error" in r.stderr and b"Traceback" not in r.stderr


def test_an_input_rewritten_with_as_many_records_before_the_write_pass_is_refused(tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(_records(100))
    result = dedup([str(src)], ExactConfig())
    assert src.resolve() and result.read_stats.snapshot.keys() == {str(src)}
    src.write_bytes(_records(100).replace(b"record", b"RECORD"))  # as many records, other texts
    with pytest.raises(InputChangedError, match=r"a\.jsonl: the file changed while the job ran"):
        write_kept([str(src)], result.keep_mask, tmp_path / "o.jsonl", snapshot=result.read_stats.snapshot)
    assert not (tmp_path / "o.jsonl").exists()
    # without the first pass's snapshot (a separate call), nothing to compare with
    assert write_kept([str(src)], result.keep_mask, tmp_path / "o.jsonl") == 100
