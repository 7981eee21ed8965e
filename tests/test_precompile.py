"""Compiling a job's kernels ahead in subprocesses (neardup._kernels.precompile): the plan of the
README's first command is complete and its subprocesses leave a cache the job uses as it is, a
subprocess that fails or dies leaves its kernels to the job, and warm caches start none."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import numba
import numpy as np
import pytest

import neardup._kernels.precompile as pre
from neardup._kernels.jsonl import SCAN_WARMUP
from neardup._kernels.unionfind import roots
from neardup._kernels.warmup import Warmup
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.simhash.config import SimHashConfig
from neardup.text.shingles import Shingling

ROOT = Path(__file__).resolve().parent.parent
NEWS = ROOT / "examples" / "news.jsonl"
ROOTS = pre.ROOTS[0]


def test_split_keeps_the_order_and_evens_out_the_work():
    ks = [pre.Kernel("m", f"k{i}", "()", s) for i, s in enumerate([9, 1, 1, 1, 5, 1, 1])]
    parts = pre.split(ks, 2)
    assert sorted(k.name for p in parts for k in p) == sorted(k.name for k in ks)
    for p in parts:  # each worker takes its kernels in the job's order
        assert [int(k.name[1:]) for k in p] == sorted(int(k.name[1:]) for k in p)
    loads = [sum(k.seconds for k in p) for p in parts]
    assert max(loads) <= 10 and parts[0][0].name == "k0" and parts[1][0].name == "k1"


def test_the_plan_follows_the_job():
    config = MinHashConfig()
    full = pre.plan_for(config, jsonl_input=True, jsonl_output=True, pairs=True)
    names = [k.name for k in full]
    assert names[0] == "scan" and names[-1] == "copy_kept"
    assert "pairs_band" in names and "connect_band" not in names and "pairs_within" in names
    bare = [k.name for k in pre.plan_for(config, jsonl_input=False, jsonl_output=True, pairs=False)]
    assert "scan" not in bare and "copy_kept" not in bare and "connect_band" in bare and "pairs_within" not in bare
    assert pre.plan_for(MinHashConfig(verify="exact"), jsonl_input=True, jsonl_output=True, pairs=False) == ()
    assert pre.plan_for(SimHashConfig(weighting="idf"), jsonl_input=True, jsonl_output=True, pairs=False) == ()
    simhash = [k.name for k in pre.plan_for(SimHashConfig(), jsonl_input=True, jsonl_output=True, pairs=True)]
    assert "simhash_words_kernel" in simhash and "scan_table" in simhash and "minhash_words_kernel" not in simhash
    full += pre.plan_for(SimHashConfig(shingling=Shingling("char", 5)), jsonl_input=True, jsonl_output=True, pairs=True)
    for k in full:  # every signature is one numba reads back
        sig = k.signature()
        assert sig and all(isinstance(t, numba.types.Type) for t in sig) and repr(sig) == k.args


def test_the_scanner_is_planned_only_for_inputs_past_its_warmup():
    config = MinHashConfig()
    hot = SCAN_WARMUP.hot
    for size, planned in ((None, True), (hot + 1, True), (hot, False), (1000, False)):
        names = [
            k.name for k in pre.plan_for(config, jsonl_input=True, jsonl_output=True, pairs=True, input_bytes=size)
        ]
        assert ("scan" in names) == planned and "minhash_words_kernel" in names and names[-1] == "copy_kept"


class _Cold:
    """A dispatcher as numba shows one not compiled in this process, whose cache has no index."""

    def __init__(self, index_path):
        self.overloads = {}
        self._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(index_path)))


def test_warmup_takes_the_python_path_until_the_work_passes_hot_or_the_kernel_is_ready(tmp_path):
    cold = _Cold(tmp_path / "kernel.nbi")
    w = Warmup(cold, hot=25)
    assert [w.use_kernel(10), w.use_kernel(10), w.use_kernel(10), w.use_kernel(1)] == [False, False, True, True]
    w = Warmup(cold, hot=25)
    assert not w.use_kernel(10)
    (tmp_path / "kernel.nbi").write_bytes(b"")  # a subprocess cached it meanwhile
    assert w.use_kernel(10)
    w = Warmup(_Cold(tmp_path / "other.nbi"), hot=25)
    w.dispatcher.overloads["sig"] = object()  # compiled in this process
    assert w.use_kernel(10)
    w = Warmup(_Cold(tmp_path / "other.nbi"), hot=10**9)
    w.pin(True)
    assert w.use_kernel(1)
    w.pin(None)
    assert not w.use_kernel(1)
    assert Warmup(SimpleNamespace(overloads={}), hot=10**9).use_kernel(1)  # no cache to look at: the kernel


def _call_with_a_deadline(fn, seconds=300):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("value", fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the job waited for a subprocess that will never answer"
    return out["value"]


@pytest.mark.parametrize("command", [[sys.executable, "-c", "raise SystemExit(3)"], ["/nonexistent/python"]])
def test_a_subprocess_that_dies_or_cannot_start_leaves_the_kernel_to_the_job(monkeypatch, command):
    monkeypatch.setattr(pre, "_COMMAND", command)
    monkeypatch.setattr(pre, "cached", lambda dispatcher: False)
    parent = np.array([0, 0, 1, 2], dtype=np.int64)
    with pre.precompiled([ROOTS]) as n:
        assert n == 1
        got = _call_with_a_deadline(lambda: roots(parent))
    assert got.tolist() == [0, 0, 0, 0]
    assert "load_overload" not in vars(roots._cache)  # the hook is gone


def test_nothing_starts_on_a_warm_cache_or_when_turned_off(monkeypatch):
    roots(np.zeros(1, dtype=np.int64))  # cached now, if it was not
    with pre.precompiled([ROOTS]) as n:
        assert n == 0
    monkeypatch.setattr(pre, "cached", lambda dispatcher: False)
    monkeypatch.setenv("NEARDUP_PRECOMPILE", "0")
    with pre.precompiled([ROOTS]) as n:
        assert n == 0


def test_the_subprocess_reports_each_kernel(tmp_path):
    todo = [[ROOTS.module, ROOTS.name, ROOTS.args], ["unionfind", "roots", "(float32,)"], ["nosuch", "k", "()"]]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run(
        [*pre._COMMAND, json.dumps(todo)], capture_output=True, text=True, env=env, timeout=600, check=True
    )
    assert run.stdout.splitlines() == ["ok unionfind.roots", "failed unionfind.roots", "failed nosuch.k"]
    assert list((tmp_path / "cache").rglob("unionfind.roots-*.nbi"))


LISTEN = """
import sys
from numba.core import event
compiled = []
class L(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", L())
from neardup.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    print(sorted(set(compiled)), file=sys.stderr)
"""


@pytest.mark.slow
@pytest.mark.parametrize("method", ["minhash", "simhash"])
def test_the_readme_command_on_a_cold_cache_compiles_its_plan_in_subprocesses(tmp_path, method):
    """The README's first command on an empty cache (and the same with SimHash): the subprocesses
    compile every kernel the job calls (the job waits for those not done yet, and compiles nothing
    else; the JSONL scanner is not called on so small an input), the notice is shown; a second
    run, without subprocesses, finds everything cached and writes the same outputs."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    config = MinHashConfig() if method == "minhash" else SimHashConfig()
    outs = {}
    for tag, extra in (("pre", {}), ("lazy", {"NEARDUP_PRECOMPILE": "0"})):
        o = tmp_path / tag
        args = [
            "dedup",
            str(NEWS),
            "-o",
            str(o / "kept.jsonl"),
            "--clusters",
            str(o / "c.csv"),
            "--pairs",
            str(o / "p.csv"),
            "--method",
            method,
        ]
        run = subprocess.run(
            [sys.executable, "-c", LISTEN, *args], env={**env, **extra}, capture_output=True, text=True, timeout=900
        )
        assert run.returncode == 0, run.stderr
        outs[tag] = [(o / f).read_bytes() for f in ("kept.jsonl", "c.csv", "p.csv")]
        compiled = ast.literal_eval(run.stderr.strip().splitlines()[-1])
        if tag == "pre":
            assert "compiling kernels (first run only, about" in run.stderr
            plan = pre.plan_for(
                config, jsonl_input=True, jsonl_output=True, pairs=True, input_bytes=NEWS.stat().st_size
            )
            planned = {k.name for k in plan}
            assert "scan" not in planned and "scan" not in compiled
            assert compiled and set(compiled) <= planned  # planned ones waited for, none compiled besides
        else:
            assert compiled == []
    assert outs["pre"] == outs["lazy"]
