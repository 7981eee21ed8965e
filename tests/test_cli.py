"""`neardup dedup` end to end: every input and output format, determinism, bad input, exit codes."""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from click.testing import CliRunner

from neardup._kernels.measures import jaccard_sorted
from neardup.cli.main import main
from neardup.text.shingles import Shingling, shingle_batch

from conftest import make_corpus


def run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    return path


def records(corpus) -> list[dict]:
    return [{"id": i, "text": t, "n": k} for k, (i, t) in enumerate(zip(corpus.ids, corpus.texts))]


def read_rows(path: Path) -> list[dict]:
    name = path.name
    if name.endswith(".parquet"):
        return pq.read_table(path).to_pylist()
    if name.endswith(".csv"):
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    opener = gzip.open if name.endswith(".gz") else open
    if name.endswith(".zst"):
        with open(path, "rb") as raw:
            data = zstandard.ZstdDecompressor().stream_reader(raw).read()
    else:
        with opener(path, "rb") as f:
            data = f.read()
    return [json.loads(line) for line in data.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def jsonl_input(tmp_path_factory, corpus) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("in") / "corpus.jsonl", records(corpus))


def test_dedup_removes_planted_copies_and_writes_all_outputs(tmp_path, jsonl_input, corpus):
    """Kept records keep all fields; clusters cover every document; pairs reference real ids."""
    res = run(
        "dedup",
        jsonl_input,
        "-o",
        tmp_path / "kept.jsonl",
        "--clusters",
        tmp_path / "c.csv",
        "--pairs",
        tmp_path / "p.parquet",
        "--quiet",
    )
    assert res.exit_code == 0, res.output
    kept = read_rows(tmp_path / "kept.jsonl")
    clusters = read_rows(tmp_path / "c.csv")
    pairs = read_rows(tmp_path / "p.parquet")
    assert len(clusters) == len(corpus.ids)
    assert {r["id"] for r in clusters} == set(corpus.ids)
    kept_ids = {r["id"] for r in kept}
    assert kept_ids == {r["id"] for r in clusters if r["id"] == r["cluster"]}
    assert set(kept[0]) == {"id", "text", "n"}
    # planted copies with exact Jaccard >= 0.85 to their source end up in the source's cluster
    hashes, off = shingle_batch(corpus.texts, Shingling("word", 5))
    cluster_of = {r["id"]: r["cluster"] for r in clusters}
    close = [
        (i, s)
        for i, s in enumerate(corpus.source)
        if s != i and jaccard_sorted(hashes[off[i] : off[i + 1]], hashes[off[s] : off[s + 1]]) >= 0.85
    ]
    assert len(close) >= 30
    together = sum(cluster_of[corpus.ids[i]] == cluster_of[corpus.ids[s]] for i, s in close)
    assert together >= 0.98 * len(close)
    for r in clusters:
        assert r["cluster"] in kept_ids
        assert 0.0 <= float(r["similarity"]) <= 1.0
    assert pairs and all(p["id_a"] in set(corpus.ids) and p["similarity"] >= 0.8 for p in pairs)
    # JSONL -> JSONL copies the kept lines verbatim
    original = {json.loads(line)["id"]: line for line in jsonl_input.read_bytes().splitlines()}
    for line in (tmp_path / "kept.jsonl").read_bytes().splitlines():
        assert original[json.loads(line)["id"]] == line


