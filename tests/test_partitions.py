"""Input partitions read on their own (io/partitions.py) give read_documents' documents exactly."""

from __future__ import annotations

import gzip
import itertools
import json

import pytest

from neardup.core.errors import InputError
from neardup.io import ReadStats, read_documents
from neardup.io.partitions import (
    FilePart,
    FileSource,
    LinesNeeded,
    ReadOptions,
    locate_range,
    merge_stats,
    split_ranges,
)


def _locate_here(parts):
    return [locate_range(p) for p in parts]


def _read_parts(source: FileSource, target: int, stats: ReadStats | None = None):
    parts = source.parts(target, _locate_here)
    ids, texts, each = [], [], []
    for part in parts:
        s = ReadStats()
        for batch in part.batches(source.options, s):
            ids += batch.ids
            texts += batch.texts
        each.append(s)
    if stats is not None:
        merge_stats(stats, parts, each, source.sources)
    return parts, ids, texts


def _read_all(paths, **kwargs):
    stats = ReadStats()
    ids, texts = [], []
    for batch in read_documents(paths, stats=stats, **kwargs):
        ids += batch.ids
        texts += batch.texts
    return ids, texts, stats


def _jsonl(path, lines: list[str], newline: str = "\n", final: bool = True, bom: bool = False) -> None:
    data = newline.join(lines) + (newline if final else "")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data.encode())


def _records(n: int, with_ids: bool = False) -> list[str]:
    out = []
    for i in range(n):
        rec = {"text": f"document number {i} " + "word " * (i % 17)}
        if with_ids and i % 3 == 0:
            rec["id"] = f"r{i}"
        out.append(json.dumps(rec))
    return out


@pytest.mark.parametrize("target", [1, 2, 3, 7, 50, 400])
@pytest.mark.parametrize("layout", ["plain", "blank lines", "crlf", "no final newline", "bom", "long lines", "ids"])
def test_ranges_of_one_jsonl_file_read_as_the_whole_file(tmp_path, target, layout):
    path = tmp_path / "in.jsonl"
    lines = _records(120, with_ids=layout == "ids")
    if layout == "blank lines":
        lines = [x for i, line in enumerate(lines) for x in ((line, "", "   ") if i % 5 == 0 else (line,))]
        lines = ["", *lines]
    if layout == "long lines":
        lines = [json.dumps({"text": "w " * (3000 * (i % 4))}) for i in range(40)]
    _jsonl(
        path,
        lines,
        newline="\r\n" if layout == "crlf" else "\n",
        final=layout != "no final newline",
        bom=layout == "bom",
    )
    expected_ids, expected_texts, expected_stats = _read_all([str(path)], batch_size=16)
    source = FileSource([str(path)], ReadOptions(batch_size=16))
    stats = ReadStats()
    parts, ids, texts = _read_parts(source, target, stats)
    assert ids == expected_ids
    assert texts == expected_texts
    assert (stats.files, stats.documents, stats.bytes_read) == (1, len(expected_ids), expected_stats.bytes_read)
    assert stats.sources == expected_stats.sources
    if target > 1 and layout != "long lines":
        assert len(parts) > 1, "the file was not split"
    if len(parts) > 1:  # the ranges tile the file
        assert parts[0].begin == 0 and parts[-1].end == path.stat().st_size
        assert all(a.end == b.begin for a, b in itertools.pairwise(parts))


def test_a_range_starting_exactly_at_a_line_start(tmp_path):
    """A cut right after a newline: that line belongs to the range before (the Hadoop rule)."""
    path = tmp_path / "in.jsonl"
    lines = [json.dumps({"text": f"t{i}"}) for i in range(4)]
    _jsonl(path, lines)
    cut = len(lines[0]) + 1  # the first byte of line 2
    first = locate_range(FilePart(0, str(path), "jsonl", 0, cut))
    second = locate_range(FilePart(0, str(path), "jsonl", cut, path.stat().st_size))
    assert first[1] == second[0] == 2 * cut  # line 2 went to the first range
    assert first[2] == 2 and second[2] == 2


def test_errors_name_the_file_and_line_from_any_range(tmp_path):
    path = tmp_path / "in.jsonl"
    lines = _records(200)
    lines[150] = '{"text": broken'
    lines[170] = '{"other": "field"}'
    _jsonl(path, lines)
    source = FileSource([str(path)], ReadOptions(batch_size=16))
    with pytest.raises(InputError) as err:
        _read_parts(source, 8)
    assert err.value.line == 151 and err.value.path == str(path)
    assert str(err.value).startswith(f"{path}:151: malformed JSON")
    _, _, expected = _read_all([str(path)], on_error="skip")
    stats = ReadStats()
    skipping = FileSource([str(path)], ReadOptions(on_error="skip", batch_size=16))
    _, ids, _ = _read_parts(skipping, 8, stats)
    assert (
        (stats.skipped, dict(stats.reasons))
        == (expected.skipped, dict(expected.reasons))
        == (
            2,
            {"malformed JSON": 1, "missing text field": 1},
        )
    )
    assert ids == _read_all([str(path)], on_error="skip")[0]


