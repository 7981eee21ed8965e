"""Shared fixtures: small generated corpora with planted near-duplicates."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


@dataclass(frozen=True)
class Corpus:
    ids: list[str]
    texts: list[str]
    source: list[int]
    """Index of the document each one was copied from (itself for originals)."""


def make_corpus(n: int = 400, seed: int = 7, copy_rate: float = 0.3, max_edits: int = 6, vocab: int = 4000) -> Corpus:
    """Random-word documents; a fraction are copies of earlier ones with a few word substitutions."""
    rng = random.Random(seed)
    words = [
        f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('bcdfglmnprst')}{i}" for i in range(vocab)
    ]
    texts: list[str] = []
    source: list[int] = []
    for i in range(n):
        if texts and rng.random() < copy_rate:
            src = rng.randrange(len(texts))
            toks = texts[src].split()
            for _ in range(rng.randint(0, max_edits)):
                toks[rng.randrange(len(toks))] = rng.choice(words)
            texts.append(" ".join(toks))
            source.append(source[src])
        else:
            texts.append(" ".join(rng.choice(words) for _ in range(rng.randint(40, 200))))
            source.append(i)
    return Corpus([f"doc-{i:05d}" for i in range(n)], texts, source)


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    return make_corpus()


@pytest.fixture(scope="session")
def dask_client():
    """One LocalCluster of 2 worker processes (one thread each) for the whole session."""
    pytest.importorskip("dask.distributed")
    from neardup.engine.dask_engine import local_client

    client = local_client(2, memory_limit=None)
    try:
        yield client
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()


def wait_until_handling(proc, signum: int, timeout: float = 60.0) -> bool:
    """Wait until the process ``proc`` has installed a handler for ``signum`` (Linux: the SigCgt
    mask of /proc/PID/status), i.e. until a command is past its start-up; False when it exited
    first or /proc does not tell."""
    import time

    status = Path(f"/proc/{proc.pid}/status")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            caught = next(line for line in status.read_text().splitlines() if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return False
        if int(caught.split()[1], 16) >> (signum - 1) & 1:
            return True
        time.sleep(0.005)
    return False
