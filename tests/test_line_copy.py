"""copy_kept_lines and the all_valid copy path of write_kept against a per-line reference."""

from __future__ import annotations

import gzip

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io import streams as nio
from neardup.io.jsonl import copy_kept_lines
from neardup.io.write import write_kept

WS = b" \t\r\x0b\x0c"


def reference(block: bytes, keep: np.ndarray, start: int) -> tuple[bytes, int]:
    """The kept non-blank lines of ``block`` (``bytes.isspace`` blanks), each with its newline."""
    lines = block.split(b"\n")
    if not lines[-1]:
        lines.pop()
    out, rec = [], start
    for line in lines:
        if not line or line.isspace():
            continue
        if rec < len(keep) and keep[rec]:
            out.append(line + b"\n")
        rec += 1
    return b"".join(out), rec


lines_st = st.lists(
    st.one_of(
        st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
        st.text(alphabet=[chr(c) for c in WS], max_size=4).map(str.encode),
        st.just(b'{"text": "a"}\r'),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(lines_st, st.booleans(), st.integers(0, 3), st.data())
def test_copy_kept_lines_equals_reference(lines, final_newline, start, data):
    block = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=start, max_size=start + 40)), dtype=bool)
    out = np.empty(len(block) + 1, dtype=np.uint8)
    n, nxt = copy_kept_lines(block, keep, start, out)
    want, want_next = reference(block, keep, start)
    assert bytes(out[:n]) == want
    assert nxt == want_next


def test_write_kept_fast_path_across_blocks_and_compression(tmp_path, monkeypatch):
    """Lines longer than a read block, a line cut by the block boundary, a BOM, CRLF endings,
    no final newline and gzip input all copy like the parsing path."""
    monkeypatch.setattr(nio, "BLOCK", 64)
    records = [orjson.dumps({"id": i, "text": "word " * (i % 7) * 9}) for i in range(40)]
    raw = b"\xef\xbb\xbf" + b"\r\n".join(records[:10]) + b"\r\n\n \n" + b"\n".join(records[10:])
    for name, payload in (("in.jsonl", raw), ("in.jsonl.gz", gzip.compress(raw))):
        src = tmp_path / name
        src.write_bytes(payload)
        keep = np.arange(40) % 3 != 1
        n1 = write_kept([src], keep, tmp_path / "slow.jsonl")
        n2 = write_kept([src], keep, tmp_path / "fast.jsonl", all_valid=True)
        assert n1 == n2 == int(keep.sum())
        assert (tmp_path / "slow.jsonl").read_bytes() == (tmp_path / "fast.jsonl").read_bytes()
        kept_lines = (tmp_path / "fast.jsonl").read_bytes().split(b"\n")[:-1]
        assert [orjson.loads(x)["id"] for x in kept_lines] == np.flatnonzero(keep).tolist()
