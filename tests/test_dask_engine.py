"""The Dask engine beyond the contract suite: a worker killed mid-job, the shuffle's pieces, the CLI."""

from __future__ import annotations

import itertools
import json
import os
import signal

import numpy as np
import pytest

from neardup.core.documents import InMemorySource
from neardup.engine import LocalEngine
from neardup.engine.dask_groupby import (
    bucket_entries,
    grouped_entries,
    merge_forests,
    pairs_forest,
    roots_from_forest,
    shards_entries,
)
from neardup.methods.minhash.config import MinHashConfig
from neardup.text.shingles import Shingling

from conftest import make_corpus

pytest.importorskip("dask.distributed")


def test_buckets_hold_whole_groups():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 5, size=(200, 4, 2)).astype(np.uint64)
    member = rng.random((200, 4)) < 0.8
    parts = bucket_entries(keys, member, 7)
    assert sum(len(p["doc"]) for p in parts) == member.sum()
    seen: dict[tuple, int] = {}
    for b, p in enumerate(parts):
        for t, k in zip(p["table"].tolist(), map(tuple, p["key"].tolist())):
            assert seen.setdefault((t, k), b) == b, "a group was split across buckets"


def test_candidates_are_verified_again_on_rows_from_several_shards():
    """recheck_with_rows: a bucket's candidate pairs (candidate_bucket), their re-read rows read in
    place from one shard and taken from another, kept when the exact Jaccard of their sets
    reaches the threshold: brute force's pairs and similarities, each pair once."""
    from neardup.core.arrays import CsrRows
    from neardup.engine.dask_groupby import candidate_bucket, check_bucket, recheck_with_rows, take_group_rows
    from neardup.methods.minhash.plan import shard_exact_verify

    rng = np.random.default_rng(5)
    n = 40
    sets = [np.unique(rng.integers(0, 12, size=rng.integers(1, 8))).astype(np.uint64) for _ in range(n)]
    shards = []
    for start, stop in ((0, 25), (25, n)):
        offsets = np.zeros(stop - start + 1, dtype=np.int64)
        np.cumsum([len(sets[d]) for d in range(start, stop)], out=offsets[1:])
        rows = CsrRows(np.concatenate(sets[start:stop]), offsets)
        shards.append({"start": start, "n": stop - start, "rows": {"reread": rows}, "counters": None})
    a, b = rng.integers(0, n, 300), rng.integers(0, n, 300)
    a, b = a[a < b], b[a < b]  # repeated pairs included, as several groups may give them
    bucket = candidate_bucket((a, b, np.zeros(len(a)), 3))
    config = MinHashConfig(threshold=0.5, verify="exact")
    got_a, got_b, got_s, groups = check_bucket(
        recheck_with_rows, shard_exact_verify, config, bucket, 1, shards[0], take_group_rows(bucket, shards[1])
    )
    expected = {}
    for x, y in zip(a.tolist(), b.tolist()):
        j = len(np.intersect1d(sets[x], sets[y])) / len(np.union1d(sets[x], sets[y]))
        if j >= 0.5:
            expected[x, y] = j
    assert groups == 3
    assert list(zip(got_a.tolist(), got_b.tolist())) == sorted(expected)
    assert np.allclose(got_s, [expected[p] for p in sorted(expected)])
    assert 0 < len(expected) < len(set(zip(a.tolist(), b.tolist())))


