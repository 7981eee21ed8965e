"""One progress interface for every way a job is run: the command line, scripts and notebooks.

A *display* is any object with ``stage(name)``, ``advance(documents)``, ``compiling(message,
seconds, kernel)`` and ``compiled(seconds)``: the engines call the first two as a job goes, and
:func:`watch_compiles` calls the last two while numba compiles a kernel that is not cached yet
(the first run of a job, or the first after an upgrade, which takes seconds: the user is told so
and for about how long, not left waiting in silence). The command line's display is
``cli.progress.JobProgress`` (rich, on a terminal); a library call picks one with
:func:`display_for`:

- ``progress=False``: nothing (:class:`Silent`);
- ``progress=None`` (the default): in a notebook a ``tqdm.auto`` bar per stage, with the compile
  notice as a bar of its own (:class:`TqdmDisplay`); elsewhere (a script, a test, a pipe) one
  line on stderr when kernels compile and nothing else (:class:`CompileLine`);
- ``progress=True``: the bars also outside a notebook (``tqdm`` writes to stderr);
- any display object: that display.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = [
    "FIRST_RUN_SECONDS",
    "CompileLine",
    "Silent",
    "TqdmDisplay",
    "compile_message",
    "display_for",
    "first_run_seconds",
    "in_notebook",
    "watch_compiles",
]

FIRST_RUN_SECONDS = {"minhash": 9, "simhash": 9, "spotsigs": 15, "exact": 3, "imatch": 13}
"""Seconds of a method's first run on a cold cache, on 2 cores: the README's first command with
each method, measured on an idle machine (minhash and simhash: their kernels compiled by two
subprocesses at once; docs/benchmarks.md, section 6); a faster or slower machine takes less or
more."""


def first_run_seconds(method: str) -> int:
    return FIRST_RUN_SECONDS.get(method, 30)


def compile_message(method: str) -> str:
    """``"compiling kernels (first run only, about 9 s)"``."""
    return f"compiling kernels (first run only, about {first_run_seconds(method)} s)"


class Silent:
    """Shows nothing."""

    def stage(self, name: str) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def compiling(self, message: str, seconds: float, kernel: str) -> None:
        pass

    def compiled(self, seconds: float) -> None:
        pass

    def close(self) -> None:
        pass


class CompileLine(Silent):
    """One line on ``stream`` (stderr) the first time a kernel compiles, and nothing else: what a
    script or a log shows."""

    def __init__(self, stream: TextIO | None = None, prefix: str = "neardup: ") -> None:
        self._stream, self._prefix, self._told = stream, prefix, False

    def compiling(self, message: str, seconds: float, kernel: str) -> None:
        if not self._told:
            self._told = True
            stream = self._stream if self._stream is not None else sys.stderr
            print(f"{self._prefix}{message}", file=stream, flush=True)


class TqdmDisplay(Silent):
    """A ``tqdm.auto`` bar per stage (documents done and their rate), and the compile notice as a
    bar of its own while kernels compile: a widget in a notebook, text on stderr elsewhere."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm, self._bar, self._compile_bar = tqdm, None, None

    def stage(self, name: str) -> None:
        self._close_bar()
        self._bar = self._tqdm(desc=name, unit=" documents", leave=False)

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def compiling(self, message: str, seconds: float, kernel: str) -> None:
        if self._compile_bar is None:
            self._compile_bar = self._tqdm(desc=message, bar_format="{desc}: {elapsed}", leave=False)
        self._compile_bar.set_postfix_str(kernel, refresh=True)

    def compiled(self, seconds: float) -> None:
        if self._compile_bar is not None:
            self._compile_bar.close()
            self._compile_bar = None

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def close(self) -> None:
        self._close_bar()
        self.compiled(0.0)


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell), where a widget shows progress."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    ip = get() if get is not None else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def display_for(progress: Any) -> Any:
    """The display of a library call's ``progress`` argument (see the module docs)."""
    if progress is False:
        return Silent()
    if progress is None or progress is True:
        if progress is True or in_notebook():
            try:
                from tqdm.auto import tqdm
            except ImportError:
                return CompileLine()
            return TqdmDisplay(tqdm)
        return CompileLine()
    missing = [m for m in ("stage", "advance") if not callable(getattr(progress, m, None))]
    if missing:
        raise TypeError(
            f"progress must be None, True, False or a display with stage(name) and advance(n) methods, "
            f"got {type(progress).__name__} (no {', '.join(missing)})"
        )
    return progress


@contextmanager
def watch_compiles(display: Any, method: str, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """While the block runs, call ``display.compiling(message, seconds so far, kernel name)`` when
    numba starts compiling a kernel and ``display.compiled(seconds so far)`` when it is done
    (numba's ``numba:compile`` event, raised only for kernels not in the cache). Compiling is
    serialized by numba's compiler lock, so one depth counter follows nested compiles (a
    kernel's callees). A display without ``compiling`` is left alone."""
    compiling = getattr(display, "compiling", None)
    compiled = getattr(display, "compiled", None)
    if compiling is None:
        yield
        return
    from numba.core import event

    message = compile_message(method)
    lock = threading.Lock()
    state = {"depth": 0, "spent": 0.0, "since": 0.0}

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            with lock:
                state["depth"] += 1
                if state["depth"] > 1:
                    return
                state["since"] = clock()
                fn = getattr(ev.data.get("dispatcher"), "py_func", None)
                compiling(message, state["spent"], getattr(fn, "__name__", "kernel"))

        def on_end(self, ev) -> None:
            with lock:
                state["depth"] -= 1
                if state["depth"] == 0:
                    state["spent"] += clock() - state["since"]
                    if compiled is not None:
                        compiled(state["spent"])

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        yield
    finally:
        event.unregister("numba:compile", listener)
