"""Calling a kernel only once its compile pays for itself: a Python tier for cold caches.

On a cold numba cache the first call of a kernel compiles it, which takes seconds (the JSON
Lines scanner about 5 s of a core): a small job would spend them to save milliseconds. Where a
kernel has an exact equivalent in Python, :class:`Warmup` chooses per call, as a JIT chooses
between its tiers: the kernel once it is compiled in this process or its cache holds it, else
the Python path until this process has given that path ``hot`` units of work (bytes, keys),
after which the kernel compiles (or, when a subprocess of :mod:`neardup._kernels.precompile` is
compiling it, is waited for) and serves the rest. Both paths give the same values, so the choice
shows in time only.
"""

from __future__ import annotations

import os

__all__ = ["Warmup", "cached"]


def cached(dispatcher) -> bool:
    """Whether numba's cache has an index for ``dispatcher`` (one ``stat``). An index for other
    argument types, or a stale one, counts as cached, and so does a dispatcher whose cache numba
    no longer describes this way: the caller then calls the kernel, as it would without this."""
    cache = getattr(dispatcher, "_cache", None)
    path = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    return path is None or os.path.exists(path)


class Warmup:
    """The choice between ``dispatcher`` (a numba kernel) and the caller's Python equivalent of
    it, given ``hot``, the units of work (bytes, keys) the Python path may take in this process
    before the kernel is compiled."""

    __slots__ = ("_done", "_pinned", "_ready", "dispatcher", "hot")

    def __init__(self, dispatcher, hot: int) -> None:
        self.dispatcher = dispatcher
        self.hot = hot
        self._done = 0
        self._ready = False
        self._pinned: bool | None = None

    def pin(self, kernel: bool | None) -> None:
        """Always the kernel (True) or always the Python path (False), as the tests that check
        one or the other need; None chooses again as described."""
        self._pinned = kernel

    def use_kernel(self, work: int) -> bool:
        """True to call the kernel for ``work`` units, False to take the Python path (counted)."""
        if self._pinned is not None:
            return self._pinned
        if self._ready:
            return True
        if self.dispatcher.overloads or cached(self.dispatcher) or self._done + work > self.hot:
            self._ready = True
            return True
        self._done += work  # threads may race here: the threshold is approximate, never the values
        return False
