"""The candidate stages sorted on disk past the memory budget give the in-memory answers.

Each external form (:mod:`neardup.core.extsort`) against its in-memory twin on random keys
with planted equal and near keys, with a budget so small that the sorts run in many parts and
every array is a spill file.
"""

from __future__ import annotations

import numpy as np
import pytest

from neardup.core.budget import Spill, using
from neardup.core.components import choose_kept
from neardup.core.extsort import MOST_PARTS, Partitions, equal_runs, parts_for
from neardup.core.parallel import Threads
from neardup.core.plan import StageContext
from neardup.engine.base import _longest_spilled
from neardup.methods.exact.groups import group_counters, group_equal, group_equal_external
from neardup.methods.imatch.signatures import match_roots
from neardup.methods.simhash.config import SimHashConfig
from neardup.methods.simhash.external import search_external
from neardup.methods.simhash.plan import search


def tiny(tmp_path) -> Spill:
    return Spill(limit=0, tmp_dir=tmp_path, work=4096, cap=0)


def keys_with_copies(rng, n: int, width: int = 2, distinct: int | None = None) -> np.ndarray:
    pool = rng.integers(0, 2**63, size=(distinct or n // 3, width), dtype=np.uint64) * np.uint64(2)
    return pool[rng.integers(0, len(pool), n)]


def test_parts_cover_the_rows_in_key_order_and_keep_their_order(tmp_path):
    rng = np.random.default_rng(1)
    rows = rng.integers(0, 2**64, size=(5000, 2), dtype=np.uint64)
    rows[:, 1] = np.arange(5000, dtype=np.uint64)
    spill = tiny(tmp_path)
    parts = Partitions(spill, 16, 2)
    for lo in range(0, 5000, 700):
        parts.add(rows[lo : lo + 700])
    got = list(parts)
    assert len(got) == 16 and sum(len(p) for p in got) == 5000
    for p, part in enumerate(got):
        assert ((part[:, 0] >> np.uint64(60)) == p).all()
        assert (np.diff(part[:, 1].astype(np.int64)) > 0).all(), "rows keep the order they were added in"
    assert spill.spilled
    with pytest.raises(RuntimeError, match="once"):
        list(parts)


def test_the_number_of_parts_fits_the_working_area():
    spill = Spill(limit=0, work=1000)
    assert parts_for(10, 8, spill) == 1
    assert parts_for(100, 16, spill) == 4
    assert parts_for(10**12, 16, spill) == MOST_PARTS
    with pytest.raises(ValueError, match="power of two"):
        Partitions(spill, 3, 1)


@pytest.mark.parametrize("seed", range(4))
def test_equal_keys_grouped_on_disk_give_the_roots_of_one_sort(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 4000))
    keys = keys_with_copies(rng, n)
    keys[rng.random(n) < 0.05] = 0  # one key many share: a large group in one part
    valid = rng.random(n) < 0.9
    spill = tiny(tmp_path)
    root = group_equal_external(keys, valid, spill)
    assert not root.flags.owndata, "the roots are a spill file"
    assert np.array_equal(root, group_equal(keys, valid))
    with using(spill):
        assert group_counters(root) == group_counters(np.array(root))
    expected = group_counters(group_equal(keys, valid))
    assert group_counters(np.array(root)) == expected


def test_equal_runs_list_each_member_once_with_its_first(tmp_path):
    keys = np.array([[5, 1], [7, 1], [5, 1], [5, 2], [7, 1], [5, 1]], dtype=np.uint64)
    found = list(equal_runs(keys, None, tiny(tmp_path), stretch=2))
    members = np.concatenate([m for m, _ in found])
    heads = np.concatenate([h for _, h in found])
    assert sorted(zip(members.tolist(), heads.tolist())) == [(2, 0), (4, 1), (5, 0)]


@pytest.mark.parametrize("lexicons", [1, 3])
def test_imatch_groups_on_disk_give_the_same_components(tmp_path, lexicons):
    rng = np.random.default_rng(lexicons)
    n = 3000
    sigs = np.stack([keys_with_copies(rng, n, distinct=n // 2) for _ in range(lexicons)], axis=1)
    has = rng.random((n, lexicons)) < 0.95
    expected = match_roots(sigs, has)
    with using(tiny(tmp_path)) as spill:
        got = match_roots(sigs, has)
    assert "imatch groups" in spill.external
    assert np.array_equal(got, expected)


def _fingerprints(rng, n: int, words: int) -> np.ndarray:
    base = rng.integers(0, 2**64, size=(n // 4 + 1, words), dtype=np.uint64)
    fps = base[rng.integers(0, len(base), n)]
    for _ in range(2):  # flip a few bits of some: near, not equal
        flip = rng.random(n) < 0.5
        bit = rng.integers(0, 64, n).astype(np.uint64)
        fps[flip, 0] ^= np.uint64(1) << bit[flip]
    return fps if words == 2 else fps[:, 0].copy()


@pytest.mark.parametrize("bits", [64, 128])
@pytest.mark.parametrize("want_pairs", [False, True])
def test_simhash_tables_sorted_on_disk_give_the_same_search(tmp_path, bits, want_pairs):
    rng = np.random.default_rng(bits + want_pairs)
    n = 3000
    values = _fingerprints(rng, n, bits // 64)
    counts = (rng.random(n) < 0.95).astype(np.int64)
    config = SimHashConfig(bits=bits, max_distance=3)
    with Threads(1) as threads:
        expected = search(config, StageContext(threads, want_pairs, {}), values, counts)
    got = search_external(values, counts, bits, 3, None, want_pairs, tiny(tmp_path))
    assert np.array_equal(got["root"], expected["root"])
    assert got["counters"] == expected["counters"] and expected["counters"]["pairs"] > 100
    if want_pairs:
        for x, y in zip(got["pairs"], expected["pairs"]):
            assert np.array_equal(x, y)


def test_the_longest_member_is_chosen_a_stretch_at_a_time(tmp_path):
    rng = np.random.default_rng(3)
    n = 5000
    parent = np.arange(n)
    joins = rng.integers(0, n, (n, 2))
    for a, b in joins[: n // 2]:
        ra, rb = parent[a], parent[b]
        while parent[ra] != ra:
            ra = parent[ra]
        while parent[rb] != rb:
            rb = parent[rb]
        parent[max(ra, rb)] = min(ra, rb)
    root = np.array([0] * n)
    for i in range(n):
        r = i
        while parent[r] != r:
            r = parent[r]
        root[i] = r
    lengths = rng.integers(0, 20, n)  # many ties
    got = _longest_spilled(root, lengths, tiny(tmp_path), 64)
    assert np.array_equal(got, choose_kept(root, "longest", lengths))


@pytest.mark.parametrize("method", ["exact", "simhash", "imatch"])
@pytest.mark.parametrize(
    "texts",
    [[], [""], ["", ""], ["one text here and more words"], ["a b c d e f"] * 3 + [""], ["x y z w v u t s"] * 2],
    ids=["none", "one-empty", "two-empty", "one", "copies-and-empty", "two-copies"],
)
def test_tiny_collections_under_a_tiny_budget_answer_as_in_memory(method, texts):
    from neardup.core.documents import InMemorySource
    from neardup.engine import LocalEngine
    from neardup.methods.registry import get_method

    config = get_method(method)()
    for want_pairs in (False, True):
        for keep in ("first", "longest"):
            base = LocalEngine(1).run(config.plan(), InMemorySource(texts), want_pairs=want_pairs, keep=keep)
            other = LocalEngine(1, memory="16KB").run(
                config.plan(), InMemorySource(texts), want_pairs=want_pairs, keep=keep
            )
            for name in ("root", "kept", "similarity", "empty"):
                assert np.array_equal(getattr(base, name), getattr(other, name)), name
            assert base.counters == other.counters
            if want_pairs:
                for x, y in zip(base.pairs, other.pairs):
                    assert np.array_equal(x, y)
