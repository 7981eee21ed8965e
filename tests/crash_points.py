"""A ``neardup`` command that stops at a named point of its run until a signal ends it.

The crash tests signal a run there, so that the outcome they assert is forced by where the signal
lands, not left to timing::

    python tests/crash_points.py POINT MARKER NEARDUP-ARGS...

At POINT the command writes the file MARKER and sleeps (10 minutes at most); :func:`start_at`
waits for MARKER. The points, in the order a run passes them:

* ``startup``: before neardup is imported (no signal handler yet: a signal kills the process);
* ``work``: the job's second stage starts (inputs read, nothing written);
* ``commit``: :meth:`~neardup.io.transaction.OutputSet.commit` is called: every output is
  complete in its temporary file, none is replaced;
* ``rename``: the commit's journal is written and the first output renamed, the others not;
* ``committed``: the commit is done (the command has not exited).

And one point of ``neardup serve``:

* ``held-add``: an add request with a document whose id ends in ``-held`` waits, before anything
  is added, until the file MARKER.release exists (2 minutes at most): a request in flight for as
  long as the test needs.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

POINTS = ("startup", "work", "commit", "rename", "committed", "held-add")
_STOPPED = []
_MARKERS = itertools.count()


def _stop(marker: str) -> None:
    if _STOPPED:  # once per run (an abort after the stop passes the same code again)
        return
    _STOPPED.append(True)
    Path(marker).write_text(str(os.getpid()))
    time.sleep(600)


def install(point: str, marker: str) -> None:
    """Make this process stop at ``point`` (see the module's docs)."""
    from neardup.cli import progress
    from neardup.io.transaction import OutputSet

    if point == "work":
        stages = itertools.count()
        for cls in (progress.NoProgress, progress.JobProgress):
            original_stage = cls.stage

            def stage(self, name, _original=original_stage):
                if next(stages) == 1:
                    _stop(marker)
                return _original(self, name)

            cls.stage = stage
    elif point in ("commit", "committed"):
        original_commit = OutputSet.commit

        def commit(self, after=None):
            if point == "commit":
                _stop(marker)
            original_commit(self, after)
            if point == "committed":
                _stop(marker)

        OutputSet.commit = commit
    elif point == "held-add":
        from neardup.service import operations

        original_add = operations.run_add

        def run_add(index, body):
            if any(d.id.endswith("-held") for d in body.documents):
                Path(marker).write_text(str(os.getpid()))
                release, deadline = Path(marker + ".release"), time.monotonic() + 120
                while not release.exists() and time.monotonic() < deadline:
                    time.sleep(0.005)
            return original_add(index, body)

        operations.run_add = run_add
    elif point == "rename":
        original_finish = OutputSet._finish_renames

        def finish_renames(self):
            tmp, final = self._staged[0]
            assert len(self._staged) > 1, "a commit of one output has no point between renames"
            if tmp.exists():
                os.replace(tmp, final)
            _stop(marker)
            original_finish(self)

        OutputSet._finish_renames = finish_renames
    else:
        raise ValueError(f"unknown point {point!r}; expected one of {POINTS}")


def start_at(command: list[str], point: str, folder: Path, **popen) -> subprocess.Popen:
    """Start ``command`` (``python -m neardup ...``) and return it once it waits at ``point``;
    ``folder`` holds the marker file. A run that ends before the point fails the test."""
    assert command[1:3] == ["-m", "neardup"], command
    marker = Path(folder) / f"crash-point-{os.getpid()}-{next(_MARKERS)}"
    proc = subprocess.Popen(at_point(command, point, marker), **popen)
    wait_at(proc, marker, point)
    return proc


def at_point(command: list[str], point: str, marker: Path) -> list[str]:
    """``command`` (``python -m neardup ...``) run through this script, to stop at ``point``."""
    assert command[1:3] == ["-m", "neardup"], command
    return [command[0], __file__, point, str(marker), *command[3:]]


def wait_at(proc: subprocess.Popen, marker: Path, point: str = "") -> None:
    """Wait until ``proc`` is at its point (``marker`` exists; removed here)."""
    deadline = time.monotonic() + 300
    while not marker.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"the run ended (exit {proc.returncode}) before the point {point}: {err}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the run did not reach the point {point} in 300 s")
        time.sleep(0.005)
    marker.unlink()


if __name__ == "__main__":
    point, marker, *args = sys.argv[1:]
    if point == "startup":
        _stop(marker)
    else:
        install(point, marker)
    sys.argv = ["neardup", *args]
    from neardup.__main__ import run

    run()
