"""`neardup index ...` and `neardup dedup --against/--update`, through the command line."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.methods.minhash.config import MinHashConfig

from conftest import run_cli as run


def write_jsonl(path, docs):
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    return path


def near_dup_corpus(n, seed, prefix):
    """(id, text) with clusters of edited copies; ``prefix`` makes ids unique across batches."""
    rng = np.random.default_rng(seed)
    vocab = [f"v{i}" for i in range(300)]
    docs = []
    for i in range(n):
        if i % 4 and docs:
            words = docs[int(rng.integers(len(docs)))][1].split()
            words[int(rng.integers(len(words)))] = vocab[int(rng.integers(len(vocab)))]
            text = " ".join(words)
        else:
            text = " ".join(vocab[k] for k in rng.integers(0, len(vocab), 50))
        docs.append((f"{prefix}{i}", text))
    return docs


def test_create_add_query_remove_stats_compact_check(tmp_path):
    ix = tmp_path / "n.ndx"
    docs = near_dup_corpus(40, 0, "a")
    src = write_jsonl(tmp_path / "a.jsonl", docs)
    run("index", "create", ix, "--method", "minhash", "--threshold", "0.7", "--num-perm", "64")
    run("index", "add", ix, src)
    stats = json.loads(run("index", "stats", ix).output)
    assert stats["documents"] == 40 and stats["config"]["num_perm"] == 64 and stats["threshold"] == 0.7
    # adding an id again is an error (nothing added), --replace overwrites
    res = run("index", "add", ix, src, code=1)
    assert "is in the index already" in res.output
    run("index", "add", ix, src, "--replace")
    # query: JSONL, Parquet (list of structs), CSV (one row per match), --text
    run("index", "query", ix, src, "-o", tmp_path / "q.jsonl", "--limit", "2")
    rows = [orjson.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [d[0] for d in docs]
    assert all(r["matches"][0] == {"id": r["id"], "similarity": 1.0} and len(r["matches"]) <= 2 for r in rows)
    run("index", "query", ix, src, "-o", tmp_path / "q.parquet")
    table = pq.read_table(tmp_path / "q.parquet")
    assert table.schema.field("matches").type.value_type == pa.struct(
        [("id", pa.string()), ("similarity", pa.float64())]
    )
    assert table.column("matches").to_pylist() == [r["matches"] for r in rows] or table.num_rows == 40
    run("index", "query", ix, src, "-o", tmp_path / "q.csv", "--min-similarity", "0.99")
    lines = (tmp_path / "q.csv").read_text().splitlines()
    assert lines[0] == '"query_id","id","similarity"' and len(lines) - 1 >= 40
    out = json.loads(run("index", "query", ix, "--text", docs[0][1]).output)
    assert out[0] == {"id": "a0", "similarity": 1.0}
    run("index", "query", ix, code=2)  # neither inputs nor --text
    # remove, then compact and check
    (tmp_path / "ids.txt").write_text("a0\na1\n")
    run("index", "remove", ix, "--ids", tmp_path / "ids.txt")
    assert json.loads(run("index", "stats", ix).output)["documents"] == 38
    assert "a0" not in json.dumps(json.loads(run("index", "query", ix, "--text", docs[0][1]).output))
    res = run("index", "remove", ix, "--ids", tmp_path / "ids.txt", code=1)
    assert "not in the index" in res.output
    run("index", "compact", ix)
    assert json.loads(run("index", "check", ix).output) == {"path": str(ix), "documents": 38, "ok": True}


def test_check_fails_on_a_damaged_index_and_create_refuses_methods_without_one(tmp_path):
    ix = tmp_path / "n.ndx"
    run("index", "create", ix, "--method", "exact")
    run("index", "add", ix, write_jsonl(tmp_path / "a.jsonl", near_dup_corpus(5, 1, "a")))
    conn = sqlite3.connect(ix)
    conn.execute("UPDATE docs SET crc = crc + 1 WHERE id = 'a2'")
    conn.commit()
    conn.close()
    res = run("index", "check", ix, code=1)
    assert "'a2'" in res.output and "checksum" in res.output
    res = run("index", "query", ix, "--text", "x", code=1)
    assert "checksum" in res.output and "Traceback" not in res.output
    res = run("index", "create", tmp_path / "s.ndx", "--method", "spotsigs", code=2)
    assert "has no index" in res.output
    res = run("index", "create", tmp_path / "t.ndx", "--method", "exact", "--threshold", "0.5", code=2)
    assert "does not apply" in res.output
    assert "no index there" in run("index", "stats", tmp_path / "missing.ndx", code=1).output


def brute_force_edges(texts, config):
    """Pairs the batch job and the index find, by their definition: a shared LSH band and an
    estimated Jaccard (equal slots / K) of at least the threshold."""
    sig = config.sketch_texts(texts).values
    bands, rows = config.lsh.bands, config.lsh.rows
    eq = sig[:, None, :] == sig[None, :, :]
    band_hit = eq[:, :, : bands * rows].reshape(len(texts), len(texts), bands, rows).all(axis=3).any(axis=2)
    return band_hit & (eq.mean(axis=2) >= config.threshold)


def components(n, edges):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(*np.nonzero(np.triu(edges, 1))):
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
    return [find(i) for i in range(n)]


def test_dedup_against_and_update_agree_with_brute_force(tmp_path):
    config = MinHashConfig(threshold=0.7, num_perm=64)  # not the defaults: dedup takes the index's settings
    c1 = near_dup_corpus(60, 2, "a")
    c2 = near_dup_corpus(30, 3, "b") + [(f"c{i}", t) for i, (_, t) in enumerate(c1[::5])]  # copies of C1
    ix = tmp_path / "n.ndx"
    run("index", "create", ix, "--threshold", "0.7", "--num-perm", "64")
    run("dedup", write_jsonl(tmp_path / "c1.jsonl", c1), "--against", ix, "--update", "-o", tmp_path / "k1.jsonl", "-q")
    run("dedup", write_jsonl(tmp_path / "c2.jsonl", c2), "--against", ix, "--update", "-o", tmp_path / "k2.jsonl", "-q")
    kept1 = [json.loads(line)["id"] for line in (tmp_path / "k1.jsonl").read_text().splitlines()]
    kept2 = [json.loads(line)["id"] for line in (tmp_path / "k2.jsonl").read_text().splitlines()]

    # brute force: C1 on its own; then C2 clusters removed when any member has an edge to a kept C1 document
    t1 = [t for _, t in c1]
    root1 = components(len(c1), brute_force_edges(t1, config))
    expect1 = [c1[i][0] for i in range(len(c1)) if root1[i] == i]
    assert kept1 == expect1
    t_all = [t for _, t in c1 if _ in set(kept1)] + [t for _, t in c2]
    edges = brute_force_edges(t_all, config)
    k = len(kept1)
    root2 = components(len(c2), edges[k:, k:])
    hit = {root2[j] for j in range(len(c2)) if edges[k + j, :k].any()}
    expect2 = [c2[j][0] for j in range(len(c2)) if root2[j] == j and root2[j] not in hit]
    assert kept2 == expect2
    copies_of_kept = {f"c{i}" for i, (d, _) in enumerate(c1[::5]) if d in set(kept1)}
    assert copies_of_kept and not copies_of_kept & set(kept2)  # copies of indexed documents never come back
    with neardup.Index.open(ix) as index:
        assert list(index) == kept1 + kept2
    # against the joint run: the only difference is the documented one (documents of C2 are compared with
    # what the index holds, not with removed documents of C1)
    run(
        "dedup", tmp_path / "c1.jsonl", tmp_path / "c2.jsonl", "-o", tmp_path / "joint.jsonl", "-q",
        "--threshold", "0.7", "--num-perm", "64",
    )  # fmt: skip
    joint = [json.loads(line)["id"] for line in (tmp_path / "joint.jsonl").read_text().splitlines()]
    union = c1 + c2
    joint_root = components(len(union), brute_force_edges([t for _, t in union], config))
    assert joint == [union[i][0] for i in range(len(union)) if joint_root[i] == i]
    removed_c1 = {i for i in range(len(c1)) if c1[i][0] not in set(kept1)}
    differ = set(joint) ^ set(kept1 + kept2)
    for doc in differ:
        j = next(i for i, (d, _) in enumerate(union) if d == doc)
        # a C2 document whose joint cluster holds a C1 document the index never held (it was removed
        # from C1), or a C1 document the joint run removed through C2 documents (stored ones stay)
        assert j < len(c1) or any(joint_root[i] == joint_root[j] for i in removed_c1), doc
    print(f"incremental vs joint: {len(differ)} of {len(union)} documents differ, all by the documented rule")


def test_update_of_a_failing_run_adds_nothing_and_settings_must_agree(tmp_path):
    ix = tmp_path / "n.ndx"
    run("index", "create", ix)
    src = write_jsonl(tmp_path / "a.jsonl", near_dup_corpus(10, 4, "a"))
    bad_out = src / "k.jsonl"  # the parent is a file: refused before the work
    run("dedup", src, "--against", ix, "--update", "-o", bad_out, "-q", code=2)
    # writing fails after the work: --annotate would add a field the records have
    clash = tmp_path / "clash.jsonl"
    clash.write_text(
        "".join(json.dumps({"id": i, "text": t, "kept": 1}) + "\n" for i, t in near_dup_corpus(10, 4, "c"))
    )
    res = run("dedup", clash, "--against", ix, "--update", "--annotate", "-o", tmp_path / "k.jsonl", "-q", code=1)
    assert "'kept'" in res.output
    broken = tmp_path / "broken.jsonl"  # a bad record at the end: the run fails after reading the rest
    broken.write_text(src.read_text() + "{not json\n")
    res = run("dedup", broken, "--against", ix, "--update", "-o", tmp_path / "k.jsonl", "-q", code=1)
    assert "malformed JSON" in res.output
    assert json.loads(run("index", "stats", ix).output)["documents"] == 0
    res = run("dedup", src, "--against", ix, "-o", tmp_path / "k.jsonl", "--threshold", "0.5", code=2)
    assert "disagree with the index" in res.output
    run("dedup", src, "--update", "-o", tmp_path / "k.jsonl", code=2)
    # a writer holds the index: --update is refused before any work, a plain --against may read
    with neardup.Index.open(ix, "a"):
        res = run("dedup", src, "--against", ix, "--update", "-o", tmp_path / "k.jsonl", "-q", code=1)
        assert "locked" in res.output
        run("dedup", src, "--against", ix, "-o", tmp_path / "k.jsonl", "-q")


@pytest.mark.parametrize("method", ["simhash", "exact"])
def test_dedup_against_other_methods(tmp_path, method):
    ix = tmp_path / "n.ndx"
    run("index", "create", ix, "--method", method)
    docs = near_dup_corpus(20, 5, "a")
    run("index", "add", ix, write_jsonl(tmp_path / "a.jsonl", docs))
    again = write_jsonl(tmp_path / "b.jsonl", [(f"b{i}", t) for i, (_, t) in enumerate(docs)])
    run("dedup", again, "--against", ix, "-o", tmp_path / "k.jsonl", "--clusters", tmp_path / "c.csv", "-q")
    assert (tmp_path / "k.jsonl").read_text() == ""  # every document is in the index already
    clusters = (tmp_path / "c.csv").read_text().splitlines()[1:]
    assert all('"a' in line.split(",")[1] for line in clusters)
