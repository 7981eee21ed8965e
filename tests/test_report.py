"""neardup.report: the word diff, UTF-16 offsets, the histogram, and what the HTML page embeds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.errors import InputError
from neardup.eval.report import _TOKEN, _utf16, build_report, histogram_svg, word_diff

WORDS = ["the", "The", "cat", "sat", "on", "mat", "dog", "a", "Straße", "東", ",", ".", "!", "42"]


def tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group().casefold()) for m in _TOKEN.finditer(text)]


def unmarked(text: str, ranges: list[tuple[int, int]]) -> list[str]:
    return [t for s, e, t in tokens(text) if not any(a <= s and e <= b for a, b in ranges)]


def check_ranges(text: str, ranges: list[tuple[int, int]]) -> None:
    starts = {s for s, _, _ in tokens(text)}
    ends = {e for _, e, _ in tokens(text)}
    for (s, e), nxt in zip(ranges, ranges[1:] + [(len(text) + 1, 0)]):
        assert s in starts and e in ends and s < e <= nxt[0]  # on token boundaries, sorted, disjoint


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS), max_size=30),
    st.lists(st.sampled_from(WORDS), max_size=30),
    st.sampled_from([" ", "  ", "\n"]),
)
def test_word_diff_marks_exactly_what_a_common_subsequence_leaves(wa, wb, sep):
    a, b = sep.join(wa), " ".join(wb)
    da, db = word_diff(a, b)
    check_ranges(a, da)
    check_ranges(b, db)
    # the words left unmarked on both sides are the same sequence (the matched blocks) ...
    assert unmarked(a, da) == unmarked(b, db)
    # ... and every token is either matched or marked
    if a.split() == b.split():
        assert da == [] and db == []
    if not {t for *_, t in tokens(a)} & {t for *_, t in tokens(b)}:
        assert unmarked(a, da) == [] and unmarked(b, db) == []


def test_word_diff_is_case_insensitive_and_ignores_whitespace():
    da, db = word_diff("The  cat\nsat.", "the cat sat.")
    assert da == [] and db == []
    a, b = "one two three four five", "one TWO 3 four five six"
    da, db = word_diff(a, b)
    assert [a[s:e] for s, e in da] == ["three"]
    assert [b[s:e] for s, e in db] == ["3", "six"]


def test_utf16_offsets_slice_the_same_text_in_javascript():
    text = "😀 emoji 𝒳 and ascii"
    ranges = [(m.start(), m.end()) for m in re.finditer(r"\w+", text)]
    flat = _utf16(text, ranges)
    units = text.encode("utf-16-le")
    got = [units[2 * s : 2 * e].decode("utf-16-le") for s, e in zip(flat[::2], flat[1::2])]
    assert got == [text[s:e] for s, e in ranges]
    assert _utf16("plain", [(0, 5)]) == [0, 5]


def test_histogram_counts_every_value_once():
    values = [0.8, 0.81, 0.85, 0.999, 1.0, 1.0, 0.9]
    svg = histogram_svg(values, title="t")
    counts = [int(c) for c in re.findall(r"<title>[0-9.]+-[0-9.]+: ([0-9,]+)</title>", svg)]
    assert sum(counts) == len(values) and len(counts) == 20  # 0.80 .. 1.00 in bins of 0.01
    assert counts[-1] == 3  # 0.999 and both 1.0 fall in the last bin
    assert "nothing to show" in histogram_svg([], title="t")
    # the threshold widens the range to include it, and is drawn as a line
    svg = histogram_svg([0.9, 1.0], title="t", threshold=0.72)
    assert len(re.findall(r"<title>[0-9.]+-[0-9.]+: ", svg)) == 30 and ">threshold 0.72</text>" in svg
    assert ">0.70</text>" in svg and ">similarity</text>" in svg


# --------------------------------------------------------------------------------------------
# the page


def embedded(page: str) -> dict:
    m = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


@pytest.fixture()
def run_files(tmp_path) -> tuple[Path, Path, Path]:
    base = "the quick brown fox jumps over the lazy dog near the river bank on a sunny day"
    docs = [
        ("k1", base),
        ("m1", base.replace("lazy", "sleepy")),
        ("m2", base.replace("river", "canal").replace("sunny", "rainy")),
        ("k2", "completely different words here about </script><script>alert(1)</script> & more"),
        ("m3", "completely different words there about </script><script>alert(1)</script> & more"),
        ("solo", "alone"),
        ("emoji", "😀 " + base),
    ]
    inp = tmp_path / "docs.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    clusters = tmp_path / "clusters.csv"
    clusters.write_text(
        "id,cluster,similarity\nk1,k1,1\nm1,k1,0.9\nm2,k1,0.8\nk2,k2,1\nm3,k2,0.85\nsolo,solo,1\nemoji,k1,0.95\n"
    )
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("id_a,id_b,similarity\nk1,m1,0.9\nk1,m2,0.8\nk2,m3,0.85\nk1,emoji,0.95\n")
    return inp, clusters, pairs


def test_page_embeds_clusters_by_size_with_diffs(tmp_path, run_files):
    inp, clusters, pairs = run_files
    stats = build_report([str(inp)], str(clusters), str(tmp_path / "r.html"), pairs_path=str(pairs))
    assert (stats.documents, stats.clusters, stats.shown_clusters, stats.missing_texts) == (7, 2, 2, 0)
    page = (tmp_path / "r.html").read_text()
    data = embedded(page)
    docs = data["docs"]
    first, second = data["clusters"]
    assert (first["id"], first["size"], second["id"], second["size"]) == ("k1", 4, "k2", 2)
    assert docs[first["kept"]][0] == "k1" and first["min"] == 0.8
    assert [docs[m["d"]][0] for m in first["members"]] == ["m2", "m1", "emoji"]  # lowest similarity first
    kept_text = docs[first["kept"]][1]

    def marked(text, flat):
        units = text.encode("utf-16-le")
        return [units[2 * s : 2 * e].decode("utf-16-le") for s, e in zip(flat[::2], flat[1::2])]

    m2, m1, emoji = first["members"]
    assert marked(kept_text, m2["k"]) == ["river", "sunny"] and marked(docs[m2["d"]][1], m2["m"]) == ["canal", "rainy"]
    assert marked(kept_text, m1["k"]) == ["lazy"] and marked(docs[m1["d"]][1], m1["m"]) == ["sleepy"]
    assert marked(docs[emoji["d"]][1], emoji["m"]) == ["😀"]  # offsets in UTF-16 units
    # summary and histograms: 3 members of k1 + 1 of k2; 4 verified pairs
    assert "<th>clusters (2+ documents)</th><td>2</td>" in page
    assert "<th>removed (all but the kept one)</th><td>4</td>" in page
    assert "Similarity of members to their kept document (4)" in page and "Similarity of verified pairs (4)" in page
    assert "<title>docs.jsonl: neardup report</title>" in page  # the input's name
    assert "<th>threshold</th><td>not given (--threshold)</td>" in page and 'class="threshold"' not in page


def test_members_below_the_threshold_carry_the_chain_that_joined_them(tmp_path, run_files):
    inp, clusters, pairs = run_files
    # m2 (0.8 to k1) is joined through m1: k1-m1 0.9, m1-m2 0.86; emoji has no pair in the table
    pairs.write_text("id_a,id_b,similarity\nk1,m1,0.9\nm2,m1,0.86\nk2,m3,0.85\n")

    def chains(threshold):
        build_report([str(inp)], str(clusters), str(tmp_path / "r.html"), pairs_path=str(pairs), threshold=threshold)
        page = (tmp_path / "r.html").read_text()
        data = embedded(page)
        docs = data["docs"]
        named = {}
        for c in data["clusters"]:
            for m in c["members"]:
                v = m.get("c", "above")
                named[docs[m["d"]][0]] = [(docs[d][0], w) for d, w in v] if isinstance(v, list) else v
        return named, data, page

    named, data, page = chains(0.85)
    assert named == {"m2": [("m1", 0.9), ("m2", 0.86)], "m1": "above", "emoji": "above", "m3": "above"}
    assert data["threshold"] == 0.85 and "<th>threshold</th><td>0.85</td>" in page
    assert page.count('class="threshold"') == 2 and page.count(">threshold 0.85</text>") == 2
    named, _, _ = chains(0.96)  # now m1 and emoji are below too; emoji is in no pair: no chain
    assert named == {"m2": [("m1", 0.9), ("m2", 0.86)], "m1": [("m1", 0.9)], "emoji": None, "m3": [("m3", 0.85)]}


def test_page_is_self_contained_and_script_safe(tmp_path, run_files):
    inp, clusters, _ = run_files
    build_report([str(inp)], str(clusters), str(tmp_path / "r.html"), title="<b>run</b>")
    page = (tmp_path / "r.html").read_text()
    assert "default-src 'none'" in page  # the CSP forbids every request
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page
    assert re.findall(r"https?://[^\s\"'<]+", page) == ["http://www.w3.org/2000/svg"] * page.count("<svg")
    assert page.count("</script>") == 2  # the data block and the code; the texts' '</script>' is escaped
    assert "<title>&lt;b&gt;run&lt;/b&gt;</title>" in page
    texts = [d[1] for d in embedded(page)["docs"]]
    assert any("</script><script>alert(1)</script> & more" in t for t in texts)  # round-trips intact


def test_caps_on_clusters_members_and_text(tmp_path, run_files):
    inp, clusters, _ = run_files
    stats = build_report(
        [str(inp)], str(clusters), str(tmp_path / "r.html"), max_clusters=1, max_members=2, max_chars=20
    )
    page = (tmp_path / "r.html").read_text()
    data = embedded(page)
    assert stats.shown_clusters == 1 and len(data["clusters"]) == 1
    assert len(data["clusters"][0]["members"]) == 2 and data["clusters"][0]["more"] == 1
    assert all(d[1] is None or len(d[1]) <= 20 for d in data["docs"])
    assert any(d[2] > 20 for d in data["docs"])  # the full length travels for the "showing N of M" note
    assert "Only the 1 largest of 2 clusters are detailed" in page


def test_inputs_missing_clustered_documents_are_refused(tmp_path, run_files):
    """A report of inputs lacking a clustered document is refused (issue 18), naming the id."""
    inp, clusters, _ = run_files
    lines = inp.read_text().splitlines()
    inp.write_text("\n".join(line for line in lines if '"m1"' not in line) + "\n")
    with pytest.raises(InputError, match=r"1 of its 7 ids are not in the inputs \('m1'\)"):
        build_report([str(inp)], str(clusters), str(tmp_path / "r.html"))
    assert not (tmp_path / "r.html").exists()
