"""JSON Lines scanned on worker threads (neardup.io.jsonl_threads) against the one-thread scanner.

For any file, any block size and 1, 2 or 3 workers, the threaded reader must give the records of
``scan_jsonl`` in the same order, the same skip counts, reasons and ``--skipped`` details, and
raise the same first error; a job over files reads the same batches whatever the workers.
"""

from __future__ import annotations

import gzip
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_io_jsonl_fast import line_st

from neardup.core.errors import InputError
from neardup.core.parallel import Threads
from neardup.io import jsonl
from neardup.io import streams as nio
from neardup.io.jsonl import block_lines, scan_jsonl
from neardup.io.jsonl_threads import scan_jsonl_threaded
from neardup.io.partitions import FileSource, ReadOptions
from neardup.io.policy import ReadStats, make_policy


def _outcome(path, workers, *, on_error="skip", id_field=None, text_field="text", html=False):
    """(ids, texts, skipped, reasons, details, file errors) or ("error", message)."""
    pol = make_policy(text_field, id_field, on_error, ReadStats(details=[]), html)
    try:
        if workers is None:
            chunks = list(scan_jsonl(str(path), pol, False))
        else:
            with Threads(workers) as threads:
                chunks = list(scan_jsonl_threaded(str(path), pol, threads, False))
    except InputError as exc:
        return ("error", str(exc))
    ids = [d for c in chunks for d in c.ids]
    texts = [t for c in chunks for t in c.texts]
    s = pol.stats
    return ids, texts, s.skipped, dict(s.reasons), s.details, s.file_errors


@settings(max_examples=60, deadline=None)
@given(
    st.lists(line_st, max_size=30),
    st.booleans(),
    st.sampled_from([None, "key"]),
    st.sampled_from(["skip", "fail"]),
    st.sampled_from([5, 64, 1 << 20]),
)
def test_threaded_reader_equals_the_one_thread_reader(
    tmp_path_factory, lines, final_newline, id_field, on_error, block
):
    path = tmp_path_factory.mktemp("threads") / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    with mock.patch.object(nio, "BLOCK", block):
        expected = _outcome(path, None, on_error=on_error, id_field=id_field)
        for workers in (1, 2, 3):
            assert _outcome(path, workers, on_error=on_error, id_field=id_field) == expected


def _corpus(n: int, bad=(), no_id=()) -> bytes:
    lines = []
    for i in range(n):
        rec = {"text": f"document {i} " + "é" * (i % 7)}
        if i not in no_id:
            rec["id"] = f"d{i}"
        lines.append(b"{oops" if i in bad else orjson.dumps(rec))
    return b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_line_numbers_and_the_first_error_across_many_blocks(tmp_path, monkeypatch, workers):
    """Ids FILE:LINE and errors count lines from the start of the file in every block; with
    on_error="fail" the error is the first bad line's, though later blocks were scanned too."""
    monkeypatch.setattr(nio, "BLOCK", 100)
    path = tmp_path / "in.jsonl"
    path.write_bytes(_corpus(300, bad={150, 250}, no_id={3, 299}))
    got = _outcome(path, workers)
    assert got == _outcome(path, None)
    ids, _, skipped, reasons, details, _ = got
    assert ids[3] == f"{path}:4" and ids[-1] == f"{path}:300"
    assert skipped == 2 and reasons == {"malformed JSON": 2}
    assert [d[1] for d in details] == [151, 251]
    error = _outcome(path, workers, on_error="fail")
    assert error == ("error", _outcome(path, None, on_error="fail")[1]) and ":151:" in error[1]


