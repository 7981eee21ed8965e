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
@click.argument("inputs", nargs=-1, required=False, type=click.Path(path_type=str))
@click.option(
    "--stats",
    "stats_path",
    default=None,
    help="The run's --stats JSON: its inputs, --clusters, --pairs, --text-field, --id-field, --on-error and "
    "threshold are used unless given here.",
)
@click.option(
    "--clusters",
    "clusters_path",
    default=None,
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
@click.option("--text-field", default=None, help="Field holding the text (as for dedup) [default: text].")
@click.option("--id-field", default=None, help="Field holding the document id (as for dedup).")
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default=None,
    help="On a bad record: stop, or skip it (as for dedup) [default: fail].",
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
    stats_path,
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
    highlighted. Give the same INPUTS, --text-field and --id-field as to the dedup run, or the
    run's --stats file, which holds them.

    \b
    Example:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv
      neardup report examples/news.jsonl --clusters clusters.csv --pairs pairs.csv --threshold 0.8 -o report.html
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --stats run.json
      neardup report --stats run.json -o report.html
    """
    from ..eval.report import build_report

    if stats_path is not None:
        with data_errors():
            run = _from_stats(stats_path)
        inputs = inputs or tuple(run["inputs"])
        clusters_path = clusters_path or run["clusters"]
        pairs_path = pairs_path or run["pairs"]
        text_field = text_field or run["text_field"]
        id_field = id_field or run["id_field"]
        on_error = on_error or run["on_error"]
        threshold = threshold if threshold is not None else run["threshold"]
        if clusters_path is None:
            raise click.UsageError(f"{stats_path}: the run wrote no --clusters table; run dedup with --clusters PATH")
    if not inputs:
        raise click.UsageError("give the run's INPUTS, or its --stats file")
    if clusters_path is None:
        raise click.UsageError("give the run's --clusters table, or its --stats file")
    text_field = text_field or "text"
    on_error = on_error or "fail"

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


def _from_stats(path: str) -> dict:
    """What a report needs of a dedup run's ``--stats`` file: inputs, outputs (paths as the run
    gave them; relative ones that do not exist from here are taken from the stats file's folder),
    the reading settings and the method's pair threshold."""
    import json

    from ..core.errors import NeardupError
    from ..methods.registry import config_from_dict

    try:
        body = json.loads(Path(path).read_text(encoding="utf-8"))
        settings, outputs = body["settings"], body["outputs"]
        inputs, config = body["inputs"], config_from_dict(body["method"])
    except FileNotFoundError:
        raise NeardupError(f"{path}: no such file") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise NeardupError(f"{path}: not the --stats file of a dedup run ({exc})") from None
    here = Path(path).resolve().parent

    def located(p: str | None) -> str | None:
        if p is None or Path(p).is_absolute() or Path(p).exists() or "://" in p:
            return p
        return str(here / p) if (here / p).exists() else p

    return {
        "inputs": [located(p) for p in inputs],
        "clusters": located(outputs.get("--clusters")),
        "pairs": located(outputs.get("--pairs")),
        "text_field": settings.get("text_field"),
        "id_field": settings.get("id_field"),
        "on_error": settings.get("on_error"),
        "threshold": config.pair_threshold,
    }
