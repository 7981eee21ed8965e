"""``neardup compare``: why two documents are, or are not, near-duplicates (:mod:`neardup.eval.compare`)."""

from __future__ import annotations

from pathlib import Path

import click

from ..core.errors import NeardupError
from ..methods.minhash.config import DEFAULT_NGRAM, DEFAULT_NUM_PERM
from ..text.shingles import Shingling
from .common import SETTINGS, data_errors, emit_json, make_console, require_extras
from .options import shingling_option


@click.command("compare", context_settings=SETTINGS)
@click.argument("a")
@click.argument("b")
@click.argument("c", required=False)
@click.option(
    "--text-field", default="text", show_default=True, help="With DATA ID_A ID_B: the field holding the text."
)
@click.option("--id-field", default="id", show_default=True, help="With DATA ID_A ID_B: the field holding the id.")
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=0.8,
    show_default=True,
    help="The dedup threshold the verdict line is given for.",
)
@click.option(
    "--verify",
    type=click.Choice(["signature", "exact", "edit"]),
    default="signature",
    show_default=True,
    help="The dedup --verify the verdict is given for: MinHash estimate, exact Jaccard or edit similarity.",
)
@click.option("--text", "literal", is_flag=True, help="A and B are the texts themselves, not file paths.")
@click.option(
    "--ngram", type=click.IntRange(min=1), default=None, help=f"Word n-gram shingle size [default: {DEFAULT_NGRAM}]."
)
@click.option(
    "--char-ngram",
    type=click.IntRange(min=1),
    default=None,
    help="Use character n-gram shingles of this size instead of word n-grams.",
)
@click.option("--strip-punctuation", is_flag=True, help="Drop punctuation before character shingling.")
@click.option(
    "--num-perm",
    type=click.IntRange(min=1),
    default=DEFAULT_NUM_PERM,
    show_default=True,
    help="MinHash signature length K.",
)
@click.option(
    "--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True, help="Seed of the MinHash permutations."
)
@click.option(
    "--level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the MinHash interval.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Shingles to list of each kind (shared, only in A, only in B).",
)
@click.option("--encoding", default="utf-8", show_default=True, help="Encoding of the files.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON on stdout.")
def compare_cmd(
    a,
    b,
    c,
    text_field,
    id_field,
    threshold,
    verify,
    literal,
    ngram,
    char_ngram,
    strip_punctuation,
    num_perm,
    seed,
    level,
    limit,
    encoding,
    as_json,
):
    """Show why two documents are, or are not, near-duplicates.

    A and B are text files (or, with --text, the texts); or, with three arguments DATA ID_A ID_B,
    the documents of those ids in an input file (any format dedup reads; --text-field, --id-field).
    The last line is the verdict: near-duplicates at --threshold under --verify or not, with the
    similarity, and how likely the LSH banding of those settings makes them a candidate pair.

    Prints the exact Jaccard, weighted Jaccard and containment of their shingle sets, the MinHash
    estimate with its confidence interval, the SimHash distance (when neardup.methods.simhash is
    available), the normalized edit similarity with the aligned differences (words inserted,
    deleted and replaced; characters with --char-ngram), and the shared and differing shingles.

    \b
    Examples:
      neardup compare answer.txt source.txt --ngram 3
      neardup compare --text "the cat sat on the mat" "the cat sat on a mat" --ngram 2 --json
      neardup compare examples/news.jsonl doc-000054 doc-000230 --threshold 0.8
    """
    from ..eval.compare import compare

    shingling = shingling_option(ngram, char_ngram, strip_punctuation, Shingling("word", DEFAULT_NGRAM))
    if c is not None and literal:
        raise click.UsageError("--text compares two texts; DATA ID_A ID_B reads them from DATA")
    if verify == "edit":
        require_extras(("edit", "--verify edit"))
    with data_errors():
        if c is not None:
            text_a, text_b = _texts_by_id(a, b, c, text_field, id_field)
            name_a, name_b = b, c
        else:
            text_a = a if literal else _read_text(a, encoding)
            text_b = b if literal else _read_text(b, encoding)
            name_a, name_b = ("A", "B") if literal else (a, b)
        result = compare(text_a, text_b, shingling, num_perm=num_perm, seed=seed, level=level, limit=limit)
        verdict = _verdict(result, shingling, threshold, verify, num_perm, seed)
    if as_json:
        out = result.as_dict()
        out["a"], out["b"] = ("<text>" if literal else name_a), ("<text>" if literal else name_b)
        out["verdict"] = verdict
        emit_json(out)
        return
    _print_comparison(result, name_a, name_b)
    click.echo(verdict["line"])


