"""Tests of the JSON Lines scan kernel against orjson, the reference it must never contradict.

The central property, checked on every line of every block: a line the kernel calls OK is one
``orjson.loads`` accepts as a dict whose text and id equal the kernel's; a line it calls BLANK
is empty or ASCII whitespace (and the other way round). Lines come from random JSON values
written by several serializers (including one that escapes and spaces at random and writes
duplicate keys and bad number tokens), from byte mutations of valid lines, and from a list of
orjson's edge cases. A second property keeps the fallback rare: typical records are OK.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup._kernels.jsonl import BLANK, FALLBACK, ID_ABSENT_OR_NULL, ID_INTEGER, ID_STRING, MAX_DEPTH, OK
from neardup.io.jsonl_scan import line_values, scan_block

GENERATOR = Path(__file__).resolve().parent.parent / "examples" / "generate_corpus.py"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------
# The property


def block_lines(data: bytes) -> list[bytes]:
    """The lines of a block as the reader splits it: a final newline starts no line."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def check_block(data: bytes, text_key: str = "text", id_key: str = "id"):
    """Scan ``data`` and check every line against orjson; returns the statuses."""
    result = scan_block(np.frombuffer(data, dtype=np.uint8), text_key.encode(), id_key.encode())
    lines = block_lines(data)
    assert len(result.status) == len(lines)
    for i, line in enumerate(lines):
        assert data[result.line_start[i] : result.line_end[i]] == line
        check_line(result, data, i, line, text_key, id_key)
    return result.status.tolist()


def check_line(result, data: bytes, i: int, line: bytes, text_key: str, id_key: str) -> None:
    status = result.status[i]
    assert (status == BLANK) == (not line or line.isspace()), line
    if status != OK:
        assert status in (BLANK, FALLBACK)
        return
    obj = orjson.loads(line)
    assert type(obj) is dict, line
    text, ident = line_values(result, data, i)
    assert type(obj.get(text_key)) is str and obj[text_key] == text, line
    expected = obj.get(id_key)
    kind = result.id_kind[i]
    if expected is None:
        assert kind == ID_ABSENT_OR_NULL and ident is None, line
    elif kind == ID_STRING:
        assert type(expected) is str and expected == ident, line
    else:
        assert kind == ID_INTEGER and type(expected) is int and str(expected) == ident, line


def statuses(*lines: bytes, text_key: str = "text", id_key: str = "id") -> list[int]:
    return check_block(b"\n".join(lines), text_key, id_key)


# --------------------------------------------------------------------------------------------
# A serializer that writes any valid spelling, and some invalid ones


class Raw(str):
    """A token written verbatim (numbers orjson rejects or reads differently, bad literals)."""


def dump(value, rnd: random.Random, style: str) -> str:
    """JSON text of ``value``: style "plain" escapes only what must be escaped, "ascii" also
    every non-ASCII character, "random" escapes characters at random; whitespace is random."""
    if isinstance(value, Raw):
        return value
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return dump_str(value, rnd, style)
    if isinstance(value, list):
        items = [dump(v, rnd, style) for v in value]
        return "[" + space(rnd) + (space(rnd) + "," + space(rnd)).join(items) + space(rnd) + "]"
    members = [dump_str(k, rnd, style) + space(rnd) + ":" + space(rnd) + dump(v, rnd, style) for k, v in value.items()]
    return "{" + space(rnd) + (space(rnd) + "," + space(rnd)).join(members) + space(rnd) + "}"


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def dump_str(s: str, rnd: random.Random, style: str) -> str:
    parts = []
    for ch in s:
        cp = ord(ch)
        escape = cp < 0x20 or ch in '"\\'
        if style == "ascii":
            escape = escape or cp >= 0x80
        elif style == "random":
            escape = escape or rnd.random() < 0.2
        if not escape:
            parts.append(ch)
        elif ch in _SHORT and rnd.random() < 0.7:
            parts.append(_SHORT[ch])
        elif ch == "/" and rnd.random() < 0.5:
            parts.append("\\/")
        else:
            parts.append(unicode_escape(cp, rnd))
    return '"' + "".join(parts) + '"'


