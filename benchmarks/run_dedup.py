#!/usr/bin/env python3
"""Time and memory of one near-duplicate removal job: neardup against datasketch and rensa.

    python benchmarks/run_dedup.py [--docs 100000] [--repeat 3] [--workers 1]

The corpus comes from ``examples/generate_corpus.py`` and is cached under
``benchmarks/_data/``. Every tool runs the same job (word 5-gram shingles of
the lower-cased text, 128 MinHash permutations, LSH at Jaccard 0.8, candidates
verified with the signature estimate, union-find, keep the first document of
each cluster, write the kept records as JSONL), each run in its own
subprocess, in round-robin order so that drift on the machine hits every tool
alike.

Wall time: ``time.perf_counter`` around the subprocess, interpreter start and
imports included. Peak memory: ``ru_maxrss`` from ``os.wait4`` on that
subprocess, i.e. the kernel's high-water mark of resident memory of the child
(or of the largest of its own waited-for children, never a sum). When psutil is
installed the RSS of the child plus all its descendants is also sampled every
20 ms; that column matters if a tool forks worker processes.

Results are printed as a table and saved as JSON under ``benchmarks/_results/``.

``--baseline TREE`` adds another neardup, run from the source tree TREE (``PYTHONPATH=TREE/src
python -m neardup``), timed in the same round robin as ``neardup-baseline``: the way to show that
a change is within noise of the code before it (old and new alternate, ratio in the table).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
DATA = BENCH / "_data"
RESULTS = BENCH / "_results"
GENERATOR = ROOT / "examples" / "generate_corpus.py"
PEERS = BENCH / "peers"

try:
    import psutil
except ImportError:  # the sampled tree column is then left out
    psutil = None


# -- corpus -------------------------------------------------------------------


def generator_version() -> int:
    for line in GENERATOR.read_text(encoding="utf-8").splitlines():
        if line.startswith("GENERATOR_VERSION"):
            return int(line.split("=")[1])
    raise RuntimeError(f"no GENERATOR_VERSION in {GENERATOR}")


def corpus_paths(docs: int, seed: int, dup_fraction: float) -> tuple[Path, Path]:
    stem = f"corpus-{docs}-s{seed}-f{dup_fraction:g}-v{generator_version()}"
    return DATA / f"{stem}.jsonl", DATA / f"{stem}.truth.jsonl"


def ensure_corpus(docs: int, seed: int, dup_fraction: float) -> tuple[Path, Path]:
    corpus, truth = corpus_paths(docs, seed, dup_fraction)
    if corpus.exists() and truth.exists():
        print(f"corpus: reusing {corpus.relative_to(ROOT)}")
        return corpus, truth
    DATA.mkdir(parents=True, exist_ok=True)
    tmp_corpus, tmp_truth = corpus.with_suffix(".tmp"), truth.with_suffix(".tmp")
    print(f"corpus: generating {docs:,} documents (seed {seed}) ...", flush=True)
    subprocess.run(
        [
            sys.executable,
            str(GENERATOR),
            "--docs",
            str(docs),
            "--seed",
            str(seed),
            "--dup-fraction",
            str(dup_fraction),
            "-o",
            str(tmp_corpus),
            "--truth",
            str(tmp_truth),
            "--stats",
        ],
        check=True,
    )
    tmp_truth.replace(truth)
    tmp_corpus.replace(corpus)
    return corpus, truth


def warm_page_cache(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def head(path: Path, lines: int, dest: Path) -> int:
    """Copy the first ``lines`` lines of ``path`` to ``dest``; return how many there were."""
    n = 0
    with open(path, "rb") as src, open(dest, "wb") as out:
        for line in src:
            if n >= lines:
                break
            out.write(line)
            n += 1
    return n


# -- tools --------------------------------------------------------------------


def find_neardup() -> list[str] | None:
    """The neardup command, or None when its CLI is not there (yet)."""
    exe = shutil.which("neardup", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    cmd = [exe] if exe else [sys.executable, "-m", "neardup"]
    try:
        ok = subprocess.run(cmd + ["dedup", "--help"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return cmd if ok else None


def tool_commands(args, neardup_cmd) -> dict:
    """name -> function(corpus, output) -> argv."""
    common = ["--threshold", str(args.threshold), "--ngram", str(args.ngram), "--num-perm", str(args.num_perm)]
    tools = {}
    if neardup_cmd:
        tools["neardup"] = lambda c, o: [
            *neardup_cmd,
            "dedup",
            str(c),
            "-o",
            str(o),
            *common,
            "--workers",
            str(args.workers),
            "--quiet",
        ]
    if getattr(args, "baseline", None):
        tree = str(Path(args.baseline).resolve() / "src")
        tools["neardup-baseline"] = lambda c, o: [
            "env",
            f"PYTHONPATH={tree}",
            sys.executable,
            "-m",
            "neardup",
            "dedup",
            str(c),
            "-o",
            str(o),
            *common,
            "--workers",
            str(args.workers),
            "--quiet",
        ]
    tools["datasketch"] = lambda c, o: [
        sys.executable,
        str(PEERS / "datasketch_dedup.py"),
        str(c),
        "-o",
        str(o),
        *common,
    ]
    tools["rensa"] = lambda c, o: [sys.executable, str(PEERS / "rensa_dedup.py"), str(c), "-o", str(o), *common]
    wanted = set(args.tools) | ({"neardup-baseline"} if getattr(args, "baseline", None) else set())
    return {name: cmd for name, cmd in tools.items() if name in wanted}


def settle_writes() -> None:
    """Write the dirty pages of earlier runs to disk (``os.sync``) before a timed run starts.

    Each run writes its output (1.6 GB for the 1M-document corpus) into the page cache; left
    dirty, the kernel writes them back while the next run writes its own. This takes that
    writeback out of the next run; the disk's own pace still varies (the 1M job's "time write"
    ranged over 0.9-4.8 s in one session on a virtual disk shared with other machines), so
    compare write times within one run of a benchmark only."""
    if hasattr(os, "sync"):
        os.sync()


def measure(argv: list[str]) -> dict:
    """Run ``argv`` (after :func:`settle_writes`); return wall seconds, ru_maxrss peak and (with
    psutil) the sampled tree peak."""
    settle_writes()
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        tree_peak = [0]
        stop = threading.Event()

        def sample():
            try:
                p = psutil.Process(proc.pid)
                while not stop.is_set():
                    try:
                        rss = p.memory_info().rss
                        rss += sum(c.memory_info().rss for c in p.children(recursive=True))
                        tree_peak[0] = max(tree_peak[0], rss)
                    except psutil.Error:
                        pass
                    stop.wait(0.02)
            except psutil.Error:
                pass

        sampler = threading.Thread(target=sample, daemon=True) if psutil else None
        if sampler:
            sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        stop.set()
        if sampler:
            sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    # ru_maxrss is in kilobytes on Linux, in bytes on macOS
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return {
        "wall_s": wall,
        "peak_rss_mb": peak / 2**20,
        "tree_peak_mb": tree_peak[0] / 2**20 if psutil else None,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "returncode": proc.returncode,
        "stderr": stderr[-2000:],
    }


def read_ids(path: Path) -> list[str]:
    ids = []
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                ids.append(json.loads(line)["id"])
    return ids


def versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("neardup", "datasketch", "rensa", "numpy", "numba", "orjson"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


# -- report -------------------------------------------------------------------


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}x"


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def print_table(results: dict, base: str | None) -> None:
    head_ = (
        f"{'tool':<11} {'median s':>9} {'min s':>8} {'CPU s':>7} {'peak RSS MB':>12}"
        f" {'tree MB':>8} {'kept':>8} {'removed':>8} {'time/neardup':>13} {'mem/neardup':>12}"
    )
    print(head_)
    print("-" * len(head_))
    b = results.get(base) if base else None
    for name, r in results.items():
        t_ratio = r["median_s"] / b["median_s"] if b else None
        m_ratio = r["peak_rss_mb"] / b["peak_rss_mb"] if b else None
        tree = "-" if r["tree_peak_mb"] is None else f"{r['tree_peak_mb']:.0f}"
        print(
            f"{name:<11} {r['median_s']:>9.2f} {r['min_s']:>8.2f} {r['cpu_s']:>7.2f}"
            f" {r['peak_rss_mb']:>12.0f} {tree:>8} {r['kept']:>8,} {r['removed']:>8,}"
            f" {fmt_ratio(t_ratio):>13} {fmt_ratio(m_ratio):>12}"
        )


def compare_removed(removed: dict, truth_rows: list[dict]) -> dict:
    """Overlap of removed ids between tools, and what the removed documents were."""
    names = list(removed)
    overlap = {}
    truth_rows = truth_rows or []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sa, sb = removed[a], removed[b]
            union = len(sa | sb)
            overlap[f"{a} vs {b}"] = {
                "both": len(sa & sb),
                f"only {a}": len(sa - sb),
                f"only {b}": len(sb - sa),
                "jaccard": len(sa & sb) / union if union else 1.0,
            }
    if not truth_rows:
        return {"overlap": overlap}
    edit_of = {t["id"]: t["edit"] for t in truth_rows}
    planted = Counter(t["edit"] for t in truth_rows)
    by_edit = {name: dict(Counter(edit_of.get(i, "?") for i in ids)) for name, ids in removed.items()}
    return {"overlap": overlap, "removed_by_planted_edit": by_edit, "planted": dict(planted)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000, help="corpus size (default 100000)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per tool (default 3)")
    ap.add_argument("--workers", type=int, default=1, help="neardup --workers (default 1)")
    ap.add_argument("--seed", type=int, default=1, help="corpus seed (default 1)")
    ap.add_argument("--dup-fraction", type=float, default=0.2)
    ap.add_argument("--corpus", type=Path, help="use this JSONL corpus instead of generating one")
    ap.add_argument("--truth", type=Path, help="ground truth of --corpus (generator format)")
    ap.add_argument(
        "--tools", default="neardup,datasketch,rensa", help="comma-separated subset of neardup,datasketch,rensa"
    )
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--ngram", type=int, default=5)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--baseline", type=Path, help="also time the neardup of this source tree (neardup-baseline)")
    args = ap.parse_args(argv)
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]

    if args.corpus:
        corpus, truth = args.corpus, args.truth
    else:
        corpus, truth = ensure_corpus(args.docs, args.seed, args.dup_fraction)
    warm_page_cache(corpus)
    all_ids = read_ids(corpus)
    size_mb = corpus.stat().st_size / 1e6
    print(f"corpus: {len(all_ids):,} documents, {size_mb:,.1f} MB ({corpus})")

    neardup_cmd = find_neardup() if "neardup" in args.tools else None
    if "neardup" in args.tools and neardup_cmd is None:
        print("neardup: skipped - its CLI (`neardup dedup`) is not available yet")
    tools = tool_commands(args, neardup_cmd)
    out_dir = DATA / "out"
    out_dir.mkdir(parents=True, exist_ok=True)

    for name in [t for t in ("neardup", "neardup-baseline") if t in tools]:  # fill numba's compile cache first
        warm = out_dir / "warmup.jsonl"
        n_warm = head(corpus, 2000, warm)
        r = measure(tools[name](warm, out_dir / "warmup-kept.jsonl"))
        if r["returncode"] != 0:
            print(f"{name}: warm-up failed, skipped:\n{r['stderr']}")
            del tools[name]
        else:
            print(
                f"{name}: warm-up run on {n_warm:,} documents done in {r['wall_s']:.1f} s, not timed "
                "(numba's compile cache is warm for the timed runs)"
            )

    load_before = load_average()
    print(
        f"timing {', '.join(tools)}: {args.repeat} run(s) each, round-robin; "
        f"peak RSS = ru_maxrss of the tool's process (os.wait4)"
        + (
            "; tree MB = RSS of the process and its children, sampled every 20 ms"
            if psutil
            else "; install psutil for a sampled whole-process-tree column"
        )
    )
    runs = {name: [] for name in tools}
    failed = set()
    for rep in range(args.repeat):
        for name, cmd in tools.items():
            if name in failed:
                continue
            r = measure(cmd(corpus, out_dir / f"{name}.jsonl"))
            if r["returncode"] != 0:
                print(f"{name}: failed (exit {r['returncode']}):\n{r['stderr']}")
                failed.add(name)
                continue
            runs[name].append(r)
            print(
                f"  run {rep + 1}/{args.repeat} {name:<11} {r['wall_s']:7.2f} s {r['peak_rss_mb']:7.0f} MB", flush=True
            )

    results, removed = {}, {}
    id_set = set(all_ids)
    for name, rs in runs.items():
        if not rs:
            continue
        kept = read_ids(out_dir / f"{name}.jsonl")
        removed[name] = id_set - set(kept)
        walls = [r["wall_s"] for r in rs]
        trees = [r["tree_peak_mb"] for r in rs if r["tree_peak_mb"] is not None]
        results[name] = {
            "median_s": statistics.median(walls),
            "min_s": min(walls),
            "runs_s": walls,
            "cpu_s": statistics.median(r["cpu_s"] for r in rs),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
            "tree_peak_mb": max(trees) if trees else None,
            "kept": len(kept),
            "removed": len(removed[name]),
        }
    if not results:
        print("nothing ran")
        return 1

    print()
    base = "neardup" if "neardup" in results else None
    print_table(results, base)
    load_after = load_average()
    if load_before is not None and max(load_before, load_after) > 0.75 * (os.cpu_count() or 1):
        print(
            f"note: the machine was busy (1-minute load {load_before:.1f} before, "
            f"{load_after:.1f} after, {os.cpu_count()} CPUs); wall times are inflated, "
            "the CPU column is the steadier comparison"
        )
    if base is None:
        print("(ratios need neardup)")

    truth_rows = []
    if truth is not None:
        with open(truth, "rb") as f:
            truth_rows = [json.loads(line) for line in f]
    comparison = compare_removed(removed, truth_rows)
    if "planted" in comparison:
        print(f"\nremoved documents, by what the generator planted (planted: {comparison['planted']}):")
        for name, counts in comparison["removed_by_planted_edit"].items():
            print(f"  {name:<11} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if comparison["overlap"]:
        print("overlap of removed ids:")
        for pair, o in comparison["overlap"].items():
            print(
                f"  {pair:<26} "
                + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in o.items())
            )

    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"dedup-{len(all_ids)}-{stamp}.json"
    report = {
        "created": stamp,
        "corpus": str(corpus),
        "docs": len(all_ids),
        "corpus_mb": size_mb,
        "seed": args.seed,
        "dup_fraction": args.dup_fraction,
        "job": {
            "threshold": args.threshold,
            "ngram": args.ngram,
            "num_perm": args.num_perm,
            "neardup_workers": args.workers,
        },
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "processor": platform.processor(),
            "load_average_1min": {"before": load_before, "after": load_after},
        },
        "versions": versions(),
        "repeat": args.repeat,
        "memory_method": "ru_maxrss of the tool process from os.wait4 (peak_rss_mb); "
        "RSS of the process tree sampled every 20 ms with psutil (tree_peak_mb)",
        "results": results,
        "comparison": comparison,
    }
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nsaved {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
