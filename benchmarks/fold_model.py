#!/usr/bin/env python3
"""The classic MinHash fold on CPUs we do not have: LLVM's machine-code analyzer (``llvm-mca``)
on neardup's AVX2 fold loop and on rensa's, per CPU model.

    python benchmarks/fold_model.py [--cpus haswell,skylake,icelake-server,znver2,znver3]

neardup's loop is the one numba compiles for ``NUMBA_CPU_NAME=haswell`` (AVX2, no AVX-512): the
block of 64 permutations of :func:`neardup._kernels.minhash.fold_minhash32`, one hash per
iteration (the basic block with the most ``vpmulld``). rensa's is found in its installed
extension by ``objdump``: the loop whose body has six ``vpmuludq`` on ``ymm`` registers and one
``vpminud``, i.e. one hash and 8 permutations per iteration (its AVX2 classic kernel; rensa
selects it with ``RENSA_FORCE_KERNEL=avx2``). Both are printed as cycles per hash and 8
permutations in the steady state that ``llvm-mca`` models (ports, latencies, no cache misses):
a bound and a comparison on machines the benchmark cannot run on (AMD Zen 2/3, older Intel),
not a measurement. ``bench_sketch.py --fold`` measures both kernels on this machine.

Needs ``llvm-mca`` (Debian: ``llvm``) and ``objdump`` (``binutils``); prints what is missing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

DUMP = r"""
import sys
import numpy as np, numba as nb
from neardup._kernels import minhash as M
k = 128
rng = np.random.default_rng(1)
halves = M.split_permutations(rng.integers(1, 2**63, k, dtype=np.uint64) | np.uint64(1), rng.integers(0, 2**63, k, dtype=np.uint64))
b = rng.integers(0, 2**63, k, dtype=np.uint64)
acc, sig = np.empty(k, np.uint32), np.empty(k, np.uint32)
@nb.njit(nogil=True)
def fold(hashes, halves, b, acc, sig):
    M.fold_minhash32(hashes, 0, hashes.shape[0], halves, b, acc, sig)
fold(rng.integers(0, 2**63, 1000, dtype=np.uint64), halves, b, acc, sig)
sys.stdout.write(list(fold.inspect_asm().values())[0])
"""


def neardup_loop() -> tuple[str, int]:
    """(asm of the AVX2 fold's inner loop, permutations per iteration)."""
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="", PYTHONPATH=str(SRC))
    env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="fold-model-")
    asm = subprocess.run([sys.executable, "-c", DUMP], env=env, check=True, capture_output=True, text=True).stdout
    blocks, label, body = {}, None, []
    for line in asm.splitlines():
        m = re.match(r"^(\.LBB\w+):", line)
        if m:
            if label:
                blocks[label] = body
            label, body = m.group(1), []
        elif label and line.startswith("\t") and not line.lstrip().startswith("."):
            body.append(line.strip())
    if label:
        blocks[label] = body
    label, body = max(blocks.items(), key=lambda kv: sum("vpmulld" in ln for ln in kv[1]))
    # the loop's body up to and including its backward branch
    end = next(i for i, ln in enumerate(body) if re.match(rf"j\w+\s+{re.escape(label)}$", ln))
    return "\n".join([f"{label}:", *body[: end + 1]]) + "\n", 8 * sum("vpminud" in ln for ln in body[:end])


def rensa_loop() -> tuple[str, int] | None:
    """(asm of rensa's AVX2 classic loop, permutations per iteration), or None if not found."""
    try:
        import rensa
    except ImportError:
        return None
    so = next(Path(rensa.__file__).parent.glob("*.so"), None)
    if so is None:
        return None
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)], check=True, capture_output=True, text=True)
    lines = []
    for ln in dis.stdout.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\t(.*)$", ln)
        if m:
            lines.append((int(m.group(1), 16), re.sub(r"\s*<.*>$", "", m.group(2)).strip()))
    at = {addr: i for i, (addr, _) in enumerate(lines)}
    for i, (_, ins) in enumerate(lines):
        m = re.match(r"(j\w+)\s+([0-9a-f]+)$", ins)
        if not m or int(m.group(2), 16) not in at or at[int(m.group(2), 16)] >= i:
            continue
        body = [x for _, x in lines[at[int(m.group(2), 16)] : i]]
        muls = sum(bool(re.match(r"vpmuludq .*ymm", x)) for x in body)
        mins = sum(x.startswith("vpminud") and "ymm" in x for x in body)
        if muls == 6 and mins == 1 and len(body) < 40:
            return "\n".join([".Lrensa:", *body, f"{m.group(1)} .Lrensa"]) + "\n", 8
    return None


def cycles(asm: str, cpu: str, mca: str) -> tuple[float, bool]:
    """(llvm-mca's cycles per iteration of ``asm`` on ``cpu``, whether the model gives some
    instruction a placeholder latency of 100 cycles or more, i.e. does not really model it)."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write(asm)
    try:
        cmd = [mca, f"-mcpu={cpu}", "-iterations=400", "-instruction-info", f.name]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    unmodelled = any(int(m.group(1)) >= 100 for m in re.finditer(r"^\s*\d+\s+(\d+)\s+[\d.]+", out, re.M))
    return int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)) / 400, unmodelled


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpus", default="haswell,skylake,icelake-server,znver2,znver3", help="llvm-mca CPU models")
    args = ap.parse_args(argv)
    mca = shutil.which("llvm-mca") or next(
        (shutil.which(f"llvm-mca-{v}") for v in range(20, 10, -1) if shutil.which(f"llvm-mca-{v}")), None
    )
    if mca is None or shutil.which("objdump") is None:
        print("needs llvm-mca (apt install llvm) and objdump (apt install binutils)")
        return 1
    loops = {"neardup (haswell build)": neardup_loop()}
    found = rensa_loop()
    if found:
        loops["rensa AVX2 kernel"] = found
    else:
        print("rensa's AVX2 loop not found (rensa not installed, or another build)")
    cpus = args.cpus.split(",")
    print(f"\n**classic fold, llvm-mca** ({Path(mca).name}; cycles per hash and 8 permutations, steady state)\n")
    print("| loop | permutations per iteration | " + " | ".join(cpus) + " |")
    print("|---|---:|" + "---:|" * len(cpus))
    per, flagged = {}, False
    for name, (asm, perms) in loops.items():
        per[name] = [(c * 8 / perms, bad) for c, bad in (cycles(asm, cpu, mca) for cpu in cpus)]
        flagged |= any(bad for _, bad in per[name])
        print(f"| {name} | {perms} | " + " | ".join(f"{c:.2f}{'*' if bad else ''}" for c, bad in per[name]) + " |")
    if len(per) == 2:
        a, b = per.values()
        cells = ("n/a" if bx or by else f"{y / x:.2f}x" for (x, bx), (y, by) in zip(a, b))
        print("| rensa / neardup | | " + " | ".join(cells) + " |")
    if flagged:
        print("\n\\* the model gives an instruction of this loop a placeholder latency of 100 cycles or more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