@pytest.mark.parametrize("fmt", ["jsonl.gz", "jsonl.zst", "csv", "parquet", "txtdir"])
def test_every_input_format_gives_the_same_clusters(tmp_path, jsonl_input, corpus, fmt):
    """The same corpus in any input format yields the same clusters as plain JSONL."""
    recs = records(corpus)
    if fmt == "jsonl.gz":
        src = tmp_path / "in.jsonl.gz"
        src.write_bytes(gzip.compress(jsonl_input.read_bytes()))
    elif fmt == "jsonl.zst":
        src = tmp_path / "in.jsonl.zst"
        src.write_bytes(zstandard.ZstdCompressor().compress(jsonl_input.read_bytes()))
    elif fmt == "csv":
        src = tmp_path / "in.csv"
        with open(src, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["id", "text", "n"])
            w.writeheader()
            w.writerows(recs)
    elif fmt == "parquet":
        src = tmp_path / "in.parquet"
        pq.write_table(pa.Table.from_pylist(recs), src)
    else:
        src = tmp_path / "docs"
        src.mkdir()
        for r in recs:
            (src / f"{r['id']}.txt").write_text(r["text"], encoding="utf-8")
    assert (
        run("dedup", jsonl_input, "-o", tmp_path / "ref.jsonl", "--clusters", tmp_path / "ref.csv", "-q").exit_code == 0
    )
    res = run("dedup", src, "-o", tmp_path / "kept.parquet", "--clusters", tmp_path / "c.jsonl", "-q")
    assert res.exit_code == 0, res.output
    ref = [(r["id"], r["cluster"]) for r in read_rows(tmp_path / "ref.csv")]
    got = read_rows(tmp_path / "c.jsonl")
    if fmt == "txtdir":  # ids are file paths there
        strip = lambda s: Path(s).stem
        got_pairs = [(strip(r["id"]), strip(r["cluster"])) for r in got]
    else:
        got_pairs = [(str(r["id"]), str(r["cluster"])) for r in got]
    assert got_pairs == ref
    assert pq.read_table(tmp_path / "kept.parquet").num_rows == sum(1 for a, b in ref if a == b)


def test_output_identical_for_any_worker_count_and_process(tmp_path, jsonl_input):
    """Same input and seed give byte-identical outputs for 1, 2 and 3 workers and across processes."""
    outs = []
    for w in (1, 2, 3):
        d = tmp_path / f"w{w}"
        res = run(
            "dedup",
            jsonl_input,
            "-o",
            d / "kept.jsonl",
            "--pairs",
            d / "p.csv",
            "--clusters",
            d / "c.csv",
            "--workers",
            w,
            "--batch-size",
            37,
            "-q",
        )
        assert res.exit_code == 0
        outs.append(tuple((d / f).read_bytes() for f in ("kept.jsonl", "p.csv", "c.csv")))
    d = tmp_path / "proc"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup",
            "dedup",
            str(jsonl_input),
            "-o",
            str(d / "kept.jsonl"),
            "--pairs",
            str(d / "p.csv"),
            "--clusters",
            str(d / "c.csv"),
            "-q",
        ],
        check=True,
    )
    outs.append(tuple((d / f).read_bytes() for f in ("kept.jsonl", "p.csv", "c.csv")))
    assert all(o == outs[0] for o in outs)


def test_verify_exact_reports_no_pair_below_threshold(tmp_path):
    """With --verify exact every reported pair has exact Jaccard >= t, with its exact value."""
    corpus = make_corpus(n=500, seed=11, max_edits=12)
    src = write_jsonl(tmp_path / "in.jsonl", records(corpus))
    res = run(
        "dedup",
        src,
        "-o",
        tmp_path / "k.jsonl",
        "--verify",
        "exact",
        "--threshold",
        0.7,
        "--pairs",
        tmp_path / "p.jsonl",
        "-q",
    )
    assert res.exit_code == 0
    pairs = read_rows(tmp_path / "p.jsonl")
    hashes, off = shingle_batch(corpus.texts, Shingling("word", 5))
    index = {d: i for i, d in enumerate(corpus.ids)}
    assert pairs
    for p in pairs:
        a, b = index[p["id_a"]], index[p["id_b"]]
        exact = jaccard_sorted(hashes[off[a] : off[a + 1]], hashes[off[b] : off[b + 1]])
        assert exact >= 0.7
        assert p["similarity"] == pytest.approx(exact, abs=1e-12)


def test_keep_longest_keeps_the_longest_member(tmp_path):
    base = " ".join(f"word{i}" for i in range(60))
    recs = [{"id": "short", "text": base}, {"id": "long", "text": base + " extra"}]
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    assert run("dedup", src, "-o", tmp_path / "k.jsonl", "--keep", "longest", "--threshold", 0.9, "-q").exit_code == 0
    assert [r["id"] for r in read_rows(tmp_path / "k.jsonl")] == ["long"]
    assert run("dedup", src, "-o", tmp_path / "k2.jsonl", "--threshold", 0.9, "-q").exit_code == 0
    assert [r["id"] for r in read_rows(tmp_path / "k2.jsonl")] == ["short"]


def test_char_ngrams_find_case_and_punctuation_variants(tmp_path):
    recs = [
        {"id": "a", "text": "The rain in Spain stays mainly in the plain, they say."},
        {"id": "b", "text": "the RAIN in spain stays mainly in the plain they say!!"},
        {"id": "c", "text": "Something else entirely, nothing alike at all here."},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "--char-ngram", 4, "--strip-punctuation", "-q")
    assert res.exit_code == 0
    assert [r["id"] for r in read_rows(tmp_path / "k.jsonl")] == ["a", "c"]


