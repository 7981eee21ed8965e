"""The durable index's bulk and short paths give what the per-row and batch paths give.

A streamed add builds each chunk's rows in bulk (``row_blobs``, ``row_crcs``, ``insert_chunks``);
``Index.query`` of one MinHash text skips the batch machinery. Each is checked here against the
straightforward computation it replaces (``tobytes`` per row, ``zlib.crc32`` per row, ``insert``
of iterators, ``query_batch``).
"""

from __future__ import annotations

import sqlite3
import zlib

import numpy as np
import pytest

import neardup
from neardup.index.store import SQLiteStore, row_blobs, row_crc, row_crcs
from neardup.methods.minhash.config import MinHashConfig
from neardup.text.shingles import Shingling

META = {"method": "minhash", "config": "{}", "scheme": "{}", "store_text": "0"}

IDS = ["a", "doc-00000001", "é-ü", "\u4e2d\u6587", "x" * 300, "z"]
"""Ids of every UTF-8 length (SQLite keeps no lone surrogates; ``row_crcs`` takes them too)."""


def texts_like(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(300)]
    out: list[str] = []
    for i in range(n):
        if i % 4 == 3:
            words = out[int(rng.integers(len(out)))].split()
            words[int(rng.integers(len(words)))] = "edited"
            out.append(" ".join(words))
        else:
            out.append(" ".join(vocab[k] for k in rng.integers(0, len(vocab), 60)))
    return out


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(1).integers(0, 2**32, size=(7, 128), dtype=np.uint32),
        np.zeros((7, 4), dtype=np.uint32),  # trailing zero bytes must stay
        np.random.default_rng(2).integers(0, 2**63, size=(7, 2), dtype=np.uint64),
        np.arange(7, dtype=np.uint64) << np.uint64(40),  # one value per row (exact keys)
        np.asfortranarray(np.random.default_rng(3).integers(0, 2**32, size=(7, 16), dtype=np.uint32)),
        np.zeros((0, 128), dtype=np.uint32),
    ],
)
def test_row_blobs_are_each_rows_bytes(values):
    assert row_blobs(values) == [values[i].tobytes() for i in range(values.shape[0])]


def test_row_crcs_equal_zlib_crc32_of_id_then_sketch():
    rng = np.random.default_rng(0)
    ids = [*IDS, "surrogate-\udc80"]
    sketches = [rng.bytes(int(n)) for n in rng.integers(0, 600, len(ids))]
    expected = [zlib.crc32(s, zlib.crc32(i.encode("utf-8", "surrogatepass"))) for i, s in zip(ids, sketches)]
    assert row_crcs(ids, sketches) == expected == [row_crc(i, s) for i, s in zip(ids, sketches)]
    assert row_crcs([], []) == []