@pytest.mark.parametrize("words", [1, 2])
def test_each_candidate_pair_is_kept_in_one_bucket(words):
    """candidates_with_rows over every bucket: each pair that the buckets' groups verify is kept
    exactly once in all (in the bucket of the first table that groups it), none is lost."""
    from neardup.engine.dask_groupby import candidates_with_rows, check_bucket, verify_with_rows

    rng = np.random.default_rng(9)
    tables, n, buckets = 6, 300, 5
    keys = rng.integers(0, 4, size=(n, tables, words), dtype=np.uint64)  # many shared keys
    shards = [
        {"start": lo, "n": hi - lo, "rows": {"keys": keys[lo:hi], "member": np.ones((hi - lo, tables), bool)}}
        for lo, hi in ((0, 120), (120, n))
    ]

    def keys_fn(config, rows, documents):
        return rows["keys"], rows["member"]

    def verify(config, members, bounds, rows):  # pairwise: every pair of a group whose first words add up odd
        a, b = [], []
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            m = np.asarray(members[lo:hi])
            i, j = np.triu_indices(len(m), 1)
            odd = (rows["keys"][m[i], 0, 0] + rows["keys"][m[j], 0, 0]) % 2 == 1
            a.append(np.minimum(m[i], m[j])[odd])
            b.append(np.maximum(m[i], m[j])[odd])
        a, b = np.concatenate(a), np.concatenate(b)
        return a, b, np.ones(len(a))

    entries = shards_entries(keys_fn, None, buckets, n, *shards)
    grouped = [grouped_entries(part) for part in entries]
    every, kept, found = set(), [], 0
    for bucket in grouped:
        a, b, _, _ = check_bucket(verify_with_rows, verify, None, bucket, 2, *shards)
        every |= set(zip(a.tolist(), b.tolist()))
        found += len(a)
        a, b, _, _ = check_bucket(candidates_with_rows, (verify, keys_fn, n, buckets), None, bucket, 2, *shards)
        kept += list(zip(a.tolist(), b.tolist()))
    assert len(kept) == len(set(kept)), "a pair kept in two buckets"
    assert set(kept) == every
    assert found > len(every) > 100, "pairs found in several buckets"


@pytest.mark.parametrize("words", [1, 2])
def test_a_workers_shards_split_into_the_buckets_of_their_entries(words):
    """shards_entries over several shards (one allocation, no joining copies) gives each bucket
    the entries that bucket_entries gives the shards one by one: same (table, key, document)
    multiset per bucket, documents numbered from each shard's start; a shard without documents
    adds nothing."""
    rng = np.random.default_rng(5)
    tables = 3
    sizes, starts = [400, 0, 250, 900], [0, 400, 400, 650]
    shards = []
    for n, start in zip(sizes, starts):
        keys = rng.integers(0, 30, size=(n, tables, words), dtype=np.uint64)
        shards.append({"start": start, "n": n, "rows": {"keys": keys, "member": rng.random((n, tables)) < 0.85}})

    def keys_fn(config, rows, documents):
        assert documents == 1550
        return rows["keys"], rows["member"]

    got = shards_entries(keys_fn, None, 5, 1550, *shards)
    expected = [bucket_entries(s["rows"]["keys"], s["rows"]["member"], 5, s["start"]) for s in shards]

    def entries(part):
        return sorted(zip(part["table"].tolist(), map(tuple, part["key"].tolist()), part["doc"].tolist()))

    assert len(got) == 5
    for b in range(5):
        assert entries(got[b]) == sorted(e for parts in expected for e in entries(parts[b]))
        assert got[b]["key"].shape[1] == words
    assert sum(len(p["doc"]) for p in got) == sum(int(s["rows"]["member"].sum()) for s in shards)


@pytest.mark.parametrize("words", [1, 2])
@pytest.mark.parametrize("skewed", [False, True])
def test_a_bucket_groups_entries_of_equal_table_and_key(words, skewed):
    """grouped_entries keeps exactly the groups of two or more entries with equal (table, key),
    each in document order, whatever the order of the shards' pieces (skewed: keys that differ
    in their low bits only, so the first sorting pass puts them in few bins)."""
    rng = np.random.default_rng(9)
    n, tables = 3000, 4
    keys = rng.integers(0, 40, size=(n, tables, words), dtype=np.uint64)
    if not skewed:
        keys = keys * np.uint64(0x9E3779B97F4A7C15)  # spread over the 64 bits
    member = rng.random((n, tables)) < 0.9
    pieces = [bucket_entries(keys[lo : lo + 1000], member[lo : lo + 1000], 3, lo) for lo in (0, 1000, 2000)]
    for b in range(3):
        got = grouped_entries(*[p[b] for p in reversed(pieces)])
        bounds = got["bounds"]
        found = {
            (int(got["table"][lo]), tuple(got["key"][lo].tolist())): got["doc"][lo:hi].tolist()
            for lo, hi in itertools.pairwise(bounds.tolist())
        }
        expected: dict[tuple, list[int]] = {}
        for p in pieces:
            for t, k, d in zip(p[b]["table"].tolist(), map(tuple, p[b]["key"].tolist()), p[b]["doc"].tolist()):
                expected.setdefault((t, k), []).append(d)
        expected = {g: sorted(docs) for g, docs in expected.items() if len(docs) >= 2}
        assert found == expected
        assert len(found) == len(bounds) - 1
        assert got["docs"].tolist() == sorted(set(got["doc"].tolist()))


