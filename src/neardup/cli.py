"""The ``neardup`` command line.

Exit codes: 0 success, 1 data error (the message names the file and line), 2 usage error.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import click

from . import __version__, io
from ._cli_common import shingling_option
from .cli_tools import COMMANDS
from .errors import NeardupError
from .dedup_minhash import DEFAULT_NGRAM, DEFAULT_NUM_PERM, DEFAULT_THRESHOLD, MinHashConfig
from .pipeline import DedupResult, dedup

EXIT_DATA_ERROR = 1


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find near-duplicate documents: shingling, MinHash and LSH.

    Run `neardup COMMAND --help` for the options of a command.
    """


def _check_output_path(ctx, param, value):
    if value is None:
        return None
    try:
        io.output_format(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


# Options that belong to one method (or a few); the others apply to every method.
METHOD_OPTIONS: dict[str, set[str]] = {
    "minhash": {"threshold", "ngram", "char_ngram", "strip_punctuation", "num_perm", "bands", "rows", "seed",
                "verify", "exact_prepass", "sketch"},
    "simhash": {"max_distance", "bits", "ngram", "char_ngram", "strip_punctuation", "seed", "weighting", "min_df",
                "blocks", "exact_prepass"},
    "spotsigs": {"threshold", "spot_distance", "chain", "antecedents", "stopwords", "idf_band", "spot_key",
                 "exact_prepass"},
    "exact": {"raw"},
    "imatch": {"idf_band", "lexicons", "lexicon_fraction", "min_terms", "seed"},
}
_METHOD_SPECIFIC = set().union(*METHOD_OPTIONS.values())


def _build_method(method: str, p: dict):
    """The method config from the command-line parameters (ValueError on bad combinations)."""
    if method == "minhash":
        return MinHashConfig(threshold=p["threshold"] if p["threshold"] is not None else DEFAULT_THRESHOLD,
                             shingling=shingling_option(p["ngram"], p["char_ngram"], p["strip_punctuation"]),
                             num_perm=p["num_perm"], seed=p["seed"], bands=p["bands"], rows=p["rows"],
                             verify=p["verify"], exact_prepass=p["exact_prepass"], sketch=p["sketch"])
    if method == "simhash":
        from .dedup_simhash import SimHashConfig
        from .simhash import DEFAULT_SHINGLING

        return SimHashConfig(max_distance=p["max_distance"], bits=p["bits"], seed=p["seed"],
                             shingling=shingling_option(p["ngram"], p["char_ngram"], p["strip_punctuation"],
                                                        default_ngram=DEFAULT_SHINGLING.n),
                             weighting=p["weighting"], min_df=p["min_df"], blocks=p["blocks"],
                             exact_prepass=p["exact_prepass"])
    if method == "spotsigs":
        from .dedup_spotsigs import DEFAULT_THRESHOLD as SPOTSIGS_THRESHOLD, SpotSigsConfig
        from .spotsigs import load_words

        return SpotSigsConfig(
            threshold=p["threshold"] if p["threshold"] is not None else SPOTSIGS_THRESHOLD,
            spot_distance=p["spot_distance"], chain=p["chain"], key=p["spot_key"], idf_band=p["idf_band"],
            antecedents=load_words(p["antecedents"]) if p["antecedents"] else None,
            stopwords=load_words(p["stopwords"]) if p["stopwords"] else None, exact_prepass=p["exact_prepass"])
    from .dedup_exact import DEFAULT_IDF_BAND, DEFAULT_LEXICON_FRACTION, ExactConfig, IMatchConfig

    if method == "exact":
        return ExactConfig(raw=p["raw"])
    if method == "imatch":
        return IMatchConfig(idf_band=p["idf_band"] or DEFAULT_IDF_BAND, lexicons=p["lexicons"],
                            lexicon_fraction=p["lexicon_fraction"] or DEFAULT_LEXICON_FRACTION,
                            min_terms=p["min_terms"], seed=p["seed"])
    raise click.UsageError(f"unknown method {method!r}")


def _reject_foreign_options(ctx: click.Context, method: str) -> None:
    """A method-specific option given on the command line for another method is a usage error."""
    for name in sorted(_METHOD_SPECIFIC - METHOD_OPTIONS[method]):
        if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE:
            flag = next(o for o in ctx.command.params if o.name == name).opts[-1]
            users = ", ".join(m for m, opts in METHOD_OPTIONS.items() if name in opts)
            raise click.UsageError(f"{flag} does not apply to --method {method} (it is for: {users})")


@main.command("dedup")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("-o", "--output", "output", required=True, callback=_check_output_path,
              help="Where to write the kept records, with all their fields; the format follows the "
                   "extension: .jsonl (.gz/.zst), .csv, .parquet.")
@click.option("--method", type=click.Choice(list(METHOD_OPTIONS)), default="minhash", show_default=True,
              help="minhash: Jaccard of shingle sets by MinHash + LSH; simhash: Hamming distance of "
                   "SimHash fingerprints (cosine of shingle counts); spotsigs: weighted Jaccard of "
                   "stopword-anchored word chains, exact all pairs; exact: identical normalized text; "
                   "imatch: identical set of mid-frequency terms (I-Match).")
@click.option("--keep", type=click.Choice(["first", "longest"]), default="first", show_default=True,
              help="Which document of each cluster is kept.")
@click.option("--clusters", "clusters_path", default=None, callback=_check_output_path,
              help="Also write one row per document: id, cluster (id of its kept document), similarity.")
@click.option("--pairs", "pairs_path", default=None, callback=_check_output_path,
              help="Also write every verified pair: id_a, id_b, similarity.")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=None,
              help=f"minhash, spotsigs: (weighted) Jaccard similarity at or above which documents are "
                   f"near-duplicates [default: {DEFAULT_THRESHOLD}].")
