#!/usr/bin/env python3
"""Cost of edit-distance verification and of HTML to text: one command, ratios in the same run.

    python benchmarks/bench_edit.py [--quick] [--repeat 3] [--docs 100000] [--skip-dedup | --only-dedup]

1. **Verification throughput** (pairs/s) of ``neardup.text.edit.edit_similarities`` (rapidfuzz
   ``cpdist`` on token-id lists, ``score_cutoff`` = 0.8) for documents of 1k, 10k and 100k words:
   near-duplicate pairs (about 5 % of the words edited: the full banded computation) and
   unrelated pairs of the same length (the early exit), with 1 and 2 worker threads, word and
   character level. Token conversion is included (it runs in the job too).
2. **``--verify edit`` against ``--verify exact``** on the ``--docs`` corpus of
   ``run_dedup.py`` (``examples/generate_corpus.py``, seed 1): ``neardup dedup`` wall and CPU
   time of each at each of ``--thresholds``, interleaved, median of ``--repeat``; and the
   signature verification as a reference.
3. **HTML pages/s**: ``html_to_text`` with the stdlib parser and with resiliparse (what
   ``--html`` uses when the ``[html]`` extra is installed), plain and ``--main-content``, on
   generated news-site pages (~10 KB), with selectolax's raw ``text()`` as a peer.

Every figure is the median of ``--repeat`` runs after a warm-up.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from neardup.text.edit import edit_similarities, edit_tokens, token_sequences
from neardup.text.html import html_to_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_dedup import ensure_corpus


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def doc(rng: random.Random, words: int) -> list[str]:
    return [f"w{rng.randrange(50_000)}" for _ in range(words)]


def edited(rng: random.Random, d: list[str], rate: float) -> list[str]:
    out = list(d)
    for _ in range(int(len(out) * rate)):
        k = rng.randrange(3)
        i = rng.randrange(len(out))
        if k == 0:
            out[i] = f"w{rng.randrange(50_000)}"
        elif k == 1:
            out.insert(i, f"w{rng.randrange(50_000)}")
        else:
            del out[i]
    return out


def bench_verify(args) -> None:
    rng = random.Random(1)
    print("\n## Verification throughput (pairs/s), threshold 0.8\n")
    print(
        "| words | level | pairs | near-dup, 1 worker | near-dup, 2 workers | unrelated, 1 worker | unrelated / near-dup |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    for words in sizes:
        for level in ("word", "char"):
            if level == "char" and words > 10_000:
                continue  # 100k words are ~600k characters: seconds per pair, see docs
            npairs = max(2, 200_000 // words)
            a = [" ".join(doc(rng, words)) for _ in range(npairs)]
            b = [" ".join(edited(rng, x.split(), 0.05)) for x in a]
            c = [" ".join(doc(rng, words)) for _ in range(npairs)]

            def run(x, y, workers, level=level):
                ids, off = edit_tokens(x + y, level)
                s = token_sequences(ids, off, np.arange(len(x) + len(y)))
                return edit_similarities(s[: len(x)], s[len(x) :], 0.8, workers)

            assert (run(a, b, 1) > 0.8).all()
            near1 = npairs / median_time(lambda: run(a, b, 1), args.repeat)
            near2 = npairs / median_time(lambda: run(a, b, 2), args.repeat)
            far1 = npairs / median_time(lambda: run(a, c, 1), args.repeat)
            print(
                f"| {words:,} | {level} | {npairs} | {near1:,.1f} | {near2:,.1f} | {far1:,.1f} | {far1 / near1:.1f}x |"
            )


def bench_dedup(args) -> None:
    corpus, _ = ensure_corpus(args.docs, 1, 0.2)
    print(f"\n## neardup dedup on {args.docs:,} documents: --verify edit against --verify exact\n")
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    variants = {
        f"{verify} at {t:g}": ["--verify", verify, "--threshold", f"{t:g}"]
        for t in args.thresholds
        for verify in ("signature", "exact", "edit")
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    counters: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for name, extra in variants.items():
                cmd = [sys.executable, "-m", "neardup", "dedup", str(corpus), "-o", f"{tmp}/out.jsonl"]
                cmd += ["--workers", str(args.workers)]
                before = os.times()
                t = time.perf_counter()
                r = subprocess.run(cmd + extra, env=env, capture_output=True, text=True, check=True)
                times[name].append(time.perf_counter() - t)
                after = os.times()
                cpu[name].append(
                    after.children_user + after.children_system - before.children_user - before.children_system
                )
                counters[name] = "; ".join(
                    " ".join(line.split())
                    for line in (r.stdout + r.stderr).splitlines()
                    if line.startswith(("removed", "candidate pairs checked", "LSH"))
                )
    print("| run | wall s (median) | CPU s (median) | wall / exact | counters |")
    print("|---|---:|---:|---:|---|")
    for name in variants:
        base = statistics.median(times[f"exact at {name.split(' at ')[1]}"])
        m = statistics.median(times[name])
        print(f"| {name} | {m:.2f} | {statistics.median(cpu[name]):.2f} | {m / base:.2f} | {counters.get(name, '')} |")


def page(rng: random.Random, i: int) -> str:
    nav = "".join(f"<li><a href='/s{k}'>Section {k}</a></li>" for k in range(15))
    paras = "".join(
        "<p>" + " ".join(f"w{rng.randrange(20000)}" for _ in range(rng.randint(40, 90))) + " <b>bold</b> end.</p>"
        for _ in range(rng.randint(5, 12))
    )
    return (
        f"<!DOCTYPE html><html><head><title>Story {i}</title><script>var a={i};</script>"
        "<style>p{margin:0}</style></head><body><header><nav><ul>" + nav + "</ul></nav></header>"
        f"<main><article><h1>Story {i}</h1>{paras}</article></main><aside><ul>"
        + "".join(f"<li><a href='/r{k}'>Related {k}</a></li>" for k in range(8))
        + "</ul></aside><footer><p>Copyright 2026 Example</p></footer></body></html>"
    )


def bench_html(args) -> None:
    rng = random.Random(2)
    pages = [page(rng, i) for i in range(300 if args.quick else 2000)]
    mb = sum(len(p.encode()) for p in pages) / 1e6
    print(f"\n## HTML to text: {len(pages):,} pages, {mb:.1f} MB, one thread\n")
    tools = {
        "stdlib (before)": lambda: [html_to_text(p, parser="stdlib") for p in pages],
        "stdlib --main-content (before)": lambda: [html_to_text(p, True, parser="stdlib") for p in pages],
        "resiliparse (--html now)": lambda: [html_to_text(p, parser="resiliparse") for p in pages],
        "resiliparse --main-content (now)": lambda: [html_to_text(p, True, parser="resiliparse") for p in pages],
    }
    try:
        from selectolax.lexbor import LexborHTMLParser

        tools["selectolax text() (peer, no block structure)"] = lambda: [
            LexborHTMLParser(p).body.text(separator=" ") for p in pages
        ]
    except ImportError:
        pass
    base = None
    print("| parser | pages/s | MB/s | / stdlib |")
    print("|---|---:|---:|---:|")
    for name, fn in tools.items():
        t = median_time(fn, args.repeat)
        base = base or t
        print(f"| {name} | {len(pages) / t:,.0f} | {mb / t:.1f} | {base / t:.1f}x |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (under a minute)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--docs", type=int, default=100_000, help="corpus size of the dedup comparison")
    ap.add_argument("--skip-dedup", action="store_true", help="leave out the dedup comparison")
    ap.add_argument("--only-dedup", action="store_true", help="only the dedup comparison")
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.8, 0.9], help="of the dedup comparison")
    ap.add_argument("--workers", type=int, default=2, help="of the dedup comparison")
    args = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if not args.only_dedup:
        bench_verify(args)
        bench_html(args)
    if not args.skip_dedup:
        bench_dedup(args)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