def test_summary_reports_counts_and_stage_times(tmp_path, jsonl_input, corpus):
    res = run("dedup", jsonl_input, "-o", tmp_path / "k.jsonl")
    assert res.exit_code == 0
    out = res.output
    assert f"{len(corpus.ids):,}" in out
    for label in ("documents read", "skipped", "clusters", "removed", "time read + sketch", "time verify"):
        assert label in out


# ---------------------------------------------------------------------------------------------
# bad input


def test_malformed_json_line_is_a_data_error_naming_file_and_line(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"text": "fine document here"}\n{"text": oops}\n{"text": "another one"}\n')
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "-q")
    assert res.exit_code == 1
    assert f"{src}:2" in res.output and "JSON" in res.output


def test_on_error_skip_counts_and_continues(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_bytes(
        b'{"text": "fine document one two three"}\n{"text": oops}\n{"body": "no text"}\n'
        b'{"text": "bad \xff\xfe utf8"}\n{"text": 5}\n{"text": "last good document here"}\n'
    )
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "--on-error", "skip", "--clusters", tmp_path / "c.csv")
    assert res.exit_code == 0, res.output
    assert len(read_rows(tmp_path / "k.jsonl")) == 2
    assert len(read_rows(tmp_path / "c.csv")) == 2
    assert "skipped" in res.output and " 4" in res.output


@pytest.mark.parametrize(
    "content, expected",
    [
        (b'{"body": "x"}\n', "text"),
        (b'{"text": "ok"}\n{"text": "bad \xff utf8"}\n', "UTF-8"),
        (b'{"text": null}\n', "text"),
    ],
)
def test_bad_records_fail_with_exit_1(tmp_path, content, expected):
    src = tmp_path / "in.jsonl"
    src.write_bytes(content)
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "-q")
    assert res.exit_code == 1
    assert str(src) in res.output and expected in res.output


def test_empty_file_and_empty_documents(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    res = run("dedup", empty, "-o", tmp_path / "k.jsonl", "--clusters", tmp_path / "c.csv", "-q")
    assert res.exit_code == 1 and "no documents" in res.output  # no empty success by accident
    res = run("dedup", empty, "-o", tmp_path / "k.jsonl", "--clusters", tmp_path / "c.csv", "-q", "--allow-empty")
    assert res.exit_code == 0
    assert read_rows(tmp_path / "k.jsonl") == []
    src = write_jsonl(
        tmp_path / "e.jsonl", [{"text": ""}, {"text": "   "}, {"text": ""}, {"text": "one"}, {"text": "one"}]
    )
    res = run("dedup", src, "-o", tmp_path / "k2.jsonl", "--clusters", tmp_path / "c2.csv", "-q")
    assert res.exit_code == 0
    # empty documents are never near-duplicates (Jaccard of empty sets is undefined); the
    # one-word documents are identical
    assert len(read_rows(tmp_path / "k2.jsonl")) == 4


def test_fifty_megabyte_document(tmp_path):
    big = " ".join(f"w{i % 50000}" for i in range(7_500_000))
    assert len(big) > 50_000_000
    src = write_jsonl(tmp_path / "big.jsonl", [{"text": big}, {"text": big[:-10]}, {"text": "small doc"}])
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "--clusters", tmp_path / "c.csv", "-q")
    assert res.exit_code == 0
    assert len(read_rows(tmp_path / "c.csv")) == 3
    assert len(read_rows(tmp_path / "k.jsonl")) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ngram", "3", "--char-ngram", "4"], "exclusive"),
        (["--bands", "20", "--rows", "7"], "num_perm"),
        (["--threshold", "1.5"], "threshold"),
        (["--method", "nope"], "method"),
    ],
)
def test_usage_errors_exit_2(tmp_path, jsonl_input, args, message):
    res = CliRunner().invoke(main, ["dedup", str(jsonl_input), "-o", str(tmp_path / "k.jsonl"), *args])
    assert res.exit_code == 2
    assert message in res.output


def test_unknown_output_extension_is_a_usage_error(tmp_path, jsonl_input):
    res = CliRunner().invoke(main, ["dedup", str(jsonl_input), "-o", str(tmp_path / "k.xlsx")])
    assert res.exit_code == 2