@click.option("--ngram", type=click.IntRange(min=1), default=None,
              help=f"minhash, simhash: word n-gram shingle size [default: {DEFAULT_NGRAM} for minhash, "
                   "2 for simhash].")
@click.option("--char-ngram", type=click.IntRange(min=1), default=None,
              help="minhash, simhash: use character n-gram shingles of this size instead of word n-grams.")
@click.option("--strip-punctuation", is_flag=True,
              help="minhash, simhash: drop punctuation before character shingling.")
@click.option("--num-perm", type=click.IntRange(min=1), default=DEFAULT_NUM_PERM, show_default=True,
              help="minhash: signature length K.")
@click.option("--bands", type=click.IntRange(min=1), default=None,
              help="minhash: LSH bands b (default: chosen from the threshold and K).")
@click.option("--rows", type=click.IntRange(min=1), default=None,
              help="minhash: LSH rows per band r (default: chosen from the threshold and K).")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True,
              help="minhash: seed of the permutations; simhash: of the hyperplanes; imatch: of the random "
                   "sub-lexicons.")
@click.option("--verify", type=click.Choice(["signature", "exact"]), default="signature", show_default=True,
              help="minhash: keep a candidate pair when its signature estimate reaches the threshold, or when "
                   "the exact Jaccard of its shingle sets does (re-reads candidate texts).")
@click.option("--sketch", type=click.Choice(["classic", "oph"]), default="classic", show_default=True,
              help="minhash: K permutations (classic), or one-permutation hashing with optimal densification "
                   "(oph: one hash per shingle, same estimate, its own signature values).")
@click.option("--no-exact-prepass", "exact_prepass", flag_value=False, default=True,
              help="minhash, simhash, spotsigs: sketch every document, also exact copies of earlier ones (by "
                   "default only the first of each group of identical normalized texts is sketched; the results "
                   "are the same).")
