#!/usr/bin/env python3
"""Sketch throughput on one core: neardup (classic and one-permutation) against datasketch and rensa.

    python benchmarks/bench_sketch.py [--docs 5000] [--peer-docs 1000] [--repeat 5] [--quick]

Texts are the first ``--docs`` documents of the cached generated corpus (``run_dedup.py``'s
``examples/generate_corpus.py`` corpus, seed 1, 100,000 documents). For word 5-grams and
character 5-grams and for K = 64, 128, 256, every tool turns the same texts into signatures:

* **neardup classic / oph**: ``MinHasher(K, shingling=Shingling(kind, 5), sketch=...).sign(texts)``
  (NFKC + case folding, tokenizing, shingle hashing and sketching; all included);
* **datasketch 2.x**: the user builds each document's shingle set in Python (lower-case,
  ``\\w+`` tokens joined by spaces; or character 5-grams of the whitespace-collapsed text) as
  UTF-8 bytes, then ``MinHash.update_batch`` (one ``MinHash`` per document sharing the
  permutations, as the documentation suggests) or ``MinHash.bulk`` (all documents at once);
* **rensa 0.5**: the same shingle lists as ``str``; ``RMinHash(K, seed).update(list)`` per document
  (its full-set path, as a user would feed it), ``RMinHash.digest_matrix_from_token_sets`` (its
  fastest batch API), ``digest_matrix_from_token_sets_rho`` (its one-permutation "Rho" sketch),
  and ``CMinHash(K, seed).update(list)`` (C-MinHash).

Two figures per tool: **from text** (everything above, the user's Python shingling included, as
a user would run it) and **sketch only** (peers: the shingle lists prepared beforehand, not
timed; neardup: ``sign_hashed`` on the shingles' 64-bit hashes prepared beforehand, i.e. the
min-hash step alone). Throughput is UTF-8 megabytes of input text per CPU second (the process
is pinned to one CPU and numba runs one thread, so that is MB/s per core), and documents per
second; the median of ``--repeat`` runs after an untimed warm-up, the runs of the tools
interleaved round-robin so that load from elsewhere hits them alike. Peers run on the first
``--peer-docs`` documents (they are 10-200x slower), neardup on ``--docs``; rates are per byte
and per document, so they compare directly.

A last table (``--breakdown DOCS``, 20,000 by default) splits neardup's own time for K = 128:
Python normalization and encoding, the kernel's first pass (normalize into a buffer), its second
(shingle hashes), and the fold (classic or OPH), per shingle.

Kernels are compiled per CPU target (``--targets``, default ``native,haswell,x86-64``): each
target runs the whole measurement in its own subprocess with ``NUMBA_CPU_NAME`` set (and
``NUMBA_CPU_FEATURES`` empty, so that the target's own feature set applies, not the host's), since
numba compiles and caches kernels per target; ``native`` is the host CPU, ``haswell`` AVX2 without
AVX-512 (what most cloud and laptop CPUs have), ``x86-64`` the SSE2 baseline. The peers are not
compiled by numba and run in every subprocess, so each target's ratios are measured in its own run.
A last table sets the targets side by side.

Two more tables (``--fold``, on by default) compare the sketches themselves rather than text
throughput. **Classic fold**: nanoseconds per (hash x permutation) of neardup's classic fold
(``sign_hashed``) and of rensa's classic kernel, each taken as the difference between K = 512
and K = 2048 on sets of 32 random items, so that per-item work that does not depend on K (the
peers' hashing of ``str``, rensa's three bucket rounds) cancels; per-set work proportional to K
stays in both. rensa runs its classic kernel on sets of at most 32 items; ``RENSA_FORCE_KERNEL``
selects it per target (``avx2`` under ``haswell``, ``scalar`` under ``x86-64``, rensa's own choice
under ``native``). **Cost against K**: nanoseconds per item of sets of 1,500 random items at
K = 64 ... 2048 for neardup classic and OPH and for rensa's full-set ``RMinHash.update``: rensa
0.5's full-set path is a bucketed sketch (its ``src/rminhash/bucket.rs``, after Dahlgaard, Knudsen
and Thorup's Fast Similarity Sketching, arXiv:1704.04370) whose cost per item does not grow
with K, unlike classic MinHash's K multiplies per item; the comparable neardup sketch is OPH.

Results are printed as markdown tables and saved to ``benchmarks/_results/sketch-<stamp>.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import datetime as dt
import json
import platform
import re
import statistics
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_dedup

WORD = re.compile(r"\w+")
RENSA_SEED = 42


# -- the user's shingling, for the peers ----------------------------------------------------


def word_shingles(text: str, n: int) -> list[str]:
    tokens = WORD.findall(text.lower())
    if len(tokens) < n:
        return [" ".join(tokens)] if tokens else []
    return list(map(" ".join, zip(*[tokens[i:] for i in range(n)])))


def char_shingles(text: str, n: int) -> list[str]:
    s = " ".join(text.lower().split())
    if len(s) < n:
        return [s] if s else []
    return [s[i : i + n] for i in range(len(s) - n + 1)]


SHINGLERS = {"word": word_shingles, "char": char_shingles}


def as_bytes(shingles: list[str]) -> list[bytes]:
    return [s.encode("utf-8") for s in set(shingles)]


# -- tools ----------------------------------------------------------------------------------


def neardup_tools(kind: str, k: int):
    import numpy as np

    from neardup.methods.minhash.sketch import MinHasher
    from neardup.text.shingles import Shingling, shingle_batch

    sh = Shingling(kind, 5)
    hashers = {name: MinHasher(num_perm=k, seed=1, shingling=sh, sketch=name) for name in ("classic", "oph")}

    def prepare(texts):
        hashes, offsets = shingle_batch(texts, sh, unique=False)
        return np.ascontiguousarray(hashes), offsets

    tools = {}
    for name, mh in hashers.items():
        tools[f"neardup {name}"] = {
            "text": (lambda mh: lambda texts: mh.sign(texts))(mh),
            "prepare": prepare,
            "sketch": (lambda mh: lambda prep: mh.sign_hashed(*prep))(mh),
        }
    return tools


def datasketch_tools(kind: str, k: int):
    from datasketch import MinHash

    shingler = SHINGLERS[kind]
    template = MinHash(num_perm=k, seed=1)

    def update_batch(sets):
        out = []
        for s in sets:
            m = MinHash(num_perm=k, seed=1, permutations=template.permutations, scheme=template.scheme)
            m.update_batch(s)
            out.append(m)
        return out

    def bulk(sets):
        return MinHash.bulk(sets, num_perm=k, seed=1)

    def prepare(texts):
        return [as_bytes(shingler(t, 5)) for t in texts]

    return {
        "datasketch update_batch": {
            "text": lambda texts: update_batch(as_bytes(shingler(t, 5)) for t in texts),
            "prepare": prepare,
            "sketch": update_batch,
        },
        "datasketch bulk": {
            "text": lambda texts: bulk([as_bytes(shingler(t, 5)) for t in texts]),
            "prepare": prepare,
            "sketch": bulk,
        },
    }


def rensa_tools(kind: str, k: int):
    from rensa import CMinHash, RMinHash

    shingler = SHINGLERS[kind]

    def one_by_one(cls):
        """Sketch each set with its own ``cls`` object, as a user of the full-set API does."""

        def sketch(lists):
            out = []
            for s in lists:
                m = cls(k, RENSA_SEED)
                m.update(s)
                out.append(m.digest())
            return out

        return sketch

    full_set, cminhash = one_by_one(RMinHash), one_by_one(CMinHash)

    def batch(lists):
        return RMinHash.digest_matrix_from_token_sets(lists, k, RENSA_SEED)

    def rho(lists):
        return RMinHash.digest_matrix_from_token_sets_rho(lists, k, RENSA_SEED)

    def prepare(texts):
        return [shingler(t, 5) for t in texts]

    def from_text(fn):
        return lambda texts: fn([shingler(t, 5) for t in texts])

    return {
        "rensa RMinHash full-set": {
            "text": lambda texts: full_set(shingler(t, 5) for t in texts),
            "prepare": prepare,
            "sketch": full_set,
        },
        "rensa digest_matrix (batch)": {"text": from_text(batch), "prepare": prepare, "sketch": batch},
        "rensa rho (batch)": {"text": from_text(rho), "prepare": prepare, "sketch": rho},
        "rensa CMinHash": {
            "text": lambda texts: cminhash(shingler(t, 5) for t in texts),
            "prepare": prepare,
            "sketch": cminhash,
        },
    }


# -- the sketches themselves: classic fold per (hash x permutation), cost against K ----------

FOLD_KS = (512, 2048)
SCALING_KS = (64, 128, 512, 2048)


def fold_tables(repeat: int, wanted: set[str]) -> dict:
    """``{"fold": {tool: ns per hash x permutation}, "scaling": {tool: {K: ns per item}}}`` (see
    the module docs), random items so that no tool drops repeats."""
    import random

    import numpy as np

    from neardup import MinHasher

    rng = random.Random(7)

    def per_item(fn, items: int) -> float:
        fn()  # warm-up (compiles neardup's kernels for this K)
        runs = []
        for _ in range(repeat):
            c0 = time.process_time()
            fn()
            runs.append(time.process_time() - c0)
        return statistics.median(runs) / items * 1e9

    def neardup(k: int, size: int, docs: int, sketch: str = "classic"):
        hasher = MinHasher(num_perm=k, seed=1, sketch=sketch)
        flat = np.random.default_rng(k).integers(0, 2**63, size * docs, dtype=np.uint64)
        offsets = np.arange(0, size * docs + 1, size, dtype=np.int64)
        return lambda: hasher.sign_hashed(flat, offsets)

    def rensa(k: int, size: int, docs: int):
        from rensa import RMinHash

        sets = [[str(rng.random()) for _ in range(size)] for _ in range(docs)]

        def run():
            for s in sets:
                m = RMinHash(k, RENSA_SEED)
                m.update(s)

        return run

    makers = {"neardup classic": neardup}
    if "rensa" in wanted:
        makers["rensa RMinHash"] = rensa
    fold = {}
    for name, make in makers.items():
        at = [per_item(make(k, 32, 20_000), 32 * 20_000) for k in FOLD_KS]
        fold[name] = (at[1] - at[0]) / (FOLD_KS[1] - FOLD_KS[0])
    scaling = {name: {} for name in ("neardup classic", "neardup oph", *list(makers)[1:])}
    docs = 200
    for k in SCALING_KS:
        scaling["neardup classic"][k] = per_item(neardup(k, 1500, docs), 1500 * docs)
        scaling["neardup oph"][k] = per_item(neardup(k, 1500, docs, "oph"), 1500 * docs)
        if "rensa" in wanted:
            scaling["rensa RMinHash"][k] = per_item(rensa(k, 1500, docs), 1500 * docs)
    return {"fold": fold, "scaling": scaling}


def print_fold(tables: dict) -> None:
    """The two tables of :func:`fold_tables`."""
    if not tables:
        return
    print("\n**classic fold** (ns per hash x permutation, sets of 32 random items, K 512 -> 2048)\n")
    print("| tool | ns | vs neardup |")
    print("|---|---:|---:|")
    base = tables["fold"]["neardup classic"]
    for name, ns in tables["fold"].items():
        print(f"| {name} | {ns:.3f} | {ns / base:.2f}x |")
    ks = list(next(iter(tables["scaling"].values())))
    print("\n**cost against K** (ns per item, sets of 1,500 random items)\n")
    print("| tool | " + " | ".join(f"K={k}" for k in ks) + " |")
    print("|---|" + "---:|" * len(ks))
    for name, by_k in tables["scaling"].items():
        print(f"| {name} | " + " | ".join(f"{by_k[k]:.1f}" for k in ks) + " |")


# -- measurement ----------------------------------------------------------------------------


def breakdown(texts: list[str], repeat: int) -> list[dict]:
    """Where neardup's text-to-signature time goes, K = 128: the Python normalization and
    encoding, the kernel's first pass (normalize into a buffer: tokens or characters), its
    second pass (shingle hashes), and the rest (the classic or OPH fold), per shingle."""
    import numba as nb
    import numpy as np

    from neardup._kernels.charclass import CHAR_CLASS
    from neardup._kernels.shingles import (
        HASH_BLOCK,
        LOCKSTEP_WORDS,
        _char_units,
        _word_tokens,
        doc_hashes,
        doc_scratch,
    )
    from neardup.methods.minhash.sketch import MinHasher
    from neardup.text.shingles import Shingling, encode_for_sketch, encode_texts

    @nb.njit(nogil=True)
    def pass1(data, off, table, kind):
        buf, _words, pos = doc_scratch(off[:-1], off[1:])
        t = 0
        for d in range(off.shape[0] - 1):
            if kind == 0:
                t += _word_tokens(data, off[d], off[d + 1], table, buf, pos)[0]
            else:
                t += _char_units(data, off[d], off[d + 1], table, False, buf, pos)[0]
        return t

    @nb.njit(nogil=True)
    def pass12(data, off, table, kind, n):
        buf, words, pos = doc_scratch(off[:-1], off[1:])
        hs = np.empty(pos.shape[0], np.uint64)
        scratch = np.empty((LOCKSTEP_WORDS + 1, HASH_BLOCK), dtype=np.uint64)
        t = 0
        for d in range(off.shape[0] - 1):
            t += doc_hashes(data, off[d], off[d + 1], table, kind, n, False, buf, words, pos, hs, 0, scratch)
        return t

    rows = []
    for kind, code in (("word", 0), ("char", 1)):
        sh = Shingling(kind, 5)
        data, off = encode_texts(texts, sh)
        classic, fast = MinHasher(128, shingling=sh), MinHasher(128, shingling=sh, sketch="oph")
        steps = {
            "encode: NFKC, case folding, UTF-8 (Python; `encode_for_sketch`)": lambda: encode_for_sketch(texts, sh),
            "kernel pass 1: normalize into a buffer": lambda: pass1(data, off, CHAR_CLASS, code),
            "kernel passes 1 + 2: + shingle hashes": lambda: pass12(data, off, CHAR_CLASS, code, 5),
            "kernel, classic K=128 (passes + fold)": lambda: classic.sign_encoded(data, off[:-1], off[1:]),
            "kernel, oph K=128 (passes + fold + densify)": lambda: fast.sign_encoded(data, off[:-1], off[1:]),
            "sign(texts), classic": lambda: classic.sign(texts),
            "sign(texts), oph": lambda: fast.sign(texts),
        }
        for fn in steps.values():
            fn()
        times = {name: [] for name in steps}
        for _ in range(repeat):
            for name, fn in steps.items():
                c0 = time.process_time()
                fn()
                times[name].append(time.process_time() - c0)
        shingles = int(classic.sign_encoded(data, off[:-1], off[1:])[1].sum())
        for name, ts in times.items():
            t = statistics.median(ts)
            rows.append(
                {
                    "kind": kind,
                    "step": name,
                    "ms": t * 1e3,
                    "mb_s": len(data) / 1e6 / t,
                    "ns_per_shingle": t / shingles * 1e9,
                    "shingles": shingles,
                    "mb": len(data) / 1e6,
                }
            )
    print(
        f"\n**Where the time goes** ({len(texts):,} documents, K = 128, median CPU time; "
        "each kernel row includes the rows above it)\n"
    )
    print("| shingles | step | ms | MB/s | ns per shingle |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['kind']} 5 | {r['step']} | {r['ms']:.0f} | {r['mb_s']:.0f} | {r['ns_per_shingle']:.1f} |")
    return rows


def load_texts(docs: int) -> list[str]:
    import orjson

    corpus, _ = run_dedup.ensure_corpus(100_000, 1, 0.2)
    with open(corpus, "rb") as f:
        return [orjson.loads(line)["text"] for line in islice(f, docs)]


def machine() -> dict:
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        import psutil

        mem = psutil.virtual_memory().total / 2**30
    except ImportError:
        pass
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "memory_gib": mem,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=5000, help="documents for neardup (default 5000)")
    ap.add_argument("--peer-docs", type=int, default=1000, help="documents for the peers (default 1000)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per measurement (default 5)")
    ap.add_argument("--ks", default="64,128,256", help="signature lengths K (default 64,128,256)")
    ap.add_argument("--kinds", default="word,char", help="shingle kinds (default word,char)")
    ap.add_argument("--tools", default="neardup,datasketch,rensa", help="subset of neardup,datasketch,rensa")
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the lowest allowed)")
    ap.add_argument("--quick", action="store_true", help="1000 / 200 documents, 3 repeats")
    ap.add_argument(
        "--breakdown",
        type=int,
        default=20000,
        metavar="DOCS",
        help="documents for the where-the-time-goes table (default 20000; 0: skip)",
    )
    ap.add_argument(
        "--fold",
        type=int,
        default=1,
        choices=(0, 1),
        help="the classic-fold and cost-against-K tables (default 1; 0: skip)",
    )
    ap.add_argument(
        "--targets",
        default="native,haswell,x86-64",
        help="numba CPU targets, each run in a subprocess (default native,haswell,x86-64)",
    )
    ap.add_argument("--json-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.json_out is None:
        return run_targets(args, argv if argv is not None else sys.argv[1:])
    if args.quick:
        args.docs, args.peer_docs, args.repeat = min(args.docs, 1000), min(args.peer_docs, 200), min(args.repeat, 3)
        args.breakdown = min(args.breakdown, 2000)
    cpu = args.cpu if args.cpu is not None else min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    import numba

    numba.set_num_threads(1)

    texts = load_texts(max(args.docs, args.peer_docs))
    sets = {"neardup": texts[: args.docs], "peer": texts[: args.peer_docs]}
    nbytes = {key: sum(len(t.encode("utf-8", "surrogatepass")) for t in ts) for key, ts in sets.items()}
    wanted = set(args.tools.split(","))
    load_before = os.getloadavg()[0]
    print(
        f"sketch throughput on CPU {cpu} (pinned, numba 1 thread); neardup on {len(sets['neardup']):,} "
        f"documents ({nbytes['neardup'] / 1e6:.1f} MB), peers on {len(sets['peer']):,} "
        f"({nbytes['peer'] / 1e6:.1f} MB); median of {args.repeat}; load average {load_before:.2f}",
        flush=True,
    )

    rows = []
    for kind in args.kinds.split(","):
        for k in (int(x) for x in args.ks.split(",")):
            tools = {}
            if "neardup" in wanted:
                tools.update(neardup_tools(kind, k))
            if "datasketch" in wanted:
                tools.update(datasketch_tools(kind, k))
            if "rensa" in wanted:
                tools.update(rensa_tools(kind, k))
            # warm-up (also compiles numba kernels), then the repeats round-robin over the
            # tools, so that a burst of load from elsewhere hits them all alike
            prepared, cpu, wall = {}, {}, {}
            for name, t in tools.items():
                docs = sets["neardup" if name.startswith("neardup") else "peer"]
                t["text"](docs)
                prepared[name] = t["prepare"](docs)
                t["sketch"](prepared[name])
                cpu[name] = {"text": [], "sketch": []}
                wall[name] = {"text": [], "sketch": []}
            for _ in range(args.repeat):
                for name, t in tools.items():
                    docs = sets["neardup" if name.startswith("neardup") else "peer"]
                    for what, fn, arg in (("text", t["text"], docs), ("sketch", t["sketch"], prepared[name])):
                        c0, w0 = time.process_time(), time.perf_counter()
                        fn(arg)
                        cpu[name][what].append(time.process_time() - c0)
                        wall[name][what].append(time.perf_counter() - w0)
            prepared.clear()
            for name in tools:
                key = "neardup" if name.startswith("neardup") else "peer"
                docs, size = sets[key], nbytes[key]
                cpu_text, cpu_sk = statistics.median(cpu[name]["text"]), statistics.median(cpu[name]["sketch"])
                row = {
                    "kind": kind,
                    "k": k,
                    "tool": name,
                    "docs": len(docs),
                    "mb": size / 1e6,
                    "text_cpu_s": cpu_text,
                    "text_wall_s": statistics.median(wall[name]["text"]),
                    "sketch_cpu_s": cpu_sk,
                    "sketch_wall_s": statistics.median(wall[name]["sketch"]),
                    "text_cpu_runs": cpu[name]["text"],
                    "sketch_cpu_runs": cpu[name]["sketch"],
                    "text_mb_s": size / 1e6 / cpu_text,
                    "text_docs_s": len(docs) / cpu_text,
                    "sketch_mb_s": size / 1e6 / cpu_sk,
                    "sketch_docs_s": len(docs) / cpu_sk,
                }
                rows.append(row)
                print(
                    f"  {kind:<4} K={k:<3} {name:<28} from text {row['text_mb_s']:8.2f} MB/s "
                    f"{row['text_docs_s']:9.0f} docs/s   sketch only {row['sketch_mb_s']:8.2f} MB/s",
                    flush=True,
                )
    split = breakdown(load_texts(args.breakdown), args.repeat) if args.breakdown else []
    folds = fold_tables(args.repeat, wanted) if args.fold else {}
    load_after = os.getloadavg()[0]
    print()
    print_tables(rows)
    print_fold(folds)
    print(f"\nload average (1 min) {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs")

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path(args.json_out)
    path.write_text(
        json.dumps(
            {
                "created": stamp,
                "machine": machine(),
                "versions": run_dedup.versions(),
                "args": vars(args),
                "cpu": cpu,
                "load_average_1min": {"before": load_before, "after": load_after},
                "rows": rows,
                "breakdown": split,
                "fold": folds,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    return 0


TARGET_ENV = {"native": None, "haswell": "haswell", "x86-64": "x86-64"}
RENSA_KERNEL = {"haswell": "avx2", "x86-64": "scalar"}
"""rensa's classic kernel per target (``RENSA_FORCE_KERNEL``); its other paths pick their own
instructions at run time."""


def target_env(target: str) -> dict:
    """The environment of one target's subprocess: ``NUMBA_CPU_NAME`` (the host's for ``native``)
    with an empty ``NUMBA_CPU_FEATURES``, so LLVM uses that CPU's own feature set, and rensa's
    classic kernel for that target."""
    env = dict(os.environ)
    for var in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "RENSA_FORCE_KERNEL"):
        env.pop(var, None)
    name = TARGET_ENV.get(target, target)
    if name is not None:
        env["NUMBA_CPU_NAME"] = name
        env["NUMBA_CPU_FEATURES"] = ""
    if target in RENSA_KERNEL:
        env["RENSA_FORCE_KERNEL"] = RENSA_KERNEL[target]
    return env


def run_targets(args, argv: list[str]) -> int:
    """Run the measurement once per CPU target, each in a fresh subprocess, then print the
    targets side by side and save everything to one JSON file."""
    run_dedup.RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    results = {}
    for target in args.targets.split(","):
        out = run_dedup.RESULTS / f"sketch-{stamp}-{target}.json"
        print(f"\n## target {target}\n", flush=True)
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--targets", target, "--json-out", str(out)]
        subprocess.run(cmd, env=target_env(target), check=True)
        results[target] = json.loads(out.read_text(encoding="utf-8"))
        out.unlink()
    print()
    print_targets(results)
    path = run_dedup.RESULTS / f"sketch-{stamp}.json"
    path.write_text(
        json.dumps({"created": stamp, "targets": results}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(f"saved {path.relative_to(run_dedup.ROOT)}")
    return 0


def print_targets(results: dict) -> None:
    """One table: every tool's from-text and sketch-only MB/s per CPU target (peers are not
    compiled per target; their columns show the spread between runs)."""
    targets = list(results)
    keys = []
    for res in results.values():
        for r in res["rows"]:
            key = (r["kind"], r["k"], r["tool"])
            if key not in keys:
                keys.append(key)
    print("**per CPU target** (MB/s per core, from text / sketch only; load average before the run)\n")
    print("| shingles | K | tool | " + " | ".join(targets) + " |")
    print("|---|---:|---|" + "---:|" * len(targets))
    cell = {t: {(r["kind"], r["k"], r["tool"]): r for r in res["rows"]} for t, res in results.items()}
    for key in keys:
        vals = []
        for t in targets:
            r = cell[t].get(key)
            vals.append(f"{r['text_mb_s']:.1f} / {r['sketch_mb_s']:.1f}" if r else "n/a")
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(vals) + " |")
    loads = ", ".join(f"{t} {res['load_average_1min']['before']:.2f}" for t, res in results.items())
    print(f"\nload average (1 min) before each target: {loads}")
    folds = {t: res.get("fold") for t, res in results.items() if res.get("fold")}
    if folds:
        print(
            "\n**classic fold per CPU target** (ns per hash x permutation; rensa's classic kernel as selected per target)\n"
        )
        print("| tool | " + " | ".join(folds) + " |")
        print("|---|" + "---:|" * len(folds))
        for name in next(iter(folds.values()))["fold"]:
            print(
                f"| {name} | " + " | ".join(f"{f['fold'].get(name, float('nan')):.3f}" for f in folds.values()) + " |"
            )


def print_tables(rows: list[dict]) -> None:
    """One markdown table per shingle kind and K: rates and ratios against rensa's full-set path
    and against neardup classic (from text)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kind"], r["k"]), []).append(r)
    for (kind, k), rs in groups.items():
        by = {r["tool"]: r for r in rs}
        rensa = by.get("rensa RMinHash full-set")
        classic = by.get("neardup classic")
        print(f"\n**{kind} 5-grams, K = {k}** (MB/s per core and documents/s, median CPU time)\n")
        print(
            "| tool | from text MB/s | docs/s | sketch only MB/s | vs rensa full-set (text) | vs neardup classic (text) |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for r in rs:
            vs_rensa = f"{r['text_mb_s'] / rensa['text_mb_s']:.1f}x" if rensa else "n/a"
            vs_classic = f"{r['text_mb_s'] / classic['text_mb_s']:.2f}x" if classic else "n/a"
            print(
                f"| {r['tool']} | {r['text_mb_s']:.2f} | {r['text_docs_s']:,.0f} | {r['sketch_mb_s']:.2f} "
                f"| {vs_rensa} | {vs_classic} |"
            )


if __name__ == "__main__":
    sys.exit(main())
