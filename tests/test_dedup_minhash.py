"""The MinHash job end to end against brute force on a realistic generated corpus."""

from __future__ import annotations

import subprocess
import sys

import pytest

from neardup.api import dedup
from neardup.core.measures import all_pairs_jaccard
from neardup.io.read import read_documents
from neardup.methods.minhash.config import MinHashConfig
from neardup.text.shingles import Shingling, shingle_batch

from conftest import REPO

T = 0.8


@pytest.fixture(scope="module", params=[1, 2])
def generated(request, tmp_path_factory):
    """2,000 generated news/product/forum documents with planted variants, and every pair with
    exact word-5 Jaccard >= 0.5 (brute force)."""
    path = tmp_path_factory.mktemp("gen") / "corpus.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "generate_corpus.py"),
            "--docs",
            "2000",
            "--seed",
            str(request.param),
            "-o",
            str(path),
            "--jobs",
            "1",
        ],
        check=True,
    )
    texts = [t for batch in read_documents([str(path)]) for t in batch.texts]
    values, offsets = shingle_batch(texts, Shingling("word", 5))
    a, b, s = all_pairs_jaccard(values, offsets, 0.5)
    return str(path), {(int(x), int(y)): float(z) for x, y, z in zip(a, b, s)}


def _pairs(result):
    a, b, s = result.pairs
    return {(int(x), int(y)): float(z) for x, y, z in zip(a, b, s)}


def test_signature_verify_recall_at_t_plus_005(generated):
    """Default settings (K = 128, t = 0.8, signature verification): at least 98% of the pairs
    with exact Jaccard >= t + 0.05 are reported."""
    path, exact = generated
    got = _pairs(dedup([path], MinHashConfig(threshold=T), want_pairs=True))
    truly = [p for p, s in exact.items() if s >= T + 0.05]
    assert len(truly) >= 200
    assert sum(p in got for p in truly) / len(truly) >= 0.98


def test_exact_verify_reports_every_pair_with_its_exact_value_and_none_below_t(generated):
    """--verify exact: no reported pair is below t, each carries its exact Jaccard, and recall of
    pairs with J >= t + 0.05 is at least 98%."""
    path, exact = generated
    got = _pairs(dedup([path], MinHashConfig(threshold=T, verify="exact"), want_pairs=True))
    assert got and all(exact[p] == pytest.approx(s, abs=1e-12) and s >= T for p, s in got.items())
    truly = [p for p, s in exact.items() if s >= T + 0.05]
    assert sum(p in got for p in truly) / len(truly) >= 0.98
