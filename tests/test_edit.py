"""Edit similarity (text/edit.py) against a dynamic-programming reference, and ``--verify edit``
against brute-force edit similarity of all pairs on generated near-duplicates."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup.core.documents import InMemorySource
from neardup.core.validation import ParameterConflictError
from neardup.engine import LocalEngine
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.edit import candidate_threshold
from neardup.text.edit import edit_diff, edit_similarities, edit_similarity
from neardup.text.normalize import normalize, tokenize
from neardup.text.shingles import Shingling


def levenshtein(a, b) -> int:
    """Wagner-Fischer dynamic programming (the definition)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def reference(a: str, b: str, level: str) -> float:
    ta, tb = (tokenize(a), tokenize(b)) if level == "word" else (normalize(a), normalize(b))
    if not ta and not tb:
        return 1.0
    return 1 - levenshtein(ta, tb) / max(len(ta), len(tb))


words = st.lists(st.sampled_from(["a", "b", "c", "Dd", "é", "x1"]), max_size=25).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(words, words, st.sampled_from(["word", "char"]))
def test_edit_similarity_matches_dynamic_programming(a, b, level):
    assert edit_similarity(a, b, level) == pytest.approx(reference(a, b, level), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(words, words), min_size=1, max_size=8), st.floats(0, 1))
def test_cutoff_gives_zero_below_threshold_and_the_value_above(pairs, threshold):
    a = [tokenize(x) for x, _ in pairs]
    b = [tokenize(y) for _, y in pairs]
    got = edit_similarities(a, b, threshold, workers=2)
    for (x, y), g in zip(pairs, got):
        ref = reference(x, y, "word")
        assert g == pytest.approx(ref if ref >= threshold else 0.0, abs=1e-9)


