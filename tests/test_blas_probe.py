"""The CLI's process skips numba's BLAS probe (an import of SciPy's BLAS bindings, 0.3 s where
SciPy is installed); nothing else changes, and a library user's process is never touched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import news_removed_by_brute_force

ROOT = Path(__file__).resolve().parents[1]

_CLI = """
import sys
sys.argv = ["neardup", "dedup", sys.argv[1], "-o", sys.argv[2]]
from neardup.__main__ import run
try:
    run()
except SystemExit as exc:
    code = exc.code
print("RESULT", code, "scipy.linalg" in sys.modules, file=sys.stderr)
import numba.np.linalg, numba.np.arraymath
assert numba.np.linalg.ensure_blas.__name__ == "ensure_blas"  # restored once the probe ran
import scipy.linalg  # still importable
print("SCIPY", scipy.linalg.norm([3.0, 4.0]), file=sys.stderr)
"""


def test_the_cli_runs_its_job_without_importing_scipys_blas(tmp_path):
    out = tmp_path / "kept.jsonl"
    r = subprocess.run(
        [sys.executable, "-c", _CLI, str(ROOT / "examples" / "news.jsonl"), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "RESULT 0 False" in r.stderr, r.stderr[-3000:]
    assert "SCIPY 5.0" in r.stderr, r.stderr[-3000:]
    news = ROOT / "examples" / "news.jsonl"
    assert len(out.read_text().splitlines()) == len(news.read_text().splitlines()) - news_removed_by_brute_force()


def test_a_library_process_keeps_numbas_probe():
    """Importing and using neardup installs nothing: numba's probe runs as numba wrote it."""
    code = (
        "import sys, numpy as np, neardup\n"
        "from neardup.methods.minhash.sketch import MinHasher\n"
        "MinHasher(num_perm=16).sign(['some text here'])\n"
        "from neardup._kernels.blas_probe import _SkipProbe\n"
        "assert not any(isinstance(f, _SkipProbe) for f in sys.meta_path)\n"
        "print('OK')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.stdout.strip().endswith("OK"), r.stderr[-3000:]


def test_no_skip_once_numba_has_loaded_its_target():
    """Once numba.np.arraymath is loaded the probe has run: nothing is installed."""
    import numba.np.arraymath  # noqa: F401

    from neardup._kernels import blas_probe

    assert blas_probe.skip_in_this_process() is False
    assert not any(isinstance(f, blas_probe._SkipProbe) for f in sys.meta_path)