def test_an_input_error_pickles_whole():
    import pickle

    err = InputError("a.jsonl", 7, "bad thing", reason="malformed JSON")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.line, back.message, back.reason, str(back)) == (
        "a.jsonl",
        7,
        "bad thing",
        "malformed JSON",
        "a.jsonl:7: bad thing",
    )


def test_many_files_and_formats_one_partition_each_except_large_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "d").mkdir()
    _jsonl(tmp_path / "d" / "a.jsonl", _records(300))
    with gzip.open(tmp_path / "d" / "b.jsonl.gz", "wt") as f:
        f.write("\n".join(_records(50)) + "\n")
    (tmp_path / "d" / "c.csv").write_text('id,text\n1,"a csv\nrecord"\n2,another\n')
    pq.write_table(pa.table({"text": ["p1", "p2", "p3"]}), tmp_path / "d" / "e.parquet")
    _jsonl(tmp_path / "d" / "f.jsonl", _records(5))
    expected_ids, expected_texts, expected_stats = _read_all([str(tmp_path / "d")], batch_size=32)
    source = FileSource([str(tmp_path / "d")], ReadOptions(batch_size=32))
    stats = ReadStats()
    parts, ids, texts = _read_parts(source, 10, stats)
    assert (ids, texts) == (expected_ids, expected_texts)
    assert stats.sources == expected_stats.sources
    assert stats.files == expected_stats.files == 5
    kinds = [(p.path.rsplit("/", 1)[-1], p.end is None) for p in parts]
    assert sum(name == "a.jsonl" for name, _ in kinds) > 1
    assert [name for name, whole in kinds if whole] == ["b.jsonl.gz", "c.csv", "e.parquet", "f.jsonl"]


def test_split_ranges_sizes_partitions_by_the_input_bytes(tmp_path):
    big, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    big.write_bytes(b"x" * 9000)
    small.write_bytes(b"x" * 1000)
    parts = split_ranges([(str(big), "jsonl"), (str(small), "jsonl")], 10)
    assert [(p.source, p.begin, p.end) for p in parts] == [(0, 1000 * i, 1000 * (i + 1)) for i in range(9)] + [
        (1, 0, None)
    ]


def _located_without_lines(parts):
    return [locate_range(p, lines=False) for p in parts]


def _run_here(fn, items):
    return [fn(item) for item in items]


def _read_each(parts, options):
    """Each part's ids, or LinesNeeded when reading it raised that."""
    out = []
    for part in parts:
        try:
            out.append([i for b in part.batches(options, ReadStats()) for i in b.ids])
        except LinesNeeded:
            out.append(LinesNeeded)
    return out


def test_ranges_of_records_with_ids_are_read_without_their_line_numbers(tmp_path):
    """Not counted, a range after a file's first has no first line number; records that all
    have ids never need it, and the parts give the whole file's documents."""
    path = tmp_path / "in.jsonl"
    _jsonl(path, [json.dumps({"id": f"r{i}", "text": f"text {i} " + "w " * (i % 9)}) for i in range(300)])
    expected_ids, expected_texts, _ = _read_all([str(path)], batch_size=16)
    source = FileSource([str(path)], ReadOptions(batch_size=16))
    parts = source.parts(6, _located_without_lines)
    assert len(parts) == 6 and parts[0].first_line == 1
    assert all(p.first_line is None for p in parts[1:])
    _, ids, texts = _read_parts_with(parts, source.options)
    assert (ids, texts) == (expected_ids, expected_texts)


def _read_parts_with(parts, options):
    ids, texts = [], []
    for part in parts:
        for batch in part.batches(options, ReadStats()):
            ids += batch.ids
            texts += batch.texts
    return parts, ids, texts


