"""One writer per index file, whatever name opens it (issue 34, deliverable 1).

The writer lock is on the index file itself, not on ``PATH.lock``: every test here runs two real
processes (``_Client``: a child that opens the index and answers one command at a time on its
stdin/stdout, so the steps are ordered by the answers, never by sleeps) and counts the rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import neardup
from neardup.index.durable import IndexLinkError, IndexLockedError
from neardup.methods.exact.config import ExactConfig

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file locks and links")

_CHILD = textwrap.dedent(
    """
    import sys
    import neardup

    index = None
    for line in sys.stdin:
        cmd, *args = line.split()
        try:
            if cmd == "open":
                index = neardup.Index.open(args[1], args[0])
                out = "ok"
            elif cmd == "add":
                prefix, n = args[0], int(args[1])
                ids = [f"{prefix}{i}" for i in range(n)]
                index.add(ids, [f"text number {i} of {prefix} with a few words" for i in range(n)])
                out = f"ok {n}"
            elif cmd == "count":
                index.refresh()
                out = f"ok {len(index)}"
            elif cmd == "close":
                index.close()
                index = None
                out = "ok"
            else:
                out = f"error unknown command {cmd}"
        except Exception as exc:
            out = f"error {type(exc).__name__}: {exc}"
        print(out.replace(chr(10), " "), flush=True)
    """
)


class _Client:
    """A child process holding (or failing to open) the index, driven line by line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def __call__(self, *words: object) -> str:
        self.proc.stdin.write(" ".join(map(str, words)) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        assert answer, f"the child died on {words} (exit {self.proc.poll()})"
        return answer

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


@pytest.fixture
def clients():
    made: list[_Client] = []

    def make() -> _Client:
        made.append(_Client())
        return made[-1]

    yield make
    for client in made:
        client.stop()


def _rows(path) -> int:
    with neardup.Index.open(path) as index:
        return len(index)


@pytest.fixture
def index_file(tmp_path):
    path = tmp_path / "docs.ndx"
    neardup.Index.create(path, ExactConfig()).close()
    return path


def test_a_second_writer_through_a_symbolic_link_is_refused_and_a_reader_through_it_sees_the_rows(index_file, clients):
    link = index_file.parent / "link.ndx"
    link.symlink_to(index_file.name)
    writer, other = clients(), clients()
    assert writer("open", "a", index_file) == "ok"
    assert writer("add", "w", 300) == "ok 300"
    answer = other("open", "a", link)
    assert answer.startswith("error IndexLockedError") and "locked by another writer" in answer
    assert '"pid"' in answer  # the writer's pid, from its note
    assert other("open", "r", link) == "ok"
    assert other("count") == "ok 300"
    assert writer("add", "v", 300) == "ok 300"
    assert other("count") == "ok 600"  # one writer, and the reader through the link sees all it wrote
    assert writer("close") == "ok"
    assert other("close") == "ok"
    # the writer through the link, once the first is gone: both names are one file
    assert other("open", "a", link) == "ok"
    assert other("add", "l", 100) == "ok 100"
    assert other("close") == "ok"
    assert _rows(index_file) == 700
    assert not os.path.exists(str(link) + "-wal") or os.path.samefile(str(link) + "-wal", str(index_file) + "-wal")


def test_the_lock_survives_deleting_the_lock_file(index_file, clients):
    first, second = clients(), clients()
    assert first("open", "a", index_file) == "ok"
    assert first("add", "a", 200) == "ok 200"
    note = str(index_file) + ".lock"
    assert os.path.exists(note)
    os.unlink(note)  # a temp cleaner
    answer = second("open", "a", index_file)
    assert answer.startswith("error IndexLockedError") and "unknown process" in answer
    assert first("add", "b", 200) == "ok 200"
    assert first("close") == "ok"
    assert second("open", "a", index_file) == "ok"  # the lock went with the writer
    assert second("add", "c", 200) == "ok 200"
    assert second("close") == "ok"
    assert _rows(index_file) == 600


def test_an_index_file_with_two_hard_links_is_refused_by_every_name(index_file, clients):
    writer, other = clients(), clients()
    assert writer("open", "a", index_file) == "ok"
    assert writer("add", "w", 300) == "ok 300"
    link = index_file.parent / "hard.ndx"
    os.link(index_file, link)
    for mode in ("a", "r"):
        for name in (link, index_file):
            answer = other("open", mode, name)
            assert answer.startswith("error IndexLinkError"), answer
            assert f"{name}: the index file has 2 hard links" in answer and "one name" in answer
    assert writer("add", "v", 300) == "ok 300"  # the writer that opened it first goes on
    assert writer("close") == "ok"
    with pytest.raises(IndexLinkError, match="2 hard links"):
        neardup.Index.open(link)
    os.unlink(link)
    assert _rows(index_file) == 600  # every acknowledged add is there


def test_a_failed_second_open_in_the_writers_process_keeps_sqlites_locks(index_file, tmp_path):
    """Closing any descriptor of a file drops all the process's POSIX locks on it, SQLite's too:
    a refused writer in the same process must not close one while the file is open there (else
    another process could take SQLite's exclusive lock, e.g. to leave WAL mode, under the writer)."""
    link = tmp_path / "link.ndx"
    link.symlink_to(index_file)
    writer = neardup.Index.open(index_file, "a")
    reader = neardup.Index.open(link)
    try:
        writer.add(["x"], ["a text"])
        for name in (index_file, link):
            with pytest.raises(IndexLockedError, match="locked by another writer"):
                neardup.Index.open(name, "a")
        probe = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=0)\n"
            "try: print(c.execute('PRAGMA journal_mode=DELETE').fetchone()[0])\n"
            "except sqlite3.OperationalError as e: print(e)"
        )
        out = subprocess.run([sys.executable, "-c", probe, str(index_file)], capture_output=True, text=True)
        assert out.stdout.strip() == "database is locked", out
        writer.add(["y"], ["another text"])
        reader.refresh()
        assert sorted(reader) == ["x", "y"]
    finally:
        reader.close()
        writer.close()
    neardup.Index.open(link, "a").close()  # and the lock went with the writer


