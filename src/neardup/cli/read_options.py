"""The options that every command reading documents into a job declares the same way
(``dedup``, ``repeats``): one declaration each, and the checks of output paths they share."""

from __future__ import annotations

import os

import click

from ..io import output_format
from ..io.paths import INPUT_FORMATS
from .groups import option

__all__ = [
    "batch_size_option",
    "check_output_path",
    "check_stats_path",
    "id_field_option",
    "input_format_option",
    "on_error_option",
    "stats_option",
    "text_field_option",
]


def check_stats_path(ctx, param, value):
    """A ``--stats`` path: JSON."""
    if value is not None and not value.lower().endswith(".json"):
        raise click.BadParameter(f"{value!r}: the stats file is JSON; give a path ending in .json")
    return value


def check_output_path(ctx, param, value):
    """An output path: not a folder (but ``-o DIR/``), of a format the writers know."""
    if value is None or (param.name == "output" and (value == "-" or value.endswith(("/", os.sep)))):
        return value
    if os.path.isdir(value):
        hint = " (or end it with '/' to write one part per input into it)" if param.name == "output" else ""
        raise click.BadParameter(f"{value} is a directory; give a file path{hint}")
    try:
        output_format(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


input_format_option = option(
    "--input-format",
    group="Input",
    type=click.Choice(list(INPUT_FORMATS)),
    default=None,
    help="Read every input as this format, whatever its extension (needed for '-', standard input).",
)
text_field_option = option(
    "--text-field", group="Input", default="text", show_default=True, help="Field holding the text."
)
id_field_option = option(
    "--id-field",
    group="Input",
    default=None,
    help="Field holding the document id [default: 'id' when present, else FILE:LINE].",
)
on_error_option = option(
    "--on-error",
    group="Input",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="On a bad record: stop with an error naming file and line, or skip and count it.",
)
batch_size_option = click.option(
    "--batch-size", type=click.IntRange(min=1), default=2048, show_default=True, help="Documents per batch."
)
stats_option = option(
    "--stats",
    "stats_path",
    group="Output",
    default=None,
    metavar="PATH",
    callback=check_stats_path,
    help="Also write the summary as JSON: counts, skips by reason, seconds per stage, settings, version.",
)
