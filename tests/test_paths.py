"""Inputs as users write them (:mod:`neardup.io.paths`): folders of shards, globs, ``-``,
``--input-format`` and fsspec URLs (the memory filesystem, and a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import csv
import functools
import gzip
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from neardup.core.errors import InputError
from neardup.io import read_documents, write_kept
from neardup.io.paths import expand_inputs

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _records(tag: str, n: int = 3) -> list[dict]:
    return [{"id": f"{tag}-{i}", "text": f"document {tag} number {i} with a few words"} for i in range(n)]


def _jsonl(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _ids(paths, **kw) -> list[str]:
    return [i for batch in read_documents(paths, **kw) for i in batch.ids]


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    """A folder with one shard of every format, nested, plus metadata files that are not data."""
    root = tmp_path / "shards"
    (root / "b" / "c").mkdir(parents=True)
    (root / "a.jsonl").write_bytes(_jsonl(_records("a")))
    (root / "b" / "d.jsonl.gz").write_bytes(gzip.compress(_jsonl(_records("d"))))
    (root / "b" / "c" / "e.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(_jsonl(_records("e"))))
    pq.write_table(pa.Table.from_pylist(_records("f")), root / "b" / "f.parquet")
    with open(root / "g.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["id", "text"])
        w.writeheader()
        w.writerows(_records("g"))
    table = pa.Table.from_pylist(_records("h"))
    with pa.ipc.new_file(root / "h.arrow", table.schema) as w:
        w.write_table(table)
    (root / "dataset_info.json").write_text('{"not": "data"}')
    (root / "_SUCCESS").write_text("")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.jsonl").write_bytes(_jsonl(_records("x")))
    return root


def test_folder_of_shards_is_read_recursively_in_sorted_order(shards):
    sources = expand_inputs([str(shards)])
    assert [Path(p).name for p, _ in sources] == [
        "a.jsonl",
        "e.jsonl.zst",
        "d.jsonl.gz",
        "f.parquet",
        "g.csv",
        "h.arrow",
    ]
    assert [f for _, f in sources] == ["jsonl", "jsonl", "jsonl", "parquet", "csv", "arrow"]
    assert _ids([str(shards)]) == [f"{t}-{i}" for t in "aedfgh" for i in range(3)]


def test_glob_and_no_match(shards):
    assert _ids([str(shards / "**" / "*.jsonl*")]) == [f"{t}-{i}" for t in "aed" for i in range(3)]
    with pytest.raises(InputError, match="no file matches"):
        expand_inputs([str(shards / "*.nothing")])


def test_folder_with_shards_and_documents_is_refused(shards):
    (shards / "note.txt").write_text("a text document")
    with pytest.raises(InputError, match="both data shards"):
        expand_inputs([str(shards)])


def test_text_folder_still_reads_documents(tmp_path):
    (tmp_path / "one.txt").write_text("first document")
    assert expand_inputs([str(tmp_path)]) == [(str(tmp_path), "txtdir")]


def test_input_format_overrides_the_extension(tmp_path):
    p = tmp_path / "data.txt"  # alone, a .txt file is one document; --input-format reads it as JSONL
    p.write_bytes(_jsonl(_records("o")))
    assert _ids([str(p)], input_format="jsonl") == ["o-0", "o-1", "o-2"]
    assert expand_inputs([str(p)]) == [(str(p), "txtdir")]
    q = tmp_path / "data.dat"
    q.write_bytes(_jsonl(_records("o")))
    assert _ids([str(q)], input_format="jsonl") == ["o-0", "o-1", "o-2"]
    with pytest.raises(InputError, match="unknown input format"):
        expand_inputs([str(q)])
    with pytest.raises(ValueError, match="input_format must be one of"):
        expand_inputs([str(p)], "xml")


def test_hugging_face_save_to_disk_folder(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(_records("hf", 5))
    ds.save_to_disk(str(tmp_path / "ds"))
    assert _ids([str(tmp_path / "ds")]) == [f"hf-{i}" for i in range(5)]


def test_arrow_input_to_parquet_output_keeps_the_schema(shards, tmp_path):
    out = tmp_path / "kept.parquet"
    path = str(shards / "h.arrow")
    n = write_kept([path], [True, False, True], str(out))
    assert n == 2
    table = pq.read_table(out)
    assert table.column("id").to_pylist() == ["h-0", "h-2"]


def test_memory_filesystem_file_folder_and_glob():
    fs = fsspec.filesystem("memory")
    fs.pipe("/neardup-test/in/p1.jsonl", _jsonl(_records("m1")))
    fs.pipe("/neardup-test/in/sub/p2.jsonl.gz", gzip.compress(_jsonl(_records("m2"))))
    buf = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(_records("m3")), buf)
    fs.pipe("/neardup-test/in/sub/p3.parquet", buf.getvalue().to_pybytes())
    try:
        assert _ids(["memory://neardup-test/in/p1.jsonl"]) == ["m1-0", "m1-1", "m1-2"]
        assert _ids(["memory://neardup-test/in"]) == [f"m{k}-{i}" for k in (1, 2, 3) for i in range(3)]
        assert _ids(["memory://neardup-test/in/**/*.parquet"]) == ["m3-0", "m3-1", "m3-2"]
        with pytest.raises(InputError, match="no such file"):
            expand_inputs(["memory://neardup-test/missing.jsonl"])
    finally:
        fs.rm("/neardup-test", recursive=True)


@pytest.mark.parametrize(("url", "package"), [("s3://bucket/data.jsonl", "s3fs"), ("gs://bucket/x.parquet", "gcsfs")])
def test_missing_filesystem_package_is_named(url, package, monkeypatch):
    monkeypatch.setitem(sys.modules, package, None)  # absent even where it is installed: its import fails
    registered = sys.modules["fsspec.registry"]._registry  # (fsspec.registry is its read-only view)
    monkeypatch.delitem(registered, url.split("://")[0], raising=False)  # nor imported already
    with pytest.raises(InputError, match=package):
        expand_inputs([url])


def test_unknown_protocol_is_refused():
    with pytest.raises(InputError, match="nosuchfs"):
        expand_inputs(["nosuchfs://x/data.jsonl"])


@pytest.fixture
def http_root(tmp_path):
    """A real HTTP server on 127.0.0.1 serving ``tmp_path``."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))

    class Quiet(handler.func):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_url(http_root):
    pytest.importorskip("aiohttp")
    root, url = http_root
    (root / "docs.jsonl.gz").write_bytes(gzip.compress(_jsonl(_records("w"))))
    pq.write_table(pa.Table.from_pylist(_records("q")), root / "docs.parquet")
    assert _ids([f"{url}/docs.jsonl.gz"]) == ["w-0", "w-1", "w-2"]
    assert _ids([f"{url}/docs.parquet"]) == ["q-0", "q-1", "q-2"]
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([f"{url}/missing.jsonl"])


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", *args, "-q"], input=stdin, capture_output=True, env=env, timeout=120
    )


def test_stdin_to_stdout_gives_the_same_records_as_files(tmp_path):
    recs = _records("s", 4) + [{"id": "dup", "text": "document s number 1 with a few words"}]
    data = _jsonl(recs)
    (tmp_path / "in.jsonl").write_bytes(data)
    piped = _cli("-", "--input-format", "jsonl", "-o", "-", "--method", "exact", stdin=data)
    assert piped.returncode == 0, piped.stderr
    files = _cli(str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--method", "exact")
    assert files.returncode == 0, files.stderr
    assert piped.stdout == (tmp_path / "out.jsonl").read_bytes()
    assert [json.loads(line)["id"] for line in piped.stdout.splitlines()] == ["s-0", "s-1", "s-2", "s-3"]


def test_stdin_without_input_format_fails_clearly():
    r = _cli("-", "-o", "-", stdin=b"")
    assert r.returncode == 1
    assert b"--input-format" in r.stderr