def unicode_escape(cp: int, rnd: random.Random) -> str:
    """``\\uXXXX`` (a surrogate pair above U+FFFF), hex digits in random case."""
    if cp > 0xFFFF:
        cp -= 0x10000
        return unicode_escape(0xD800 + (cp >> 10), rnd) + unicode_escape(0xDC00 + (cp & 0x3FF), rnd)
    digits = f"{cp:04x}"
    return "\\u" + "".join(d.upper() if rnd.random() < 0.5 else d for d in digits)


def space(rnd: random.Random) -> str:
    if rnd.random() < 0.75:
        return ""
    return "".join(rnd.choice(" \t\r") for _ in range(rnd.randint(1, 3)))


def encode(text: str) -> bytes:
    """UTF-8, lone surrogates written as (invalid) 3-byte sequences."""
    return text.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------------------------
# Strategies

any_char = st.characters(codec=None) | st.sampled_from('"\\/\x00\x1f\x7f\U0001f600')
strings = (
    st.text(any_char, max_size=12)
    | st.text(max_size=40)
    | st.text(any_char | st.characters(categories=["Cs"]), max_size=4)  # lone surrogates
)
clean_strings = st.text(max_size=60)
numbers = (
    st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(
        [
            "-0",
            "0",
            "-0.0",
            "1e400",
            "-1E400",
            "1e-400",
            "1.8e308",
            "1e308",
            "12e299",
            "1e+2",
            "0.5E-3",
            "01",
            "1.",
            ".5",
            "+1",
            "-",
            "1e",
            "1e+",
            "NaN",
            "Infinity",
            "-Infinity",
            "tru",
            "nul",
            "falsey",
            "0x10",
            "1_000",
            "123456789012345678",
            "1234567890123456789",
            "18446744073709551616",
            "1" + "0" * 301,
        ]
    ).map(Raw)
)
scalars = st.none() | st.booleans() | numbers | strings
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(strings, children, max_size=4),
    max_leaves=12,
)
typical_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | clean_strings
    | st.floats(min_value=-1e250, max_value=1e250, allow_nan=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(clean_strings, children, max_size=4),
    max_leaves=10,
)
plain_keys = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\'), max_size=10)
keys = plain_keys | st.sampled_from(["text", "id", "Text", "text ", "te\\u0078t", "i\\u0064", "t", "idx", ""]) | strings


@st.composite
def records(draw):
    """A top-level object's (key, value) members, keys possibly repeated: other fields, 0-2
    text keys, 0-2 id keys. Keys holding ``\\u`` are written as they are (escaped keys)."""
    pairs = draw(st.lists(st.tuples(keys, typical_values | json_values), max_size=4))
    text_values = st.one_of(strings, strings, json_values)
    id_values = st.one_of(strings, st.integers(-(10**18), 10**18), st.none(), json_values)
    for key, values in (("text", text_values), ("id", id_values)):
        count = draw(st.sampled_from([0, 1, 1, 1, 1, 2]))
        for _ in range(count):
            pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(values)))
    return pairs


def dump_record(pairs: list, rnd: random.Random, style: str) -> str:
    """A top-level object of ``records``, with spaces around it."""
    members = []
    for key, value in pairs:
        key_style = style if rnd.random() < 0.2 else "plain"
        key_json = '"' + key + '"' if "\\u" in key else dump_str(key, rnd, key_style)
        members.append(key_json + space(rnd) + ":" + space(rnd) + dump(value, rnd, style))
    return space(rnd) + "{" + space(rnd) + ",".join(members) + space(rnd) + "}" + space(rnd)


# --------------------------------------------------------------------------------------------
# Property tests


@SETTINGS
@given(
    st.lists(st.tuples(records(), st.sampled_from(["plain", "ascii", "random"]), st.randoms()), min_size=1, max_size=6),
    st.booleans(),
)
def test_records_agree_with_orjson(items, final_newline):
    lines = [encode(dump_record(rec, rnd, style)) for rec, style, rnd in items]
    check_block(b"\n".join(lines) + (b"\n" if final_newline else b""))


