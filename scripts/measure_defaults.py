"""Measure the effect of threshold, shingle size and K, to justify neardup's defaults.

    python scripts/measure_defaults.py [--docs 3000] [--seed 5]

Generates a corpus with examples/generate_corpus.py (planted exact, light, medium and heavy
variants), computes the exact Jaccard of every pair by brute force, and reports:

1. for word n-gram sizes n: the mean exact Jaccard of each edit class against its original, and
   the best F1 over thresholds at separating planted near-duplicates (exact + light + medium)
   from unrelated pairs;
2. for K and the threshold t: recall of the pairs with exact J >= t (and J >= t + 0.05) and the
   precision of the reported pairs (fraction with exact J >= t), running the real dedup stages
   with signature verification, and the sketching time.

Prints Markdown tables (pasted into docs/defaults.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import orjson

from neardup.core.measures import all_pairs_jaccard
from neardup.io.read import read_documents
from neardup.methods.minhash.candidates import Verifier, find_clusters
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.lsh import band_keys
from neardup.methods.minhash.sketch import MinHasher
from neardup.text.shingles import Shingling, shingle_batch

REPO = Path(__file__).resolve().parent.parent
NEAR = {"exact", "light", "medium"}


def generate(docs: int, seed: int, out: Path) -> tuple[list[str], list[str], list[dict]]:
    corpus, truth = out / "corpus.jsonl", out / "truth.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "generate_corpus.py"),
            "--docs",
            str(docs),
            "--seed",
            str(seed),
            "-o",
            str(corpus),
            "--truth",
            str(truth),
        ],
        check=True,
    )
    ids, texts = [], []
    for batch in read_documents([str(corpus)]):
        ids += batch.ids
        texts += batch.texts
    rows = [orjson.loads(line) for line in truth.read_bytes().splitlines()]
    return ids, texts, rows


def planted_pairs(ids, truth) -> tuple[dict[tuple[int, int], str], np.ndarray]:
    """(original, variant) index pairs with the variant's edit class, and each document's group."""
    index = {d: i for i, d in enumerate(ids)}
    originals = {r["group"]: index[r["id"]] for r in truth if r["edit"] == "original"}
    groups = {g: k for k, g in enumerate(sorted({r["group"] for r in truth}))}
    group = np.empty(len(ids), dtype=np.int64)
    out = {}
    for r in truth:
        group[index[r["id"]]] = groups[r["group"]]
        if r["edit"] in ("exact", "light", "medium", "heavy") and r["group"] in originals:
            i, j = sorted((originals[r["group"]], index[r["id"]]))
            out[(i, j)] = r["edit"]
    return out, group


def ngram_table(texts, truth_pairs, group) -> list[str]:
    lines = [
        "| shingles | exact | light | medium | heavy | unrelated pairs >= 0.3 (max) | best threshold | best F1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, n in (("word", 1), ("word", 3), ("word", 5), ("word", 7), ("char", 5)):
        values, offsets = shingle_batch(texts, Shingling(kind, n))
        a, b, s = all_pairs_jaccard(values, offsets, 0.05)
        sim = {(int(x), int(y)): float(v) for x, y, v in zip(a, b, s)}
        means = {}
        for edit in ("exact", "light", "medium", "heavy"):
            vals = [sim.get(p, 0.0) for p, e in truth_pairs.items() if e == edit]
            means[edit] = np.mean(vals) if vals else float("nan")
        positives = {p for p, e in truth_pairs.items() if e in NEAR}
        unrelated = [v for (x, y), v in sim.items() if group[x] != group[y]]
        high = sum(v >= 0.3 for v in unrelated)
        worst = max(unrelated, default=0.0)
        best = (0.0, 0.0)
        for t in np.arange(0.1, 0.96, 0.05):
            reported = {p for p, v in sim.items() if v >= t}
            tp = len(reported & positives)
            if tp:
                f1 = 2 * tp / (len(reported) + len(positives))
                best = max(best, (f1, round(float(t), 2)))
        lines.append(
            f"| {kind} {n}-grams | {means['exact']:.2f} | {means['light']:.2f} | {means['medium']:.2f} | "
            f"{means['heavy']:.2f} | {high} ({worst:.2f}) | {best[1]:.2f} | {best[0]:.3f} |"
        )
    return lines


def k_table(ids, texts) -> list[str]:
    sh = Shingling("word", 5)
    values, offsets = shingle_batch(texts, sh)
    a, b, s = all_pairs_jaccard(values, offsets, 0.3)
    exact = {(int(x), int(y)): float(v) for x, y, v in zip(a, b, s)}
    lines = [
        "| K | t | (b, r) | recall J >= t | recall J >= t+0.05 | precision (exact J >= t) | candidates checked |",
        "|---|---|---|---|---|---|---|",
    ]
    for k in (64, 128, 256):
        for t in (0.7, 0.8, 0.9):
            config = MinHashConfig(threshold=t, num_perm=k, shingling=sh)
            v, c = MinHasher(scheme=config.scheme).sign_texts_with_counts(texts)
            lsh = config.lsh
            res = find_clusters(
                band_keys(v, lsh.bands, lsh.rows), np.flatnonzero(c > 0), Verifier.signature(v, t), want_pairs=True
            )
            stats = res.stats
            got = set(zip(res.pairs_a.tolist(), res.pairs_b.tolist()))
            at_t = [p for p, x in exact.items() if x >= t]
            above = [p for p, x in exact.items() if x >= t + 0.05]
            recall = sum(p in got for p in at_t) / max(len(at_t), 1)
            recall_hi = sum(p in got for p in above) / max(len(above), 1)
            precision = sum(exact.get(p, 0.0) >= t for p in got) / max(len(got), 1)
            lines.append(
                f"| {k} | {t} | ({lsh.bands}, {lsh.rows}) | {recall:.3f} ({len(at_t)}) | "
                f"{recall_hi:.3f} ({len(above)}) | {precision:.3f} ({len(got)}) | {stats.checked} |"
            )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ids, texts, truth = generate(args.docs, args.seed, Path(tmp))
    pairs, group = planted_pairs(ids, truth)
    print(
        f"corpus: {len(texts)} documents (examples/generate_corpus.py --docs {args.docs} --seed {args.seed}), "
        f"{len(pairs)} planted variant pairs\n"
    )
    print("\n".join(ngram_table(texts, pairs, group)))
    print()
    print("\n".join(k_table(ids, texts)))


if __name__ == "__main__":
    main()
