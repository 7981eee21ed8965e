#!/usr/bin/env python3
"""Connected components against greedy center clustering, scored on the removed documents.

For each data set and method setting, the dedup job runs with ``cluster="components"`` and with
``cluster="center"`` (the same verified pairs) and this prints, as Markdown, per clustering:

- removed: documents removed;
- below t: removed documents below the method's threshold to their kept document;
- precision: share of removed documents whose kept document is in their gold group;
- recall: those correct removals over the documents that should go (each gold group of size m
  has m - 1);
- F1 of the two.

Data sets: ``examples/news.jsonl`` with ``examples/news_truth.jsonl``; the Clough & Stevenson
corpus (``../shared/data/clough-stevenson``; gold clusters: each task's source with its cut and
light answers, as ``scripts/evaluate_clough_stevenson.py --export`` writes them); and a corpus
made by ``examples/generate_corpus.py`` (``--docs``, seed 3).

Usage (from the repository root)::

    python scripts/evaluate_clustering.py [--docs 20000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from neardup.api import dedup
from neardup.methods.minhash.config import MinHashConfig
from neardup.text.shingles import Shingling

REPO = Path(__file__).resolve().parent.parent


def gold_groups(path: Path) -> dict[str, str]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            out[row["id"]] = row.get("group", row.get("cluster"))
    return out


def score(result, gold: dict[str, str]) -> dict[str, float]:
    ids = list(result.ids)
    groups = np.array([gold[i] for i in ids])
    kept = np.asarray(result.kept)
    removed = kept != np.arange(len(kept))
    correct = int(np.count_nonzero(removed & (groups == groups[kept])))
    _, sizes = np.unique(groups, return_counts=True)
    should = int((sizes - 1).sum())
    n_removed = int(np.count_nonzero(removed))
    p = correct / n_removed if n_removed else 1.0
    r = correct / should if should else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"removed": n_removed, "below": result.below_threshold, "p": p, "r": r, "f1": f1}


def datasets(tmp: Path, docs: int) -> list[tuple[str, Path, Path]]:
    out = [("news (360)", REPO / "examples" / "news.jsonl", REPO / "examples" / "news_truth.jsonl")]
    cs = REPO.parent / "shared" / "data" / "clough-stevenson"
    if cs.exists():
        subprocess.run(
            [sys.executable, str(REPO / "scripts" / "evaluate_clough_stevenson.py"), "--export", str(tmp / "cs")],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        out.append(("clough-stevenson (100)", tmp / "cs" / "corpus.jsonl", tmp / "cs" / "gold.jsonl"))
    gen = tmp / "gen.jsonl"
    subprocess.run(
        [sys.executable, str(REPO / "examples" / "generate_corpus.py"), "--docs", str(docs), "--seed", "3"]
        + ["-o", str(gen), "--truth", str(tmp / "gen_truth.jsonl")],
        check=True,
    )
    out.append((f"generated ({docs:,})", gen, tmp / "gen_truth.jsonl"))
    return out


SETTINGS = [
    ("minhash t=0.8", MinHashConfig()),
    ("minhash t=0.5", MinHashConfig(threshold=0.5)),
    ("minhash t=0.5 exact", MinHashConfig(threshold=0.5, verify="exact")),
    ("minhash 3-gram t=0.3 exact", MinHashConfig(threshold=0.3, verify="exact", shingling=Shingling(n=3))),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=20_000, help="documents in the generated corpus")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        print("| data | setting | clustering | removed | below t | precision | recall | F1 |")
        print("|---|---|---|---:|---:|---:|---:|---:|")
        for name, corpus, truth in datasets(Path(tmp), args.docs):
            gold = gold_groups(truth)
            for label, config in SETTINGS:
                for cluster in ("components", "center"):
                    result = dedup([str(corpus)], config, cluster=cluster, workers=args.workers, id_field="id")
                    s = score(result, gold)
                    print(
                        f"| {name} | {label} | {cluster} | {s['removed']:,} | {s['below']:,} | "
                        f"{s['p']:.3f} | {s['r']:.3f} | {s['f1']:.3f} |",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
