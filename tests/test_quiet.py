"""``-q`` on every command that prints progress or a summary line: nothing on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

NEWS = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"


def neardup(*args) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [sys.executable, "-m", "neardup", *map(str, args)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    return res


def test_index_commands_are_quiet_with_q(tmp_path):
    index = tmp_path / "idx"
    assert neardup("index", "create", index, "-q").stderr == ""
    assert neardup("index", "add", index, NEWS, "-q").stderr == ""
    out = tmp_path / "m.jsonl"
    assert neardup("index", "query", index, NEWS, "-o", out, "-q").stderr == ""
    assert out.exists()
    first = json.loads(NEWS.read_text().splitlines()[0])["id"]
    ids = tmp_path / "ids.txt"
    ids.write_text(first + "\n")
    assert neardup("index", "remove", index, "--ids", ids, "-q").stderr == ""
    assert neardup("index", "compact", index, "-q").stderr == ""
    assert "compacted" in neardup("index", "compact", index).stderr
