"""read_documents' kernel path for JSONL (neardup.jsonl_scan), and its Python tier, against the orjson path.

The orjson path (``_scan(..., full=True)``, which write_kept uses) is the reference: for any
file, both must give the same records, in the same order, the same skip counts by reason, and
raise the same first error (file and line) with on_error="fail".
"""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.jsonl import SCAN_WARMUP
from neardup.core.errors import InputError
from neardup.io import streams as nio
from neardup.io.jsonl import scan_jsonl
from neardup.io.policy import make_policy


def scan_both(path, **kw):
    """(kernel path, orjson path) results of reading ``path``; the kernel path's Python tier (the
    scanner not compiled yet: orjson line by line, :data:`SCAN_WARMUP`) must equal the first."""
    results = []
    for full, kernel in ((False, True), (True, None), (False, False)):
        pol = make_policy(kw.get("text_field", "text"), kw.get("id_field"), kw.get("on_error", "skip"), None)
        SCAN_WARMUP.pin(kernel)
        try:
            chunks = list(scan_jsonl(str(path), pol, full))
        except InputError as exc:
            results.append(("error", str(exc)))
            continue
        finally:
            SCAN_WARMUP.pin(True)
        ids = [d for c in chunks for d in c.ids]
        texts = [t for c in chunks for t in c.texts]
        results.append((ids, texts, pol.stats.skipped, dict(pol.stats.reasons)))
    assert results[2] == results[0]
    return results[:2]


scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=False), st.text(max_size=8)
)
values = st.recursive(
    scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=6
)
records = st.dictionaries(st.sampled_from(["text", "id", "key", "body", "te\\u0078t"]), values, max_size=4)


def render(rec, style):
    if style == 0:
        try:
            return orjson.dumps(rec)
        except TypeError:  # integers beyond 64 bits
            pass
    return json.dumps(rec, ensure_ascii=style == 1, separators=(", ", ": ") if style == 2 else None).encode()


line_st = st.one_of(
    st.tuples(records, st.integers(0, 2)).map(lambda r: render(*r)),
    st.tuples(st.text(max_size=30), st.one_of(st.none(), st.text(max_size=6), st.integers())).map(
        lambda t: json.dumps({"id": t[1], "text": t[0]}, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ),
    st.sampled_from(
        [
            b"",
            b"   ",
            b"\t\r",
            b"[1, 2]",
            b"42",
            b'"text"',
            b"{",
            b'{"text": "a"',
            b'{"text": "\xff"}',
            b'{"text": "\\ud800"}',
            b'{"text": 1e400}',
            b'{"id": 1e400, "text": "x"}',
            b'{"text": "a", "text": "b"}',
            b'{"id": -0, "text": "z"}',
            b'{"id": 1.5, "text": "f"}',
            b'{"id": true, "text": "t"}',
            b'{"text": "\xc3\xa9\\n\\"q\\u00e9\\ud83d\\ude00"}\r',
            b'{"t\\u0065xt": "escaped key"}',
            b'{"a": {"text": "nested"}, "text": "top"}',
        ]
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(line_st, max_size=25),
    st.booleans(),
    st.sampled_from([None, "key"]),
    st.sampled_from(["text", "body"]),
    st.sampled_from(["skip", "fail"]),
)
def test_kernel_path_equals_orjson_path(tmp_path_factory, lines, final_newline, id_field, text_field, on_error):
    path = tmp_path_factory.mktemp("fast") / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    fast, slow = scan_both(path, id_field=id_field, text_field=text_field, on_error=on_error)
    assert fast == slow


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_kernel_path_across_block_sizes(tmp_path, monkeypatch, block):
    """Lines cut by block boundaries, a BOM and CRLF endings read alike; line numbers in ids and
    errors count from the start of the file, not of the block."""
    monkeypatch.setattr(nio, "BLOCK", block)
    lines = [orjson.dumps({"text": f"doc {i} " + "é" * (i % 5)}) for i in range(40)]
    lines[17] = b'{"text": oops}'
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\r\n\n")
    fast, slow = scan_both(path)
    assert fast == slow
    assert fast[0][:2] == [f"{path}:1", f"{path}:2"] and fast[0][17] == f"{path}:19"
    assert fast[2] == 1
    fast, slow = scan_both(path, on_error="fail")
    assert fast == slow and fast[0] == "error" and ":18:" in fast[1]
