"""neardup.evaluation: metrics against brute force and known values, label files, sweeps, the exact
reported-pair probability of `neardup tune`, and the Clough-Stevenson evaluation script."""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import math
import random
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.errors import InputError
from neardup.eval.metrics import (
    Clusters,
    Pairs,
    _reported_probability_fft,
    adjusted_rand_index,
    best_threshold,
    evaluate,
    read_labels,
    reported_probability,
    threshold_sweep,
    tuning,
)
from neardup.methods.minhash import lsh
from neardup.methods.minhash.estimate import acceptance_probability

from conftest import REPO, SHARED_DATA

# --------------------------------------------------------------------------------------------
# brute-force references


def pairs_of(labels: dict) -> set[frozenset]:
    """Every unordered pair of items with the same (non-None) label."""
    return {
        frozenset((x, y))
        for x, y in itertools.combinations(sorted(labels), 2)
        if labels[x] is not None and labels[x] == labels[y]
    }


def rand_index(a: list, b: list) -> float:
    pairs = list(itertools.combinations(range(len(a)), 2))
    return sum((a[i] == a[j]) == (b[i] == b[j]) for i, j in pairs) / len(pairs)


labellings = st.lists(st.integers(0, 3), min_size=2, max_size=7)


@settings(max_examples=60, deadline=None)
@given(labellings, st.data())
def test_ari_equals_rand_index_adjusted_over_all_permutations(a, data):
    """Hubert-Arabie's closed form equals (RI - E RI) / (1 - E RI) with E over all n! relabellings."""
    b = data.draw(st.lists(st.integers(0, 3), min_size=len(a), max_size=len(a)))
    closed = adjusted_rand_index(a, b)
    ri = rand_index(a, b)
    perms = [rand_index(a, [b[i] for i in p]) for p in itertools.permutations(range(len(b)))]
    expected = sum(perms) / len(perms)
    # RI = (n2 + 2 index - A - B) / n2 is affine in the index and equals 1 at the maximum index
    # (A + B) / 2, so Hubert-Arabie's (index - E index) / (max - E index) = (RI - E RI) / (1 - E RI)
    if math.isclose(expected, 1.0):
        assert closed == 1.0
    else:
        assert closed == pytest.approx((ri - expected) / (1 - expected), abs=1e-12)