def _rows(path: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT seq, id, sketch, empty, crc, text FROM docs ORDER BY seq").fetchall()


@pytest.mark.parametrize("texts", [None, [f"text {i}" for i in range(len(IDS))]])
def test_bulk_and_chunked_inserts_store_what_the_row_by_row_insert_stores(tmp_path, texts):
    values = np.random.default_rng(4).integers(0, 2**32, size=(len(IDS), 8), dtype=np.uint32)
    blobs = [values[i].tobytes() for i in range(len(IDS))]
    empty = [i % 3 == 0 for i in range(len(IDS))]
    paths = [str(tmp_path / f"{name}.ndx") for name in ("rows", "bulk", "chunks")]
    stores = [SQLiteStore.create(p, META) for p in paths]
    try:
        seqs = [
            stores[0].insert(IDS, iter(blobs), iter(empty), texts),  # iterators: the row-by-row path
            stores[1].insert(IDS, blobs, empty, texts),  # lists: built in bulk
            stores[2].insert_chunks(
                IDS, [(blobs[:3], empty[:3]), (blobs[3:4], empty[3:4]), (blobs[4:], empty[4:])], texts
            ),
        ]
        assert seqs[0] == seqs[1] == seqs[2] == list(range(1, len(IDS) + 1))
        assert all(s.check(8 * 4) == [] for s in stores)
    finally:
        for s in stores:
            s.close()
    assert _rows(paths[0]) == _rows(paths[1]) == _rows(paths[2])
    assert [r[3] for r in _rows(paths[0])] == [int(e) for e in empty]


def test_a_stored_id_is_a_key_error_naming_it_and_nothing_is_stored(tmp_path):
    store = SQLiteStore.create(str(tmp_path / "x.ndx"), META)
    try:
        store.insert(["a", "b"], [b"1111", b"2222"], [False, False])
        chunks = [([b"3333", b"4444"], [False, False]), ([b"5555"], [False])]
        with pytest.raises(KeyError, match="'b' is in the index already"):
            store.insert_chunks(["c", "d", "b"], iter(chunks))
        with pytest.raises(KeyError, match="'a' is in the index already"):
            store.insert(["e", "a"], [b"6666", b"7777"], [False, False])
        with pytest.raises(KeyError, match="appears twice"):
            store.insert(["f", "f"], [b"6666", b"7777"], [False, False])
        assert store.lookup(["a", "b", "c", "d", "e", "f"]) == {"a": 1, "b": 2}
        store.insert(["c"], [b"3333"], [True])  # the failed adds left the file writable and consistent
        assert store.check(4) == [] and store.version()[1] == 3  # the rolled-back rows left no trace
    finally:
        store.close()


def test_new_files_use_large_pages_and_old_small_page_files_still_work(tmp_path):
    from neardup.index import store as store_module

    path = tmp_path / "x.ndx"
    with neardup.Index.create(path, MinHashConfig(threshold=0.5)) as index:
        index.add(["a"], ["one two three four five six seven"])
        assert index._store._conn.execute("PRAGMA page_size").fetchone()[0] == store_module.PAGE_SIZE
    old = tmp_path / "old.ndx"
    saved = store_module.PAGE_SIZE
    store_module.PAGE_SIZE = 4096  # a file as an older neardup made it
    try:
        neardup.Index.create(old, MinHashConfig(threshold=0.5)).close()
    finally:
        store_module.PAGE_SIZE = saved
    with neardup.Index.open(old, "a") as index:
        index.add(["a", "b"], ["one two three four five six seven", "one two three four five six eight"])
        assert index._store._conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    with neardup.Index.open(old) as index:
        assert index.query("one two three four five six seven")[0] == ("a", 1.0) and index.check() == []


def test_a_streamed_add_equals_an_add_on_one_thread(tmp_path):
    """Two workers (chunks sketched on threads, stored in bulk) store the same rows as one."""
    texts = texts_like(5000)
    ids = [f"d{i}" for i in range(len(texts))]
    config = MinHashConfig(threshold=0.7)
    paths = [str(tmp_path / f"w{w}.ndx") for w in (1, 2)]
    for path, workers in zip(paths, (1, 2)):
        with neardup.Index.create(path, config, workers=workers, store_text=workers == 2) as index:
            index.add(ids, texts)
            with pytest.raises(KeyError, match="'d17' is in the index already"):
                index.add([f"new{i}" for i in range(4999)] + ["d17"], texts)
            assert len(index) == len(texts)
    one, two = _rows(paths[0]), _rows(paths[1])
    assert [r[:5] for r in one] == [r[:5] for r in two]
    assert [r[5] for r in two] == texts
    with neardup.Index.open(paths[1]) as index:
        assert index.check() == [] and index.query(texts[3])[0] == ("d3", 1.0)


@pytest.mark.parametrize("sketch", ["classic", "oph"])
def test_one_text_query_equals_the_batch_query(tmp_path, sketch):
    texts = texts_like(400, seed=5)
    config = MinHashConfig(threshold=0.5, sketch=sketch)
    with neardup.Index.create(tmp_path / "x.ndx", config) as index:
        index.add([f"d{i}" for i in range(len(texts))], texts)
        probes = [
            *texts[:60],
            texts[7].upper(),  # ASCII case: folded by the kernels
            texts[9].replace("w1", "wé1"),  # not ASCII: the batch encoder
            "Ｗ１２ ｗ１３ " + texts[11],  # full-width: NFKC
            "",
            "   ",
            "!!! ...",
            "one",
        ]
        one = index._sketch_one
        assert one is not None
        for text in probes:
            row, empty = one(text)
            expected = config.sketch_texts([text])
            assert np.array_equal(row, expected.values[0]) and bool(empty) == bool(expected.empty[0])
            for kw in ({}, {"min_similarity": 0.3}, {"limit": 1}, {"min_similarity": 0.0, "limit": 3}):
                assert index.query(text, **kw) == index.query_batch([text], **kw)[0], (text, kw)
        assert index.query(texts[3])[0] == ("d3", 1.0)


def test_one_text_query_of_other_methods_and_shinglings_is_the_batch_query(tmp_path):
    from neardup.methods.simhash.config import SimHashConfig

    texts = texts_like(100, seed=6)
    configs = [SimHashConfig(), MinHashConfig(threshold=0.5, shingling=Shingling("char", 5, nfkc=False))]
    for n, config in enumerate(configs):
        with neardup.Index.create(tmp_path / f"{n}.ndx", config) as index:
            index.add([f"d{i}" for i in range(len(texts))], texts)
            assert (index._sketch_one is None) == (n == 0)
            for text in [*texts[:20], texts[4].upper(), "", "Ｗ１２"]:
                assert index.query(text) == index.query_batch([text])[0]


def test_int_keys_beyond_int64_and_bools_are_still_checked_in_memory():
    from neardup.index.lsh import LSHIndex

    rng = np.random.default_rng(0)
    sigs = rng.integers(0, 2**32 - 1, size=(6, 128), dtype=np.uint32)
    index = LSHIndex(threshold=0.8, num_perm=128)
    index.add([1, 2, 3], sigs[:3])
    with pytest.raises(KeyError, match="key 2 is already"):
        index.add([2**70, 2], sigs[3:5])
    index.add([2**70, 4], sigs[3:5])
    with pytest.raises(KeyError, match="key 3 is already"):
        index.add([5, 3], sigs[4:6])
    assert len(index) == 5 and index.query(sigs[3]) == [(2**70, 1.0)]