@pytest.mark.parametrize("bad", ["malformed", "no id", "no text"])
def test_a_range_that_needs_its_line_numbers_says_so_and_reads_exactly_once_numbered(tmp_path, bad):
    """A record that needs its line number (a bad line, named in its error; a record without an
    id, whose id is FILE:LINE) in a range read without it raises LinesNeeded; numbered by
    number_lines, the ranges give the error's exact line and the whole file's ids."""
    path = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"r{i}", "text": f"text {i}"}) for i in range(300)]
    lines.insert(40, "")  # a blank line shifts the later line numbers
    lines[250] = {"malformed": '{"id": "x", "text": oops', "no id": '{"text": "no id here"}'}.get(bad, '{"id": "y"}')
    _jsonl(path, lines)
    source = FileSource([str(path)], ReadOptions(batch_size=16))
    parts = source.parts(6, _located_without_lines)
    hit = next(k for k, p in enumerate(parts) if p.begin <= sum(len(x) + 1 for x in lines[:250]) < p.end)
    assert hit > 0
    each = _read_each(parts, source.options)
    assert [k for k, got in enumerate(each) if got is LinesNeeded] == [hit]
    numbered = source.number_lines(parts, _run_here)
    assert [p.first_line for p in numbered] == [p.first_line for p in source.parts(6, _locate_here)]
    if bad == "no id":
        expected_ids, _, _ = _read_all([str(path)], batch_size=16)
        assert _read_parts_with(numbered, source.options)[1] == expected_ids
        assert f"{path}:251" in expected_ids
        return
    with pytest.raises(InputError) as err:
        _read_parts_with(numbered, source.options)
    assert (err.value.path, err.value.line) == (str(path), 251)


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"a\nbb\nccc\n",
        b"\xef\xbb\xbfa\nbb\n",
        b"no final newline\nlast",
        b"x" * 300 + b"\n" + b"y\n" * 40 + b"z" * 500,
        b"\r\n".join(b"line %d " % i + b"w" * (i % 37) for i in range(200)) + b"\r\n",
    ],
)
def test_reused_blocks_are_raw_blocks(monkeypatch, data, block):
    """Blocks read into reused buffers are raw_blocks' blocks (a long line included: the buffer
    grows), with the same byte count; each is taken before the next is read."""
    import io

    from neardup.io import streams
    from neardup.io.policy import make_policy

    monkeypatch.setattr(streams, "BLOCK", block)
    found = {}
    for fn in (streams.raw_blocks, streams.reused_blocks):
        stats = ReadStats()
        pol = make_policy("text", None, "fail", stats)
        found[fn.__name__] = ([bytes(b) for b in fn(io.BytesIO(data), "x", pol)], stats.bytes_read)
    assert found["reused_blocks"] == found["raw_blocks"]
    assert b"".join(found["raw_blocks"][0]) == data.removeprefix(b"\xef\xbb\xbf")


def test_reused_blocks_survive_a_view_of_the_last_block_held_elsewhere(monkeypatch):
    """A view of a block that something else holds for a while (as a frame kept alive holds the
    parser's ``memoryview``) must neither fail the read (``BufferError`` when the reused buffer
    is resized) nor see its bytes change (the next block of the same length, written in place);
    the blocks are raw_blocks' blocks."""
    import io
    from itertools import pairwise

    from neardup.io import streams
    from neardup.io.policy import make_policy

    monkeypatch.setattr(streams, "BLOCK", 64)
    data = b"".join(b"line %d " % i + b"w" * (i * 7 % 53) + b"\n" for i in range(300))
    data += b"".join(b"%015d\n" % i for i in range(100))  # 16-byte lines: blocks of one length
    pol = make_policy("text", None, "fail", ReadStats())
    expected = [bytes(b) for b in streams.raw_blocks(io.BytesIO(data), "x", pol)]
    got, held = [], []
    for block in streams.reused_blocks(io.BytesIO(data), "x", make_policy("text", None, "fail", ReadStats())):
        for view, before in held:  # the views still held see the bytes they saw
            assert bytes(view) == before
        got.append(bytes(block))
        held = [*held[-2:], (memoryview(block), got[-1])]  # the last three blocks' views
    assert got == expected
    lengths = [len(b) for b in got]
    assert len(set(lengths)) > 1, "blocks of several lengths: the buffer is resized"
    assert any(a == b for a, b in pairwise(lengths)), "and of equal ones: it is not"


@pytest.mark.parametrize("batch_size", [3, 7, 1000])
def test_a_part_read_with_utf8_texts_gives_packed_spans_of_the_same_texts(tmp_path, batch_size):
    """The Dask engine's workers read a MinHash plan's partitions with ``utf8_texts``: the texts
    of blocks the scanner reads whole come as packed UTF-8 spans (no ``str``), batched as the
    ``str`` reading batches them, with the same texts, ids and counts."""
    from dataclasses import replace

    from neardup.text.utf8 import PackedTexts, TextRuns

    path = tmp_path / "in.jsonl"
    texts = [f"Text number {i}, naïve café — {'x' * (i % 5)}" for i in range(40)] + ['with "quotes" \\ and \n']
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    size = path.stat().st_size
    plain = FilePart(0, str(path), "jsonl", 0, size, options=ReadOptions(batch_size=batch_size))
    packed = replace(plain, options=replace(plain.options, utf8_texts=True))
    (want, want_stats), (got, got_stats) = plain.load(), packed.load()
    assert [b.ids for b in got] == [b.ids for b in want] and [b.start for b in got] == [b.start for b in want]
    assert (
        [list(b.texts) for b in got]
        == [list(b.texts) for b in want]
        == [texts[i : i + batch_size] for i in range(0, 41, batch_size)]
    )
    assert all(type(b.texts) in (PackedTexts, TextRuns) for b in got)
    assert all(type(b.texts) is list for b in want)
    assert got_stats.documents == want_stats.documents == 41
