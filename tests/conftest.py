"""Shared fixtures: small generated corpora with planted near-duplicates."""

from __future__ import annotations

import functools
import itertools
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
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


NEWS = REPO / "examples" / "news.jsonl"


def news_removed_by_brute_force() -> int:
    """How many documents of examples/news.jsonl the default MinHash run removes: one document
    is kept a cluster of :func:`news_clusters_by_brute_force`."""
    roots = news_clusters_by_brute_force()
    return len(roots) - len(set(roots))


@functools.cache
def news_clusters_by_brute_force() -> tuple[int, ...]:
    """The cluster (a member's row) of every document of examples/news.jsonl in the default MinHash
    run (threshold 0.8, K = 128), by brute force: every pair's similarity estimated from the same
    signatures (the fraction of equal rows), pairs at or above the threshold joined into clusters.
    LSH's bands only choose which pairs are compared, so these are the run's clusters when the
    bands miss no pair at or above the threshold (b=17 r=7 miss a pair at 0.8 with probability
    (1 - 0.8^7)^17 = 0.018, at 0.9 with 2e-5; the seeds are fixed, so a change that loses a pair
    shows here). The exact Jaccard similarity of the shingles puts one more pair over 0.8."""
    import json

    import numpy as np

    import neardup

    texts = [json.loads(line)["text"] for line in NEWS.read_text(encoding="utf-8").splitlines()]
    config = neardup.MinHashConfig()
    signatures = config.sketch_texts(texts).values
    parent = list(range(len(texts)))

    def root(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for i in range(len(texts)):
        similar = (signatures[i + 1 :] == signatures[i]).mean(axis=1) >= config.threshold
        for j in np.flatnonzero(similar) + i + 1:
            parent[root(int(j))] = root(i)
    return tuple(root(i) for i in range(len(texts)))


@pytest.fixture(scope="session", autouse=True)
def _jsonl_scanner_always():
    """The JSON Lines scanner in every test, not its Python tier for the first 64 MiB read (what a
    cold cache gives a process: ``neardup._kernels.warmup``); tests of the tier pin it themselves."""
    from neardup._kernels.jsonl import SCAN_WARMUP

    SCAN_WARMUP.pin(True)
    yield
    SCAN_WARMUP.pin(None)


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    return make_corpus()


@pytest.fixture(scope="session")
def dask_client():
    """One LocalCluster of 2 worker processes (one thread each) for the whole session.

    The killed-worker tests need each killed worker back: its nanny starts a new one, but the
    cluster closes the nanny for good when no worker of its name has registered within
    ``distributed.deploy.lost-worker-timeout`` of the loss (15 s), and on a loaded machine, or
    while this process (which runs the scheduler) compiles kernels with the GIL held, the new
    worker took longer: every later test then ran on one worker ("Only 1/2 workers arrived")."""
    pytest.importorskip("dask.distributed")
    import dask

    from neardup.engine.dask_engine import local_client

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "300s"}):
        client = local_client(2, memory_limit=None)
        try:
            yield client
        finally:
            cluster = client.cluster
            client.close()
            cluster.close()


def run_cli(*args, code=0):
    """``neardup ARGS...`` in this process (click's runner), asserting its exit code."""
    from click.testing import CliRunner

    from neardup.cli.main import main

    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == code, res.output
    return res


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


