"""The ``neardup`` commands that help choose settings and judge results: tune, compare, eval, report.

Registered on the main group in :mod:`neardup.cli`. Like ``dedup``: human-readable output goes to
stderr (rich tables), machine-readable output (``--json``) to stdout; exit codes 0 success, 1 data
error (the message names the file and line), 2 usage error.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from pathlib import Path

import click
import orjson

from ._cli_common import shingling_option
from .dedup_minhash import DEFAULT_NGRAM, DEFAULT_NUM_PERM, DEFAULT_THRESHOLD
from .errors import NeardupError
from .lsh import DEFAULT_FN_WEIGHT, DEFAULT_FP_WEIGHT

__all__ = ["COMMANDS", "compare_cmd", "eval_cmd", "report_cmd", "tune_cmd"]

EXIT_DATA_ERROR = 1
_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _console():
    from rich.console import Console

    return Console(stderr=True)


def _emit_json(data) -> None:
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode())


@contextmanager
def _data_errors():
    """Bad input (unreadable files, malformed tables) -> message on stderr and exit code 1."""
    try:
        yield
    except (NeardupError, ValueError, OSError) as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)


def _pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or exit 1 saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        click.echo("neardup: error: --plot needs matplotlib, an optional dependency; install it with "
                   "pip install 'neardup[plot]' (or pip install matplotlib)", err=True)
        sys.exit(EXIT_DATA_ERROR)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save_plot(fig, path: str) -> None:
    try:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    except ValueError as exc:  # an extension matplotlib cannot write
        raise click.BadParameter(str(exc), param_hint="--plot") from None
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def _check_plot_path(ctx, param, value):
    if value is None:
        return None
    suffix = Path(value).suffix.lower().lstrip(".")
    if suffix not in ("png", "svg", "pdf", "jpg", "jpeg"):
        raise click.BadParameter(f"cannot tell the image format of {value!r}; use .png, .svg, .pdf or .jpg")
    return value


def _p(x: float) -> str:
    """A probability for a table: 4 decimals, but never 0 or 1 when it is not."""
    if 0 < x < 5e-5:
        return f"{x:.1e}"
    if 1 - 5e-5 < x < 1:
        return f"1-{1 - x:.0e}"
    return f"{x:.4f}"


# --------------------------------------------------------------------------------------------
# tune


@click.command("tune", context_settings=_SETTINGS)
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_THRESHOLD,
              show_default=True, help="Jaccard similarity at or above which documents are near-duplicates.")
@click.option("--num-perm", type=click.IntRange(min=1), default=DEFAULT_NUM_PERM, show_default=True,
              help="MinHash signature length K.")
@click.option("--bands", type=click.IntRange(min=1), default=None,
              help="Evaluate this number of bands b instead of the optimal banding.")
@click.option("--rows", type=click.IntRange(min=1), default=None,
              help="Evaluate this number of rows per band r instead of the optimal banding.")
@click.option("--fp-weight", type=click.FloatRange(min=0), default=DEFAULT_FP_WEIGHT, show_default=True,
              help="Weight of the false positive area in the objective.")
@click.option("--fn-weight", type=click.FloatRange(min=0), default=DEFAULT_FN_WEIGHT, show_default=True,
              help="Weight of the false negative area in the objective.")
@click.option("--alternatives", type=click.IntRange(min=0), default=8, show_default=True,
              help="How many of the best bandings to list.")
@click.option("--plot", "plot_path", default=None, callback=_check_plot_path,
              help="Draw the S-curve to this image (.png, .svg, .pdf; needs matplotlib).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
def tune_cmd(threshold, num_perm, bands, rows, fp_weight, fn_weight, alternatives, plot_path, as_json):
    """Choose the LSH banding for a threshold and K, and show the errors to expect.

    Prints the bands b and rows r (b * r <= K) minimising fp_weight * FP + fn_weight * FN, where
    FP = integral_0^t P(s) ds and FN = integral_t^1 (1 - P(s)) ds are the areas under the S-curve
    P(s) = 1 - (1 - s^r)^b on the wrong side of the threshold t; the effective threshold
    (1/b)^(1/r); for similarities 0.1 ... 1.0 the probability of becoming a candidate and of being
    reported after signature verification (estimate >= t); and the best alternative bandings.

    \b
    Example:
      neardup tune --threshold 0.8 --num-perm 128 --plot scurve.png
    """
    from .evaluation import tuning

    if fp_weight == 0 and fn_weight == 0:
        raise click.UsageError("--fp-weight and --fn-weight cannot both be 0")
    sims = sorted({round(0.1 * i, 1) for i in range(1, 11)} | {threshold})
    try:
        result = tuning(threshold, num_perm, bands=bands, rows=rows, fp_weight=fp_weight, fn_weight=fn_weight,
                        alternatives=alternatives, similarities=sims)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if plot_path:
        _plot_scurve(result, plot_path)
    if as_json:
        _emit_json(result)
        return
    _print_tuning(result)


def _print_tuning(r: dict) -> None:
    from rich.table import Table

    console = _console()
    t = r["threshold"]
    head = Table(title=f"neardup tune: threshold {t}, K = {r['num_perm']}", show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column()
    objective = f"{r['fp_weight']:g} FP + {r['fn_weight']:g} FN"
    if r["chosen"] == "optimal":
        head.add_row("banding", f"b = {r['bands']} bands x r = {r['rows']} rows (minimising {objective})")
    else:
        head.add_row("banding", f"b = {r['bands']} bands x r = {r['rows']} rows (given)")
        head.add_row("optimal", f"b = {r['optimal']['bands']} x r = {r['optimal']['rows']} (minimising {objective})")
    if r["bands"] * r["rows"] < r["num_perm"]:
        head.add_row("", f"{r['num_perm'] - r['bands'] * r['rows']} slots are not banded (still used to verify)")
    head.add_row("effective threshold", f"(1/b)^(1/r) = {r['effective_threshold']:.4f}")
    head.add_row("candidates", f"FP area {r['fp_area']:.5f}, FN area {r['fn_area']:.5f}")
    head.add_row("reported", f"FP area {r['reported_fp_area']:.5f}, FN area {r['reported_fn_area']:.5f} "
                             "(after signature verification)")
    console.print(head)
    table = Table(title="probability that a pair of Jaccard similarity s ...", title_justify="left")
    for name in ("s", "becomes a candidate", "passes verification", "is reported", "product (approx.)",
                 "reported, --verify exact"):
        table.add_column(name, justify="right")
    for row in r["similarities"]:
        mark = " <- t" if row["similarity"] == t else ""
        table.add_row(f"{row['similarity']:g}{mark}", _p(row["candidate"]), _p(row["accept"]), _p(row["reported"]),
                      _p(row["reported_approx"]), _p(row["reported_exact_verify"]))
    console.print(table)
    console.print("[dim]passes verification: P(r/K >= t), r ~ Binomial(K, s). is reported: P(candidate and passes), "
                  "exact under the independent-slots model; the product of the two columns ignores their "
                  "positive correlation and is a lower bound. FP/FN areas: integrals of P(s) below t and "
                  "of 1 - P(s) above t.[/dim]")
    if r["alternatives"]:
        alt = Table(title="best bandings by the weighted objective", title_justify="left")
        for name in ("b", "r", "(1/b)^(1/r)", "FP area", "FN area", "objective", "P(t)"):
            alt.add_column(name, justify="right")
        for a in r["alternatives"]:
            chosen = a["bands"] == r["bands"] and a["rows"] == r["rows"]
            style = "bold green" if chosen else None
            alt.add_row(str(a["bands"]), str(a["rows"]), f"{a['effective_threshold']:.3f}", f"{a['fp_area']:.5f}",
                        f"{a['fn_area']:.5f}", f"{a['objective']:.6f}", _p(a["candidate_at_threshold"]), style=style)
        console.print(alt)


def _plot_scurve(r: dict, path: str) -> None:
    import numpy as np

    from .evaluation import reported_probability
    from .lsh import candidate_probability

    plt = _pyplot()
    s = np.linspace(0, 1, 401)
    b, rows, t, k = r["bands"], r["rows"], r["threshold"], r["num_perm"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(s, candidate_probability(s, b, rows), label=f"candidate: 1-(1-s^{rows})^{b}")
    ax.plot(s, reported_probability(s, k, b, rows, t), label="reported (candidate and estimate >= t)")
    ax.axvline(t, color="black", linestyle="--", linewidth=1, label=f"threshold t = {t:g}")
    ax.axvline(r["effective_threshold"], color="grey", linestyle=":", linewidth=1,
               label=f"(1/b)^(1/r) = {r['effective_threshold']:.3f}")
    ax.set_xlabel("Jaccard similarity s")
    ax.set_ylabel("probability")
    ax.set_title(f"LSH S-curve: b = {b}, r = {rows}, K = {k}")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    _save_plot(fig, path)


# --------------------------------------------------------------------------------------------
# compare


@click.command("compare", context_settings=_SETTINGS)
@click.argument("a")
@click.argument("b")
@click.option("--text", "literal", is_flag=True, help="A and B are the texts themselves, not file paths.")
@click.option("--ngram", type=click.IntRange(min=1), default=None,
              help=f"Word n-gram shingle size [default: {DEFAULT_NGRAM}].")
@click.option("--char-ngram", type=click.IntRange(min=1), default=None,
              help="Use character n-gram shingles of this size instead of word n-grams.")
@click.option("--strip-punctuation", is_flag=True, help="Drop punctuation before character shingling.")
@click.option("--num-perm", type=click.IntRange(min=1), default=DEFAULT_NUM_PERM, show_default=True,
              help="MinHash signature length K.")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True,
              help="Seed of the MinHash permutations.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Confidence level of the MinHash interval.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Shingles to list of each kind (shared, only in A, only in B).")
@click.option("--encoding", default="utf-8", show_default=True, help="Encoding of the files.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON on stdout.")
def compare_cmd(a, b, literal, ngram, char_ngram, strip_punctuation, num_perm, seed, level, limit, encoding, as_json):
    """Show why two documents are, or are not, near-duplicates.

    A and B are text files (or, with --text, the texts). Prints the exact Jaccard, weighted
    Jaccard and containment of their shingle sets, the MinHash estimate with its confidence
    interval, the SimHash distance (when neardup.simhash is available), and the shared and
    differing shingles.

    \b
    Examples:
      neardup compare answer.txt source.txt --ngram 3
      neardup compare --text "the cat sat on the mat" "the cat sat on a mat" --ngram 2 --json
    """
    from .compare import compare

    shingling = shingling_option(ngram, char_ngram, strip_punctuation)
    with _data_errors():
        text_a = a if literal else _read_text(a, encoding)
        text_b = b if literal else _read_text(b, encoding)
        result = compare(text_a, text_b, shingling, num_perm=num_perm, seed=seed, level=level, limit=limit)
    if as_json:
        out = result.as_dict()
        out["a"], out["b"] = ("<text>" if literal else a), ("<text>" if literal else b)
        _emit_json(out)
        return
    _print_comparison(result, "A" if literal else a, "B" if literal else b)


def _read_text(path: str, encoding: str) -> str:
    p = Path(path)
    if not p.is_file():
        hint = " (to compare literal texts, add --text)" if not p.exists() else ""
        raise NeardupError(f"{path}: no such file{hint}")
    try:
        return p.read_bytes().decode(encoding)
    except LookupError:
        raise click.BadParameter(f"unknown encoding {encoding!r}", param_hint="--encoding") from None
    except UnicodeDecodeError as exc:
        raise NeardupError(f"{path}: not valid {encoding} at byte {exc.start}; try --encoding cp1252 "
                           "or --encoding latin-1") from None


def _print_comparison(c, name_a: str, name_b: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    sh = c.shingling
    what = f"word {sh.n}-grams" if sh.kind == "word" else f"character {sh.n}-grams"
    if sh.strip_punctuation:
        what += ", punctuation stripped"
    table = Table(title=f"neardup compare ({what})", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("A", f"{escape(name_a)}: {c.shingles_a:,} distinct shingles")
    table.add_row("B", f"{escape(name_b)}: {c.shingles_b:,} distinct shingles")
    table.add_row("Jaccard", f"{c.jaccard:.4f}  (|A n B| = {c.n_shared:,})")
    table.add_row("weighted Jaccard", f"{c.weighted_jaccard:.4f}  (shingles counted with repeats)")
    table.add_row("containment A in B", f"{c.containment_a_in_b:.4f}  (|A n B| / |A|)")
    table.add_row("containment B in A", f"{c.containment_b_in_a:.4f}  (|A n B| / |B|)")
    m = c.minhash
    table.add_row("MinHash estimate", f"{m.value:.4f}  ({m.matches} of {m.num_perm} slots; {m.level:.0%} "
                                      f"{m.method} interval {m.low:.4f} - {m.high:.4f}; std. error {m.stderr:.4f})")
    if c.simhash is not None:
        s = c.simhash
        table.add_row("SimHash", f"Hamming distance {s['distance']} of {s['bits']} bits (1 - d/f = "
                                 f"{s['similarity']:.4f}, estimated cosine {s['cosine']:.4f})")
    console.print(table)
    for title, items, total in (("shared", c.shared, c.n_shared), ("only in A", c.only_a, c.n_only_a),
                                ("only in B", c.only_b, c.n_only_b)):
        more = f" (first {len(items)})" if total > len(items) else ""
        console.print(f"[bold]{title}: {total:,} shingles{more}[/bold]")
        for s in items:
            console.print(f"  {escape(repr(s))}", highlight=False)


# --------------------------------------------------------------------------------------------
# eval


@click.command("eval", context_settings=_SETTINGS)
@click.option("--gold", "gold_path", required=True,
              help="Gold labels: a clusters table (id, cluster) or a pairs table (id_a, id_b).")
@click.option("--pred", "pred_path", required=True,
              help="Predictions: `neardup dedup --clusters` or `--pairs` output, or any table of those forms.")
@click.option("--id-field", default="id", show_default=True, help="Id column of clusters tables.")
@click.option("--gold-cluster-field", default=None,
              help="Cluster column of the gold table [default: the first of cluster, group, cluster_id, label].")
@click.option("--pred-cluster-field", default=None, help="Cluster column of the predicted table [default: as gold].")
@click.option("--sweep", is_flag=True,
              help="Predicted pairs with similarities: P/R/F1 at every threshold, and the best F1.")
@click.option("--plot", "plot_path", default=None, callback=_check_plot_path,
              help="With --sweep: draw the precision-recall curve to this image (needs matplotlib).")
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
    from .evaluation import Pairs, evaluate, read_labels, threshold_sweep

    if plot_path and not sweep:
        raise click.UsageError("--plot draws the precision-recall curve of --sweep; add --sweep")
    with _data_errors():
        gold = read_labels(gold_path, id_field=id_field, cluster_field=gold_cluster_field)
        pred = read_labels(pred_path, id_field=id_field, cluster_field=pred_cluster_field or gold_cluster_field)
        scores = evaluate(pred, gold)
        sw = None
        if sweep:
            if not isinstance(pred, Pairs) or pred.similarity is None:
                raise NeardupError(f"{pred_path}: --sweep needs a pairs table with a similarity column "
                                   "(id_a, id_b, similarity), e.g. `neardup dedup --pairs` output")
            sw = threshold_sweep(pred, gold)
    out = {"gold": gold_path, "pred": pred_path, "pred_kind": "pairs" if isinstance(pred, Pairs) else "clusters",
           "gold_kind": "pairs" if isinstance(gold, Pairs) else "clusters", **scores.as_dict()}
    if sw is not None:
        out["sweep"] = _sweep_dict(sw)
    if plot_path and sw is not None:
        _plot_pr(sw, plot_path)
    if as_json:
        _emit_json(out)
        return
    _print_scores(out)


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
        "best": None if k < 0 else {"threshold": float(sw.threshold[k]), "precision": float(sw.precision[k]),
                                    "recall": float(sw.recall[k]), "f1": float(sw.f1[k]), "pairs": int(sw.kept[k])},
        "lowest_similarity": float(sw.threshold.min()) if len(sw.threshold) else None,
        "grid": grid,
        "curve": {"threshold": sw.threshold.tolist(), "precision": sw.precision.tolist(),
                  "recall": sw.recall.tolist(), "f1": sw.f1.tolist()},
    }


def _print_scores(o: dict) -> None:
    from rich.table import Table

    console = _console()
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
    console.print(f"[bold]best F1 {best['f1']:.4f}[/bold] at similarity >= {best['threshold']:.4f} "
                  f"(precision {best['precision']:.4f}, recall {best['recall']:.4f}, {best['pairs']:,} pairs)")
    grid = Table(title="threshold sweep", title_justify="left")
    for name in ("threshold", "precision", "recall", "F1"):
        grid.add_column(name, justify="right")
    for g in sw["grid"]:
        grid.add_row(f"{g['threshold']:.2f}", f"{g['precision']:.4f}", f"{g['recall']:.4f}", f"{g['f1']:.4f}")
    console.print(grid)
    console.print(f"[dim]pairs below {sw['lowest_similarity']:.4f} are not in the predicted table; to sweep lower, "
                  "run dedup with a lower --threshold.[/dim]")


def _plot_pr(sw, path: str) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.plot(sw.recall, sw.precision, marker=".", markersize=3, linewidth=1)
    k = sw.best
    if k >= 0:
        ax.plot([sw.recall[k]], [sw.precision[k]], "o", color="crimson",
                label=f"best F1 {sw.f1[k]:.3f} at >= {sw.threshold[k]:.3f}")
        ax.legend(loc="lower left", fontsize=8)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title("precision-recall over the similarity threshold")
    _save_plot(fig, path)


# --------------------------------------------------------------------------------------------
# report


@click.command("report", context_settings=_SETTINGS)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--clusters", "clusters_path", required=True,
              help="The clusters table of the dedup run (`neardup dedup --clusters`).")
@click.option("-o", "--output", required=True, help="The HTML file to write.")
@click.option("--pairs", "pairs_path", default=None,
              help="The pairs table of the run (`--pairs`), for a histogram of pair similarities.")
@click.option("--text-field", default="text", show_default=True, help="Field holding the text (as for dedup).")
@click.option("--id-field", default=None, help="Field holding the document id (as for dedup).")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="On a bad record: stop, or skip it (as for dedup).")
@click.option("--max-clusters", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Detail only the largest clusters; the summary counts all.")
@click.option("--max-members", type=click.IntRange(min=1), default=50, show_default=True,
              help="Members shown per cluster (lowest similarity first).")
@click.option("--max-chars", type=click.IntRange(min=1), default=4000, show_default=True,
              help="Characters of each text embedded (longer texts are cut, with a note).")
@click.option("--title", default=None, help="Title of the page.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
def report_cmd(inputs, clusters_path, output, pairs_path, text_field, id_field, on_error, max_clusters,
               max_members, max_chars, title, quiet):
    """Write a self-contained HTML report of a dedup run (no network needed to view it).

    Summary figures, a histogram of similarities, the clusters by size with a search box, and for
    each member a side-by-side view against its kept document with the differing words
    highlighted. Give the same INPUTS, --text-field and --id-field as to the dedup run.

    \b
    Example:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv
      neardup report examples/news.jsonl --clusters clusters.csv --pairs pairs.csv -o report.html
    """
    from .report import build_report

    with _data_errors():
        stats = build_report(inputs, clusters_path, output, pairs_path=pairs_path, text_field=text_field,
                             id_field=id_field, on_error=on_error, max_clusters=max_clusters,
                             max_members=max_members, max_chars=max_chars, title=title)
    if not quiet:
        note = f", {stats.missing_texts:,} texts not found" if stats.missing_texts else ""
        click.echo(f"wrote {output}: {stats.clusters:,} clusters ({stats.shown_clusters:,} detailed) of "
                   f"{stats.documents:,} documents{note}, {stats.bytes / 1e6:.1f} MB", err=True)


#: Every command of this module, for ``main.add_command``.
COMMANDS = (tune_cmd, compare_cmd, eval_cmd, report_cmd)
