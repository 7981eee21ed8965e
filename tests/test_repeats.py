"""The repeats job (neardup.repeats): equal to brute-force references on generated and
hypothesis inputs, offsets right on Unicode text, the same for any workers and shards, the
Bloom filter's false-positive rate, and the command."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.charclass import CHAR_CLASS, IDEOGRAPH, IGNORE, WORD
from neardup.repeats import RepeatsConfig, clean, find_repeats
from neardup.repeats.bloom import CountingBloom, bloom_size, false_positive_rate
from neardup.repeats.spans import find_spans
from neardup.repeats.tokens import batch_tokens
from neardup.text.normalize import normalize

from conftest import run_cli


# ---------------------------------------------------------------------------------------------
# references
def ref_tokens(text: str, unit: str) -> list[tuple[int, int, object]]:
    """(start, end, key) of every token, slowly: the rules of neardup.repeats.tokens."""
    if unit == "bytes":
        out = []
        for ci, ch in enumerate(text):
            for b in ch.encode("utf-8", "surrogatepass"):
                out.append((ci, ci + 1, b))
        return out
    if unit == "chars":
        return [(i, i + 1, normalize(ch)) for i, ch in enumerate(text)]
    out, i = [], 0
    while i < len(text):
        cls = CHAR_CLASS[ord(text[i])]
        if cls == IDEOGRAPH:
            out.append((i, i + 1, normalize(text[i])))
            i += 1
            continue
        if cls != WORD:
            i += 1
            continue
        j = i + 1
        while j < len(text) and CHAR_CLASS[ord(text[j])] in (WORD, IGNORE):
            j += 1
        while CHAR_CLASS[ord(text[j - 1])] == IGNORE:
            j -= 1
        key = "".join(c for c in normalize(text[i:j]) if CHAR_CLASS[ord(c)] != IGNORE)
        out.append((i, j, key))
        i = j
    return out


def ref_spans(texts, length, min_count, unit="words"):
    """Every occurrence of every run of `length` tokens seen `min_count` times, counted naively;
    the covered tokens of each document as (doc, start, end, tokens, least count) runs."""
    toks = [ref_tokens(t, unit) for t in texts]
    grams = Counter()
    for ts in toks:
        keys = [k for _, _, k in ts]
        for i in range(len(keys) - length + 1):
            grams[tuple(keys[i : i + length])] += 1
    out = []
    for d, ts in enumerate(toks):
        keys = [k for _, _, k in ts]
        starts = {}
        for i in range(len(keys) - length + 1):
            c = grams[tuple(keys[i : i + length])]
            if c >= min_count:
                starts[i] = c
        covered = [any(p in starts for p in range(max(0, i - length + 1), i + 1)) for i in range(len(ts))]
        i = 0
        while i < len(ts):
            if not covered[i]:
                i += 1
                continue
            j = i
            while j < len(ts) and covered[j]:
                j += 1
            least = min(c for p, c in starts.items() if i <= p < j)
            out.append((d, ts[i][0], ts[j - 1][1], j - i, least))
            i = j
    return out


def got_spans(texts, length, min_count, unit="words", shards=1):
    cut = [round(k * len(texts) / shards) for k in range(shards + 1)]
    parts = [batch_tokens(texts[a:b], unit) for a, b in itertools.pairwise(cut)]
    s = find_spans(parts, length, min_count)
    return list(zip(s.doc.tolist(), s.start.tolist(), s.end.tolist(), s.length.tolist(), s.occurrences.tolist())), s


def _collapse(s: str) -> str:
    return " ".join(p for p in re.split(r"[\t\n\x0b\x0c\r ]+", s) if p)


def ref_units(text: str, paragraphs: bool) -> list[tuple[int, int, str]]:
    """(start, end, content) of the units of a text, slowly."""
    lines = text.split("\n")
    groups: list[list[int]] = []
    if not paragraphs:
        groups = [[i] for i in range(len(lines))]
    else:
        content = trail = False
        for i, line in enumerate(lines):
            nonblank = _collapse(normalize(line)) != ""
            if groups and nonblank and (trail or not content):
                groups.append([])
                content = trail = False
            if not groups:
                groups.append([])
            groups[-1].append(i)
            if nonblank:
                content = True
            elif content:
                trail = True
    out, at = [], 0
    for g in groups:
        body = "\n".join(lines[i] for i in g)
        end = min(at + len(body) + 1, len(text))
        out.append((at, end, _collapse(normalize(body))))
        at = end
    return out


def ref_lines(texts, paragraphs, min_count, keep_first):
    units = [ref_units(t, paragraphs) for t in texts]
    counts = Counter(c for us in units for _, _, c in us if c)
    seen = set()
    out = []
    for d, us in enumerate(units):
        for a, b, c in us:
            if not c or counts[c] < min_count:
                continue
            if keep_first and c not in seen:
                seen.add(c)
                continue
            out.append((d, a, b))
    return out


def read_lines(path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines(keepends=True)


def write_jsonl(path, texts, **extra):
    with open(path, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": f"d{i}", "text": t, **extra}, ensure_ascii=False) + "\n")
    return path


def job_ranges(path, config, **kw):
    res = find_repeats([str(path)], config, **kw)
    texts = [json.loads(line)["text"] for line in read_lines(path)]
    return [(d, r.start, r.end) for d, t in enumerate(texts) for r in res.removed(d, t)], res


# ---------------------------------------------------------------------------------------------
# generated corpora
def corpus(n=60, seed=3, vocab=12, size=(5, 40)):
    rng = random.Random(seed)
    words = ["alpha", "Beta", "gamma", "délta", "ÉPSILON", "东", "京", "straße", "STRASSE", "ﬁsh", "fish", "Ｚeta"]
    words = words[:vocab]
    out = []
    for _ in range(n):
        k = rng.randint(*size)
        sep = lambda: rng.choice([" ", "  ", ", ", "\n", " - "])
        out.append("".join(rng.choice(words) + sep() for _ in range(k)).strip())
    return out


@pytest.mark.parametrize("length,min_count", [(1, 2), (3, 2), (4, 3), (6, 2)])
@pytest.mark.parametrize("unit", ["words", "chars"])
def test_spans_equal_brute_force(length, min_count, unit):
    texts = corpus(seed=length * 7 + min_count)
    got, _ = got_spans(texts, length, min_count, unit)
    assert got == ref_spans(texts, length, min_count, unit)


def test_spans_bytes_widen_to_characters():
    texts = ["héllo wörld 東京 abc", "xx héllo wörld 東京 yy", "nothing"]
    got, _ = got_spans(texts, 8, 2, "bytes")
    assert got == ref_spans(texts, 8, 2, "bytes")
    for d, a, b, *_ in got:
        assert "héllo wörld" in texts[d][a:b]


@pytest.mark.parametrize("shards", [2, 3, 7])
def test_shards_give_the_same_spans(shards):
    texts = corpus(n=50, seed=11)
    one, _ = got_spans(texts, 3, 2)
    many, s = got_spans(texts, 3, 2, shards=shards)
    assert many == one == ref_spans(texts, 3, 2)
    assert len(s.other) == len(one)


@pytest.mark.parametrize("min_count", [2, 3, 5])
def test_shards_count_across_shards(min_count):
    texts = ["a b c d e"] * 4 + ["x a b c y"] * 3 + ["q r s"]
    for shards in (1, 2, 4, 8):
        got, _ = got_spans(texts, 3, min_count, shards=shards)
        assert got == ref_spans(texts, 3, min_count), shards


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "é", "E\u0301", "東", "x\u00ady", "ß", "SS"]), max_size=25).map(
            " ".join
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 5),
    st.integers(2, 4),
    st.integers(1, 3),
)
def test_spans_hypothesis(texts, length, min_count, shards):
    shards = min(shards, len(texts))
    got, _ = got_spans(texts, length, min_count, shards=shards)
    assert got == ref_spans(texts, length, min_count)


def test_offsets_on_unicode_text():
    shared = "Größe 東京タワー naïve café 😀 Ǆemo résumé"
    texts = [f"前文 {shared} end one", f"другой {shared}!", "alone"]
    got, _ = got_spans(texts, 8, 2)
    assert [(d, texts[d][a:b]) for d, a, b, *_ in got] == [(0, shared), (1, shared)]
    assert clean(texts[1], []) == texts[1]


def test_other_document_is_another_holder():
    texts = ["u v w x", "p q", "u v w x z", "m u v w"]
    _, s = got_spans(texts, 3, 2)
    rows = list(zip(s.doc.tolist(), s.other.tolist()))
    assert rows == [(0, 2), (2, 0), (3, 0)]


# ---------------------------------------------------------------------------------------------
# lines and paragraphs
LINES = [
    "Home | About | Contact\nThe first story of the day.\n\nShare this article\n",
    "HOME |  about | contact\r\nAnother story, with  details.\nShare this article",
    "Only here.\n\n\nShare this article\nHome | About | Contact",
    "",
    "\n\nParagraph one\ncontinues.\n\nShare this article\n\nParagraph one\n  CONTINUES.  ",
]


@pytest.mark.parametrize("mode", ["lines", "paragraphs"])
@pytest.mark.parametrize("min_count,keep_first", [(2, True), (2, False), (3, True), (4, False)])
def test_lines_equal_reference(tmp_path, mode, min_count, keep_first):
    path = write_jsonl(tmp_path / "in.jsonl", LINES + corpus(n=30, seed=min_count, size=(2, 12)))
    texts = [json.loads(line)["text"] for line in read_lines(path)]
    got, _ = job_ranges(path, RepeatsConfig(mode, min_count=min_count, keep_first=keep_first))
    assert got == ref_lines(texts, mode == "paragraphs", min_count, keep_first)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "A ", "b", "", "  ", "é", "E\u0301", "c d"]), max_size=8).map("\n".join),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
    st.booleans(),
)
def test_lines_hypothesis(texts, paragraphs, keep_first):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = write_jsonl(Path(d) / "in.jsonl", texts)
        mode = "paragraphs" if paragraphs else "lines"
        got, _ = job_ranges(path, RepeatsConfig(mode, keep_first=keep_first))
    assert got == ref_lines(texts, paragraphs, 2, keep_first)


def test_segments_tile_the_text(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", LINES)
    res = find_repeats([str(path)], RepeatsConfig("paragraphs", keep_first=False))
    assert clean(LINES[4], res.removed(4, LINES[4])) == "\n\n"


def test_bloom_equals_exact_when_large(tmp_path):
    texts = LINES + corpus(n=40, seed=5, size=(2, 12))
    path = write_jsonl(tmp_path / "in.jsonl", texts)
    for mode in ("lines", "paragraphs"):
        for keep_first in (True, False):
            exact, _ = job_ranges(path, RepeatsConfig(mode, keep_first=keep_first))
            res = find_repeats([str(path)], RepeatsConfig(mode, keep_first=keep_first, bloom=1e-9, bloom_items=10_000))
            got = [(d, r.start, r.end) for d, t in enumerate(texts) for r in res.removed(d, t)]
            assert got == exact


def test_bloom_false_positive_rate_statistically():
    """Units counted once each: the share reported as seen twice is below the stated bound
    (1 - e^(-kn/m))^k, and close to it (a binomial 4-sigma band); absent units reported as
    present at the plain Bloom rate."""
    n, fpr = 50_000, 0.02
    m, k = bloom_size(n, fpr)
    bound = false_positive_rate(m, k, n)
    assert abs(bound - fpr) < 0.002
    rng = np.random.default_rng(12345)
    hi, lo = rng.integers(0, 2**64, n, dtype=np.uint64), rng.integers(0, 2**64, n, dtype=np.uint64)
    bloom = CountingBloom(m, k)
    bloom.add(hi, lo, np.zeros(n, dtype=bool))
    sigma = math.sqrt(bound * (1 - bound) / n)
    twice = float(np.mean(bloom.counts(hi, lo) >= 2))
    assert twice <= bound + 4 * sigma
    fresh_hi, fresh_lo = rng.integers(0, 2**64, n, dtype=np.uint64), rng.integers(0, 2**64, n, dtype=np.uint64)
    present = float(np.mean(bloom.counts(fresh_hi, fresh_lo) >= 1))
    assert abs(present - bound) <= 4 * sigma
    assert np.all(bloom.counts(hi, lo) >= 1)  # no false negatives


# ---------------------------------------------------------------------------------------------
# the job: workers and memory budgets change nothing
def test_workers_and_shards_change_nothing(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", corpus(n=200, seed=9, size=(10, 60)))
    cfg = RepeatsConfig("spans", min_length=5)
    base, r1 = job_ranges(path, cfg, workers=1, batch_size=16)
    two, _ = job_ranges(path, cfg, workers=2, batch_size=7)
    small, r3 = job_ranges(path, cfg, workers=2, batch_size=16, memory=200 * 128)
    assert base == two == small
    assert r1.counters["shards"] == 1 and r3.counters["shards"] > 3
    for mode in ("lines", "paragraphs"):
        a, _ = job_ranges(path, RepeatsConfig(mode), workers=1, batch_size=5)
        b, _ = job_ranges(path, RepeatsConfig(mode), workers=2, batch_size=64)
        assert a == b


def test_config_errors():
    from neardup.core.errors import NeardupError

    with pytest.raises(NeardupError, match="mode"):
        RepeatsConfig("sentences")
    with pytest.raises(NeardupError, match="suffix array"):
        RepeatsConfig("spans", bloom=0.01)
    with pytest.raises(NeardupError, match="min_count"):
        RepeatsConfig("lines", min_count=1)


# ---------------------------------------------------------------------------------------------
# the command
def test_cli_spans_output_and_workers(tmp_path):
    texts = corpus(n=80, seed=4, size=(10, 40)) + ["solo text"]
    path = write_jsonl(tmp_path / "in.jsonl", texts, source="web")
    outs = []
    for w in (1, 2):
        out = tmp_path / f"out{w}.jsonl"
        run_cli(
            "repeats",
            path,
            "-o",
            out,
            "--min-length",
            6,
            "--workers",
            w,
            "--spans",
            tmp_path / f"s{w}.csv",
            "--stats",
            tmp_path / f"st{w}.json",
            "-q",
        )
        outs.append((out.read_bytes(), (tmp_path / f"s{w}.csv").read_bytes()))
    assert outs[0] == outs[1]
    rows = [json.loads(line) for line in outs[0][0].decode().splitlines()]
    ref = ref_spans(texts, 6, 2)
    by_doc = {}
    for d, a, b, *_ in ref:
        by_doc.setdefault(d, []).append((a, b))
    want = []
    for d, t in enumerate(texts):
        cut, at = [], 0
        for a, b in by_doc.get(d, []):
            cut.append(t[at:a])
            at = b
        cleaned = "".join(cut) + t[at:]
        if d not in by_doc or cleaned.strip():
            want.append({"id": f"d{d}", "text": cleaned, "source": "web"})
    assert rows == want
    spans = outs[0][1].decode().splitlines()
    assert spans[0] == '"id","start","end","length","occurrences","other_id"'
    assert len(spans) - 1 == len(ref)
    stats = json.loads((tmp_path / "st1.json").read_text())
    assert stats["counts"]["removed_ranges"] == len(ref)
    assert stats["repeats"]["min_length"] == 6


def test_cli_annotate_keep_empty_and_formats(tmp_path):
    texts = ["same words here now", "same words here now", "other café text"]
    path = write_jsonl(tmp_path / "in.jsonl", texts)
    run_cli("repeats", path, "-o", tmp_path / "a.jsonl", "--min-length", 2, "--annotate", "-q")
    rows = [json.loads(line) for line in read_lines(tmp_path / "a.jsonl")]
    assert [r["repeats"] for r in rows] == [[[0, 19]], [[0, 19]], []]
    assert [r["text"] for r in rows] == texts
    run_cli("repeats", path, "-o", tmp_path / "k.jsonl", "--min-length", 2, "--keep-empty", "-q")
    assert [json.loads(line)["text"] for line in read_lines(tmp_path / "k.jsonl")] == ["", "", "other café text"]
    run_cli("repeats", path, "-o", tmp_path / "d.jsonl", "--min-length", 2, "-q")
    assert [json.loads(line)["id"] for line in read_lines(tmp_path / "d.jsonl")] == ["d2"]
    import pyarrow.parquet as pq

    run_cli("repeats", path, "-o", tmp_path / "p.parquet", "--mode", "lines", "--annotate", "--keep-none", "-q")
    t = pq.read_table(tmp_path / "p.parquet").to_pylist()
    assert [r["repeats"] for r in t] == [[[0, 19]], [[0, 19]], []]
    run_cli("repeats", path, "-o", tmp_path / "c.csv", "--mode", "lines", "-q")
    import csv

    rows = list(csv.DictReader(read_lines(tmp_path / "c.csv")))
    assert [(r["id"], r["text"]) for r in rows] == [("d0", texts[0]), ("d2", texts[2])]


def test_cli_errors(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ["a b"])
    res = run_cli("repeats", path, "-o", tmp_path / "o.jsonl", "--mode", "spans", "--bloom", "0.01", code=2)
    assert "--bloom" in res.output
    res = run_cli("repeats", path, "-o", tmp_path / "o.jsonl", "--mode", "lines", "--min-length", "3", code=2)
    assert "--min-length" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x y"}\n{not json\n')
    res = run_cli("repeats", bad, "-o", tmp_path / "o.jsonl", code=1)
    assert "bad.jsonl:2" in res.output
    run_cli("repeats", bad, "-o", tmp_path / "o.jsonl", "--on-error", "skip", "--skipped", tmp_path / "s.csv", "-q")
    assert "malformed JSON" in (tmp_path / "s.csv").read_text()
    assert not (tmp_path / "never.jsonl").exists()


def test_lines_report_count_and_first_holder(tmp_path):
    texts = ["x\nBoiler plate", "boiler   PLATE\ny", "boiler plate"]
    path = write_jsonl(tmp_path / "in.jsonl", texts)
    res = find_repeats([str(path)], RepeatsConfig("lines"))
    got = [
        (d, r.start, r.end, r.length, r.occurrences, r.other) for d, t in enumerate(texts) for r in res.removed(d, t)
    ]
    assert got == [(1, 0, 15, 1, 3, 0), (2, 0, 12, 1, 3, 0)]
    assert clean(texts[1], res.removed(1, texts[1])) == "y"


@pytest.mark.parametrize("top", [3, 300, 70_000, 20_000_000])
def test_suffix_array_of_ids_of_every_width(top):
    from neardup.repeats.spans import suffix_array

    rng = np.random.default_rng(top)
    ids = rng.integers(1, top, 400).astype(np.int32)
    ids[200:260] = ids[10:70]
    ids[[99, 199, 399]] = 0
    want = sorted(range(len(ids)), key=lambda i: ids[i:].tolist())
    assert suffix_array(ids).tolist() == want


def test_other_document_across_shards():
    texts = ["k l m k l m", "p q", "z k l m"]
    _, s = got_spans(texts, 3, 2, shards=2)
    assert list(zip(s.doc.tolist(), s.other.tolist())) == [(0, 2), (2, 0)]


@pytest.mark.parametrize("mode", ["lines", "paragraphs"])
def test_cli_bloom_writes_what_the_exact_table_writes(tmp_path, mode):
    path = write_jsonl(tmp_path / "in.jsonl", LINES + corpus(n=60, seed=8, size=(2, 12)))
    run_cli("repeats", path, "-o", tmp_path / "exact.jsonl", "--mode", mode, "--batch-size", 7, "-q")
    run_cli("repeats", path, "-o", tmp_path / "bloom.jsonl", "--mode", mode, "--bloom", "1e-9", "--workers", 2, "-q")
    assert (tmp_path / "bloom.jsonl").read_bytes() == (tmp_path / "exact.jsonl").read_bytes()
