"""``neardup eval``: score predicted near-duplicates against gold labels (:mod:`neardup.eval.metrics`)."""

from __future__ import annotations

import math

import click

from ..core.errors import NeardupError
from .common import (
    SETTINGS,
    check_plot_path,
    data_errors,
    emit_json,
    make_console,
    pyplot,
    save_plot,
)


@click.command("eval", context_settings=SETTINGS)
@click.option(
    "--gold",
    "gold_path",
    required=True,
    help="Gold labels: a clusters table (id, cluster) or a pairs table (id_a, id_b).",
)
@click.option(
    "--pred",
    "pred_path",
    required=True,
    help="Predictions: `neardup dedup --clusters` or `--pairs` output, or any table of those forms.",
)
@click.option("--id-field", default="id", show_default=True, help="Id column of clusters tables.")
@click.option(
    "--gold-cluster-field",
    default=None,
    help="Cluster column of the gold table [default: the first of cluster, group, cluster_id, label].",
)
@click.option("--pred-cluster-field", default=None, help="Cluster column of the predicted table [default: as gold].")
@click.option(
    "--sweep", is_flag=True, help="Predicted pairs with similarities: P/R/F1 at every threshold, and the best F1."
)
@click.option(
    "--plot",
    "plot_path",
    default=None,
    callback=check_plot_path,
    help="With --sweep: draw the precision-recall curve to this image (needs matplotlib).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON on stdout.")
def eval_cmd(gold_path, pred_path, id_field, gold_cluster_field, pred_cluster_field, sweep, plot_path, as_json):
    """Score predicted near-duplicates against gold labels.

    Pairwise precision, recall and F1 (over the pairs that clusters imply), macro F1 per gold
    cluster and the adjusted Rand index. With --sweep and a pairs table with a similarity column,
    also the scores when keeping only pairs at or above each threshold, and the best F1. Tables
    are .jsonl[.gz|.zst], .csv[.gz|.zst] or .parquet; a pairs table has columns id_a, id_b
    [, similarity], a clusters table an id column and a cluster column.

    \b
    Examples:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv --threshold 0.5
      neardup eval --gold examples/news_truth.jsonl --pred clusters.csv
      neardup eval --gold examples/news_truth.jsonl --pred pairs.csv --sweep --plot pr.png
    """
    from ..eval.metrics import Pairs, evaluate, read_labels, threshold_sweep

    if plot_path and not sweep:
        raise click.UsageError("--plot draws the precision-recall curve of --sweep; add --sweep")
    with data_errors():
        gold = read_labels(gold_path, id_field=id_field, cluster_field=gold_cluster_field)
        pred = read_labels(pred_path, id_field=id_field, cluster_field=pred_cluster_field or gold_cluster_field)
        _check_shared_ids(gold, pred, gold_path, pred_path)
        scores = evaluate(pred, gold)
        sw = None
        if sweep:
            if not isinstance(pred, Pairs) or pred.similarity is None:
                raise NeardupError(
                    f"{pred_path}: --sweep needs a pairs table with a similarity column "
                    "(id_a, id_b, similarity), e.g. `neardup dedup --pairs` output"
                )
            sw = threshold_sweep(pred, gold)
    out = {
        "gold": gold_path,
        "pred": pred_path,
        "pred_kind": "pairs" if isinstance(pred, Pairs) else "clusters",
        "gold_kind": "pairs" if isinstance(gold, Pairs) else "clusters",
        **scores.as_dict(),
    }
    if sw is not None:
        out["sweep"] = _sweep_dict(sw)
    if plot_path and sw is not None:
        _plot_pr(sw, plot_path)
    if as_json:
        emit_json(out)
        return
    _print_scores(out)


def _ids_of(labels) -> set:
    from ..eval.metrics import Clusters

    if isinstance(labels, Clusters):
        return set(_pylist(labels.ids))
    return set(_pylist(labels.a)) | set(_pylist(labels.b))


def _pylist(values) -> list:
    return [None if v is None else str(v) for v in (values.to_pylist() if hasattr(values, "to_pylist") else values)]


