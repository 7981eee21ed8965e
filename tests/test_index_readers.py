"""Several reader processes at once while one writer adds: each reader, refreshing in a loop, only
ever sees whole batches (a batch is one transaction), never fewer documents than before, and ends
with everything; queries in the readers find what was added."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import neardup

SRC = os.path.join(os.path.dirname(__file__), "..", "src")

_READER = textwrap.dedent(
    """
    import sys, time, neardup
    ix = neardup.Index.open(sys.argv[1])
    seen = []
    deadline = time.monotonic() + 60  # bounded
    while time.monotonic() < deadline:
        ix.refresh()
        seen.append(len(ix))
        if seen[-1] >= int(sys.argv[2]):
            break
        time.sleep(0.005)
    hits = ix.query("batch 0 doc 0 " + "common words here " * 3)
    print(" ".join(map(str, seen)), "|", hits[0][0] if hits else "none", flush=True)
    """
)


def test_one_writer_three_reader_processes(tmp_path):
    path = tmp_path / "rw.ndx"
    batches, size = 15, 4
    env = {**os.environ, "PYTHONPATH": SRC}
    with neardup.Index.create(path, neardup.ExactConfig()) as ix:
        readers = [
            subprocess.Popen(
                [sys.executable, "-c", _READER, str(path), str(size * batches)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        for b in range(batches):
            texts = [f"batch {b} doc {j} " + "common words here " * 3 for j in range(size)]
            ix.add([f"b{b}-{j}" for j in range(size)], texts)
        outs = [p.communicate(timeout=90)[0] for p in readers]
    for p, out in zip(readers, outs, strict=True):
        assert p.returncode == 0, out
        counts_s, hit = out.rsplit("|", 1)
        counts = [int(c) for c in counts_s.split()]
        assert counts[-1] == size * batches
        assert all(c % size == 0 for c in counts), counts  # whole batches or nothing
        assert counts == sorted(counts)  # never goes back
        assert hit.strip() == "b0-0"
