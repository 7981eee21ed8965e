"""Texts sketched from the JSONL scanner's UTF-8 spans (issue 19) against texts read as ``str``.

With :attr:`~neardup.core.plan.Plan.utf8_texts` the threaded reader hands each block's texts
packed (:class:`~neardup.text.utf8.PackedTexts`); the MinHash plan's ``encode_batch`` must give
the same exact keys and the sketch the same signatures and counts as for the same texts decoded
to ``str``, for any file, block size, batch size and normalization, and a job the same result.
"""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.charclass import CHAR_CLASS
from neardup._kernels.exact import keys_kernel, lowered_keys_kernel
from neardup._kernels.shingles import lower_ascii
from neardup.core.arrays import text_lengths
from neardup.core.parallel import Threads
from neardup.io import jsonl, jsonl_threads
from neardup.io import streams as nio
from neardup.io.partitions import FileSource, ReadOptions
from neardup.io.read import _take
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.plan import encode_batch, sketch_batch
from neardup.text.shingles import Shingling
from neardup.text.utf8 import PackedTexts, TextRuns, Utf8Text

# letters of both cases, what JSON escapes, and characters that NFKC or case folding change
# (ligature, fullwidth, Kelvin sign, sharp s, dotted I, combining accent after an ASCII letter,
# Hangul jamo that compose), or that they keep (accented lower case, CJK, an emoji)
_ALPHABET = list('abcXYZ  .,\n\t"\\/\x01') + ["é", "ﬁ", "Ａ", "\u212a", "ß", "İ", "\u0301", "\u1100\u1161", "中", "😀"]
# and characters the reader finds stable (no Python normalization), or not: upper case, a
# no-break space (NFKC: a space), an ellipsis (NFKC: three dots), Greek with tonos, Cyrillic, micro
_ALPHABET += ["ü", "Ü", "’", "—", "\u00a0", "…", "ά", "Ά", "й", "Й", "©", "\u00b5"]
_text = st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join)


def _line(text: str, ident: int, style: int) -> bytes:
    rec = {"id": f"d{ident}", "text": text}
    if style == 0:
        return orjson.dumps(rec)
    return json.dumps(rec, ensure_ascii=style == 1).encode("utf-8")  # 1: \\uXXXX, surrogate pairs


_lines = st.lists(st.tuples(_text, st.integers(0, 2)), min_size=1, max_size=40)


def _batches(path, utf8: bool, threads: Threads, batch_size: int):
    source = FileSource([str(path)], ReadOptions(batch_size=batch_size))
    reads = source.with_utf8_texts() if utf8 else source
    return list(reads.read_with(threads))


def _prepared(config: MinHashConfig, batch):
    segments, keys = encode_batch(config, batch, True)
    out = sketch_batch(config, segments, None)
    return keys, out["values"], out["counts"]


@settings(max_examples=60, deadline=None)
@given(
    _lines,
    st.sampled_from([64, 300, 1 << 20]),
    st.sampled_from([1, 3, 16]),
    st.sampled_from([(True, True), (True, False), (False, True), (False, False)]),
    st.sampled_from(["word", "char"]),
    st.booleans(),
)
def test_packed_spans_give_the_keys_and_signatures_of_str_texts(
    tmp_path_factory, lines, block, batch_size, norm, kind, huge
):
    """Escapes, non-ASCII, empty texts, blocks and batches cut anywhere; ``huge``: a line of
    over 200 bytes is read as a huge one (orjson, and a text of 100 bytes or more as a
    :class:`Utf8Text`), so runs of packed texts, ``str`` and ``Utf8Text`` share batches."""
    path = tmp_path_factory.mktemp("packed") / "in.jsonl"
    path.write_bytes(b"\n".join(_line(t, i, style) for i, (t, style) in enumerate(lines)) + b"\n")
    config = MinHashConfig(shingling=Shingling(kind, 3, nfkc=norm[0], casefold=norm[1]), num_perm=16)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nio, "BLOCK", block)
        if huge:
            mp.setattr(jsonl, "_HUGE_BLOCK", 200)
            mp.setattr(jsonl, "_PLAIN_LINE", 0)
            mp.setattr(jsonl, "UTF8_TEXT_MIN", 100)
        with Threads(2) as threads:
            plain = _batches(path, False, threads, batch_size)
            packed = _batches(path, True, threads, batch_size)
    assert [b.start for b in packed] == [b.start for b in plain]
    if not huge:
        assert any(type(b.texts) is TextRuns for b in packed)
    for p, s in zip(packed, plain, strict=True):
        assert p.ids == s.ids
        assert [str(t) for t in p.texts] == s.texts
        assert text_lengths(p.texts).tolist() == text_lengths(s.texts).tolist()
        for got, want in zip(_prepared(config, p), _prepared(config, s), strict=True):
            assert np.array_equal(got, want)


