"""Greedy center (star) clustering (neardup.core.components.center_clusters).

Checked against a brute-force Python reference on hypothesis graphs and seeded random graphs:
every removed document is a verified neighbour of its kept document, every center comes first
in the keep order among its members, the result does not depend on the pairs' order or
direction, and a job with ``cluster="center"`` gives the same clusters for every worker count.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.components import center_clusters, keep_order


def reference(n, pairs, order):
    """Brute force: (kept, similarity) by visiting ``order`` and scanning every pair."""
    kept = [-1] * n
    sim = [1.0] * n
    for c in order:
        if kept[c] != -1:
            continue
        kept[c] = c
        for a, b, s in pairs:
            if c in (a, b):
                v = b if a == c else a
                if kept[v] == -1:
                    kept[v] = c
                    sim[v] = s
    return kept, sim


@st.composite
def weighted_graphs(draw, max_n: int = 30):
    n = draw(st.integers(1, max_n))
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] != e[1]),
            max_size=3 * n,
            unique_by=lambda e: (min(e), max(e)),
        )
    )
    sims = draw(st.lists(st.floats(0.5, 1.0), min_size=len(edges), max_size=len(edges)))
    lengths = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    return n, [(a, b, s) for (a, b), s in zip(edges, sims)], np.array(lengths)


def _arrays(pairs):
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    s = np.array([p[2] for p in pairs], dtype=np.float64)
    return a, b, s


@settings(max_examples=300, deadline=None)
@given(weighted_graphs(), st.sampled_from(["first", "longest"]))
def test_centers_equal_reference(graph, keep):
    n, pairs, lengths = graph
    order = keep_order(n, keep, lengths)
    root, kept, sim = center_clusters(n, *_arrays(pairs), order)
    want_kept, want_sim = reference(n, pairs, order.tolist())
    assert kept.tolist() == want_kept
    assert sim.tolist() == want_sim
    # root: the smallest member of each cluster
    for d in range(n):
        assert root[d] == min(i for i in range(n) if kept[i] == kept[d])
    # every removed document is a verified neighbour of its kept document
    edges = {(min(a, b), max(a, b)): s for a, b, s in pairs}
    for d in range(n):
        if kept[d] != d:
            assert edges[(min(d, kept[d]), max(d, kept[d]))] == sim[d]


@settings(max_examples=100, deadline=None)
@given(weighted_graphs(), st.randoms(use_true_random=False))
def test_centers_ignore_pair_order_and_direction(graph, rnd):
    n, pairs, _ = graph
    shuffled = [(b, a, s) if rnd.random() < 0.5 else (a, b, s) for a, b, s in pairs]
    rnd.shuffle(shuffled)
    order = np.arange(n)
    got = center_clusters(n, *_arrays(shuffled), order)
    want = center_clusters(n, *_arrays(pairs), order)
    for x, y in zip(got, want):
        assert x.tolist() == y.tolist()


def test_centers_on_larger_random_graphs():
    rng = np.random.default_rng(7)
    for _ in range(5):
        n = 400
        a = rng.integers(0, n, 1200)
        b = rng.integers(0, n, 1200)
        keep = a != b
        ab = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)[keep], axis=0)
        s = rng.uniform(0.8, 1.0, len(ab))
        pairs = [(int(x), int(y), float(z)) for (x, y), z in zip(ab, s)]
        order = rng.permutation(n)
        _, kept, sim = center_clusters(n, ab[:, 0], ab[:, 1], s, order)
        want_kept, want_sim = reference(n, pairs, order.tolist())
        assert kept.tolist() == want_kept and sim.tolist() == want_sim


def test_chain_is_cut_where_components_join():
    """a ~ b ~ c with a !~ c: components remove c for a; centers keep c."""
    root, kept, sim = center_clusters(3, np.array([0, 1]), np.array([1, 2]), np.array([0.9, 0.9]), np.arange(3))
    assert kept.tolist() == [0, 0, 2]
    assert root.tolist() == [0, 0, 2]


def test_bad_pairs_are_refused():
    with pytest.raises(ValueError, match=r"documents 0\.\.2"):
        center_clusters(3, np.array([0]), np.array([3]), np.array([0.9]), np.arange(3))
    with pytest.raises(ValueError, match="order"):
        center_clusters(3, np.array([0]), np.array([1]), np.array([0.9]), np.arange(2))


# ---------------------------------------------------------------------------------------------
# the dedup job with cluster="center"


def _chained_texts(n: int = 300, seed: int = 5) -> list[str]:
    """Copies of copies (chains that drift below the threshold), with some exact copies."""
    from conftest import make_corpus

    texts = list(make_corpus(n, seed=seed, copy_rate=0.5, max_edits=4).texts)
    return texts + texts[:20]


def _configs():
    from neardup.methods.minhash.config import MinHashConfig
    from neardup.methods.simhash.config import SimHashConfig
    from neardup.methods.spotsigs.config import SpotSigsConfig

    return [
        MinHashConfig(threshold=0.7),
        MinHashConfig(threshold=0.6, verify="exact"),
        SimHashConfig(),
        SpotSigsConfig(),
    ]


@pytest.mark.parametrize("config", _configs(), ids=lambda c: c.name)
@pytest.mark.parametrize("keep", ["first", "longest"])
def test_center_job_equals_reference_on_its_pairs_for_every_worker_count(config, keep):
    import neardup

    texts = _chained_texts()
    full = neardup.dedup(texts, config, keep=keep, workers=1, want_pairs=True)
    a, b, s = full.pairs
    order = keep_order(len(texts), keep, np.asarray(full.job.lengths))
    want_kept, want_sim = reference(len(texts), list(zip(a.tolist(), b.tolist(), s.tolist())), order.tolist())
    for workers in (1, 2):
        got = neardup.dedup(texts, config, keep=keep, cluster="center", workers=workers)
        assert got.kept.tolist() == want_kept
        assert np.allclose(got.similarity, want_sim)
        assert got.pairs is None  # not asked for
        assert got.below_threshold == 0
        removed = ~got.keep_mask
        assert (np.asarray(got.similarity)[removed] >= config.pair_threshold - 1e-9).all()


def test_components_count_the_removed_documents_below_the_threshold():
    import neardup
    from neardup.methods.minhash.config import MinHashConfig

    texts = _chained_texts()
    config = MinHashConfig(threshold=0.7, verify="exact")
    comp = neardup.dedup(texts, config, workers=1)
    below = int(np.count_nonzero(~comp.keep_mask & (np.asarray(comp.similarity) < 0.7 - 1e-9)))
    assert comp.below_threshold == below > 0
    assert (
        comp.stats["counts"]["below_threshold"] == below
        and "below threshold" in comp.summary
        and f"{below:,} of" in comp.summary["below threshold"]
    )
    center = neardup.dedup(texts, config, workers=1, cluster="center")
    assert center.below_threshold == 0
    assert center.summary["below threshold"].startswith("0 of")


def test_center_job_is_the_same_on_dask(dask_client):
    import neardup
    from neardup.engine.dask_engine import DaskEngine
    from neardup.methods.minhash.config import MinHashConfig

    texts = _chained_texts()
    config = MinHashConfig(threshold=0.7)
    local = neardup.dedup(texts, config, cluster="center", workers=2, want_pairs=True)
    dask = neardup.dedup(texts, config, cluster="center", engine=DaskEngine(dask_client, partitions=4), want_pairs=True)
    assert dask.kept.tolist() == local.kept.tolist()
    assert dask.root.tolist() == local.root.tolist()
    assert np.allclose(dask.similarity, local.similarity)
    assert [x.tolist() for x in dask.pairs] == [x.tolist() for x in local.pairs]


def test_cli_cluster_center_reports_no_document_below_the_threshold(tmp_path):
    import json

    from conftest import run_cli

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in _chained_texts()))
    for cluster in ("components", "center"):
        stats = tmp_path / f"{cluster}.json"
        res = run_cli(
            "dedup",
            src,
            "-o",
            tmp_path / f"{cluster}.jsonl",
            "--cluster",
            cluster,
            "--stats",
            stats,
            "--threshold",
            "0.7",
            "--verify",
            "exact",
        )
        body = json.loads(stats.read_text())
        assert body["settings"]["cluster"] == cluster
        assert "below threshold" in res.output
        if cluster == "center":
            assert body["counts"]["below_threshold"] == 0
        else:
            assert body["counts"]["below_threshold"] > 0