def _texts_by_id(path: str, id_a: str, id_b: str, text_field: str, id_field: str) -> tuple[str, str]:
    """The texts of the records ``id_a`` and ``id_b`` of ``path`` (the first of each id)."""
    from ..io import read_documents

    found: dict[str, str] = {}
    read = 0
    for batch in read_documents([path], text_field=text_field, id_field=id_field):
        for i, t in zip(batch.ids, batch.texts):
            if i in (id_a, id_b) and i not in found:
                found[i] = t
        read += len(batch)
        if id_a in found and id_b in found:
            break
    missing = [i for i in (id_a, id_b) if i not in found]
    if missing:
        raise NeardupError(
            f"{path}: no record with {id_field} {', '.join(map(repr, missing))} among its {read:,} documents"
            " (--id-field names the id field)"
        )
    return found[id_a], found[id_b]


def _verdict(result, shingling, threshold: float, verify: str, num_perm: int, seed: int) -> dict:
    """Whether dedup with these settings calls the pair near-duplicates: the similarity its
    ``--verify`` measures against ``threshold``, and the probability that the LSH banding of
    those settings makes the pair a candidate at all (1 - (1 - J^r)^b at the exact Jaccard J)."""
    from ..methods.minhash.config import MinHashConfig

    config = MinHashConfig(threshold=threshold, shingling=shingling, num_perm=num_perm, seed=seed, verify=verify)
    lsh = config.lsh
    if verify == "signature":
        value, measure = result.minhash.value, f"MinHash estimate, K={num_perm}"
    elif verify == "exact":
        value, measure = result.jaccard, "exact Jaccard"
    else:
        value, measure = result.edit["similarity"], f"{result.edit['level']} edit similarity"
    is_dup = bool(value >= threshold)
    candidate = 1.0 - (1.0 - result.jaccard**lsh.rows) ** lsh.bands
    line = (
        f"near-duplicate at {threshold:g} under these settings: {'yes' if is_dup else 'no'} ({value:.3f}, {measure}); "
        f"LSH b={lsh.bands} r={lsh.rows} makes them a candidate pair with probability {candidate:.3f}"
    )
    return {
        "threshold": threshold,
        "verify": verify,
        "similarity": value,
        "near_duplicate": is_dup,
        "candidate_probability": candidate,
        "line": line,
    }


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
        raise NeardupError(
            f"{path}: not valid {encoding} at byte {exc.start}; try --encoding cp1252 or --encoding latin-1"
        ) from None


def _print_comparison(c, name_a: str, name_b: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = make_console()
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
    table.add_row(
        "MinHash estimate",
        f"{m.value:.4f}  ({m.matches} of {m.num_perm} slots; {m.level:.0%} "
        f"{m.method} interval {m.low:.4f} - {m.high:.4f}; std. error {m.stderr:.4f})",
    )
    if c.simhash is not None:
        s = c.simhash
        table.add_row(
            "SimHash",
            f"Hamming distance {s['distance']} of {s['bits']} bits (1 - d/f = "
            f"{s['similarity']:.4f}, estimated cosine {s['cosine']:.4f})",
        )
    if c.edit is not None:
        unit = "words" if c.edit["level"] == "word" else "characters"
        table.add_row(
            "edit similarity",
            f"{c.edit['similarity']:.4f}  (1 - d/max(|A|,|B|) over {unit}; "
            f"{c.edit['n_differences']:,} aligned differences)",
        )
    console.print(table)
    if c.edit is not None and c.edit["n_differences"]:
        items = c.edit["differences"]
        more = f" (first {len(items)})" if c.edit["n_differences"] > len(items) else ""
        console.print(f"[bold]differences: {c.edit['n_differences']:,}{more}[/bold]")
        for d in items:
            if d["tag"] == "replace":
                line = f"  replaced {escape(repr(d['old']))} -> {escape(repr(d['new']))}"
            elif d["tag"] == "delete":
                line = f"  deleted  {escape(repr(d['old']))}"
            else:
                line = f"  inserted {escape(repr(d['new']))}"
            console.print(line, highlight=False)
    for title, items, total in (
        ("shared", c.shared, c.n_shared),
        ("only in A", c.only_a, c.n_only_a),
        ("only in B", c.only_b, c.n_only_b),
    ):
        more = f" (first {len(items)})" if total > len(items) else ""
        console.print(f"[bold]{title}: {total:,} shingles{more}[/bold]")
        for s in items:
            console.print(f"  {escape(repr(s))}", highlight=False)