def test_missing_input_is_a_data_error(tmp_path):
    res = run("dedup", tmp_path / "nope.jsonl", "-o", tmp_path / "k.jsonl", "-q")
    assert res.exit_code == 1
    assert "nope.jsonl" in res.output


def test_console_script_help_and_exit_codes(tmp_path):
    exe = Path(sys.executable).parent / "neardup"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "neardup"]
    out = subprocess.run(cmd + ["dedup", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--threshold" in out.stdout
    out = subprocess.run(
        cmd + ["dedup", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "k.jsonl")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert out.returncode == 1 and "missing.jsonl" in out.stderr
    out = subprocess.run(cmd + ["dedup"], capture_output=True, text=True)
    assert out.returncode == 2


def test_repeated_ids_are_reported_in_the_summary(tmp_path):
    text = " ".join(f"w{i}" for i in range(40))
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "text": text}, {"id": 1, "text": "other words here"}])
    res = run("dedup", src, "-o", tmp_path / "k.jsonl")
    assert res.exit_code == 0
    assert "repeated ids" in res.output


# ---------------------------------------------------------------------------------------------
# other methods and options


def test_method_exact_groups_identical_normalized_texts(tmp_path):
    recs = [
        {"id": "a", "text": "Hello   World"},
        {"id": "b", "text": "hello world"},
        {"id": "c", "text": "hello world!"},
        {"id": "d", "text": ""},
        {"id": "e", "text": ""},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "--method", "exact", "--clusters", tmp_path / "c.csv")
    assert res.exit_code == 0, res.output
    assert [r["id"] for r in read_rows(tmp_path / "k.jsonl")] == ["a", "c", "d", "e"]
    assert "--method exact" in res.output
    res = run("dedup", src, "-o", tmp_path / "k2.jsonl", "--method", "exact", "--raw", "-q")
    assert [r["id"] for r in read_rows(tmp_path / "k2.jsonl")] == ["a", "b", "c", "d", "e"]


def test_method_imatch_runs_with_its_options(tmp_path, jsonl_input, corpus):
    res = run(
        "dedup",
        jsonl_input,
        "-o",
        tmp_path / "k.jsonl",
        "--method",
        "imatch",
        "--idf-band",
        0.1,
        0.95,
        "--lexicons",
        3,
        "--clusters",
        tmp_path / "c.csv",
        "-q",
    )
    assert res.exit_code == 0, res.output
    rows = read_rows(tmp_path / "c.csv")
    assert len(rows) == len(corpus.ids)
    assert len(read_rows(tmp_path / "k.jsonl")) < len(corpus.ids)


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--method", "exact", "--num-perm", "64"], "--num-perm"),
        (["--method", "imatch", "--threshold", "0.5"], "--threshold"),
        (["--raw"], "--raw"),
        (["--method", "exact", "--verify", "exact"], "--verify"),
    ],
)
def test_options_of_another_method_are_usage_errors(tmp_path, jsonl_input, args, flag):
    res = CliRunner().invoke(main, ["dedup", str(jsonl_input), "-o", str(tmp_path / "k.jsonl"), *args])
    assert res.exit_code == 2
    assert flag in res.output and "does not apply" in res.output