@SETTINGS
@given(json_values, st.randoms())
def test_any_top_level_value_agrees_with_orjson(value, rnd):
    check_block(encode(dump(value, rnd, rnd.choice(["plain", "ascii", "random"]))))


@st.composite
def typical_records(draw):
    """Records the kernel must accept: top-level keys need no escape in any serializer."""
    record = draw(st.dictionaries(plain_keys.filter(lambda k: k not in ("text", "id")), typical_values, max_size=5))
    record["text"] = draw(clean_strings)
    ident = draw(st.none() | clean_strings | st.integers(-(10**18) + 1, 10**18 - 1) | st.just("absent"))
    if ident != "absent":
        record["id"] = ident
    items = list(record.items())
    draw(st.randoms()).shuffle(items)
    return dict(items)


SERIALIZERS = [
    orjson.dumps,
    lambda obj: json.dumps(obj).encode(),
    lambda obj: json.dumps(obj, ensure_ascii=False).encode(),
    lambda obj: json.dumps(obj, ensure_ascii=False, separators=(",", ":"), indent=None).encode(),
]


@SETTINGS
@given(st.lists(typical_records(), min_size=1, max_size=5), st.sampled_from(range(len(SERIALIZERS))))
def test_typical_records_are_ok(recs, serializer):
    data = b"\n".join(SERIALIZERS[serializer](r) for r in recs) + b"\n"
    assert check_block(data) == [OK] * len(recs)


_INTERESTING = b'"\\{}[],:0123456789-+.eEu tfn\x00\x01\x1f\x7f\x80\xbf\xc0\xc2\xe0\xed\xef\xf0\xf4\xf5\xff\r\t\x0b'


def mutate(line: bytes, rnd: random.Random) -> bytes:
    """``line`` with 1-3 random byte flips, insertions, deletions or a truncation."""
    b = bytearray(line)
    for _ in range(rnd.randint(1, 3)):
        op = rnd.randrange(5)
        pos = rnd.randrange(len(b) + 1)
        byte = rnd.choice(_INTERESTING) if rnd.random() < 0.7 else rnd.randrange(256)
        if op == 0 and pos < len(b):
            b[pos] = byte
        elif op == 1:
            b.insert(pos, byte)
        elif op == 2 and pos < len(b):
            del b[pos]
        elif op == 3:
            del b[pos:]
        elif pos < len(b):
            b[pos] ^= 1 << rnd.randrange(8)
    return bytes(b)


SEED_LINES = [
    b'{"id":"doc-1","title":"A \\"quoted\\" title","text":"line one\\nline two \\u00e9\\ud83d\\ude00 \xc3\xa9\xf0\x9f\x98\x80","n":[1,-2.5e-3,true,false,null,{"a":{}}]}',
    b'{"text": "x\\\\y\\/z\\b\\f\\r\\t", "id": 12345, "meta": {"text": 1, "id": [1, 2]}}',
    b'{"id":null,"text":"\xe2\x82\xac\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf","x":0.0}',
]


@pytest.mark.parametrize("seed", range(4))
def test_mutated_lines_agree_with_orjson(seed):
    rnd = random.Random(seed)
    lines = [mutate(rnd.choice(SEED_LINES), rnd) for _ in range(3000)]
    check_block(b"\n".join(lines))


@SETTINGS
@given(st.lists(typical_records(), min_size=1, max_size=3), st.randoms())
def test_mutated_typical_lines_agree_with_orjson(recs, rnd):
    lines = [mutate(orjson.dumps(r), rnd) for r in recs for _ in range(5)]
    check_block(b"\n".join(lines))


# --------------------------------------------------------------------------------------------
# Targeted cases


