"""``neardup report``: a self-contained HTML report of a dedup run (:mod:`neardup.eval.report`)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import SETTINGS, data_errors


def _check_html_path(ctx, param, value):
    """The report is one HTML page: refuse another extension rather than write HTML under it."""
    if value is not None and Path(value).suffix.lower() not in (".html", ".htm"):
        raise click.BadParameter(
            f"the report is an HTML page; name it .html or .htm, got {value!r} "
            "(to get a PDF, open the page in a browser and print it)"
        )
    return value


@click.command("report", context_settings=SETTINGS)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "--clusters",
    "clusters_path",
    required=True,
    help="The clusters table of the dedup run (`neardup dedup --clusters`).",
)
@click.option(
    "-o", "--output", required=True, callback=_check_html_path, help="The HTML file to write (.html or .htm)."
)
@click.option(
    "--pairs",
    "pairs_path",
    default=None,
    help="The pairs table of the run (`--pairs`), for a histogram of pair similarities.",
)
@click.option("--text-field", default="text", show_default=True, help="Field holding the text (as for dedup).")
@click.option("--id-field", default=None, help="Field holding the document id (as for dedup).")
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    show_default=True,
    help="On a bad record: stop, or skip it (as for dedup).",
)
@click.option(
    "--max-clusters",
    type=click.IntRange(min=1),
    default=2000,
    show_default=True,
    help="Detail only the largest clusters; the summary counts all.",
)
@click.option(
    "--max-members",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Members shown per cluster (lowest similarity first).",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=4000,
    show_default=True,
    help="Characters of each text embedded (longer texts are cut, with a note).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=None,
    help="The run's --threshold: stated on the page, drawn on the histograms, and (with --pairs) "
    "each member below it shown with the chain of verified pairs that joined it.",
)
@click.option("--title", default=None, help="Title of the page [default: the input's name].")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
def report_cmd(
    inputs,
    clusters_path,
    output,
    pairs_path,
    text_field,
    id_field,
    on_error,
    max_clusters,
    max_members,
    max_chars,
    threshold,
    title,
    quiet,
):
    """Write a self-contained HTML report of a dedup run (no network needed to view it).

    Summary figures, a histogram of similarities, the clusters by size with a search box, and for
    each member a side-by-side view against its kept document with the differing words
    highlighted. Give the same INPUTS, --text-field and --id-field as to the dedup run.

    \b
    Example:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv
      neardup report examples/news.jsonl --clusters clusters.csv --pairs pairs.csv --threshold 0.8 -o report.html
    """
    from ..eval.report import build_report

    with data_errors():
        stats = build_report(
            inputs,
            clusters_path,
            output,
            pairs_path=pairs_path,
            text_field=text_field,
            id_field=id_field,
            on_error=on_error,
            max_clusters=max_clusters,
            max_members=max_members,
            max_chars=max_chars,
            title=title,
            threshold=threshold,
        )
    if not quiet:
        note = f", {stats.missing_texts:,} texts not found" if stats.missing_texts else ""
        click.echo(
            f"wrote {output}: {stats.clusters:,} clusters ({stats.shown_clusters:,} detailed) of "
            f"{stats.documents:,} documents{note}, {stats.bytes / 1e6:.1f} MB",
            err=True,
        )
