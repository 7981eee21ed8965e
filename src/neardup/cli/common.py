"""What the ``neardup`` commands share: click settings, data errors as exit code 1, JSON and console
output, and ``--plot`` files (matplotlib, an optional dependency)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import click
import orjson

from ..core.errors import NeardupError

EXIT_DATA_ERROR = 1
EXIT_MISSING_EXTRA = 2
"""A job that needs an optional dependency that is not installed (as a usage error: nothing read)."""

EXTRAS = {
    "edit": ("rapidfuzz", "edit similarity"),
    "html": ("resiliparse", "main-content extraction"),
    "dask": ("dask.distributed", "the Dask engine"),
    "plot": ("matplotlib", "plots"),
}
"""Extra name -> (the module it installs, what needs it)."""


SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def make_console():
    from rich.console import Console

    return Console(stderr=True)


def emit_json(data) -> None:
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())


@contextmanager
def data_errors():
    """Bad input (unreadable files, malformed tables) -> message on stderr and exit code 1."""
    try:
        yield
    except (NeardupError, ValueError, OSError) as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)


def require_extras(*needed: tuple[str, str]) -> None:
    """Stop at once, before anything is read, when a job needs an extra that is not installed:
    ``needed`` holds (extra, the option that needs it); one line on stderr names the extra and
    how to install it, and the exit code is :data:`EXIT_MISSING_EXTRA`."""
    import importlib

    for extra, option in needed:
        module, what = EXTRAS[extra]
        try:
            importlib.import_module(module)
        except ImportError:
            click.echo(
                f"neardup: error: {option} needs {what} from the optional {module.split('.')[0]}: "
                f"pip install 'neardup[{extra}]'",
                err=True,
            )
            sys.exit(EXIT_MISSING_EXTRA)


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or exit 1 saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        click.echo(
            "neardup: error: --plot needs matplotlib, an optional dependency; install it with "
            "pip install 'neardup[plot]' (or pip install matplotlib)",
            err=True,
        )
        sys.exit(EXIT_MISSING_EXTRA)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_plot(fig, path: str) -> None:
    try:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    except ValueError as exc:  # an extension matplotlib cannot write
        raise click.BadParameter(str(exc), param_hint="--plot") from None
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def check_plot_path(ctx, param, value):
    if value is None:
        return None
    suffix = Path(value).suffix.lower().lstrip(".")
    if suffix not in ("png", "svg", "pdf", "jpg", "jpeg"):
        raise click.BadParameter(f"cannot tell the image format of {value!r}; use .png, .svg, .pdf or .jpg")
    require_extras(("plot", "--plot"))
    return value


def empty_id_records(inputs, *, text_field, id_field, input_format, html, batch_size=4096) -> list[tuple[str, int]]:
    """``(file, line)`` of every record of ``inputs`` whose id is the empty string (which an index
    cannot hold), in reading order: the inputs read again with ``reject_empty_ids`` (the record
    parser, not the JSONL kernel: slower, so only once a batch was seen to hold one)."""
    from ..io import ReadStats, read_documents

    found = ReadStats(details=[])
    for _ in read_documents(
        list(inputs),
        text_field=text_field,
        id_field=id_field,
        on_error="skip",
        batch_size=batch_size,
        stats=found,
        html=html,
        input_format=input_format,
        reject_empty_ids=True,
    ):
        pass
    return [(path, line) for path, line, reason, _ in found.details if reason == "empty id"]