def test_forest_merge_equals_components_of_all_pairs():
    from neardup.core.components import components

    rng = np.random.default_rng(5)
    n = 300
    a = rng.integers(0, n, 400)
    b = rng.integers(0, n, 400)
    a, b = np.minimum(a, b), np.maximum(a, b)
    forests = [pairs_forest(a[i::5], b[i::5]) for i in range(5)]
    merged = merge_forests(merge_forests(*forests[:2]), merge_forests(*forests[2:]))
    assert np.array_equal(roots_from_forest(n, merged), components(n, a, b))


class _KillOnce:
    """A progress that kills one worker process (SIGKILL) when the ``at``-th batch of the job's
    scans (counted over all of them) is done."""

    def __init__(self, client, at: int = 5) -> None:
        self.client = client
        self.at = at
        self.batches = 0
        self.killed: int | None = None

    def stage(self, name: str) -> None:
        pass

    def advance(self, n: int) -> None:
        self.batches += 1
        if self.batches == self.at:
            pids = self.client.run(os.getpid)
            self.killed = sorted(pids.values())[0]
            os.kill(self.killed, signal.SIGKILL)


def _with_stopwords(texts: list[str]) -> list[str]:
    """The texts with a stopword before every word: spot signatures start at stopwords."""
    return [" ".join(f"{'the a is of'.split()[k % 4]} {w}" for k, w in enumerate(t.split())) for t in texts]


def _kill_configs():
    from neardup.methods.imatch.config import IMatchConfig
    from neardup.methods.simhash.config import SimHashConfig
    from neardup.methods.spotsigs.config import SpotSigsConfig

    return {
        "minhash": (MinHashConfig(threshold=0.6), 5),
        "simhash": (SimHashConfig(max_distance=6), 5),
        # killed in the second scan, after shards of it were made: they are made again from
        # their batch and the broadcast lexicon
        "imatch": (IMatchConfig(lexicons=3, min_terms=3), 60 + 8),
        "spotsigs": (SpotSigsConfig(threshold=0.5), 5),
        # killed while the candidates' texts are read again (60 batches in the first scan): the
        # re-read rows it held are made again, and so are the candidates they came from
        "minhash-exact": (MinHashConfig(threshold=0.6, verify="exact"), 60 + 5),
        "simhash-edit": (SimHashConfig(verify="edit", threshold=0.85, max_distance=24), 60 + 5),
    }


@pytest.mark.parametrize("method", ["minhash", "simhash", "imatch", "spotsigs", "minhash-exact", "simhash-edit"])
def test_a_worker_killed_mid_job_is_replaced_and_the_answer_is_the_same(dask_client, method):
    """Every one keeps its last scan's state on the workers (a killed worker's shards are
    recomputed from their lineage); I-Match's worker dies while its shards are being made, the
    re-reading plans' while the candidates' texts are read again."""
    from neardup.engine.dask_engine import DaskEngine

    data = make_corpus(n=600, seed=11)
    texts = _with_stopwords(data.texts) if method == "spotsigs" else data.texts
    config, at = _kill_configs()[method]
    expected = LocalEngine(1).run(config.plan(), InMemorySource(texts, data.ids, batch_size=10), want_pairs=True)
    assert len(expected.pairs[0]) > 0
    killer = _KillOnce(dask_client, at)
    got = DaskEngine(dask_client, partitions=4).run(
        config.plan(), InMemorySource(texts, data.ids, batch_size=10), want_pairs=True, progress=killer
    )
    assert killer.killed is not None
    dask_client.wait_for_workers(2, timeout=60)
    assert killer.killed not in dask_client.run(os.getpid).values(), "the killed worker is gone"
    assert np.array_equal(got.root, expected.root)
    assert np.array_equal(got.kept, expected.kept)
    assert np.array_equal(got.similarity, expected.similarity)
    for x, y in zip(got.pairs, expected.pairs):
        assert np.array_equal(x, y)
    assert got.counters["dask_shuffle_bytes"] > 0
    assert "dask_rows_moved_bytes" in got.counters, "the sharded path ran"  # 0 when one worker held every shard


