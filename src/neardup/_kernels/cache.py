"""Dropping numba's cached kernels when any kernel module changes.

numba keys a cached kernel on its own source file (path, modification time, size) only. Our
kernels call and inline numba functions of other modules (the SimHash and MinHash kernels inline
the shingling passes of :mod:`neardup._kernels.shingles`, almost every kernel uses
:mod:`neardup._kernels.hashing`), so after an edit of one module another's cache can hold code
compiled from the old version: wrong values, silently. An installed release gets fresh files
throughout, but a working tree does not. So on import the package compares a stamp of every
kernel module's (name, mtime, size) with the one stored beside the caches in ``__pycache__`` and,
if they differ, deletes the cached kernels (``*.nbi``, ``*.nbc``) there; the kernels compile
again on first use. Every numba function and everything a kernel reads at compile time (the
character class table included) lives in this package, so edits elsewhere keep the caches.
Caches elsewhere (``NUMBA_CACHE_DIR``) are not touched.
"""

from __future__ import annotations

import os

_STAMP = "neardup-kernels.stamp"


def _stamp(package: str) -> str:
    entries = sorted((e.name, e.stat()) for e in os.scandir(package) if e.name.endswith(".py") and e.is_file())
    return "".join(f"{name} {st.st_mtime_ns} {st.st_size}\n" for name, st in entries)


def drop_stale_kernels(package: str | os.PathLike | None = None) -> bool:
    """Delete the cached kernels of ``package`` (this one by default) if a module changed since
    they were stamped; return whether anything was deleted. Errors (read-only install) are ignored."""
    package = os.fspath(package) if package is not None else os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(package, "__pycache__")
    marker = os.path.join(cache, _STAMP)
    try:
        stamp = _stamp(package)
        try:
            with open(marker, encoding="utf-8") as f:
                if f.read() == stamp:
                    return False
        except FileNotFoundError:
            pass
        os.makedirs(cache, exist_ok=True)
        dropped = False
        for entry in os.scandir(cache):
            if entry.name.endswith((".nbi", ".nbc")):
                os.unlink(entry.path)
                dropped = True
        with open(marker, "w", encoding="utf-8") as f:
            f.write(stamp)
        return dropped
    except OSError:
        return False