@pytest.mark.parametrize("workers", [1, 2])
def test_huge_lines_are_scanned_alone_and_read_alike(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(nio, "BLOCK", 64)
    monkeypatch.setattr(jsonl, "_HUGE_BLOCK", 200)
    monkeypatch.setattr(jsonl, "_PLAIN_LINE", 0)
    lines = [orjson.dumps({"id": i, "text": ("long " * 80 if i % 9 == 4 else "short") + str(i)}) for i in range(60)]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines))
    assert _outcome(path, workers) == _outcome(path, None)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_truncated_gzip_keeps_the_records_before_the_cut(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(nio, "BLOCK", 256)
    data = gzip.compress(_corpus(400))
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    got = _outcome(path, workers)
    assert got == _outcome(path, None)
    assert got[3] == {"truncated file": 1} and 0 < len(got[0]) < 400
    assert _outcome(path, workers, on_error="fail") == _outcome(path, None, on_error="fail")


def test_block_lines_counts_a_last_line_without_newline():
    assert block_lines(b"a\nb\n") == 2
    assert block_lines(b"a\nb") == 2
    assert block_lines(bytearray(b"\n")) == 1


@pytest.mark.parametrize("html", [False, True])
def test_a_file_source_reads_the_same_batches_on_threads(tmp_path, monkeypatch, html):
    """What the local engine reads (FileSource.read_with): batches, numbering, counters."""
    monkeypatch.setattr(nio, "BLOCK", 512)
    texts = [f"<p>page {i}</p><script>x</script>" if html else f"doc {i}" for i in range(500)]
    a = tmp_path / "a.jsonl"
    a.write_bytes(b"".join(orjson.dumps({"text": t}) + b"\n" for t in texts))
    b = tmp_path / "b.jsonl"
    b.write_bytes(b'{"text": "last"}\n[1]\n')
    options = ReadOptions(on_error="skip", html=html, batch_size=64)

    def read(threads):
        source = FileSource([str(a), str(b)], options)
        batches = [(x.start, x.ids, x.texts) for x in source.read_with(threads)]
        return batches, source.stats

    expected, stats = read(None)
    assert len(expected) == 8 and expected[-1][1][-1] == f"{b}:1"
    for workers in (1, 2, 3):
        with Threads(workers) as threads:
            got, got_stats = read(threads)
        assert got == expected
        assert got_stats == stats


def test_a_dedup_job_over_many_blocks_is_the_same_for_any_worker_count(tmp_path, monkeypatch):
    """End to end, with the input cut into many blocks: ids, clusters, similarities and the
    skip counts do not depend on the number of workers."""
    import numpy as np

    from neardup import dedup

    monkeypatch.setattr(nio, "BLOCK", 2048)
    words = [f"w{i}" for i in range(300)]
    lines = []
    for i in range(400):
        base = [words[(i // 4 * 7 + k * 13) % 300] for k in range(40)]
        if i % 4 == 3:
            base[5] = "changed"
        lines.append(b"not json" if i == 201 else orjson.dumps({"text": " ".join(base)}))
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    results = []
    for workers in (1, 2, 3):
        r = dedup([str(path)], workers=workers, on_error="skip", record_skipped=True)
        s = r.read_stats
        results.append((r.ids, r.root.tolist(), r.similarity.tolist(), s.documents, dict(s.reasons), s.details))
    assert results[0] == results[1] == results[2]
    assert results[0][3] == 399 and results[0][4] == {"malformed JSON": 1}
    assert np.unique(results[0][1]).size < 300  # the edited copies joined their originals


class _Sink:
    def __init__(self) -> None:
        self.data = bytearray()

    def write_bytes(self, data) -> None:
        self.data += data


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("huge", [False, True])
def test_kept_lines_copied_on_threads_are_the_same_bytes(tmp_path, monkeypatch, workers, huge):
    """copy_kept_threaded against copy_kept_jsonl: blank and whitespace lines (not records),
    CRLF, a last line without newline, lines longer than a block, and huge blocks."""
    import numpy as np

    from neardup.io.jsonl_threads import copy_kept_threaded

    monkeypatch.setattr(nio, "BLOCK", 64)
    if huge:
        monkeypatch.setattr(jsonl, "_HUGE_BLOCK", 150)
        monkeypatch.setattr(jsonl, "_PLAIN_LINE", 0)
    rng = np.random.default_rng(3)
    lines = []
    for i in range(300):
        lines.append(
            [b"", b"  \t", b"\r"][i % 3] if i % 11 == 5 else orjson.dumps({"text": "x" * int(rng.integers(1, 200))})
        )
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\r\n".join(lines[:100]) + b"\n" + b"\n".join(lines[100:]))
    records = sum(1 for line in lines if line.strip())
    keep = rng.random(records) < 0.6
    for start, kept in ((0, keep), (5, np.concatenate([np.ones(5, bool), keep]))):
        expected, got = _Sink(), _Sink()
        pol = make_policy("text", None, "fail", None)
        end = jsonl.copy_kept_jsonl(str(path), pol, kept, start, expected)
        with Threads(workers) as threads:
            assert copy_kept_threaded(str(path), pol, kept, start, got, threads) == end == start + records
        assert bytes(got.data) == bytes(expected.data)
    short = keep[:-7]  # fewer keep entries than records: counted, not copied, as without threads
    expected, got = _Sink(), _Sink()
    end = jsonl.copy_kept_jsonl(str(path), pol, short, 0, expected)
    with Threads(workers) as threads:
        assert copy_kept_threaded(str(path), pol, short, 0, got, threads) == end
    assert bytes(got.data) == bytes(expected.data)