@pytest.mark.parametrize(
    "line",
    [
        b'{"text":"a\\ud800"}',  # lone high surrogate
        b'{"text":"a\\udc00"}',  # lone low surrogate
        b'{"text":"a\\ud800\\u0041"}',  # high surrogate then not a low one
        b'{"text":"a\\ud800\\"}',
        b'{"text":"\xed\xa0\x80"}',  # UTF-8 encoded surrogate
        b'{"text":"\xc0\x80"}',  # overlong NUL
        b'{"text":"\xe0\x9f\xbf"}',  # overlong 3-byte
        b'{"text":"\xf0\x8f\xbf\xbf"}',  # overlong 4-byte
        b'{"text":"\xf4\x90\x80\x80"}',  # above U+10FFFF
        b'{"text":"\xe2\x82"}',  # truncated sequence
        b'{"text":"\x80"}',  # stray continuation byte
        b'{"text":"a\x1fb"}',  # raw control character
        b'{"text":"a\tb"}',
        b'{"text":"\\x41"}',  # invalid escape
        b'{"text":"\\u00g0"}',
        b'{"text":"abc',  # unterminated
        b'{"text":"abcdefghijklmnopqrstuvwxyz',
        b'{"text":"a","x":1e400}',  # orjson: number is infinity
        b'{"text":"a","x":-1E400}',
        b'{"text":"a","x":1.8e308}',
        b'{"text":"a","x":NaN}',
        b'{"text":"a","x":Infinity}',
        b'{"text":"a","x":01}',
        b'{"text":"a","x":1.}',
        b'{"text":"a","x":.5}',
        b'{"text":"a","x":+1}',
        b'{"text":"a","x":tru}',
        b'{"text":"a",}',
        b'{"text":"a" "x":1}',
        b'{"text":"a"}}',
        b'{"text":"a"} x',
        b'{"text":"a"}\x0b',
        b'\x0c{"text":"a"}',
        b'\xef\xbb\xbf{"text":"a"}',  # a BOM (the reader strips it from the first line only)
        b'{"id":-0,"text":"a"}',  # str(orjson's value) is "0"
        b'{"id":123456789012345678901234567890,"text":"a"}',  # orjson: a float
        b'{"id":18446744073709551616,"text":"a"}',
        b'{"id":1.5,"text":"a"}',
        b'{"id":1e2,"text":"a"}',
        b'{"id":true,"text":"a"}',
        b'{"id":{"a":1},"text":"a"}',
        b'{"id":[1],"text":"a"}',
        b'{"id":"x","id":"y","text":"a"}',  # duplicate keys: orjson keeps the last
        b'{"text":"a","text":"b"}',
        b'{"te\\u0078t":"a"}',  # escaped keys
        b'{"text":"a","\\u0069d":"x"}',
        b'{"text":"a","x\\ny":1}',
        b'{"meta":{"text":"a"}}',  # nested text only
        b'{"text":1}',
        b'{"text":null}',
        b'{"text":["a"]}',
        b"{}",
        b"{ }",
        b'["text","a"]',
        b'"text"',
        b"1",
        b"null",
        b'{"text":"a"',
        b'{"text":"a","x":' + b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5) + b"}",
        b'{"text":"a","x":' + b'{"a":' * 1100 + b"1" + b"}" * 1100 + b"}",  # orjson: depth limit
    ],
)
def test_edge_cases_fall_back(line):
    assert statuses(line) == [FALLBACK]


@pytest.mark.parametrize(
    "line, text, ident",
    [
        (b'{"text":"a"}', "a", None),
        (b'  {"text":"a"} \t\r', "a", None),
        (b'{"text":"a"}\r', "a", None),
        (b'{"text":""}', "", None),
        (b'{"text":"\\u0000"}', "\x00", None),
        (b'{"text":"\\ud83d\\ude00\\uD83D\\uDE00"}', "\U0001f600\U0001f600", None),
        (b'{"text":"\\"\\\\\\/\\b\\f\\n\\r\\t"}', '"\\/\b\f\n\r\t', None),
        (b'{"text":"\\u00e9\\u20ac\\uffff"}', "\xe9\u20ac\uffff", None),
        (b'{"text":"\x7f"}', "\x7f", None),
        (b'{"text":"a","id":null}', "a", None),
        (b'{"id":"","text":"a"}', "a", ""),
        (b'{"id":"x\\ty","text":"a"}', "a", "x\ty"),
        (b'{"id":0,"text":"a"}', "a", "0"),
        (b'{"id":-7,"text":"a"}', "a", "-7"),
        (b'{"id":999999999999999999,"text":"a"}', "a", "999999999999999999"),
        (b'{"x":-0,"y":-0.0,"z":1e-400,"w":1E+2,"text":"a"}', "a", None),
        (b'{"meta":{"text":"no","id":"no"},"text":"yes","l":[{"text":1}]}', "yes", None),
        (b'{"te":"no","texts":"no","text":"yes","i":"no","ids":1}', "yes", None),
        (b'{"text":"a","x":' + b"[" * (MAX_DEPTH - 2) + b"]" * (MAX_DEPTH - 2) + b"}", "a", None),
    ],
)
def test_ok_cases(line, text, ident):
    result = scan_block(line, b"text")
    assert result.status.tolist() == [OK]
    assert line_values(result, line, 0) == (text, ident)
    check_block(line)


