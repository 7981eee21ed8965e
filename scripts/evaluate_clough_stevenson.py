#!/usr/bin/env python3
"""Every neardup similarity on the Clough & Stevenson corpus of plagiarised short answers.

Each of the 95 answers is compared with the Wikipedia source of its task (``orig_task<t>.txt``).
For every method (shingling x measure) this prints, as Markdown:

- the four-way view: the mean score of the cut, light, heavy and non answers;
- "reused" (cut + light) against "not reused" (heavy + non): the threshold with the best F1 for
  "score >= threshold means reused", its precision, recall and F1 (chosen on all 95 answers, so
  optimistic), and the leave-one-task-out F1 (threshold chosen on the other four tasks, applied to
  the fifth; pooled), an honest estimate of what a chosen threshold gives on new data;
- the best F1 of "any reuse" (cut + light + heavy) against non, Udacity's binary labels.

Usage (from the repository root)::

    python scripts/evaluate_clough_stevenson.py                 # Markdown tables
    python scripts/evaluate_clough_stevenson.py --json out.json # also the raw numbers
    python scripts/evaluate_clough_stevenson.py --export cs/    # corpus.jsonl + gold.jsonl for the CLI

Files are decoded as UTF-8, or as cp1252 where that fails (the corpus mixes encodings).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neardup._kernels.measures import containment_sorted, jaccard_sorted
from neardup.eval.metrics import best_threshold
from neardup.methods.minhash.sketch import MinHasher
from neardup.text.shingles import Shingling, shingle_batch

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "clough-stevenson"
CATEGORIES = ("cut", "light", "heavy", "non")
REUSED = ("cut", "light")
SHINGLINGS = [Shingling("word", n) for n in range(1, 6)] + [Shingling("char", n) for n in (3, 5, 7, 9)]
NUM_PERM = 128


@dataclass(frozen=True)
class Corpus:
    files: list[str]
    tasks: list[str]
    categories: list[str]
    answers: list[str]
    sources: dict[str, str]


def read_text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def load(root: Path) -> Corpus:
    files, tasks, cats, answers, sources = [], [], [], [], {}
    with open(root / "file_information.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            text = read_text(root / "files" / row["File"])
            if row["Category"] == "orig":
                sources[row["Task"]] = text
            else:
                files.append(row["File"])
                tasks.append(row["Task"])
                cats.append(row["Category"])
                answers.append(text)
    return Corpus(files, tasks, cats, answers, sources)


def label(sh: Shingling) -> str:
    return f"word {sh.n}-grams" if sh.kind == "word" else f"char {sh.n}-grams"


def scores(corpus: Corpus) -> dict[str, np.ndarray]:
    """method name -> one score per answer (its similarity to its task's source)."""
    out: dict[str, np.ndarray] = {}
    srcs = [corpus.sources[t] for t in corpus.tasks]
    try:
        from neardup.methods.simhash.sketch import SimHasher
    except ImportError:
        SimHasher = None
    for sh in SHINGLINGS:
        h, off = shingle_batch(corpus.answers, sh)
        hs, offs = shingle_batch(srcs, sh)
        sets_a = [h[off[i] : off[i + 1]] for i in range(len(srcs))]
        sets_s = [hs[offs[i] : offs[i + 1]] for i in range(len(srcs))]
        out[f"Jaccard, {label(sh)}"] = np.array([jaccard_sorted(a, s) for a, s in zip(sets_a, sets_s)])
        out[f"containment, {label(sh)}"] = np.array([containment_sorted(a, s) for a, s in zip(sets_a, sets_s)])
        mh = MinHasher(num_perm=NUM_PERM, seed=1, shingling=sh)
        sa, ss = mh.sign(corpus.answers), mh.sign(srcs)
        out[f"MinHash K={NUM_PERM}, {label(sh)}"] = np.array([sa.jaccard(i, ss, i) for i in range(len(srcs))])
        if SimHasher is not None:
            hasher = SimHasher(bits=64, seed=1, shingling=sh)
            fa, fs = hasher.sign(corpus.answers), hasher.sign(srcs)
            out[f"SimHash 64, {label(sh)}"] = np.array([1 - fa.hamming(i, fs, i) / 64 for i in range(len(srcs))])
    measures = ("Jaccard", "containment", "MinHash", "SimHash")
    return dict(sorted(out.items(), key=lambda kv: measures.index(kv[0].split(" ")[0].rstrip(","))))


def evaluate(corpus: Corpus, values: np.ndarray) -> dict:
    cats = np.array(corpus.categories)
    tasks = np.array(corpus.tasks)
    reused = np.isin(cats, REUSED)
    t, p, r, f1 = best_threshold(values, reused)
    # leave one task out: the threshold comes from the other tasks
    predicted = np.zeros(len(values), dtype=bool)
    for task in sorted(set(corpus.tasks)):
        held = tasks == task
        t_other = best_threshold(values[~held], reused[~held])[0]
        predicted[held] = values[held] >= t_other
    tp = int(np.count_nonzero(predicted & reused))
    loto = 2 * tp / (int(predicted.sum()) + int(reused.sum()))
    any_reuse = best_threshold(values, cats != "non")
    return {
        "mean": {c: float(values[cats == c].mean()) for c in CATEGORIES},
        "threshold": t,
        "precision": p,
        "recall": r,
        "f1": f1,
        "loto_f1": loto,
        "any_reuse_threshold": any_reuse[0],
        "any_reuse_f1": any_reuse[3],
    }


def markdown(results: dict[str, dict]) -> str:
    lines = [
        "| method | cut | light | heavy | non | best threshold | P | R | F1 | F1 leave-one-task-out "
        "| F1 any reuse (threshold) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        m = r["mean"]
        lines.append(
            f"| {name} | {m['cut']:.3f} | {m['light']:.3f} | {m['heavy']:.3f} | {m['non']:.3f} "
            f"| {r['threshold']:.3f} | {r['precision']:.3f} | {r['recall']:.3f} | **{r['f1']:.3f}** "
            f"| {r['loto_f1']:.3f} | {r['any_reuse_f1']:.3f} ({r['any_reuse_threshold']:.3f}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"corpus folder [default: {DEFAULT_DATA}]")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers as JSON here")
    parser.add_argument(
        "--export",
        type=Path,
        default=None,
        help="also write DIR/corpus.jsonl (all 100 texts as UTF-8, id = file name) and "
        "DIR/gold.jsonl (id, cluster: each task's source with its cut and light answers; "
        "every other text alone) for `neardup dedup` and `neardup eval`",
    )
    args = parser.parse_args(argv)
    if not (args.data / "file_information.csv").is_file():
        print(f"no Clough-Stevenson corpus at {args.data} (expected file_information.csv and files/)", file=sys.stderr)
        return 1
    corpus = load(args.data)
    counts = {c: corpus.categories.count(c) for c in CATEGORIES}
    results = {name: evaluate(corpus, v) for name, v in scores(corpus).items()}
    print(
        f"{len(corpus.answers)} answers ({', '.join(f'{n} {c}' for c, n in counts.items())}), "
        f"{len(corpus.sources)} sources; reused = cut + light\n"
    )
    print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "results": results}, indent=2) + "\n")
    if args.export:
        export(corpus, args.export)
    return 0


def export(corpus: Corpus, folder: Path) -> None:
    """Write the corpus and its reuse clusters as JSONL for the command line."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = [(f"orig_task{t}.txt", text, f"task{t}") for t, text in sorted(corpus.sources.items())]
    docs += [
        (f, text, f"task{t}" if c in REUSED else f)
        for f, t, c, text in zip(corpus.files, corpus.tasks, corpus.categories, corpus.answers)
    ]
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for doc_id, text, _ in docs:
            out.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    with open(folder / "gold.jsonl", "w", encoding="utf-8") as out:
        for doc_id, _, cluster in docs:
            out.write(json.dumps({"id": doc_id, "cluster": cluster}) + "\n")


if __name__ == "__main__":
    sys.exit(main())