def test_cli_engine_dask_writes_what_the_local_engine_writes(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    data = make_corpus(n=300, seed=5)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(data.ids, data.texts)))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    outs = {}
    for engine in ("local", "dask"):
        out = tmp_path / f"{engine}.jsonl"
        args = [sys.executable, "-m", "neardup", "dedup", str(src), "-o", str(out), "--engine", engine, "-q"]
        args += ["--workers", "2", "--clusters", str(tmp_path / f"{engine}-clusters.csv")]
        r = subprocess.run(args, capture_output=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr.decode()
        outs[engine] = (out.read_bytes(), (tmp_path / f"{engine}-clusters.csv").read_bytes())
    assert outs["dask"] == outs["local"]
    assert len(outs["local"][0].splitlines()) < 300


def test_cli_scheduler_needs_engine_dask(tmp_path):
    from click.testing import CliRunner

    from neardup.cli.main import main

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "a b c"}\n')
    r = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o.jsonl"), "--partitions", "3"])
    assert r.exit_code == 2
    assert "--engine dask" in r.output


def test_output_folder_gets_one_part_per_input_file(tmp_path):
    from click.testing import CliRunner

    from neardup.cli.main import main

    data = make_corpus(n=240, seed=9)
    shards = tmp_path / "in"
    (shards / "sub").mkdir(parents=True)
    names = ["a.jsonl", "sub/b.jsonl", "c.jsonl"]
    for k, name in enumerate(names):
        rows = range(k * 80, (k + 1) * 80)
        (shards / name).write_text("".join(json.dumps({"id": data.ids[i], "text": data.texts[i]}) + "\n" for i in rows))
    whole = tmp_path / "whole.jsonl"
    r = CliRunner().invoke(main, ["dedup", str(shards), "-o", str(whole), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["dedup", str(shards), "-o", str(tmp_path / "parts") + "/", "-q"])
    assert r.exit_code == 0, r.output
    parts = sorted((tmp_path / "parts").iterdir())
    assert [p.name for p in parts] == ["part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]
    assert b"".join(p.read_bytes() for p in parts) == whole.read_bytes()
    # reading order is sorted path order: a.jsonl, c.jsonl, sub/b.jsonl
    assert {json.loads(line)["id"] for line in parts[1].read_text().splitlines()} <= set(data.ids[160:240])
    assert len(whole.read_text().splitlines()) < 240


def _jsonl_corpus(path, n: int, seed: int, broken: dict[int, str] | None = None, ids: bool = False) -> None:
    """A JSONL file of generated documents without ids (ids are FILE:LINE; with ``ids``, each
    record has one), a blank line every 17 records, and ``broken`` records replaced by the given
    lines."""
    data = make_corpus(n=n, seed=seed)
    lines = []
    for i, text in enumerate(data.texts):
        record = {"id": f"doc-{i}", "text": text} if ids else {"text": text}
        lines.append((broken or {}).get(i, json.dumps(record)))
        if i % 17 == 0:
            lines.append("")
    path.write_text("\n".join(lines) + "\n")


def _file_configs():
    from neardup.methods.exact.config import ExactConfig
    from neardup.methods.imatch.config import IMatchConfig
    from neardup.methods.simhash.config import SimHashConfig
    from neardup.methods.spotsigs.config import SpotSigsConfig

    return [
        MinHashConfig(threshold=0.6),
        MinHashConfig(verify="exact", threshold=0.7, sketch="oph"),
        SimHashConfig(weighting="idf", max_distance=10),
        SpotSigsConfig(threshold=0.6, idf_band=(0.1, 0.95)),
        ExactConfig(),
        IMatchConfig(lexicons=3, min_terms=3),
    ]


@pytest.mark.parametrize("config", _file_configs(), ids=lambda c: f"{c.name}")
def test_workers_read_byte_ranges_of_a_jsonl_file_and_give_the_local_answer(tmp_path, config, dask_client):
    """The workers read the file themselves, in 6 byte ranges: ids (FILE:LINE), clusters, kept
    documents, similarities, pairs and read counters are the local engine's."""
    import neardup
    from neardup.engine.dask_engine import DaskEngine

    path = tmp_path / "in.jsonl"
    _jsonl_corpus(path, 240, seed=21)
    local = neardup.dedup([str(path)], config, workers=1, batch_size=16, want_pairs=True)
    engine = DaskEngine(dask_client, partitions=6)
    got = neardup.dedup([str(path)], config, engine=engine, batch_size=16, want_pairs=True)
    assert engine.input_partitions == 6
    assert engine.scan_bytes["to workers"] < 10_000, "the texts were sent, not read on the workers"
    assert got.ids == local.ids and got.ids[1] == f"{path}:3"
    for name in ("root", "kept", "similarity"):
        assert np.array_equal(getattr(got, name), getattr(local, name)), name
    for x, y in zip(got.pairs, local.pairs):
        assert np.array_equal(x, y)
    assert got.read_stats == local.read_stats


def test_a_bad_line_in_a_later_range_names_its_file_and_line(tmp_path, dask_client):
    import neardup
    from neardup.core.errors import InputError
    from neardup.engine.dask_engine import DaskEngine

    path = tmp_path / "in.jsonl"
    _jsonl_corpus(path, 200, seed=4, broken={150: '{"text": oops', 180: '{"body": "no text"}'})
    with pytest.raises(InputError) as err:
        neardup.dedup([str(path)], engine=DaskEngine(dask_client, partitions=5))
    lineno = 150 + 150 // 17 + 2  # records before it, blank lines before it, 1-based
    assert (err.value.path, err.value.line) == (str(path), lineno)
    assert str(err.value).startswith(f"{path}:{lineno}: malformed JSON")
    local = neardup.dedup([str(path)], on_error="skip", workers=1)
    got = neardup.dedup([str(path)], on_error="skip", engine=DaskEngine(dask_client, partitions=5))
    assert got.read_stats == local.read_stats
    assert got.read_stats.skipped == 2
    assert got.ids == local.ids and np.array_equal(got.kept, local.kept)


@pytest.mark.parametrize("bad", [None, "malformed", "no id"])
def test_records_with_ids_are_read_without_counting_lines_until_one_needs_its_number(tmp_path, dask_client, bad):
    """A job that reads its input once does not count its byte ranges' lines when every record
    has an id; a record that needs its line number (a bad line named in its error, a record
    without an id: FILE:LINE) has them counted, and its error and ids are the local engine's."""
    import neardup
    from neardup.core.errors import InputError
    from neardup.engine.dask_engine import DaskEngine

    path = tmp_path / "in.jsonl"
    broken = {"malformed": {160: '{"id": "x", "text": oops'}, "no id": {160: '{"text": "no id"}'}}.get(bad)
    _jsonl_corpus(path, 240, seed=21, broken=broken, ids=True)
    config = MinHashConfig(threshold=0.6)
    engine = DaskEngine(dask_client, partitions=6)
    if bad == "malformed":
        with pytest.raises(InputError) as err:
            neardup.dedup([str(path)], config, engine=engine)
        lineno = 160 + 160 // 17 + 2  # records before it, blank lines before it, 1-based
        assert (err.value.path, err.value.line) == (str(path), lineno) and engine.counted_lines
        assert str(err.value).startswith(f"{path}:{lineno}: malformed JSON")
    on_error = "fail" if bad is None else "skip"
    local = neardup.dedup([str(path)], config, workers=1, on_error=on_error, want_pairs=True)
    got = neardup.dedup([str(path)], config, engine=engine, on_error=on_error, want_pairs=True)
    assert engine.input_partitions == 6 and engine.counted_lines == (bad is not None)
    assert got.ids == local.ids and got.read_stats == local.read_stats
    if bad == "no id":
        assert f"{path}:{160 + 160 // 17 + 2}" in got.ids
    for name in ("root", "kept", "similarity"):
        assert np.array_equal(getattr(got, name), getattr(local, name)), name
    for x, y in zip(got.pairs, local.pairs):
        assert np.array_equal(x, y)


def _state_configs():
    """Configs with a sharded form, and the bytes a document of their last scan's state takes
    at least when it comes to the driver."""
    from neardup.methods.exact.config import ExactConfig
    from neardup.methods.imatch.config import IMatchConfig
    from neardup.methods.simhash.config import SimHashConfig
    from neardup.methods.spotsigs.config import SpotSigsConfig

    return [
        (MinHashConfig(threshold=0.6), 128 * 4 + 8),
        (MinHashConfig(threshold=0.6, sketch="oph", num_perm=64), 64 * 4 + 8),
        (SimHashConfig(max_distance=6), 8 + 8),
        (SimHashConfig(weighting="idf", max_distance=10), 8 + 8),
        (SimHashConfig(bits=128, max_distance=12), 16 + 8),
        (ExactConfig(), 16),
        (IMatchConfig(lexicons=3, min_terms=3), 3 * 16 + 3),
        (SpotSigsConfig(threshold=0.5), 8 + 8),  # offsets and lengths, at least
        (SpotSigsConfig(threshold=0.5, idf_band=(0.0, 0.9)), 8 + 8),
        (MinHashConfig(threshold=0.6, verify="exact"), 128 * 4 + 8),
        (MinHashConfig(threshold=0.8, verify="edit", shingling=Shingling("word", 2)), 128 * 4 + 8),
        (MinHashConfig(threshold=0.85, verify="edit", edit_level="char", num_perm=64), 64 * 4 + 8),
        (SimHashConfig(verify="edit", threshold=0.85, max_distance=24), 8 + 8),
        (SpotSigsConfig(verify="edit", threshold=0.85, edit_level="char"), 8 + 8),
    ]


@pytest.mark.parametrize(
    "config, row_bytes",
    _state_configs(),
    ids=[
        "minhash",
        "minhash-oph",
        "simhash",
        "simhash-idf",
        "simhash-128",
        "exact",
        "imatch",
        "spotsigs",
        "spotsigs-idf",
        "minhash-exact",
        "minhash-edit-word",
        "minhash-edit-char",
        "simhash-edit",
        "spotsigs-edit",
    ],
)
def test_the_last_scans_state_never_comes_to_the_driver(tmp_path, dask_client, config, row_bytes):
    """With the state on the workers, the driver gets ids, lengths, exact keys, flags, roots,
    similarities and the earlier scans' parts (document frequencies): not the last scan's rows
    (signatures, fingerprints, keys); without it, those rows too. The answers, with and without
    pairs, are the local engine's either way."""
    import neardup
    from neardup.engine.dask_engine import DaskEngine

    path = tmp_path / "in.jsonl"
    if config.name == "spotsigs":  # spot signatures start at stopwords ("the", "a", ...)
        texts = _with_stopwords(make_corpus(n=400, seed=8).texts)
        path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    else:
        _jsonl_corpus(path, 400, seed=8)
    local = neardup.dedup([str(path)], config, workers=1, want_pairs=True)
    n = len(local.ids) - local.counters.get("exact_duplicates", 0)
    assert local.pairs[0].size > 0, "the corpus must give the method something to find"
    moved = {}
    for worker_state, want_pairs in itertools.product((True, False), (True, False)):
        engine = DaskEngine(dask_client, partitions=4, worker_state=worker_state)
        got = neardup.dedup([str(path)], config, engine=engine, want_pairs=want_pairs)
        for name in ("root", "kept", "similarity", "empty"):
            assert np.array_equal(getattr(got.job, name), getattr(local.job, name)), name
        if want_pairs:
            for x, y in zip(got.pairs, local.pairs):
                assert np.array_equal(x, y)
        else:
            assert got.pairs is None
        assert ("dask_rows_moved_bytes" in got.counters) == worker_state
        moved[worker_state, want_pairs] = engine.scan_bytes["from workers"]
    for want_pairs in (True, False):
        assert moved[False, want_pairs] - moved[True, want_pairs] >= row_bytes * n


def test_a_later_sharded_scan_after_the_prepass(dask_client):
    """A plan whose sharded scan is not its first, with the exact pre-pass: the shards hold the
    representatives, numbered among themselves, as the local engine's later scans see them."""
    from dataclasses import replace

    from neardup.core.plan import Prepass
    from neardup.engine.dask_engine import DaskEngine
    from neardup.methods.simhash.config import SimHashConfig

    data = make_corpus(n=300, seed=12, copy_rate=0.4)
    texts = data.texts + [t.upper() for t in data.texts[:40]]  # exact duplicates after casefolding
    ids = [f"d{i}" for i in range(len(texts))]
    plan = replace(SimHashConfig(weighting="idf", max_distance=10).plan(), prepass=Prepass())
    for want_pairs in (True, False):
        local = LocalEngine(1).run(plan, InMemorySource(texts, ids, batch_size=16), want_pairs=want_pairs)
        got = DaskEngine(dask_client, partitions=3).run(
            plan, InMemorySource(texts, ids, batch_size=16), want_pairs=want_pairs
        )
        assert got.counters["exact_duplicates"] == local.counters["exact_duplicates"] >= 40
        for name in ("root", "kept", "similarity", "empty"):
            assert np.array_equal(getattr(got, name), getattr(local, name)), name
        if want_pairs:
            for x, y in zip(got.pairs, local.pairs):
                assert np.array_equal(x, y)


def _counting_configs():
    from neardup.methods.imatch.config import IMatchConfig
    from neardup.methods.simhash.config import SimHashConfig
    from neardup.methods.spotsigs.config import SpotSigsConfig

    return {
        "imatch": IMatchConfig(lexicons=3, min_terms=3),
        "simhash-idf": SimHashConfig(weighting="idf", max_distance=10),
        "spotsigs-idf": SpotSigsConfig(threshold=0.5, idf_band=(0.0, 0.9)),
    }


@pytest.mark.parametrize(
    "method, kill", [("imatch", False), ("imatch", True), ("simhash-idf", False), ("spotsigs-idf", False)]
)
def test_a_counting_scan_sends_the_driver_one_reduced_table(dask_client, method, kill):
    """A scan whose result is a table (document frequencies) is reduced on the workers:
    each partition into its own reducer, those merged in a tree; the driver gets the ids and
    lengths of the admission and the one reduced table, byte for byte, instead of every batch's
    part (term sets, shingle counts, signature lists). With a worker killed during that scan, its
    reducers and merges are made again. The answers are the local engine's."""
    from dataclasses import replace

    from neardup.engine.dask_engine import DaskEngine, _nbytes, _table_bytes

    config = _counting_configs()[method]
    data = make_corpus(n=1500, seed=14, copy_rate=0.3)
    texts = _with_stopwords(data.texts) if method == "spotsigs-idf" else data.texts

    def source():
        return InMemorySource(texts, data.ids, batch_size=25)  # 60 partitions: a tree of two levels

    scan = config.plan().stages[0]
    parts = [scan.map(config, batch) for batch in source()()]
    reducer = scan.reduce(config)
    for part in parts:
        reducer.add(part)
    table = _table_bytes(reducer.result())
    admission = sum(map(len, data.ids)) + 8 * len(data.ids)  # ids and int64 text lengths
    # terms repeat across documents (the table is a twentieth of the term sets); most shingles
    # and spot signatures of a generated corpus are in one document and its near-duplicates
    assert _nbytes(parts) > (20 if method == "imatch" else 1) * table
    expected = LocalEngine(1).run(config.plan(), source(), want_pairs=True)
    assert len(expected.pairs[0]) > 0
    engine = DaskEngine(dask_client, partitions=4)
    killer = _KillOnce(dask_client, 5) if kill else None
    got = engine.run(config.plan(), source(), want_pairs=True, progress=killer)
    if kill:
        assert killer.killed is not None
        dask_client.wait_for_workers(2, timeout=60)
    for name in ("root", "kept", "similarity", "empty"):
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
    for x, y in zip(got.pairs, expected.pairs):
        assert np.array_equal(x, y)
    assert engine.scan_bytes["from workers"] == admission + table
    if not kill:  # the scan not marked a table: every batch's part comes back, as it did before
        plan = config.plan()
        plan = replace(plan, stages=(replace(plan.stages[0], table=False), *plan.stages[1:]))
        driver = DaskEngine(dask_client, partitions=4)
        assert np.array_equal(driver.run(plan, source()).root, expected.root)
        assert driver.scan_bytes["from workers"] == admission + _nbytes(parts)


def test_a_worker_killed_while_reading_its_byte_ranges(tmp_path, dask_client):
    """Workers read a file in 12 byte ranges and keep MinHash's shards; one is killed after the
    5th partition: its partitions are read again elsewhere and the answer is the local one."""
    import neardup
    from neardup.engine.dask_engine import DaskEngine

    path = tmp_path / "in.jsonl"
    _jsonl_corpus(path, 480, seed=13)
    config = MinHashConfig(threshold=0.6)
    local = neardup.dedup([str(path)], config, workers=1, batch_size=16, want_pairs=True)
    engine = DaskEngine(dask_client, partitions=12)
    killer = _KillOnce(dask_client)
    got = engine.run(config.plan(), _file_source(path), want_pairs=True, progress=killer)
    assert killer.killed is not None and engine.input_partitions == 12
    dask_client.wait_for_workers(2, timeout=60)
    assert got.ids == local.ids
    for name in ("root", "kept", "similarity"):
        assert np.array_equal(getattr(got, name), getattr(local.job, name)), name
    for x, y in zip(got.pairs, local.pairs):
        assert np.array_equal(x, y)


def _file_source(path):
    from neardup.io.partitions import FileSource, ReadOptions

    return FileSource([str(path)], ReadOptions(batch_size=16))


def test_partitions_without_documents(tmp_path, dask_client):
    """An empty shard and a shard whose every record is skipped are partitions without
    documents: the pre-pass and the shards take them in their stride."""
    import neardup
    from neardup.engine.dask_engine import DaskEngine

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text("")
    _jsonl_corpus(folder / "b.jsonl", 120, seed=3)
    (folder / "c.jsonl").write_text('{"body": 1}\n{"body": 2}\n')
    _jsonl_corpus(folder / "d.jsonl", 60, seed=4)
    config = MinHashConfig(threshold=0.6)
    local = neardup.dedup([str(folder)], config, workers=1, on_error="skip")
    got = neardup.dedup([str(folder)], config, engine=DaskEngine(dask_client, partitions=6), on_error="skip")
    assert got.ids == local.ids and got.read_stats == local.read_stats and got.read_stats.skipped == 2
    for name in ("root", "kept", "similarity"):
        assert np.array_equal(getattr(got, name), getattr(local, name)), name


@pytest.mark.parametrize("want_pairs", [True, False])
def test_sharded_jobs_without_documents_or_pairs(dask_client, want_pairs):
    """No documents, one, two empty ones, two unrelated ones: the sharded path gives the local
    engine's (empty) answer, pairs included when asked for (the re-reading plans with no
    candidate to read again)."""
    from neardup.engine.dask_engine import DaskEngine
    from neardup.methods.exact.config import ExactConfig
    from neardup.methods.imatch.config import IMatchConfig
    from neardup.methods.simhash.config import SimHashConfig
    from neardup.methods.spotsigs.config import SpotSigsConfig

    configs = [ExactConfig(), IMatchConfig(), SimHashConfig(weighting="idf"), MinHashConfig(), SpotSigsConfig()]
    configs += [MinHashConfig(verify="exact"), MinHashConfig(verify="edit"), SimHashConfig(verify="edit")]
    for texts in ([], ["one"], ["", ""], ["two different texts here", "nothing alike at all, none"]):
        ids = [str(i) for i in range(len(texts))]
        for config in configs:
            local = LocalEngine(1).run(config.plan(), InMemorySource(texts, ids), want_pairs=want_pairs)
            got = DaskEngine(dask_client, partitions=2).run(
                config.plan(), InMemorySource(texts, ids), want_pairs=want_pairs
            )
            for name in ("root", "kept", "similarity", "empty"):
                assert np.array_equal(getattr(got, name), getattr(local, name)), name
            if want_pairs:
                assert all(len(x) == 0 for x in got.pairs)
            else:
                assert got.pairs is None


def test_local_cluster_keeps_every_copy_of_broadcast_inputs(dask_client):
    """``local_client``'s scheduler runs no active memory manager: its default policy drops the
    broadcast copies of a scan's inputs down to one, which a worker's loss then loses for good."""
    assert dask_client.amm.running() is False


def test_local_cluster_workers_keep_glibcs_own_malloc_thresholds(dask_client):
    """Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers by default, which also
    turns off glibc's dynamic mmap threshold (every allocation over 128 KiB faults its pages in
    again); ``local_client`` starts its workers without it, unless this process's environment
    sets it (then the user's value is what the workers get); a worker restarted after a loss
    (the killed-worker tests run before this one) gets the same."""
    seen = dask_client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert len(seen) == 2
    assert set(seen.values()) == {os.environ.get("MALLOC_TRIM_THRESHOLD_")}  # None unless set here