def test_a_job_reads_packed_spans_and_gives_what_str_texts_give(tmp_path, monkeypatch):
    """End to end over many blocks, with texts that NFKC and case folding change, the longest
    text kept and exact verification (which re-reads texts by index): the same result as when
    the reader decodes every text to ``str``."""
    from neardup import dedup

    monkeypatch.setattr(nio, "BLOCK", 1024)
    words = ["Alpha", "beta", "ﬁne", "ÉCOLE", "straße", "Ｗide", 'q"uote', "tab\there", "zeta"]
    lines = []
    for i in range(300):
        text = " ".join(words[(i // 3 * 5 + k * 7) % len(words)] + str(k % (4 + i % 3)) for k in range(30))
        lines.append(orjson.dumps({"id": f"d{i}", "text": text if i % 3 else text.upper()}))
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    parsed = []
    original = jsonl_threads._parse_block

    def spy(*args, packed=False):
        out = original(*args, packed=packed)
        parsed.append(type(out[1]))
        return out

    def run(verify):
        config = MinHashConfig(verify=verify, threshold=0.5)
        r = dedup([str(path)], config, workers=2, keep="longest", id_field="id", want_pairs=True)
        return r.ids, r.root.tolist(), r.kept.tolist(), [a.tolist() for a in r.pairs], r.job.lengths.tolist()

    monkeypatch.setattr(jsonl_threads, "_parse_block", spy)
    results = [run("signature"), run("exact")]
    assert PackedTexts in parsed
    monkeypatch.setattr(jsonl_threads, "_parse_block", lambda *args, packed=False: original(*args))
    assert [run("signature"), run("exact")] == results
    assert len(set(results[0][1])) < 300


def test_packed_texts_index_slice_and_count_characters():
    texts = ["", "plain", "naïve", "中文😀", "x"]
    data = b"#".join(t.encode() for t in texts)
    starts, ends, at = [], [], 0
    for t in texts:
        starts.append(at)
        ends.append(at + len(t.encode()))
        at = ends[-1] + 1
    p = PackedTexts.gather(np.frombuffer(data, dtype=np.uint8), starts, ends)
    assert list(p) == texts and [p[i] for i in range(-5, 5)] == texts + texts
    assert p.stable.tolist() == [True, True, True, False, True]
    assert p.char_lengths().tolist() == [len(t) for t in texts]
    assert list(p[2:4]) == texts[2:4] and list(p[::2]) == texts[::2] and len(p[4:2]) == 0
    with pytest.raises(IndexError):
        p[5]
    runs = TextRuns([["a", Utf8Text(memoryview(b"bc"))], p[1:3], ["z"]])
    assert len(runs) == 5 and [str(t) for t in runs] == ["a", "bc", "plain", "naïve", "z"]
    assert str(runs[-4]) == "bc" and runs[3] == "naïve" and runs[1:4:2] == [runs[1], "naïve"]
    assert runs.char_lengths().tolist() == [1, 2, 5, 5, 1]


def test_take_cuts_runs_and_keeps_lists_lists():
    p = PackedTexts.gather(np.frombuffer(b"abcdef", dtype=np.uint8), [0, 1, 2, 3], [1, 2, 3, 4])
    taken, left = _take([["x", "y"], ["z"]], 2)
    assert taken == ["x", "y"] and left == [["z"]]
    taken, left = _take([["x"], ["y", "z"]], 2)
    assert taken == ["x", "y"] and left == [["z"]]
    taken, left = _take([["x"], p], 3)
    assert type(taken) is TextRuns and list(taken) == ["x", "a", "b"]
    assert len(left) == 1 and list(left[0]) == ["c", "d"]


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=6))
def test_lowered_keys_equal_the_keys_of_the_lower_cased_bytes(raw, cuts):
    """The word-at-a-time lowering hashes what ``lower_ascii`` then ``keys_kernel`` hash."""
    data = np.frombuffer(raw, dtype=np.uint8)
    offsets = np.array([0, *sorted(min(c, len(raw)) for c in cuts), len(raw)], dtype=np.int64)
    got = np.empty((len(offsets) - 1, 2), dtype=np.uint64)
    lowered_keys_kernel(data, offsets, got)
    lowered = lower_ascii(data)
    lowered.flags.writeable = False
    want = np.empty_like(got)
    keys_kernel(lowered, offsets, CHAR_CLASS, True, want)
    assert np.array_equal(got, want)


def test_stable_characters_are_no_composition_second_and_normalize_to_themselves():
    """What :func:`stable_table` relies on, checked over all of Unicode: no stable character is
    the second of a canonical decomposition in two (so none joins the character before it), and
    texts of stable characters between ASCII letters are their own NFKC form and case fold."""
    import unicodedata

    from neardup.text.utf8 import stable_table

    table = stable_table()
    seconds = set()
    for c in range(0x110000):
        parts = unicodedata.decomposition(chr(c)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(int(parts[1], 16))
    seconds.update(range(0x1161, 0x1176))  # Hangul vowels and trailing consonants compose by rule
    seconds.update(range(0x11A8, 0x11C3))
    stable = [chr(c) for c in np.flatnonzero(table).tolist() if c >= 0x80]
    assert len(stable) > 500 and not {ord(c) for c in stable} & seconds
    text = "".join(f"a{c}Z{c}{d}" for c, d in zip(stable, stable[7:] + stable[:7], strict=True))
    assert unicodedata.normalize("NFKC", text) == text
    assert text.casefold() == "".join(ch.lower() if ch.isascii() else ch for ch in text)
