"""What keeps a command from destroying data: outputs that would overwrite an input or each other
are refused before any work, and an interrupt or SIGTERM ends the command with one line, its
temporary files removed (the writers replace an output only when it is complete).

Exit codes: 130 after Ctrl-C (SIGINT), 143 after SIGTERM.
"""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import sys
from collections.abc import Iterator

import click

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(BaseException):
    """SIGTERM arrived (a BaseException, so that ``except Exception`` blocks do not swallow it)."""


def _local_inputs(inputs: list[str]) -> list[str]:
    """Real paths of the local inputs (files, folders, matches of globs); URLs and ``-`` are skipped."""
    out = []
    for name in inputs:
        if name == "-" or "://" in name:
            continue
        matches = glob.glob(name, recursive=True) if glob.has_magic(name) else [name]
        out += [os.path.realpath(m) for m in matches if os.path.exists(m)]
    return out


def check_output_paths(inputs: list[str], outputs: dict[str, str | None]) -> None:
    """Usage error (exit 2, before any work) when an output would overwrite an input, be written
    inside an input folder, or is the same file as another output."""
    sources = _local_inputs(list(inputs))
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None or path == "-" or "://" in path:
            continue
        if path.endswith(("/", os.sep)):  # a folder of parts
            real = os.path.realpath(path) + os.sep
        else:
            real = os.path.realpath(path)
        for src in sources:
            if real == src or (os.path.isdir(src) and real.startswith(src + os.sep)):
                what = "is the input" if real == src else "is inside the input folder"
                raise click.UsageError(f"{option} {path} {what} {src}: refusing to overwrite input data")
            if real.endswith(os.sep) and src.startswith(real):
                raise click.UsageError(
                    f"{option} {path} holds the input {src}: refusing to write parts over input data"
                )
        if real in seen:
            raise click.UsageError(
                f"{option} and {seen[real]} are the same file ({path}): give each output its own path"
            )
        seen[real] = option


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """Ctrl-C and SIGTERM end the block with one line on stderr and exit 130 / 143.

    The writers remove their temporary files as the exception passes through them. Ctrl-C inside a
    numba kernel can surface as ``SystemError`` (the kernel returned with the interrupt pending);
    it is treated as the interrupt it is.
    """
    state = {"signal": None}

    def on_term(signum, frame):
        state["signal"] = signum
        raise Terminated

    def on_int(signum, frame):
        state["signal"] = signum
        raise KeyboardInterrupt

    in_main = _is_main_thread()
    previous = {}
    if in_main:
        previous = {
            signal.SIGTERM: signal.signal(signal.SIGTERM, on_term),
            signal.SIGINT: signal.signal(signal.SIGINT, on_int),
        }
    try:
        yield
    except Terminated:
        _leave("terminated (SIGTERM); outputs not replaced", EXIT_TERMINATED)
    except KeyboardInterrupt:
        _leave("interrupted; outputs not replaced", EXIT_INTERRUPTED)
    except SystemError:
        if state["signal"] == signal.SIGINT:
            _leave("interrupted; outputs not replaced", EXIT_INTERRUPTED)
        if state["signal"] == signal.SIGTERM:
            _leave("terminated (SIGTERM); outputs not replaced", EXIT_TERMINATED)
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _leave(message: str, code: int) -> None:
    with contextlib.suppress(Exception):
        click.echo(f"neardup: {message}", err=True)
    sys.exit(code)
