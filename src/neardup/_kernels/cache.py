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

A read-only install: numba caches beside the package when it can, else in the per-user cache
directory; with neither writable it fails ("cannot cache function ... no locator available").
:func:`choose_cache_dir`, called on import before numba is loaded, then points ``NUMBA_CACHE_DIR``
at a per-user directory under the system temporary directory. A ``NUMBA_CACHE_DIR`` set by the
user is always honoured.
"""

from __future__ import annotations

import os
import tempfile

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


def choose_cache_dir(
    package: str | os.PathLike | None = None, environ: dict | None = None, user_cache: str | None = None
) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` (in ``environ``, ``os.environ`` by default) to a writable temporary
    directory when neither ``package`` (this one) nor the per-user cache directory (``user_cache``,
    ``$XDG_CACHE_HOME`` or ``~/.cache``) is writable and the variable is unset; return the
    directory set, else None."""
    environ = os.environ if environ is None else environ
    if environ.get("NUMBA_CACHE_DIR"):
        return None
    package = os.fspath(package) if package is not None else os.path.dirname(os.path.abspath(__file__))
    if _writable(os.path.join(package, "__pycache__")) or _writable(package):
        return None
    if user_cache is None:
        home = os.path.expanduser("~")
        user_cache = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    if _writable(user_cache) or (not os.path.exists(user_cache) and _writable(os.path.dirname(user_cache))):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    path = os.path.join(tempfile.gettempdir(), f"neardup-numba-{uid}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    environ["NUMBA_CACHE_DIR"] = path
    return path


def _writable(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)
