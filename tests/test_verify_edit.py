"""``--verify edit`` as the verifier of SimHash and SpotSigs candidates (methods/verify_edit.py),
against brute force: every candidate pair of the method (all pairs within the Hamming distance, or
at the candidate weighted Jaccard) computed pair by pair, and the edit similarity of all pairs."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_edit import near_duplicates

from neardup.cli.main import main as neardup_main
from neardup.core.documents import InMemorySource
from neardup.core.validation import ParameterConflictError
from neardup.engine import LocalEngine
from neardup.methods.minhash.edit import candidate_threshold
from neardup.methods.simhash.config import SimHashConfig
from neardup.methods.simhash.scheme import popcount_array
from neardup.methods.simhash.sketch import SimHasher
from neardup.methods.spotsigs.config import SpotSigsConfig
from neardup.methods.spotsigs.pairs import weighted_jaccard_rows
from neardup.methods.spotsigs.signatures import extract
from neardup.text.edit import edit_similarity

ANTECEDENTS = ["the", "a", "an", "is", "was", "of", "there"]


def english_like(seed: int, n: int = 150) -> list[str]:
    """:func:`test_edit.near_duplicates` with a stopword before about one word in three (always
    the same one before the same word), so that SpotSigs has antecedents to anchor chains on."""
    rng = random.Random(seed)
    before = {f"w{i}": rng.choice(ANTECEDENTS) if rng.random() < 0.35 else None for i in range(3000)}

    def word(w: str) -> str:
        s = before.get(w)
        return f"{s} {w}" if s else w

    return [" ".join(word(w) for w in t.split()) for t in near_duplicates(seed, n)]


def run(config, texts):
    result = LocalEngine(2).run(
        config.plan(), InMemorySource(texts, [str(i) for i in range(len(texts))]), want_pairs=True
    )
    a, b, s = result.pairs
    return result, {(i, j): v for i, j, v in zip(a.tolist(), b.tolist(), s.tolist())}


def all_pairs(n: int):
    i, j = np.triu_indices(n, 1)
    return i.astype(np.int64), j.astype(np.int64)


def simhash_candidates(config: SimHashConfig, texts: list[str]) -> set[tuple[int, int]]:
    """Every pair of non-empty documents whose fingerprints differ in at most max_distance bits."""
    values, counts = SimHasher(scheme=config.scheme).sign_texts_with_counts(texts)
    i, j = all_pairs(len(texts))
    d = popcount_array(values[i] ^ values[j]).sum(axis=1)
    ok = (d <= config.max_distance) & (counts[i] > 0) & (counts[j] > 0)
    return set(zip(i[ok].tolist(), j[ok].tolist()))


def spotsigs_candidates(config: SpotSigsConfig, texts: list[str]) -> set[tuple[int, int]]:
    """Every pair of documents with signatures whose weighted Jaccard reaches the candidate threshold."""
    sigs = extract(texts, config.scheme)
    i, j = all_pairs(len(texts))
    sim = weighted_jaccard_rows(sigs, i, j)
    lengths = sigs.lengths
    ok = (sim >= config.pair_threshold - 1e-12) & (lengths[i] > 0) & (lengths[j] > 0)
    return set(zip(i[ok].tolist(), j[ok].tolist()))


CASES = [
    # (config, candidates by brute force, the recall against all pairs it must reach)
    (SimHashConfig(verify="edit", threshold=0.8, max_distance=30), simhash_candidates, 0.85),
    (SimHashConfig(verify="edit", threshold=0.9, edit_level="char", max_distance=24), simhash_candidates, 0.9),
    (SpotSigsConfig(verify="edit", threshold=0.8), spotsigs_candidates, 0.98),
    (SpotSigsConfig(verify="edit", threshold=0.85, chain=3), spotsigs_candidates, 0.98),
]


@pytest.mark.parametrize(("config", "candidates", "recall"), CASES, ids=lambda x: getattr(x, "name", None))
def test_edit_verified_job_keeps_exactly_the_candidates_that_reach_the_threshold(config, candidates, recall):
    texts = english_like(int(config.edit_threshold * 100) + len(config.name))
    level, t = config.edit_level, config.edit_threshold
    sims = {
        (i, j): edit_similarity(texts[i], texts[j], level) for i in range(len(texts)) for j in range(i + 1, len(texts))
    }
    above = {p for p, v in sims.items() if v >= t}
    cands = candidates(config, texts)
    result, found = run(config, texts)
    # exactly the candidate pairs whose edit similarity reaches the threshold, each with its value
    assert set(found) == {p for p in cands if sims[p] >= t}
    for p, v in found.items():
        assert v == pytest.approx(sims[p], abs=1e-12)
    # precision 1 against brute force, and the recall the candidates allow
    assert len(above) >= 20 and set(found) <= above
    assert len(found) >= recall * len(above), f"recall {len(found) / len(above):.3f}"
    # clusters are the connected components of the kept pairs
    parent = list(range(len(texts)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in found:
        parent[find(i)] = find(j)
    roots = [find(i) for i in range(len(texts))]
    same = {(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts)) if roots[i] == roots[j]}
    kept = result.kept
    assert same == {(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts)) if kept[i] == kept[j]}
    # counted over the documents the method saw (exact copies join after the pre-pass)
    assert result.counters["checked"] >= result.counters["verified"] > 0.5 * len(found)


def test_spotsigs_candidate_threshold_follows_minhash_relation():
    config = SpotSigsConfig(verify="edit", threshold=0.9)
    assert config.pair_threshold == candidate_threshold(0.9, config.chain + 1)
    assert SpotSigsConfig(verify="edit", threshold=0.9, candidate_threshold=0.5).pair_threshold == 0.5
    assert SpotSigsConfig(threshold=0.7).pair_threshold == 0.7


def test_edit_options_belong_to_edit_verification():
    with pytest.raises(ParameterConflictError, match="threshold is for verify='edit' only"):
        SimHashConfig(threshold=0.9)
    with pytest.raises(ParameterConflictError, match="edit_level"):
        SimHashConfig(edit_level="char")
    with pytest.raises(ParameterConflictError, match="candidate_threshold"):
        SpotSigsConfig(candidate_threshold=0.5)
    assert SimHashConfig(verify="edit").edit_threshold == 0.8
    # one --verify flag with every method's choices; each method takes only its own
    res = CliRunner().invoke(
        neardup_main, ["dedup", "x.jsonl", "-o", "y.jsonl", "--method", "simhash", "--verify", "exact"]
    )
    assert res.exit_code == 2 and "verify must be one of" in res.output


@pytest.mark.parametrize("method", ["simhash", "spotsigs"])
def test_cli_pairs_carry_the_edit_similarity(tmp_path, method):
    base = "the quick brown fox jumps over the lazy dog near the river bank of the old town on a sunny day"
    texts = [base, base.replace("lazy", "sleepy"), "completely different text about hotels in the city of paris"]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    cmd = [sys.executable, "-m", "neardup", "dedup", str(src), "--method", method, "--verify", "edit"]
    cmd += ["--threshold", "0.9", "--pairs", str(tmp_path / "pairs.jsonl"), "-o", str(tmp_path / "out.jsonl")]
    cmd += ["--max-distance", "40"] if method == "simhash" else ["--candidate-threshold", "0.3"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    pairs = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert [(p["id_a"], p["id_b"]) for p in pairs] == [("0", "1")]
    assert pairs[0]["similarity"] == pytest.approx(edit_similarity(texts[0], texts[1])) == pytest.approx(1 - 1 / 21)
    assert [json.loads(x)["id"] for x in (tmp_path / "out.jsonl").read_text().splitlines()] == ["0", "2"]
    assert "edit verification" in res.stderr


# --------------------------------------------------------------------------------------------
# the bounds in front of rapidfuzz (_kernels/edit_bounds.py)


def levenshtein(a, b) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def verifier_of(seqs: list[list[int]], threshold: float):
    from neardup.methods.verify_edit import EditBounds, EditVerifier

    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in seqs], out=offsets[1:])
    ids = np.array([x for s in seqs for x in s], dtype=np.uint64)
    row = np.arange(len(seqs), dtype=np.int64)
    return EditVerifier(threshold, ids, offsets, row, EditBounds.of(ids, offsets))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 5), max_size=30), min_size=2, max_size=6),
    st.sampled_from([0.5, 0.6, 0.75, 0.8, 0.9, 0.95, 1.0]),
)
def test_bounds_never_refuse_a_pair_that_reaches_the_threshold(seqs, threshold):
    v = verifier_of(seqs, threshold)
    i, j = all_pairs(len(seqs))
    passed = v.may_reach(i, j, workers=2)
    sims = v.similarities(i, j)
    for a, b, ok, s in zip(i.tolist(), j.tolist(), passed.tolist(), sims.tolist()):
        longer = max(len(seqs[a]), len(seqs[b]))
        exact = 1.0 if longer == 0 else 1 - levenshtein(seqs[a], seqs[b]) / longer
        if exact >= threshold:
            assert ok, (seqs[a], seqs[b], exact)
        assert s == pytest.approx(exact if exact >= threshold else 0.0, abs=1e-12)


def test_bounds_refuse_unrelated_documents_of_a_small_vocabulary():
    """Documents over 300 words that share most of their words but not their order: the token
    bound passes them, the bigram bound refuses them (and a near-duplicate still passes)."""
    rng = np.random.default_rng(3)
    vocab = 40
    docs = [rng.integers(0, vocab, 400) for _ in range(60)]
    near = docs[0].copy()
    near[::10] = (near[::10] + 1) % vocab  # 10 % of the words changed: similarity 0.9
    seqs = [d.tolist() for d in docs] + [near.tolist()]
    v = verifier_of(seqs, 0.8)
    i, j = all_pairs(len(seqs))
    passed = v.may_reach(i, j)
    assert passed[(i == 0) & (j == len(seqs) - 1)].all()
    assert passed.sum() == np.count_nonzero(v.similarities(i, j) >= 0.8) == 1
    from collections import Counter

    def bag_bound(a, b):  # the token bound alone: shared tokens / the longer length
        return sum((Counter(seqs[a]) & Counter(seqs[b])).values()) / max(len(seqs[a]), len(seqs[b]))

    assert sum(bag_bound(a, b) >= 0.8 for a, b in zip(i.tolist(), j.tolist())) > 500  # of 1,830