def test_ari_known_values():
    # the textbook example: merging two of three pairs, and a perfect match under renaming
    assert adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]) == pytest.approx(0.5714285714285714)
    assert adjusted_rand_index([0, 0, 1, 1, 2, 2], [5, 5, 3, 3, 9, 9]) == 1.0
    assert adjusted_rand_index([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(-0.5)
    # Hubert & Arabie's worked example style: n = 10 with a 3 x 3 table
    a = [0] * 3 + [1] * 3 + [2] * 4
    b = [0, 0, 1, 1, 1, 2, 2, 2, 2, 0]
    index, A, B = 1 + 1 + 3, 3 + 3 + 6, 3 + 3 + 6
    expected = A * B / 45
    assert adjusted_rand_index(a, b) == pytest.approx((index - expected) / ((A + B) / 2 - expected))


def random_labels(rng: random.Random, n: int, k: int) -> dict:
    return {f"d{i}": rng.randrange(k) for i in range(n)}


@pytest.mark.parametrize("seed", range(8))
def test_pairwise_scores_match_brute_force_for_every_input_kind(seed):
    """Clusters are never expanded into pairs, yet P/R/F1 equal the brute-force pair counts; the four
    combinations (clusters or pairs on either side) give the same scores for the same relation."""
    rng = random.Random(seed)
    gold = random_labels(rng, 30, 8)
    pred = random_labels(rng, 30, 6)
    g_pairs, p_pairs = pairs_of(gold), pairs_of(pred)
    tp = len(g_pairs & p_pairs)
    want = (tp / len(p_pairs), tp / len(g_pairs), 2 * tp / (len(p_pairs) + len(g_pairs)))

    def as_clusters(d):
        return Clusters(list(d), list(d.values()))

    def as_pairs(s):
        items = [tuple(sorted(p)) for p in s]
        return Pairs([a for a, _ in items], [b for _, b in items])

    results = [
        evaluate(p, g) for p in (as_clusters(pred), as_pairs(p_pairs)) for g in (as_clusters(gold), as_pairs(g_pairs))
    ]
    for s in results:
        assert (s.true_pairs, s.pred_pairs, s.gold_pairs) == (tp, len(p_pairs), len(g_pairs))
        assert (s.precision, s.recall, s.f1) == pytest.approx(want)
    # macro F1 only looks at pairs, so it agrees everywhere; the ARI agrees whenever one side is a
    # clusters table of all 30 items (with pairs on both sides, items in no pair drop out)
    full = results[0]
    assert full.ari == pytest.approx(adjusted_rand_index(list(gold.values()), [pred[k] for k in gold]))
    for s in results[1:]:
        assert s.macro_f1 == pytest.approx(full.macro_f1)
    for s in results[1:3]:
        assert s.ari == pytest.approx(full.ari)


def macro_f1_brute(gold: dict, pred_pairs: set[frozenset]) -> float:
    f1s = []
    for c in set(gold.values()):
        members = {x for x, v in gold.items() if v == c}
        if len(members) < 2:
            continue
        g = {p for p in pairs_of(gold) if p <= members}
        touching = {p for p in pred_pairs if p & members}
        correct = {p for p in pred_pairs if p <= members}
        f1s.append(2 * len(correct) / (len(touching) + len(g)))
    return sum(f1s) / len(f1s)


@pytest.mark.parametrize("seed", range(6))
def test_macro_f1_matches_its_definition(seed):
    rng = random.Random(seed)
    gold = random_labels(rng, 25, 7)
    pred = random_labels(rng, 25, 5)
    s = evaluate(Clusters(list(pred), list(pred.values())), Clusters(list(gold), list(gold.values())))
    assert s.macro_f1 == pytest.approx(macro_f1_brute(gold, pairs_of(pred)))


def test_macro_f1_hand_example():
    """Gold {a,b,c} {d,e}; predicted {a,b} {c,d,e}: cluster 1 gets 1 of 3 pairs and 1 of the 3
    predicted pairs touching it are right -> F1 2/6; cluster 2 gets its pair, touched by 3 -> 2/4."""
    gold = Clusters(list("abcde"), [1, 1, 1, 2, 2])
    pred = Clusters(list("abcde"), [1, 1, 2, 2, 2])
    s = evaluate(pred, gold)
    assert s.macro_f1 == pytest.approx((2 / 6 + 2 / 4) / 2)
    assert (s.true_pairs, s.pred_pairs, s.gold_pairs) == (2, 4, 4)


def test_missing_ids_are_singletons_and_counted():
    gold = Clusters(["a", "b", "c"], [1, 1, 2])
    pred = Clusters(["a", "b", "x", "y"], [1, 1, 3, 3])
    s = evaluate(pred, gold)
    assert (s.items, s.only_in_pred, s.only_in_gold) == (5, 2, 1)
    assert (s.true_pairs, s.pred_pairs, s.gold_pairs) == (1, 2, 1)
    assert s.precision == 0.5 and s.recall == 1.0


def test_empty_sides_and_duplicates():
    s = evaluate(Clusters(["a", "b"], [1, 2]), Clusters(["a", "b"], [1, 2]))
    assert (s.precision, s.recall, s.f1, s.ari, s.macro_f1) == (1.0, 1.0, 1.0, 1.0, None)
    s = evaluate(Pairs([], []), Clusters(["a", "b"], [1, 1]))
    assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)
    # a pair listed twice (either order) and a self-pair count once / not at all
    s = evaluate(Pairs(["a", "b", "a"], ["b", "a", "a"]), Pairs(["a"], ["b"]))
    assert (s.pred_pairs, s.true_pairs) == (1, 1)
    with pytest.raises(ValueError, match="listed twice"):
        evaluate(Clusters(["a", "a"], [1, 2]), Clusters(["a"], [1]))


# --------------------------------------------------------------------------------------------
# sweeps


@pytest.mark.parametrize("seed", range(5))
def test_threshold_sweep_matches_evaluate_at_every_threshold(seed):
    rng = random.Random(seed)
    gold = random_labels(rng, 30, 6)
    ids = list(gold)
    cand = [(a, b) for a, b in itertools.combinations(ids, 2) if rng.random() < 0.3]
    sims = np.array([round(rng.random(), 2) for _ in cand])
    pred = Pairs([a for a, _ in cand], [b for _, b in cand], sims)
    sw = threshold_sweep(pred, Clusters(ids, list(gold.values())))
    assert list(sw.threshold) == sorted(set(sims.tolist()), reverse=True)
    for k, t in enumerate(sw.threshold):
        keep = sims >= t
        s = evaluate(
            Pairs([a for (a, _), m in zip(cand, keep) if m], [b for (_, b), m in zip(cand, keep) if m]),
            Clusters(ids, list(gold.values())),
        )
        assert (sw.precision[k], sw.recall[k], sw.f1[k]) == pytest.approx((s.precision, s.recall, s.f1))
        assert sw.at(t) == pytest.approx((s.precision, s.recall, s.f1))
    assert sw.f1[sw.best] == max(sw.f1)


def test_best_threshold_brute_force():
    rng = random.Random(3)
    scores = [rng.random() for _ in range(40)]
    labels = [s + rng.gauss(0, 0.2) > 0.5 for s in scores]
    t, p, r, f1 = best_threshold(scores, labels)
    best = max(
        (2 * sum(y for s, y in zip(scores, labels) if s >= c) / (sum(s >= c for s in scores) + sum(labels)), -c)
        for c in scores
    )
    assert f1 == pytest.approx(best[0]) and t == -best[1]
    kept = [y for s, y in zip(scores, labels) if s >= t]
    assert p == pytest.approx(sum(kept) / len(kept)) and r == pytest.approx(sum(kept) / sum(labels))


# --------------------------------------------------------------------------------------------
# label files


def test_read_labels_formats(tmp_path):
    rows = [{"id": 1, "group": "g1"}, {"id": "b", "group": "g1"}, {"id": "c", "group": None}]
    with gzip.open(tmp_path / "gold.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    gold = read_labels(tmp_path / "gold.jsonl.gz")
    assert isinstance(gold, Clusters)
    assert gold.ids.to_pylist() == ["1", "b", "c"] and gold.cluster.to_pylist() == ["g1", "g1", None]
    (tmp_path / "pairs.csv").write_text("id_a,id_b,similarity\n1,b,0.9\n007,c,0.5\n")
    pairs = read_labels(tmp_path / "pairs.csv")
    assert isinstance(pairs, Pairs) and pairs.a.to_pylist() == ["1", "007"]  # ids stay strings
    assert pairs.similarity.tolist() == [0.9, 0.5]
    pq.write_table(
        pa.table({"id": [1, 2, 3], "cluster": [7, 7, 8], "similarity": [1.0, 0.9, 1.0]}), tmp_path / "c.parquet"
    )
    cl = read_labels(tmp_path / "c.parquet")
    assert cl.ids.to_pylist() == ["1", "2", "3"] and cl.similarity.tolist() == [1.0, 0.9, 1.0]
    s = evaluate(pairs, gold)
    assert (s.true_pairs, s.gold_pairs, s.pred_pairs) == (1, 1, 2)


def test_read_labels_errors_name_file_and_line(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match=r"x\.csv.*columns are 'a', 'b'"):
        read_labels(tmp_path / "x.csv")
    (tmp_path / "p.jsonl").write_text('{"id_a": "x", "id_b": "y"}\n\n{"id_a": "x"}\n')
    with pytest.raises(InputError, match=r"p\.jsonl:3.*'id_b' is missing"):
        read_labels(tmp_path / "p.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "cluster": 1}\n{oops\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2.*malformed JSON"):
        read_labels(tmp_path / "bad.jsonl")
    with pytest.raises(InputError, match="no such file"):
        read_labels(tmp_path / "missing.csv")
    (tmp_path / "dup.csv").write_text("id,cluster\na,1\nb,1\na,2\n")
    with pytest.raises(InputError, match=r"dup\.csv:4.*'a' is listed twice"):
        read_labels(tmp_path / "dup.csv")
    (tmp_path / "na.csv").write_text("id,cluster\nNA,null\nb,\n")  # only empty cells are missing
    labels = read_labels(tmp_path / "na.csv")
    assert labels.ids.to_pylist() == ["NA", "b"] and labels.cluster.to_pylist() == ["null", None]


# --------------------------------------------------------------------------------------------
# tune: the probability that a pair is reported


@pytest.mark.parametrize("k,b,r,t", [(10, 3, 3, 0.6), (9, 2, 4, 0.5), (12, 4, 2, 0.7), (8, 8, 1, 0.3)])
def test_reported_probability_equals_enumeration_of_all_agreement_vectors(k, b, r, t):
    """Exact: sum over all 2^K slot-agreement vectors of P(vector) [some band full and matches >= need]."""
    vecs = np.array(list(itertools.product([0, 1], repeat=k)), dtype=bool)
    cand = vecs[:, : b * r].reshape(-1, b, r).all(axis=2).any(axis=1)
    acc = vecs.sum(axis=1) >= math.ceil(t * k - 1e-9)
    for s in (0.0, 0.2, 0.5, 0.65, 0.9, 1.0):
        weight = np.where(vecs, s, 1 - s).prod(axis=1)
        want = float((weight * (cand & acc)).sum())
        assert reported_probability([s], k, b, r, t)[0] == pytest.approx(want, rel=1e-12, abs=1e-15)
        assert _reported_probability_fft([s], k, b, r, t)[0] == pytest.approx(want, abs=1e-12)


def test_reported_probability_vs_simulation_and_the_product_bound():
    k, b, r, t = 128, 17, 7, 0.8
    rng = np.random.default_rng(1)
    s = np.array([0.7, 0.78, 0.8, 0.85])
    exact = reported_probability(s, k, b, r, t)
    for x, p in zip(s, exact):
        agree = rng.random((40000, k)) < x
        cand = agree[:, : b * r].reshape(-1, b, r).all(axis=2).any(axis=1)
        sim = (cand & (agree.sum(axis=1) >= math.ceil(t * k))).mean()
        assert abs(sim - p) < 4 * math.sqrt(p * (1 - p) / 40000) + 1e-3
        product = lsh.candidate_probability(x, b, r) * acceptance_probability(float(x), k, t)
        assert product <= p + 1e-15  # Harris: the events are positively correlated
        assert p <= min(lsh.candidate_probability(x, b, r), acceptance_probability(float(x), k, t)) + 1e-15
    # tiny probabilities keep their relative accuracy (no cancellation)
    tiny = reported_probability([0.1], k, b, r, t)[0]
    assert 0 < tiny <= acceptance_probability(0.1, k, t)


def test_tuning_agrees_with_lsh_and_lists_near_alternatives():
    out = tuning(0.8, 128)
    p = lsh.optimal_params(0.8, 128)
    assert (out["bands"], out["rows"]) == (p.bands, p.rows)
    assert out["effective_threshold"] == pytest.approx((1 / p.bands) ** (1 / p.rows))
    assert out["fp_area"] == pytest.approx(p.false_positive_area)
    assert out["fn_area"] == pytest.approx(p.false_negative_area)
    # the listed alternatives are the global best bandings (checked against every (b, r))
    all_b, all_r = lsh._all_bandings(128)
    fp, fn = lsh._areas(0.8, all_b, all_r)
    obj = 0.02 * fp + 0.98 * fn
    best = sorted(zip(obj, all_b, all_r))[:8]
    assert [(a["bands"], a["rows"]) for a in out["alternatives"]] == [(int(b), int(r)) for _, b, r in best]
    row = {x["similarity"]: x for x in out["similarities"]}
    assert row[0.8]["reported_exact_verify"] == pytest.approx(lsh.candidate_probability(0.8, p.bands, p.rows))
    assert row[0.7]["reported_exact_verify"] == 0.0
    # reported areas by quadrature equal a fine Riemann sum of the exact curve
    grid = (np.arange(4000) + 0.5) / 4000
    curve = reported_probability(grid, 128, p.bands, p.rows, 0.8)
    assert out["reported_fp_area"] == pytest.approx(curve[grid < 0.8].sum() / 4000, abs=2e-4)
    assert out["reported_fn_area"] == pytest.approx((1 - curve[grid >= 0.8]).sum() / 4000, abs=2e-4)
    given = tuning(0.8, 128, bands=20, rows=5)
    assert given["chosen"] == "given" and given["optimal"] == {"bands": p.bands, "rows": p.rows}


# --------------------------------------------------------------------------------------------
# the Clough-Stevenson evaluation


CS = SHARED_DATA / "clough-stevenson"


@pytest.mark.skipif(not (CS / "file_information.csv").is_file(), reason=f"shared corpus not present at {CS}")
def test_clough_stevenson_script(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("evaluate_cs", REPO / "scripts" / "evaluate_clough_stevenson.py")
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "evaluate_cs", script)  # dataclasses look their module up
    spec.loader.exec_module(script)
    assert script.main(["--data", str(CS), "--json", str(tmp_path / "cs.json"), "--export", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "cs.json").read_text())
    assert out["counts"] == {"cut": 19, "light": 19, "heavy": 19, "non": 38}
    res = out["results"]
    for n in (2, 3, 4, 5):
        mean = res[f"containment, word {n}-grams"]["mean"]
        assert mean["cut"] > mean["light"] > mean["heavy"] > mean["non"]  # the four-way order
    assert res["containment, word 3-grams"]["f1"] > 0.8
    assert res["containment, word 3-grams"]["any_reuse_f1"] > 0.95
    assert all(0 <= r["loto_f1"] <= 1 for r in res.values())
    # the export: 5 clusters of a source with its cut and light answers (5 + 38 texts), 57 texts alone
    gold = read_labels(tmp_path / "gold.jsonl")
    clusters = gold.cluster.to_pylist()
    assert len(gold.ids) == 100 and len(set(clusters)) == 5 + 57
    assert sum(clusters.count(f"task{t}") for t in "abcde") == 5 + 38
