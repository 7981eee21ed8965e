"""Tests of the SimHash dedup job (neardup.dedup_simhash) through neardup.pipeline.dedup.

Properties checked, on corpora made by examples/generate_corpus.py:
- the reported pairs are exactly the brute-force pairs of the documents' fingerprints within
  max_distance (non-empty documents only), with similarity 1 - d / f;
- clusters are the connected components of that pair graph, with or without the pair list,
  whatever the number of workers and the batch size;
- exact copies always fall in one cluster; empty documents are never paired;
- IDF weighting reads the input twice and equals fingerprints made with fit_idf;
- the config validates its fields.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from neardup.api import dedup
from neardup.core.components import components
from neardup.methods.simhash.config import SimHashConfig
from neardup.methods.simhash.search import brute_force_pairs
from neardup.methods.simhash.sketch import SimHasher, fit_idf
from neardup.text.shingles import Shingling

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated corpus (with planted variants) plus a few empty and duplicate records."""
    d = tmp_path_factory.mktemp("simhash")
    path, truth = d / "corpus.jsonl", d / "truth.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "generate_corpus.py"),
            "--docs",
            "500",
            "--seed",
            "11",
            "-o",
            str(path),
            "--truth",
            str(truth),
            "--jobs",
            "1",
        ],
        check=True,
        capture_output=True,
    )
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edits = [json.loads(line)["edit"] for line in truth.read_text(encoding="utf-8").splitlines()]
    groups = [json.loads(line)["group"] for line in truth.read_text(encoding="utf-8").splitlines()]
    extra = [{"id": "empty-1", "text": ""}, {"id": "empty-2", "text": "  ... !!"}, {"id": "empty-3", "text": ""}]
    records = records[:250] + extra + records[250:]
    edits = edits[:250] + ["empty"] * 3 + edits[250:]
    groups = groups[:250] + ["e1", "e2", "e3"] + groups[250:]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path), [r["text"] for r in records], edits, groups


def expected(texts, config: SimHashConfig, idf=None):
    hasher = SimHasher(scheme=config.scheme, idf=idf)
    values, counts = hasher.sign_texts_with_counts(texts)
    docs = np.flatnonzero(counts > 0)
    a, b, d = brute_force_pairs(values[docs], config.max_distance)
    return values, {(int(docs[i]), int(docs[j]), 1 - int(x) / config.bits) for i, j, x in zip(a, b, d)}, counts


@pytest.mark.parametrize(
    "config",
    [
        SimHashConfig(),
        SimHashConfig(max_distance=6, bits=128),
        SimHashConfig(max_distance=5, shingling=Shingling("char", 5), seed=3),
    ],
    ids=["default", "128-bit", "char5"],
)
def test_pairs_and_clusters_equal_brute_force(generated, config):
    path, texts, edits, _ = generated
    values, want, counts = expected(texts, config)
    result = dedup([path], config, want_pairs=True, workers=2, batch_size=64)
    a, b, s = result.pairs
    assert set(zip(a.tolist(), b.tolist(), s.tolist())) == want and len(a) == len(want)
    assert (a < b).all() and (np.lexsort((b, a)) == np.arange(len(a))).all()
    assert np.array_equal(result.root, components(len(texts), a, b))
    clusters_only = dedup([path], config, want_pairs=False, workers=1, batch_size=1000)
    assert np.array_equal(clusters_only.root, result.root)
    # without the exact pre-pass the search itself sees every pair (with it, one per distinct text)
    every_doc = dedup([path], replace(config, exact_prepass=False), want_pairs=False, workers=1)
    assert np.array_equal(every_doc.root, result.root)
    assert every_doc.summary["pairs within distance"].startswith(f"{len(want):,} ")
    # similarity to the kept document is 1 - d / f for every member
    d = np.bitwise_count(values[np.arange(len(texts))] ^ values[result.kept]).sum(axis=1)
    assert np.allclose(result.similarity, 1 - d / config.bits)
    empty = np.flatnonzero(counts == 0)
    assert result.empty == len(empty) >= 2 and all(result.root[i] == i for i in empty)
    assert not np.isin(empty, np.concatenate([a, b])).any()


def test_exact_copies_cluster_and_light_edits_mostly_do(generated):
    path, _, edits, groups = generated
    result = dedup([path], SimHashConfig(), workers=1)
    root = result.root
    first = {}
    for i, (e, g) in enumerate(zip(edits, groups)):
        if e == "original":
            first[g] = i
    exact = [i for i, e in enumerate(edits) if e == "exact"]
    assert exact and all(root[i] == root[first[groups[i]]] for i in exact)
    # unrelated documents are never merged at the default distance
    unique = [i for i, e in enumerate(edits) if e == "unique"]
    assert all(root[i] == i or edits[root[i]] != "unique" for i in unique)
    assert result.n_removed >= len(exact)


def test_idf_weighting_reads_twice(generated, monkeypatch):
    import neardup.io.partitions as partitions

    path, texts, _, _ = generated
    config = SimHashConfig(max_distance=5, weighting="idf")
    reads = []
    original = partitions._batches

    def counting(*args, **kwargs):
        reads.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(partitions, "_batches", counting)
    result = dedup([path], config, want_pairs=True, batch_size=100)
    assert len(reads) == 2
    idf = fit_idf(texts, config.shingling, min_df=config.min_df)
    _, want, _ = expected(texts, config, idf)
    a, b, s = result.pairs
    assert set(zip(a.tolist(), b.tolist(), s.tolist())) == want
    assert "idf weighting" in result.summary["SimHash"] and "read + document frequencies" in result.timings


def test_config_validation():
    SimHashConfig(max_distance=0, bits=128, blocks=1)
    for kwargs, match in [
        ({"max_distance": 64, "bits": 64}, "max_distance"),
        ({"max_distance": 128}, "max_distance"),
        ({"max_distance": -1}, "max_distance"),
        ({"bits": 32}, "bits"),
        ({"weighting": "bm25"}, "weighting"),
        ({"seed": -2}, "seed"),
        ({"blocks": 3}, "blocks"),
        ({"min_df": 0}, "min_df"),
    ]:
        with pytest.raises(ValueError, match=match):
            SimHashConfig(**kwargs)
    with pytest.raises(TypeError):
        SimHashConfig(shingling="word")