def test_blocks_and_line_offsets():
    assert len(scan_block(b"", b"text").status) == 0
    data = b'{"text":"a"}\n\n \t\r\x0b\x0c\n{"text":"b","id":2}\n[1]\n{"text":"c"}'
    for block in (data, data + b"\n"):
        result = scan_block(block, b"text")
        assert result.status.tolist() == [OK, BLANK, BLANK, OK, FALLBACK, OK]
        lines = block_lines(block)
        starts = np.cumsum([0] + [len(x) + 1 for x in lines[:-1]])
        assert result.line_start.tolist() == starts.tolist()
        assert (result.line_end - result.line_start).tolist() == [len(x) for x in lines]
        assert [line_values(result, block, i)[0] for i in (0, 3, 5)] == ["a", "b", "c"]
        assert line_values(result, block, 3)[1] == "2"
    assert scan_block(b"\n", b"text").status.tolist() == [BLANK]
    assert scan_block(b"\n\n", b"text").status.tolist() == [BLANK, BLANK]


def test_many_lines_grow_the_result():
    lines = [orjson.dumps({"id": i, "text": "t" * (i % 19)}) for i in range(5000)]
    assert check_block(b"\n".join(lines)) == [OK] * 5000
    assert check_block(b"\n" * 3000) == [BLANK] * 3000


def test_reused_out_buffer():
    data = b'{"text":"abc\\n","id":"x"}\n{"text":"d"}'
    buffer = np.zeros(len(data) + 5, dtype=np.uint8)
    result = scan_block(data, b"text", out=buffer)
    assert result.out is buffer
    assert [line_values(result, data, i) for i in (0, 1)] == [("abc\n", "x"), ("d", None)]
    writable = np.frombuffer(bytearray(data), dtype=np.uint8)
    assert line_values(scan_block(writable, bytearray(b"text")), data, 0) == ("abc\n", "x")
    small = np.zeros(3, dtype=np.uint8)
    result = scan_block(data, b"text", out=small)
    assert result.out is not small and line_values(result, data, 1) == ("d", None)


def test_field_names():
    line = '{"ident":"x","id":"no","texte":"\u00e9t\u00e9","text":"no"}'.encode()
    assert statuses(line, text_key="texte", id_key="ident") == [OK]
    result = scan_block(line, b"texte", b"ident")
    assert line_values(result, line, 0) == ("\xe9t\xe9", "x")
    assert statuses(b'{"text":"a"}', text_key="text", id_key="text") == [OK]
    assert line_values(scan_block(b'{"text":"a"}', b"text", b"text"), b"", 0) == ("a", "a")
    assert statuses(b'{"t\\"x":"a"}', text_key='t"x') == [FALLBACK]
    assert statuses(b'{"":"a"}', text_key="") == [OK]


def test_generated_corpus_is_ok():
    """Every line of a corpus of the benchmarks' generator (2,000 documents, 3.6 MB) takes the fast path."""
    import importlib.util
    import io
    import sys

    spec = importlib.util.spec_from_file_location("_neardup_generate_corpus_scan", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        out = io.BytesIO()
        module.generate(2000, 1, out, dup_fraction=0.2)
    finally:
        del sys.modules[spec.name]
    data = out.getvalue()
    assert data.count(b"\n") == 2000
    assert set(check_block(data)) == {OK}