@click.option("--max-distance", type=click.IntRange(min=0), default=12, show_default=True,
              help="simhash: near-duplicates differ in at most K fingerprint bits (similarity 1 - K/bits).")
@click.option("--bits", type=click.Choice(["64", "128"]), default="128", show_default=True,
              callback=lambda ctx, param, value: int(value), help="simhash: fingerprint width.")
@click.option("--weighting", type=click.Choice(["count", "idf"]), default="count", show_default=True,
              help="simhash: feature weights: shingle counts, or counts x IDF learned from the input "
                   "(reads it twice).")
@click.option("--min-df", type=click.IntRange(min=1), default=2, show_default=True,
              help="simhash: with --weighting idf, shingles in fewer documents share the largest weight.")
@click.option("--blocks", type=click.IntRange(min=1), default=None,
              help="simhash: permuted-table blocks M > K [default: chosen from the document count].")
@click.option("--spot-distance", type=click.IntRange(min=1), default=1, show_default=True,
              help="spotsigs: a chain takes every D-th non-stopword after its antecedent.")
@click.option("--chain", type=click.IntRange(min=1), default=2, show_default=True,
              help="spotsigs: words per spot signature.")
@click.option("--antecedents", type=click.Path(dir_okay=False), default=None,
              help="spotsigs: antecedent words, one per line, # comments [default: built-in English].")
@click.option("--stopwords", type=click.Path(dir_okay=False), default=None,
              help="spotsigs: words that chains skip, one per line [default: built-in English].")
@click.option("--spot-key", type=click.Choice(["antecedent", "chain"]), default="antecedent", show_default=True,
              help="spotsigs: a signature is its antecedent and chain, or the chain alone.")
@click.option("--raw", is_flag=True, help="exact: hash the raw text instead of the normalized text.")
@click.option("--idf-band", type=(click.FloatRange(0, 1), click.FloatRange(0, 1)), default=None,
              metavar="LO HI", help="imatch: normalized-IDF band of the terms kept [default: 0.4 0.75]; "
                                    "spotsigs: of the signatures kept [default: all] (reads the input twice).")
@click.option("--lexicons", type=click.IntRange(min=1), default=1, show_default=True,
              help="imatch: signatures per document (the lexicon plus N - 1 random sub-lexicons); "
                   "a match under any of them counts.")
@click.option("--lexicon-fraction", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="imatch: share of the lexicon each random sub-lexicon keeps [default: 0.7].")
@click.option("--min-terms", type=click.IntRange(min=1), default=1, show_default=True,
              help="imatch: documents with fewer kept terms get no signature.")
@click.option("--text-field", default="text", show_default=True, help="Field holding the text.")
@click.option("--id-field", default=None,
              help="Field holding the document id [default: 'id' when present, else FILE:LINE].")
@click.option("--html", is_flag=True, help="The text field holds HTML: remove markup before comparing "
                                           "(.html/.htm files in a directory always are).")
@click.option("--main-content", is_flag=True, help="With HTML, keep only each page's main content block.")
@click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="On a bad record: stop with an error naming file and line, or skip and count it.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Threads [default: all cores]; results do not depend on it.")
@click.option("--batch-size", type=click.IntRange(min=1), default=2048, show_default=True,
              help="Documents per batch.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no summary.")