def test_html_field_is_stripped_before_comparing(tmp_path):
    body = " ".join(f"word{i}" for i in range(60))
    recs = [
        {"id": "a", "text": f"<html><body><p>{body}</p><script>var x = 1;</script></body></html>"},
        {"id": "b", "text": f"<div class='x'>{body}</div><!-- a comment -->"},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    res = run("dedup", src, "-o", tmp_path / "k.jsonl", "--method", "exact", "--html", "-q")
    assert res.exit_code == 0
    kept = read_rows(tmp_path / "k.jsonl")
    assert [r["id"] for r in kept] == ["a"]
    assert kept[0]["text"].startswith("<html>")  # the original record is written, markup and all
    res = run("dedup", src, "-o", tmp_path / "k2.jsonl", "--method", "exact", "-q")
    assert len(read_rows(tmp_path / "k2.jsonl")) == 2


def test_no_exact_prepass_gives_the_same_output(tmp_path, jsonl_input):
    outs = []
    for extra in ([], ["--no-exact-prepass"]):
        d = tmp_path / ("off" if extra else "on")
        res = run(
            "dedup", jsonl_input, "-o", d / "k.jsonl", "--pairs", d / "p.csv", "--clusters", d / "c.csv", "-q", *extra
        )
        assert res.exit_code == 0
        outs.append([(d / f).read_bytes() for f in ("k.jsonl", "p.csv", "c.csv")])
    assert outs[0] == outs[1]


def test_method_simhash_writes_the_same_outputs(tmp_path, jsonl_input, corpus):
    """--method simhash: pairs carry 1 - d/f, clusters cover every document, kept records as usual."""
    res = run(
        "dedup",
        jsonl_input,
        "-o",
        tmp_path / "k.jsonl",
        "--method",
        "simhash",
        "--bits",
        64,
        "--max-distance",
        6,
        "--pairs",
        tmp_path / "p.csv",
        "--clusters",
        tmp_path / "c.csv",
        "-q",
    )
    assert res.exit_code == 0, res.output
    pairs = read_rows(tmp_path / "p.csv")
    assert pairs and all(float(p["similarity"]) >= 1 - 6 / 64 for p in pairs)
    assert {float(p["similarity"]) * 64 % 1 for p in pairs} == {0.0}  # whole numbers of bits
    assert len(read_rows(tmp_path / "c.csv")) == len(corpus.ids)
    assert len(read_rows(tmp_path / "k.jsonl")) < len(corpus.ids)


def test_method_spotsigs_pairs_are_at_or_above_the_threshold(tmp_path):
    """--method spotsigs on the shipped example: every reported pair reaches the threshold, and a
    bad antecedents file is a data error naming its line."""
    example = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"
    res = run(
        "dedup",
        example,
        "-o",
        tmp_path / "k.jsonl",
        "--method",
        "spotsigs",
        "--threshold",
        0.7,
        "--pairs",
        tmp_path / "p.csv",
        "-q",
    )
    assert res.exit_code == 0, res.output
    pairs = read_rows(tmp_path / "p.csv")
    assert pairs and min(float(p["similarity"]) for p in pairs) >= 0.7
    bad = tmp_path / "ants.txt"
    bad.write_text("the\ntwo words\n")
    res = run("dedup", example, "-o", tmp_path / "k2.jsonl", "--method", "spotsigs", "--antecedents", bad, "-q")
    assert res.exit_code == 1 and f"{bad}:2" in res.output


@pytest.mark.parametrize(
    "method_args",
    [["--method", "simhash", "--bits", "64", "--max-distance", "5"], ["--method", "spotsigs", "--threshold", "0.6"]],
)
def test_exact_prepass_changes_nothing_for_simhash_and_spotsigs(tmp_path, method_args):
    """The pre-pass is a pure optimisation for every near-duplicate method: same kept records,
    clusters and pairs with and without it, on a corpus with exact and case-only copies."""
    base = make_corpus(n=300, seed=5)
    recs = records(base)
    recs += [{"id": f"copy-{i}", "text": r["text"].upper(), "n": -1} for i, r in enumerate(recs[:40])]
    recs += [{"id": f"blank-{i}", "text": "   ", "n": -2} for i in range(3)]
    src = write_jsonl(tmp_path / "in.jsonl", recs)
    outs = []
    for extra in ([], ["--no-exact-prepass"]):
        d = tmp_path / ("off" if extra else "on")
        res = run(
            "dedup", src, "-o", d / "k.jsonl", "--pairs", d / "p.csv", "--clusters", d / "c.csv", *method_args, *extra
        )
        assert res.exit_code == 0, res.output
        outs.append([(d / f).read_bytes() for f in ("k.jsonl", "p.csv", "c.csv")])
        if not extra:
            assert "exact duplicates (pre-pass)" in res.output
    assert outs[0] == outs[1]


def test_sketch_oph_finds_the_planted_copies(tmp_path, jsonl_input, corpus):
    """--sketch oph: a different signature family, the same near-duplicates at the threshold."""
    outs = {}
    for sketch in ("classic", "oph"):
        res = run(
            "dedup",
            jsonl_input,
            "-o",
            tmp_path / f"{sketch}.jsonl",
            "--sketch",
            sketch,
            "--verify",
            "exact",
            "--clusters",
            tmp_path / f"{sketch}.csv",
            "-q",
        )
        assert res.exit_code == 0, res.output
        outs[sketch] = {r["id"]: r["cluster"] for r in read_rows(tmp_path / f"{sketch}.csv")}
    same = sum(outs["classic"][i] == outs["oph"][i] for i in corpus.ids)
    assert same >= 0.98 * len(corpus.ids)