@pytest.mark.slow
def test_a_second_server_through_a_link_or_after_rm_lock_does_not_start(tmp_path):
    """The issue's case: a second `neardup serve` through a hard link answered 200 to adds that
    were then lost. Now it does not start (one line, exit 1) while the first serves, and every
    add the first acknowledged is in the file."""
    pytest.importorskip("httpx")
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from test_service import AUTH, Server, free_port

    path = tmp_path / "docs.ndx"
    neardup.Index.create(path, ExactConfig()).close()
    symlink, hard = tmp_path / "sym.ndx", tmp_path / "hard.ndx"
    symlink.symlink_to(path.name)
    first = Server(path)
    try:
        for k in range(20):
            batch = [{"id": f"a{k}-{i}", "text": f"document {k} {i} of the first server"} for i in range(30)]
            assert first.client.post("/v1/documents", json={"documents": batch}, headers=AUTH).status_code == 200
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "NEARDUP_TOKEN": "x"}

        def second(name) -> str:
            cmd = [
                sys.executable,
                "-m",
                "neardup",
                "serve",
                str(name),
                "--port",
                str(free_port()),
                "--log-level",
                "warning",
            ]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
            return proc.stderr

        assert "locked by another writer" in second(symlink)
        os.unlink(str(path) + ".lock")  # a temp cleaner
        assert "locked by another writer" in second(symlink)
        assert "locked by another writer" in second(path)
        os.link(path, hard)
        assert "hard.ndx: the index file has 2 hard links" in second(hard)
        assert "2 hard links" in second(path)
        os.unlink(hard)
        batch = [{"id": f"b{i}", "text": f"document {i} after the refusals"} for i in range(30)]
        assert first.client.post("/v1/documents", json={"documents": batch}, headers=AUTH).status_code == 200
    finally:
        assert first.stop() == 0
    assert _rows(symlink) == 630


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_that_lets_go_of_the_store_keeps_the_parents_lock(index_file, clients):
    """A child made by fork shares the writer's descriptor and its lock; when the child releases
    the store (as closing it does), the parent must still be the one writer."""
    from neardup.index import store as store_module

    writer = neardup.Index.open(index_file, "a")
    try:
        key = writer._store._file_key
        pid = os.fork()
        if pid == 0:  # the child: no SQLite here (its connection belongs to the parent)
            try:
                store_module._release(key, writer=True)
            finally:
                os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        other = clients()
        assert other("open", "a", index_file).startswith("error IndexLockedError")
        writer.add(["x"], ["a text"])
    finally:
        writer.close()
    assert other("open", "a", index_file) == "ok"
    assert other("count") == "ok 1"
