"""The shipped example corpus: reproducible, well-formed, and it plants what it says.

Everything here is pure Python (no neardup code): the corpus is the yardstick
the library is measured against, so it is checked independently of it.
"""

from __future__ import annotations

import io
import json
import random
import re
import subprocess
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CORPUS = EXAMPLES / "news.jsonl"
TRUTH = EXAMPLES / "news_truth.jsonl"
GENERATOR = EXAMPLES / "generate_corpus.py"

# The command examples/README.md documents (run from the repository root).
SHIPPED_ARGS = ["--docs", "360", "--seed", "2024", "-o", "examples/news.jsonl", "--truth", "examples/news_truth.jsonl"]

FIELDS = ["id", "title", "text", "url", "published"]
EDITS = {"exact", "light", "medium", "heavy", "original", "unique"}
WORD = re.compile(r"\w+")


def _load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _shingles(text: str, n: int = 5) -> set[str]:
    words = WORD.findall(text.lower())
    if len(words) < n:
        return {" ".join(words)}
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


@pytest.fixture(scope="module")
def corpus():
    return _load(CORPUS)


@pytest.fixture(scope="module")
def truth():
    return _load(TRUTH)


@pytest.fixture(scope="module")
def generator_module():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import generate_corpus
    finally:
        sys.path.remove(str(EXAMPLES))
    return generate_corpus


def test_readme_documents_the_shipped_command():
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    assert "python examples/generate_corpus.py " + " ".join(SHIPPED_ARGS) in readme


def test_shipped_files_regenerate_byte_identically(tmp_path):
    out, truth = tmp_path / "news.jsonl", tmp_path / "news_truth.jsonl"
    args = [
        a.replace("examples/news_truth.jsonl", str(truth)).replace("examples/news.jsonl", str(out))
        for a in SHIPPED_ARGS
    ]
    subprocess.run([sys.executable, str(GENERATOR), *args], check=True, cwd=ROOT)
    assert out.read_bytes() == CORPUS.read_bytes()
    assert truth.read_bytes() == TRUTH.read_bytes()


def test_output_does_not_depend_on_jobs(generator_module):
    """Blocks are seeded independently, so process count never changes a byte."""
    runs = []
    for jobs in (1, 2):
        out, truth = io.BytesIO(), io.BytesIO()
        generator_module.generate(450, 11, out, truth, 0.3, jobs=jobs, block=100)
        runs.append((out.getvalue(), truth.getvalue()))
    assert runs[0] == runs[1]


def test_seed_changes_the_corpus(generator_module):
    a, b = io.BytesIO(), io.BytesIO()
    generator_module.generate(50, 1, a)
    generator_module.generate(50, 2, b)
    assert a.getvalue() != b.getvalue()


def test_records_have_the_documented_fields(corpus):
    assert 300 <= len(corpus) <= 400
    assert CORPUS.stat().st_size < 1_000_000
    ids = [r["id"] for r in corpus]
    assert len(set(ids)) == len(ids)
    for i, rec in enumerate(corpus):
        assert list(rec) == FIELDS  # and nothing else: the truth lives in its own file
        assert rec["id"] == f"doc-{i:06d}"
        assert all(isinstance(rec[k], str) and rec[k] for k in FIELDS)
        assert rec["url"].startswith("https://")
        date.fromisoformat(rec["published"])
        words = len(rec["text"].split())
        assert 40 <= words <= 900, (rec["id"], words)


def test_truth_rows_match_the_corpus(corpus, truth):
    assert [t["id"] for t in truth] == [r["id"] for r in corpus]
    groups = defaultdict(list)
    for t in truth:
        assert set(t) == {"id", "group", "edit"}
        assert t["edit"] in EDITS
        groups[t["group"]].append(t["edit"])
    for edits in groups.values():
        if "unique" in edits:
            assert edits == ["unique"]
        else:  # one original and 1-5 variants of it
            assert edits.count("original") == 1
            assert 2 <= len(edits) <= 6
    kinds = {t["edit"] for t in truth}
    assert kinds == EDITS, "the example should show every kind of edit"
    variants = sum(t["edit"] not in ("original", "unique") for t in truth)
    assert variants == round(0.2 * len(truth))  # the default --dup-fraction
    assert sum(t["edit"] == "unique" for t in truth) > len(truth) / 2


def test_planted_near_duplicates_are_near_duplicates(corpus, truth):
    """Word 5-gram Jaccard: exact = 1, light >= 0.8 on average, heavy clearly lower."""
    shingles = [_shingles(r["text"]) for r in corpus]
    original = {t["group"]: i for i, t in enumerate(truth) if t["edit"] == "original"}
    sims = defaultdict(list)
    for i, t in enumerate(truth):
        if t["edit"] in ("exact", "light", "medium", "heavy"):
            sims[t["edit"]].append(_jaccard(shingles[i], shingles[original[t["group"]]]))
    mean = {k: sum(v) / len(v) for k, v in sims.items()}
    assert min(sims["exact"]) == 1.0
    assert mean["light"] >= 0.8
    assert min(sims["light"]) >= 0.6
    assert mean["light"] > mean["medium"] > mean["heavy"]
    for i, t in enumerate(truth):  # exact copies have the very same text
        if t["edit"] == "exact":
            assert corpus[i]["text"] == corpus[original[t["group"]]]["text"]


def test_unrelated_documents_are_far_apart(corpus, truth):
    unique = [_shingles(r["text"]) for r, t in zip(corpus, truth) if t["edit"] == "unique"]
    rng = random.Random(0)
    pairs = [rng.sample(range(len(unique)), 2) for _ in range(2000)]
    sims = [_jaccard(unique[a], unique[b]) for a, b in pairs]
    assert sum(s < 0.2 for s in sims) / len(sims) >= 0.99
    assert sum(sims) / len(sims) < 0.05


def test_text_uses_english_function_words(corpus):
    """SpotSigs-style methods need stopwords in natural positions."""
    counts = defaultdict(int)
    total = 0
    for rec in corpus:
        for w in WORD.findall(rec["text"].lower()):
            counts[w] += 1
            total += 1
    for w in ("the", "a", "of", "to", "in", "and", "is", "was", "that", "has", "for"):
        assert counts[w] > 0, w
    share = sum(counts[w] for w in ("the", "a", "an", "of", "to", "in", "and", "is", "was")) / total
    assert 0.15 < share < 0.45
    assert len(counts) > 2000  # a vocabulary, not a handful of words