class RedisServer:
    """A real ``redis-server`` on 127.0.0.1 (a free port, its own directory; append-only file with
    an fsync per write, no snapshots), started and stopped by the tests."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        binary = shutil.which("redis-server")
        self.directory.mkdir(parents=True, exist_ok=True)
        log = self.directory / "redis.log"
        args = [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.directory)]
        args += ["--save", "", "--appendonly", "yes", "--appendfsync", "always", "--logfile", str(log)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.proc.stderr.read().decode()} {_tail(log)}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} in 20 s: {_tail(log)}")

    def stop(self, kill: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill() if kill else self.proc.terminate()
            self.proc.wait(20)
        self.proc = None


def wait_healthy(url: str, proc: subprocess.Popen, exit_log: Callable[[], str], stop: Callable[[], object]) -> None:
    """Wait (60 s at most) until the ``neardup serve`` at ``url`` answers ``/healthz``; a server
    that exits first raises with ``exit_log()``, one that never answers is ``stop()``-ed and raises."""
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {exit_log()}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    stop()
    raise RuntimeError("server did not start in 60 s")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:] if path.exists() else ""


def start_redis(directory: Path) -> RedisServer:
    """A fresh redis-server in ``directory``; skips (saying why) when the binary or redis-py is missing."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server; .ci/run installs it)")
    pytest.importorskip("redis", reason="redis-py is not installed (pip install 'neardup[redis]')")
    return RedisServer(directory)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """One redis-server for the session (each test uses index names of its own)."""
    server = start_redis(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.stop()


_NAMES = itertools.count()


@pytest.fixture(params=["sqlite", "redis"])
def index_path(request, tmp_path):
    """A maker of fresh index paths: ``index_path("x")`` is a file in tmp_path, or a name of its
    own in the session's Redis (``redis://127.0.0.1:PORT/0/NAME``)."""
    if request.param == "sqlite":
        return lambda name="x": str(tmp_path / f"{name}.ndx")
    server = request.getfixturevalue("redis_server")
    return lambda name="x": f"{server.url}/0/t{next(_NAMES)}-{name}"


# --------------------------------------------------------------------------------------------
# skips under CI: a run with the environment variable CI set fails on any skip whose reason is not
# below. CI (.ci/run) installs every tool and service the tests need, so a skip there is a test that
# did not run: a regression could hide behind it. Each entry: a pattern of the skip's reason (a
# regular expression searched in it) and why the skip is expected even in CI.

ALLOWED_SKIPS: tuple[tuple[str, str], ...] = (
    # CPU features: code built for an instruction set the machine's CPU lacks cannot run on it
    (r"this CPU cannot run \S+ code", "the CPU lacks the target's instruction set"),
    (r"numba's target has no ", "the CPU lacks the instructions (AVX2, AVX-512 VBMI2) of the path"),
)
if not SHARED_DATA.parent.is_dir():
    # the shared corpora live next to the clone (../shared from the project root), never inside it:
    # allowed only where that folder is absent (a bare clone; CI has it, so there the skip fails)
    ALLOWED_SKIPS += ((r"shared corpus not present at ", "no ../shared folder next to the clone"),)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class _SkipGuard:
    """A plugin (registered in pytest_configure, so that it sees every test, the doctests of
    src/neardup included, not only those under tests/) that sorts the skips by ALLOWED_SKIPS."""

    def __init__(self) -> None:
        self.allowed: list[tuple[str, str]] = []
        self.refused: list[tuple[str, str]] = []

    def record(self, report) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        import re

        reason = _skip_reason(report)
        listed = any(re.search(pattern, reason) for pattern, _ in ALLOWED_SKIPS)
        found = self.allowed if listed else self.refused
        if (report.nodeid, reason) not in found:  # a module is collected twice (tests and doctests)
            found.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report):
        self.record(report)

    def pytest_collectreport(self, report):
        self.record(report)  # a module skipped whole (importorskip at module level)

    def pytest_sessionfinish(self, session, exitstatus):
        import os

        if os.environ.get("CI") and self.refused and session.exitstatus == 0:
            session.exitstatus = 1

    def pytest_terminal_summary(self, terminalreporter):
        import os

        write = terminalreporter.write_line
        if self.allowed:
            terminalreporter.section("allowed skips (tests/conftest.py ALLOWED_SKIPS)")
            for nodeid, reason in self.allowed:
                write(f"{nodeid}: {reason}")
        if self.refused and os.environ.get("CI"):
            terminalreporter.section(
                "skips CI does not allow: the run fails (tests/conftest.py ALLOWED_SKIPS)", red=True
            )
            for nodeid, reason in self.refused:
                write(f"{nodeid}: {reason}", red=True)


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("neardup-skip-guard"):
        config.pluginmanager.register(_SkipGuard(), "neardup-skip-guard")