@click.pass_context
def dedup_cmd(ctx, inputs, output, method, keep, clusters_path, pairs_path, text_field, id_field, html,
              main_content, on_error, workers, batch_size, quiet, **method_params):
    """Remove near-duplicates from INPUT files: JSONL (.gz/.zst), CSV, Parquet, or a directory of
    .txt/.html files.

    Writes the kept records to OUTPUT; optionally the clusters and the verified pairs. Options of a
    method other than --method are refused.

    \b
    Examples:
      neardup dedup examples/news.jsonl -o kept.jsonl --clusters clusters.csv --pairs pairs.csv
      neardup dedup pages/ -o kept.parquet --threshold 0.7 --char-ngram 5
      neardup dedup crawl.jsonl.zst -o exact.jsonl --method exact --html
    """
    _reject_foreign_options(ctx, method)
    try:
        config = _build_method(method, method_params)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    except NeardupError as exc:  # a word list that cannot be read
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)

    show_progress = not quiet and sys.stderr.isatty()
    started = time.perf_counter()
    try:
        with _progress(show_progress) as progress:
            result = dedup(inputs, config, keep=keep, workers=workers, batch_size=batch_size,
                           text_field=text_field, id_field=id_field, on_error=on_error, html=html,
                           main_content=main_content, want_pairs=pairs_path is not None,
                           on_batch=progress.advance, on_stage=progress.stage)
            progress.stage("writing")
            t0 = time.perf_counter()
            io.write_kept(inputs, result.keep_mask, output, text_field=text_field, id_field=id_field,
                          on_error=on_error, all_valid=result.read_stats.skipped == 0)
            if clusters_path:
                _write_clusters(result, clusters_path)
            if pairs_path:
                _write_pairs(result, pairs_path)
            result.timings["write"] = time.perf_counter() - t0
    except NeardupError as exc:
        click.echo(f"neardup: error: {exc}", err=True)
        sys.exit(EXIT_DATA_ERROR)
    if not quiet:
        _print_summary(result, method, time.perf_counter() - started)


for _command in COMMANDS:
    main.add_command(_command)


def _write_clusters(result: DedupResult, path: str) -> None:
    import numpy as np

    ids = np.asarray(result.ids, dtype=object)
    io.write_table({"id": ids, "cluster": ids[result.kept], "similarity": result.similarity}, path)


def _write_pairs(result: DedupResult, path: str) -> None:
    import numpy as np

    ids = np.asarray(result.ids, dtype=object)
    a, b, sim = result.pairs
    io.write_table({"id_a": ids[a], "id_b": ids[b], "similarity": sim}, path)


class _NoProgress:
    def advance(self, n: int) -> None:
        pass

    def stage(self, name: str) -> None:
        pass


@contextmanager
def _progress(enabled: bool):
    """A rich progress display on stderr with ``advance(n_documents)`` and ``stage(name)``."""
    if not enabled:
        yield _NoProgress()
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(finished_text="[green]done"), TextColumn("{task.description}"),
                        TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                        console=Console(stderr=True), transient=True)

    class Display:
        def __init__(self) -> None:
            self.task = None
            self.start = time.perf_counter()
            self.done = 0

        def advance(self, n: int) -> None:
            self.done += n
            rate = self.done / max(time.perf_counter() - self.start, 1e-9)
            progress.update(self.task, info=f"{self.done:,} documents, {rate:,.0f}/s")

        def stage(self, name: str) -> None:
            if self.task is not None:
                progress.update(self.task, completed=1)
            self.task = progress.add_task(name, total=1, info="")
            self.start = time.perf_counter()
            self.done = 0

    with progress:
        yield Display()


def _print_summary(result: DedupResult, method: str, total: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    rs = result.read_stats
    table = Table(title=f"neardup dedup --method {method}", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("documents read", f"{result.n_documents:,}")
    table.add_row("skipped", f"{rs.skipped:,}")
    for reason, count in sorted(rs.reasons.items()):
        table.add_row(f"  {reason}", f"{count:,}")
    table.add_row("empty (no features)", f"{result.empty:,}")
    table.add_row("clusters (2+ documents)", f"{result.n_clusters:,}")
    table.add_row("removed", f"{result.n_removed:,}")
    table.add_row("kept", f"{result.n_documents - result.n_removed:,}")
    for label, value in result.stats.items():
        table.add_row(label, value)
    for stage, seconds in result.timings.items():
        table.add_row(f"time {stage}", f"{seconds:.2f} s")
    table.add_row("time total", f"{total:.2f} s")
    console.print(table)
