"""What keeps a command from destroying data: outputs that would overwrite an input or each other
are refused before any work, outputs that cannot be written are found before the work
(:func:`preflight_outputs`), and an interrupt or SIGTERM ends the command with one line, its
temporary files removed (the writers replace the outputs only when all are complete,
:mod:`neardup.io.transaction`).

Exit codes: 130 after Ctrl-C (SIGINT), 143 after SIGTERM.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import sys
from collections.abc import Iterator

import click

from ..core.errors import OutputError
from ..io.formats import compression

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


def _input_bytes(inputs: list[str]) -> int:
    """Bytes of the local inputs (files, and every file under a folder); URLs and ``-`` count 0."""
    total = 0
    for src in _local_inputs(inputs):
        if os.path.isdir(src):
            for folder, _, files in os.walk(src):
                for name in files:
                    with contextlib.suppress(OSError):
                        total += os.path.getsize(os.path.join(folder, name))
        else:
            with contextlib.suppress(OSError):
                total += os.path.getsize(src)
    return total


def _existing_ancestor(path: str) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    return folder


def _read_only(folder: str) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def preflight_outputs(inputs: list[str], outputs: dict[str, str | None], sized: tuple[str, ...] = ("-o",)) -> None:
    """Check, before any reading, that every output can be written.

    A usage error (exit 2) when an output is an existing directory, or a part of its path is a
    file; an :class:`~neardup.core.errors.OutputError` (exit 1) when its folder cannot be written
    (permission, read-only file system) or the free space of a file system is below a rough
    estimate of what the ``sized`` outputs need: the inputs' size (a third of it for a compressed
    or Parquet output of uncompressed inputs), since the kept and removed records together are the
    input records. Standard output and URLs are not checked.
    """
    need: dict[int, list] = {}
    total = None
    for option, path in outputs.items():
        if path is None or path == "-" or "://" in path:
            continue
        parts = path.endswith(("/", os.sep))
        target = path.rstrip("/" + os.sep) if parts else path
        if parts and os.path.exists(target) and not os.path.isdir(target):
            raise click.UsageError(f"{option} {path}: {target} is a file, not a folder for the parts")
        if not parts and os.path.isdir(target):
            raise click.UsageError(
                f"{option} {path} is a directory; give a file path (or end -o with '/' to write parts into it)"
            )
        folder = target if parts and os.path.isdir(target) else _existing_ancestor(target)
        if not os.path.isdir(folder):
            raise click.UsageError(f"{option} {path}: {folder} is a file, not a folder")
        if _read_only(folder):
            raise OutputError(path, f"{folder} is on a read-only file system; write elsewhere")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(path, f"no permission to write in {folder}; write to a folder you may write in")
        if option in sized:
            if total is None:
                total = _input_bytes(inputs)
            estimate = total
            if (compression(target) or target.lower().endswith(".parquet")) and not any(
                compression(i) or i.lower().endswith(".parquet") for i in inputs
            ):
                estimate //= 3
            with contextlib.suppress(OSError):
                need.setdefault(os.stat(folder).st_dev, []).append((option, path, folder, estimate))
    for items in need.values():
        estimate = sum(e for *_, e in items)
        folder = items[0][2]
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            continue
        if estimate > free:
            names = " and ".join(f"{o} {p}" for o, p, *_ in items)
            raise OutputError(
                items[0][1],
                f"not enough free space in {folder}: {_human(free)} free, about {_human(estimate)} needed for "
                f"{names} (a rough estimate from the inputs' size); free some space, write elsewhere, "
                "or skip this check with --no-space-check",
            )


class Outcome:
    """What an interrupted command says it leaves: set ``replaced`` once its outputs are replaced
    (an interrupt after that, during an index update or the summary, leaves the new outputs).

    ``check()`` raises an interrupt that arrived while Python could not take it: a signal handler
    that raises inside a callback from native code (numba compiling a kernel calls back into
    Python) has its exception swallowed, so it is kept here and raised at the next check.
    """

    def __init__(self) -> None:
        self.replaced = False
        self.pending: type[BaseException] | None = None

    def words(self) -> str:
        return "outputs replaced" if self.replaced else "outputs not replaced"

    def check(self) -> None:
        if self.pending is not None:
            raise self.pending


@contextlib.contextmanager
def interrupts() -> Iterator[Outcome]:
    """Ctrl-C and SIGTERM end the block with one line on stderr and exit 130 / 143.

    The writers remove their temporary files as the exception passes through them. Ctrl-C inside a
    numba kernel can surface as ``SystemError`` (the kernel returned with the interrupt pending);
    it is treated as the interrupt it is. The line says whether the outputs were replaced
    (:class:`Outcome`, yielded).
    """
    state = {"signal": None}
    outcome = Outcome()

    def on_term(signum, frame):
        state["signal"] = signum
        raise Terminated

    def on_int(signum, frame):
        state["signal"] = signum
        raise KeyboardInterrupt

    def on_unraisable(unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, (Terminated, KeyboardInterrupt)):
            outcome.pending = unraisable.exc_type  # swallowed by a native callback: raised at the next check
            return
        previous_hook(unraisable)

    in_main = _is_main_thread()
    previous = {}
    previous_hook = sys.unraisablehook
    if in_main:
        previous = {
            signal.SIGTERM: signal.signal(signal.SIGTERM, on_term),
            signal.SIGINT: signal.signal(signal.SIGINT, on_int),
        }
        sys.unraisablehook = on_unraisable
    try:
        yield outcome
        outcome.check()
    except Terminated:
        _leave(f"terminated (SIGTERM); {outcome.words()}", EXIT_TERMINATED)
    except KeyboardInterrupt:
        _leave(f"interrupted; {outcome.words()}", EXIT_INTERRUPTED)
    except SystemError:
        if state["signal"] == signal.SIGINT:
            _leave(f"interrupted; {outcome.words()}", EXIT_INTERRUPTED)
        if state["signal"] == signal.SIGTERM:
            _leave(f"terminated (SIGTERM); {outcome.words()}", EXIT_TERMINATED)
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if in_main:
            sys.unraisablehook = previous_hook


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _leave(message: str, code: int) -> None:
    with contextlib.suppress(Exception):
        click.echo(f"neardup: {message}", err=True)
    sys.exit(code)
