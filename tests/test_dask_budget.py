"""The Dask engine's memory budget: what the driver keeps of each document spills past its share,
with the local engine's answer; the CLI's ``--memory`` split between the driver and the workers."""

from __future__ import annotations

import json
import mmap

import numpy as np
import pytest
from test_contract import CONFIGS, IDS, corpus

from neardup.core.documents import InMemorySource
from neardup.engine import LocalEngine

from conftest import make_corpus, run_cli


def _on_disk(array: np.ndarray) -> bool:
    """Whether ``array``'s memory is a spill file's mapping (not the driver's heap)."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return isinstance(getattr(base, "obj", base), mmap.mmap)  # np.frombuffer's memoryview of the mapping


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_the_driver_under_a_tiny_budget_gives_the_local_answer(config, dask_client):
    """A driver budget of 16 KB on a 2-process LocalCluster: ids, lengths, the pre-pass table,
    roots, kept documents, similarities and empty flags all go to spill files, and every output
    array is the local engine's, for every method and variant, with and without pairs, keep
    first and longest."""
    from neardup.engine.dask_engine import DaskEngine

    ids, texts = corpus()
    for want_pairs, keep in ((True, "first"), (False, "longest")):
        base = LocalEngine(1).run(
            config.plan(), InMemorySource(texts, ids, batch_size=37), keep=keep, want_pairs=want_pairs
        )
        engine = DaskEngine(dask_client, partitions=3, memory="16KB")
        got = engine.run(config.plan(), InMemorySource(texts, ids, batch_size=37), keep=keep, want_pairs=want_pairs)
        assert engine.last_spill.spilled, "nothing went to disk"
        assert got.spilled_bytes > 0
        assert not isinstance(got.ids, list) and got.ids == base.ids, "ids packed, not one str each"
        for name in ("root", "kept", "similarity", "empty", "lengths"):
            assert np.array_equal(getattr(got, name), getattr(base, name)), f"{name} differs under the budget"
        for name in ("root", "similarity", "lengths") + (("kept",) if keep == "first" else ()):
            assert _on_disk(getattr(got, name)), f"{name} is held in the driver's memory"
        assert engine.last_spill.held < 4096, "the budget counts per-document arrays held in memory"
        if want_pairs:
            for x, y in zip(got.pairs, base.pairs):
                assert np.array_equal(x, y), "pairs differ under the budget"


def test_without_a_small_budget_the_driver_keeps_its_arrays_in_memory(dask_client):
    from neardup.engine.dask_engine import DaskEngine
    from neardup.methods.minhash.config import MinHashConfig

    data = make_corpus(n=200, seed=3)
    engine = DaskEngine(dask_client, partitions=3)
    got = engine.run(MinHashConfig().plan(), InMemorySource(data.texts, data.ids, batch_size=37))
    assert not engine.last_spill.spilled and got.spilled_bytes == 0
    assert isinstance(got.ids, list) and not _on_disk(got.root)


def test_split_memory():
    from neardup.engine.dask_engine import split_memory

    assert split_memory("2GB", 2) == (250_000_000, 875_000_000)
    assert split_memory("8GB", 1) == (1_000_000_000, 7_000_000_000)
    assert split_memory(8_000, 1) == (1_000, 256_000_000), "a worker's floor"
    with pytest.raises(ValueError, match="memory"):
        split_memory("lots", 2)


def test_cli_memory_with_engine_dask_writes_the_local_output(tmp_path):
    """``--engine dask --memory 64KB``: the driver's share spills everything it keeps of each
    document, the workers spill past theirs; kept records, clusters and pairs are the local
    engine's bytes."""
    data = make_corpus(n=300, seed=5)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(data.ids, data.texts)))
    outs = {}
    for engine in ("local", "dask"):
        out, clusters, pairs = (tmp_path / f"{engine}{s}" for s in (".jsonl", "-clusters.csv", "-pairs.csv"))
        args = ["dedup", src, "-o", out, "--engine", engine, "-q", "--workers", "2", "--memory", "64KB"]
        run_cli(*args, "--clusters", clusters, "--pairs", pairs)
        outs[engine] = (out.read_bytes(), clusters.read_bytes(), pairs.read_bytes())
    assert outs["dask"] == outs["local"]
    assert len(outs["local"][0].splitlines()) < 300