def test_pairs_exactly_at_the_threshold_are_kept():
    """rapidfuzz's cutoff alone refuses d = 1 of 5 at 0.8 ((1 - 0.8) * 5 < 1 in floating point)."""
    a = [list(range(n)) for n in (5, 10, 45)]
    b = [x[: len(x) * 4 // 5] + [1000 + i for i in range(len(x) // 5)] for x in a]
    assert edit_similarities(a, b, 0.8).tolist() == [0.8, 0.8, 0.8]
    assert edit_similarities(a, b, 0.8 + 1e-12).tolist() == [0.0, 0.0, 0.0]


def test_public_name_and_golden_values():
    assert neardup.edit_similarity("the cat sat on the mat", "the cat sat on a mat") == pytest.approx(5 / 6)
    assert edit_similarity("", "") == 1.0
    assert edit_similarity("abc", "", level="char") == 0.0
    with pytest.raises(ValueError, match="level"):
        edit_similarity("a", "b", level="line")


def test_diff_lists_inserted_deleted_replaced_words():
    sim, diffs = edit_diff("one two three four five", "one 2 three five six")
    assert sim == pytest.approx(reference("one two three four five", "one 2 three five six", "word"))
    cost = sum(max(len(d.old.split()), len(d.new.split())) for d in diffs)
    assert cost == levenshtein(tokenize("one two three four five"), tokenize("one 2 three five six")) == 3
    assert ("replace", "two", "2") in {(d.tag, d.old, d.new) for d in diffs}
    sim, diffs = edit_diff("alpha beta gamma delta", "alpha gamma delta epsilon")
    assert {(d.tag, d.old, d.new) for d in diffs} == {("delete", "beta", ""), ("insert", "", "epsilon")}


def test_options_belong_to_edit_verification():
    with pytest.raises(ParameterConflictError, match="candidate_threshold"):
        MinHashConfig(candidate_threshold=0.5)
    with pytest.raises(ParameterConflictError, match="edit_level"):
        MinHashConfig(edit_level="char")
    assert MinHashConfig(verify="edit", threshold=0.9, candidate_threshold=0.7).lsh.threshold == 0.7
    assert MinHashConfig(verify="edit", threshold=0.9).lsh.threshold == candidate_threshold(0.9, 5)


def near_duplicates(seed: int, n: int = 120) -> list[str]:
    """Originals and copies with the edits near-duplicates carry: scattered word substitutions,
    sentence substitution, insertion and deletion, a moved sentence, template text."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    docs: list[list[list[str]]] = []
    for _ in range(n):
        if docs and rng.random() < 0.5:
            d = [list(s) for s in rng.choice(docs)]
            for _ in range(rng.randint(1, 3)):
                k = rng.randrange(5)
                if k == 0:
                    for _ in range(rng.randint(1, 4)):
                        s = rng.choice(d)
                        s[rng.randrange(len(s))] = rng.choice(vocab)
                elif k == 1:
                    d[rng.randrange(len(d))] = rng.sample(vocab, rng.randint(6, 14))
                elif k == 2:
                    d.insert(rng.randrange(len(d) + 1), rng.sample(vocab, rng.randint(6, 14)))
                elif k == 3 and len(d) > 2:
                    d.append(d.pop(rng.randrange(len(d))))
                else:
                    d.insert(0, ["home", "news", "contact", "login"])
        else:
            d = [rng.sample(vocab, rng.randint(6, 14)) for _ in range(rng.randint(3, 12))]
        docs.append(d)
    return [" ".join(" ".join(s) for s in d) for d in docs]


@pytest.mark.parametrize(("threshold", "ngram", "level"), [(0.8, 5, "word"), (0.9, 3, "word"), (0.85, 2, "char")])
def test_recall_against_all_pairs(threshold, ngram, level):
    texts = near_duplicates(int(threshold * 100) + ngram)
    config = MinHashConfig(verify="edit", threshold=threshold, edit_level=level, shingling=Shingling("word", ngram))
    result = LocalEngine(2).run(
        config.plan(), InMemorySource(texts, [str(i) for i in range(len(texts))]), want_pairs=True
    )
    expected = {
        (i, j)
        for i in range(len(texts))
        for j in range(i + 1, len(texts))
        if edit_similarity(texts[i], texts[j], level) >= threshold
    }
    a, b, s = result.pairs
    found = set(zip(a.tolist(), b.tolist()))
    assert len(expected) >= 20
    assert found <= expected
    assert len(found) >= 0.98 * len(expected), f"recall {len(found) / len(expected):.3f}"
    for i, j, v in zip(a.tolist(), b.tolist(), s.tolist()):
        assert v == pytest.approx(edit_similarity(texts[i], texts[j], level))


def test_cli_pairs_carry_edit_similarity(tmp_path):
    texts = [
        "the quick brown fox jumps over the lazy dog near the river bank today",
        "the quick brown fox jumps over the lazy cat near the river bank today",
        "completely different text about hotels in paris and their prices now",
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    cmd = [sys.executable, "-m", "neardup", "dedup", str(src), "--verify", "edit", "--threshold", "0.9"]
    cmd += ["--pairs", str(tmp_path / "pairs.jsonl"), "-o", str(tmp_path / "out.jsonl")]
    subprocess.run(cmd, check=True, capture_output=True)
    pairs = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert [(p["id_a"], p["id_b"]) for p in pairs] == [("0", "1")]
    assert pairs[0]["similarity"] == pytest.approx(1 - 1 / 14)
    kept = [json.loads(x)["id"] for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert kept == ["0", "2"]
    assert np.isclose(edit_similarity(texts[0], texts[1]), 13 / 14)


def test_compare_shows_edit_similarity_and_differences():
    from neardup.eval.compare import compare

    c = compare("alpha beta gamma delta", "alpha gamma delta epsilon", Shingling("word", 2))
    assert c.edit["similarity"] == pytest.approx(
        reference("alpha beta gamma delta", "alpha gamma delta epsilon", "word")
    )
    assert c.edit["n_differences"] == 2
    assert {(d["tag"], d["old"], d["new"]) for d in c.edit["differences"]} == {
        ("delete", "beta", ""),
        ("insert", "", "epsilon"),
    }
    assert compare("abcd", "abed", Shingling("char", 2)).edit["similarity"] == 0.75
    run = subprocess.run(
        [sys.executable, "-m", "neardup", "compare", "--text", "alpha beta gamma delta", "alpha gamma delta epsilon"],
        check=True,
        capture_output=True,
        text=True,
    )
    out = run.stdout + run.stderr
    assert "edit similarity" in out and "deleted  'beta'" in out and "inserted 'epsilon'" in out


def _evaluate_methods():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "evaluate_methods.py"
    spec = importlib.util.spec_from_file_location("evaluate_methods", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("verify", ["exact", "edit"])
def test_recommended_web_setting_merges_syndicated_copies_not_template_pages(verify):
    """README's web-page recommendation on the generated web-like corpus: main content, word
    5-grams at 0.7 (verify exact); and the strict edit setting at 0.9."""
    pytest.importorskip("resiliparse")
    from neardup.text.html import html_to_text

    pages, story = _evaluate_methods().web_pages(6, 1)
    texts = [html_to_text(p, main_content=True) for p in pages]
    threshold = 0.7 if verify == "exact" else 0.9
    config = MinHashConfig(verify=verify, threshold=threshold)
    result = LocalEngine(2).run(
        config.plan(), InMemorySource(texts, [str(i) for i in range(len(texts))]), want_pairs=True
    )
    a, b, _ = result.pairs
    found = list(zip(a.tolist(), b.tolist()))
    gold = {(i, j) for i in range(len(story)) for j in range(i + 1, len(story)) if story[i] == story[j]}
    assert all(story[i] >= 0 and story[j] >= 0 for i, j in found), "template pages are not near-duplicates"
    assert set(found) <= gold
    assert len(found) >= (0.85 if verify == "exact" else 0.4) * len(gold)


def test_clough_stevenson_copies_are_closer_than_independent_answers():
    import csv

    from conftest import SHARED_DATA

    root = SHARED_DATA / "clough-stevenson"
    if not (root / "file_information.csv").exists():
        pytest.skip(f"shared corpus not present at {root}")
    rows = list(csv.DictReader((root / "file_information.csv").open(encoding="latin-1")))
    read = {r["File"]: (root / "files" / r["File"]).read_bytes().decode("latin-1") for r in rows}
    orig = {r["Task"]: read[r["File"]] for r in rows if r["Category"] == "orig"}
    by_cat: dict[str, list[float]] = {}
    for r in rows:
        if r["Category"] != "orig":
            by_cat.setdefault(r["Category"], []).append(edit_similarity(read[r["File"]], orig[r["Task"]]))
    mean = {k: float(np.mean(v)) for k, v in by_cat.items()}
    assert mean["cut"] > mean["light"] > mean["heavy"] > mean["non"]
