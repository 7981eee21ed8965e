"""``neardup tune``: choose the LSH banding for a threshold and K, and show the errors to expect.

The numbers come from :func:`neardup.eval.metrics.tuning` (the S-curve and its areas:
:mod:`neardup.methods.minhash.lsh`).
"""

from __future__ import annotations

import click

from ..methods.minhash.config import DEFAULT_NUM_PERM, DEFAULT_THRESHOLD
from ..methods.minhash.lsh import DEFAULT_FN_WEIGHT, DEFAULT_FP_WEIGHT
from .common import (
    SETTINGS,
    check_plot_path,
    emit_json,
    make_console,
    pyplot,
    save_plot,
)


def _p(x: float) -> str:
    """A probability for a table: 4 decimals, but never 0 or 1 when it is not."""
    if 0 < x < 5e-5:
        return f"{x:.1e}"
    if 1 - 5e-5 < x < 1:
        return f"1-{1 - x:.0e}"
    return f"{x:.4f}"


@click.command("tune", context_settings=SETTINGS)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_THRESHOLD,
    show_default=True,
    help="Jaccard similarity at or above which documents are near-duplicates.",
)
@click.option(
    "--num-perm",
    type=click.IntRange(min=1),
    default=DEFAULT_NUM_PERM,
    show_default=True,
    help="MinHash signature length K.",
)
@click.option(
    "--bands",
    type=click.IntRange(min=1),
    default=None,
    help="Evaluate this number of bands b instead of the optimal banding.",
)
@click.option(
    "--rows",
    type=click.IntRange(min=1),
    default=None,
    help="Evaluate this number of rows per band r instead of the optimal banding.",
)
@click.option(
    "--fp-weight",
    type=click.FloatRange(min=0),
    default=DEFAULT_FP_WEIGHT,
    show_default=True,
    help="Weight of the false positive area in the objective.",
)
@click.option(
    "--fn-weight",
    type=click.FloatRange(min=0),
    default=DEFAULT_FN_WEIGHT,
    show_default=True,
    help="Weight of the false negative area in the objective.",
)
@click.option(
    "--alternatives",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="How many of the best bandings to list.",
)
@click.option(
    "--plot",
    "plot_path",
    default=None,
    callback=check_plot_path,
    help="Draw the S-curve to this image (.png, .svg, .pdf; needs matplotlib).",
)
@click.option(
    "--data",
    "data_paths",
    multiple=True,
    metavar="INPUT",
    help="Tune on your own data instead: the histogram of its candidate-pair similarities (a plot with --plot), "
    "the pairs and documents each threshold would remove, and sample pairs near --threshold to read.",
)
@click.option(
    "--floor",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.5,
    show_default=True,
    help="With --data: the lowest similarity looked at (the job runs at this threshold).",
)
@click.option(
    "--verify",
    type=click.Choice(["signature", "exact"]),
    default="signature",
    show_default=True,
    help="With --data: the similarity measured, as dedup --verify.",
)
@click.option(
    "--samples",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="With --data: sample pairs near --threshold to show.",
)
@click.option("--text-field", default="text", show_default=True, help="With --data: the field holding the text.")
@click.option("--id-field", default=None, help="With --data: the field holding the id.")
@click.option("-q", "--quiet", is_flag=True, help="With --data: no progress messages.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
def tune_cmd(
    threshold,
    num_perm,
    bands,
    rows,
    fp_weight,
    fn_weight,
    alternatives,
    plot_path,
    data_paths,
    floor,
    verify,
    samples,
    text_field,
    id_field,
    quiet,
    as_json,
):
    """Choose the LSH banding for a threshold and K, and show the errors to expect.

    Prints the bands b and rows r (b * r <= K) minimising fp_weight * FP + fn_weight * FN, where
    FP = integral_0^t P(s) ds and FN = integral_t^1 (1 - P(s)) ds are the areas under the S-curve
    P(s) = 1 - (1 - s^r)^b on the wrong side of the threshold t; the effective threshold
    (1/b)^(1/r); for similarities 0.1 ... 1.0 the probability of becoming a candidate and of being
    reported after signature verification (estimate >= t); and the best alternative bandings.

    \b
    Example:
      neardup tune --threshold 0.8 --num-perm 128 --plot scurve.png
      neardup tune --data examples/news.jsonl --threshold 0.8 --plot similarities.png
    """
    from ..eval.metrics import tuning

    if data_paths:
        if floor > threshold:
            raise click.UsageError(f"--floor {floor} is above --threshold {threshold}")
        _tune_on_data(
            list(data_paths),
            threshold,
            floor,
            verify,
            num_perm,
            samples,
            text_field,
            id_field,
            plot_path,
            quiet,
            as_json,
        )
        return
    if fp_weight == 0 and fn_weight == 0:
        raise click.UsageError("--fp-weight and --fn-weight cannot both be 0")
    sims = sorted({round(0.1 * i, 1) for i in range(1, 11)} | {threshold})
    try:
        result = tuning(
            threshold,
            num_perm,
            bands=bands,
            rows=rows,
            fp_weight=fp_weight,
            fn_weight=fn_weight,
            alternatives=alternatives,
            similarities=sims,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if plot_path:
        _plot_scurve(result, plot_path)
    if as_json:
        emit_json(result)
        return
    _print_tuning(result)


def _print_tuning(r: dict) -> None:
    from rich.table import Table

    console = make_console()
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
    head.add_row(
        "reported",
        f"FP area {r['reported_fp_area']:.5f}, FN area {r['reported_fn_area']:.5f} (after signature verification)",
    )
    console.print(head)
    table = Table(title="probability that a pair of Jaccard similarity s ...", title_justify="left")
    for name in (
        "s",
        "becomes a candidate",
        "passes verification",
        "is reported",
        "product (approx.)",
        "reported, --verify exact",
    ):
        table.add_column(name, justify="right")
    for row in r["similarities"]:
        mark = " <- t" if row["similarity"] == t else ""
        table.add_row(
            f"{row['similarity']:g}{mark}",
            _p(row["candidate"]),
            _p(row["accept"]),
            _p(row["reported"]),
            _p(row["reported_approx"]),
            _p(row["reported_exact_verify"]),
        )
    console.print(table)
    console.print(
        "[dim]passes verification: P(r/K >= t), r ~ Binomial(K, s). is reported: P(candidate and passes), "
        "exact under the independent-slots model; the product of the two columns ignores their "
        "positive correlation and is a lower bound. FP/FN areas: integrals of P(s) below t and "
        "of 1 - P(s) above t.[/dim]"
    )
    if r["alternatives"]:
        alt = Table(title="best bandings by the weighted objective", title_justify="left")
        for name in ("b", "r", "(1/b)^(1/r)", "FP area", "FN area", "objective", "P(t)"):
            alt.add_column(name, justify="right")
        for a in r["alternatives"]:
            chosen = a["bands"] == r["bands"] and a["rows"] == r["rows"]
            style = "bold green" if chosen else None
            alt.add_row(
                str(a["bands"]),
                str(a["rows"]),
                f"{a['effective_threshold']:.3f}",
                f"{a['fp_area']:.5f}",
                f"{a['fn_area']:.5f}",
                f"{a['objective']:.6f}",
                _p(a["candidate_at_threshold"]),
                style=style,
            )
        console.print(alt)


def _plot_scurve(r: dict, path: str) -> None:
    import numpy as np

    from ..eval.metrics import reported_probability
    from ..methods.minhash.lsh import candidate_probability

    plt = pyplot()
    s = np.linspace(0, 1, 401)
    b, rows, t, k = r["bands"], r["rows"], r["threshold"], r["num_perm"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(s, candidate_probability(s, b, rows), label=f"candidate: 1-(1-s^{rows})^{b}")
    ax.plot(s, reported_probability(s, k, b, rows, t), label="reported (candidate and estimate >= t)")
    ax.axvline(t, color="black", linestyle="--", linewidth=1, label=f"threshold t = {t:g}")
    ax.axvline(
        r["effective_threshold"],
        color="grey",
        linestyle=":",
        linewidth=1,
        label=f"(1/b)^(1/r) = {r['effective_threshold']:.3f}",
    )
    ax.set_xlabel("Jaccard similarity s")
    ax.set_ylabel("probability")
    ax.set_title(f"LSH S-curve: b = {b}, r = {rows}, K = {k}")
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    save_plot(fig, path)


def _tune_on_data(paths, threshold, floor, verify, num_perm, samples, text_field, id_field, plot_path, quiet, as_json):
    from ..eval.data_tuning import data_tuning
    from .common import data_errors

    if not quiet:
        click.echo(f"neardup tune: finding the pairs of {', '.join(paths)} at or above {floor:g} ...", err=True)
    with data_errors():
        r = data_tuning(
            paths,
            threshold=threshold,
            floor=floor,
            verify=verify,
            num_perm=num_perm,
            samples=samples,
            text_field=text_field,
            id_field=id_field,
        )
    sims = r.pop("similarities")
    if plot_path:
        _plot_histogram(sims, r, plot_path)
    if as_json:
        emit_json(r)
        return
    from rich.markup import escape
    from rich.table import Table

    console = make_console()
    measure = "MinHash estimate" if verify == "signature" else "exact Jaccard"
    console.print(
        f"[bold]{r['documents']:,} documents, {r['pairs']:,} candidate pairs at or above {floor:g}[/bold] "
        f"({measure}, word 5-grams, K = {num_perm})"
    )
    hist = Table(title="similarity of the pairs", title_justify="left")
    hist.add_column("similarity", justify="right")
    hist.add_column("pairs", justify="right")
    hist.add_column("")
    edges, counts = r["histogram"]["edges"], r["histogram"]["counts"]
    top = max(counts) if counts and max(counts) else 1
    for lo, hi, c in zip(edges, edges[1:], counts):
        hist.add_row(f"{lo:.3f} - {hi:.3f}", f"{c:,}", "#" * round(40 * c / top))
    console.print(hist)
    table = Table(title="what a run at each threshold removes", title_justify="left")
    for name in ("threshold", "pairs >= t", "removed (components)", "removed (--cluster center)"):
        table.add_column(name, justify="right")
    for row in r["thresholds"]:
        mark = " <-" if row["threshold"] == threshold else ""
        table.add_row(
            f"{row['threshold']:g}{mark}",
            f"{row['pairs']:,}",
            f"{row['removed_components']:,}",
            f"{row['removed_center']:,}",
        )
    console.print(table)
    if r["samples"]:
        console.print(f"[bold]pairs near {threshold:g}[/bold] (neardup compare INPUT ID_A ID_B shows one in full)")
        for p in r["samples"]:
            console.print(f"{p['similarity']:.3f}  {escape(p['id_a'])}  ~  {escape(p['id_b'])}", highlight=False)
            for side in ("text_a", "text_b"):
                console.print("    " + escape(" ".join(p[side].split())[:160]), highlight=False, style="dim")


def _plot_histogram(sims, r: dict, path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.hist(sims, bins=r["histogram"]["edges"], color="#4c78a8")
    ax.axvline(r["threshold"], color="black", linestyle="--", linewidth=1, label=f"threshold {r['threshold']:g}")
    ax.set_xlabel("similarity of the candidate pair")
    ax.set_ylabel("pairs")
    ax.set_title(f"{r['pairs']:,} pairs at or above {r['floor']:g} in {r['documents']:,} documents")
    ax.legend(loc="upper left", fontsize=8)
    save_plot(fig, path)