def _check_shared_ids(gold, pred, gold_path: str, pred_path: str) -> None:
    """Refuse tables that share no id: every score would be 0 for a reason that has nothing to do
    with the predictions (other documents, another id column). Two pairs tables may share no id
    honestly (every predicted pair wrong), but a clusters table lists every document, so with one
    on either side no shared id means the tables are about different documents."""
    from ..eval.metrics import Clusters

    gold_ids, pred_ids = _ids_of(gold), _ids_of(pred)
    if not (gold_ids and pred_ids) or gold_ids & pred_ids:
        return
    if not (isinstance(gold, Clusters) or isinstance(pred, Clusters)):
        return
    g, p = sorted(gold_ids)[:3], sorted(pred_ids)[:3]
    raise NeardupError(
        f"{gold_path} and {pred_path} share no id ({len(gold_ids):,} ids in gold, e.g. {', '.join(map(repr, g))}; "
        f"{len(pred_ids):,} in pred, e.g. {', '.join(map(repr, p))}); they describe different documents: "
        "check the files and --id-field"
    )


def _sweep_dict(sw) -> dict:
    k = sw.best
    grid = []
    if len(sw.threshold):
        lo = math.floor(float(sw.threshold.min()) * 20 + 1e-9) / 20
        t = 1.0
        while t >= lo - 1e-9:
            p, r, f = sw.at(t)
            grid.append({"threshold": round(t, 2), "precision": p, "recall": r, "f1": f})
            t -= 0.05
    return {
        "positives": sw.positives,
        "best": None
        if k < 0
        else {
            "threshold": float(sw.threshold[k]),
            "precision": float(sw.precision[k]),
            "recall": float(sw.recall[k]),
            "f1": float(sw.f1[k]),
            "pairs": int(sw.kept[k]),
        },
        "lowest_similarity": float(sw.threshold.min()) if len(sw.threshold) else None,
        "grid": grid,
        "curve": {
            "threshold": sw.threshold.tolist(),
            "precision": sw.precision.tolist(),
            "recall": sw.recall.tolist(),
            "f1": sw.f1.tolist(),
        },
    }


def _print_scores(o: dict) -> None:
    from rich.table import Table

    console = make_console()
    table = Table(title="neardup eval", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim")
    table.add_row("items", f"{o['items']:,}", f"{o['only_in_pred']:,} only in pred, {o['only_in_gold']:,} only in gold")
    table.add_row("gold", f"{o['gold_clusters']:,} clusters", f"{o['gold_pairs']:,} pairs ({o['gold_kind']})")
    table.add_row("predicted", f"{o['pred_clusters']:,} clusters", f"{o['pred_pairs']:,} pairs ({o['pred_kind']})")
    table.add_row("true pairs", f"{o['true_pairs']:,}", "")
    table.add_row("pairwise precision", f"{o['precision']:.4f}", "")
    table.add_row("pairwise recall", f"{o['recall']:.4f}", "")
    table.add_row("pairwise F1", f"{o['f1']:.4f}", "")
    table.add_row("macro F1 per gold cluster", "n/a" if o["macro_f1"] is None else f"{o['macro_f1']:.4f}", "")
    table.add_row("adjusted Rand index", f"{o['ari']:.4f}", "")
    console.print(table)
    sw = o.get("sweep")
    if sw is None:
        return
    best = sw["best"]
    if best is None:
        console.print("no predicted pairs to sweep")
        return
    console.print(
        f"[bold]best F1 {best['f1']:.4f}[/bold] at similarity >= {best['threshold']:.4f} "
        f"(precision {best['precision']:.4f}, recall {best['recall']:.4f}, {best['pairs']:,} pairs)"
    )
    grid = Table(title="threshold sweep", title_justify="left")
    for name in ("threshold", "precision", "recall", "F1"):
        grid.add_column(name, justify="right")
    for g in sw["grid"]:
        grid.add_row(f"{g['threshold']:.2f}", f"{g['precision']:.4f}", f"{g['recall']:.4f}", f"{g['f1']:.4f}")
    console.print(grid)
    console.print(
        f"[dim]pairs below {sw['lowest_similarity']:.4f} are not in the predicted table; to sweep lower, "
        "run dedup with a lower --threshold.[/dim]"
    )


def _plot_pr(sw, path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.plot(sw.recall, sw.precision, marker=".", markersize=3, linewidth=1)
    k = sw.best
    if k >= 0:
        ax.plot(
            [sw.recall[k]],
            [sw.precision[k]],
            "o",
            color="crimson",
            label=f"best F1 {sw.f1[k]:.3f} at >= {sw.threshold[k]:.3f}",
        )
        ax.legend(loc="lower left", fontsize=8)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title("precision-recall over the similarity threshold")
    save_plot(fig, path)
