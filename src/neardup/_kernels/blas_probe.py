"""Numba's BLAS probe, skipped in the CLI's process.

When numba's CPU target loads its first kernel it imports ``numba.np.arraymath``, whose module
code asks whether ``np.dot`` and friends can compile in nopython mode by importing SciPy's BLAS
bindings (``scipy.linalg.cython_blas``). Where SciPy is installed that import takes 0.3 s (0.32-0.35 s
on the machine of docs/benchmarks.md), paid by every ``neardup`` command that runs a kernel, and
neardup's kernels call no BLAS. :func:`skip_in_this_process` makes that one probe answer "no
BLAS" in this process, and only the probe: SciPy itself stays importable, and numba's own
``np.linalg`` support (which checks again when such a function compiles) is untouched. Only the
CLI calls it (its process runs neardup alone); a library user's process is never changed.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

__all__ = ["skip_in_this_process"]

_PROBED = "numba.np.arraymath"


def _no_blas() -> None:
    raise ImportError("numba's BLAS probe is skipped in the neardup command (no kernel of it uses BLAS)")


class _SkipProbe(importlib.abc.MetaPathFinder):
    """Finds ``numba.np.arraymath`` once, and runs its module code with ``ensure_blas`` raising."""

    def find_spec(self, name, path, target=None):
        if name != _PROBED:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_without_probe(module) -> None:
            from numba.np import linalg

            original = getattr(linalg, "ensure_blas", None)
            if original is None:  # another numba: nothing to skip
                exec_module(module)
                return
            linalg.ensure_blas = _no_blas
            try:
                exec_module(module)
            finally:
                linalg.ensure_blas = original

        loader.exec_module = exec_without_probe
        return spec


def skip_in_this_process() -> bool:
    """Install the skip before numba's CPU target loads; False when it has loaded already (the
    probe has run) or the skip is installed."""
    if _PROBED in sys.modules or any(isinstance(f, _SkipProbe) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, _SkipProbe())
    return True
