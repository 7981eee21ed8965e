"""Compiling the kernels a job will need in two subprocesses at once, on a cold cache.

A job on a cold numba cache compiles each kernel it uses when it first calls it, one after the
other in the one process, while the other core idles: that is most of a first run's time. When
the CLI knows which kernels a job will call and with which argument types (:func:`plan_for`:
what such jobs compile, read off numba's ``numba:compile`` events; ``tests/test_precompile.py``
checks that the README's first command compiles nothing else), and finds some of them not
cached yet, :func:`precompiled` starts :data:`HELPERS` subprocesses (``python -m
neardup._kernels.precompile``) that compile them into the same cache, shared out by their
compile time, each in the order the job calls them (numba writes each cache file under a
temporary name and renames it, so processes may fill one cache at once). The job goes on
meanwhile; when it calls a planned kernel, it waits for the subprocess compiling it to say it
is done, then loads it from the cache instead of compiling it a second time.

Nothing depends on the plan being right: a kernel the plan lacks, or planned with other
argument types, compiles in the job as before; a subprocess that fails or dies leaves its
kernels to the job (waiting ends when its output does). While the job waits for a planned
kernel it raises numba's ``numba:compile`` event, so the compile notice and the tests that
watch what a job compiles see it as if the job compiled it. ``NEARDUP_PRECOMPILE=0`` turns
this off.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from .warmup import cached

__all__ = ["HELPERS", "Kernel", "plan_for", "precompiled", "split"]

HELPERS = 2
"""Subprocesses compiling at once (the 2 cores the first-run target is set for)."""

_COMMAND = [sys.executable, "-m", "neardup._kernels.precompile"]


@dataclass(frozen=True)
class Kernel:
    """A kernel of this package (``module`` under ``neardup._kernels``, ``name``) for one tuple of
    argument types, written as numba writes them (``args``, evaluated in :mod:`numba.core.types`),
    with its compile seconds on a cold cache (``seconds``, CPU time measured on a loaded machine:
    only their proportions matter, to share the work out)."""

    module: str
    name: str
    args: str
    seconds: float

    @property
    def key(self) -> str:
        return f"{self.module}.{self.name}"

    def dispatcher(self):
        return getattr(importlib.import_module(f"neardup._kernels.{self.module}"), self.name)

    def signature(self) -> tuple:
        from numba.core import types

        return tuple(eval(self.args, {**vars(types), "bool": types.boolean}))  # our constant strings


_k = Kernel


_U8 = "Array(uint8, 1, 'C', False, aligned=True)"
_U8R = "Array(uint8, 1, 'C', True, aligned=True)"
_I64 = "Array(int64, 1, 'C', False, aligned=True)"
_F64 = "Array(float64, 1, 'C', False, aligned=True)"
_U64 = "Array(uint64, 1, 'C', False, aligned=True)"
_U64_2 = "Array(uint64, 2, 'C', False, aligned=True)"
_U32_2 = "Array(uint32, 2, 'C', False, aligned=True)"
_B = "Array(bool, 1, 'C', False, aligned=True)"
_BR = "Array(bool, 1, 'C', True, aligned=True)"

READ_JSONL = (_k("jsonl", "scan", f"({_U8R}, {_U8R}, {_U8R}, {_U8})", 5.3),)
PACKED_TEXTS = (_k("jsonl", "gather_spans", f"({_U8R}, {_I64}, {_I64}, {_BR}, {_U8}, {_I64}, {_B}, {_I64})", 0.5),)
"""The MinHash plan's reading of scanned texts as spans (:class:`neardup.text.utf8.PackedTexts`)."""
PACKED_KEYS = (_k("exact", "lowered_keys_kernel", f"({_U8R}, {_I64}, {_U64_2})", 0.6),)
"""Its exact pre-pass keys of those spans, case folded as read."""
EXACT_PREPASS = (
    _k("shingles", "lower_ascii_inplace", f"({_U8},)", 0.1),
    _k("exact", "keys_kernel", f"({_U8R}, {_I64}, {_U8}, bool, {_U64_2})", 1.5),
    _k("exact", "admit_kernel", f"({_U64_2}, {_I64}, {_U64_2}, {_B}, int64, {_I64})", 0.3),
)
_SIGN = f"({_U8R}, {_I64}, {_I64}, {_U8}, int64, int64, bool, {_U64}, {_U64}, {_U32_2}, {_I64})"
MINHASH_WORDS = (
    _k("minhash", "permutations", "(uint64, int64)", 0.2),
    _k("minhash", "minhash_words_kernel", _SIGN, 5.7),
)
MINHASH_CHARS = (
    _k("minhash", "permutations", "(uint64, int64)", 0.2),
    _k("minhash", "minhash_chars_kernel", _SIGN, 5.7),
)
BANDS = (
    _k("lsh", "band_keys_kernel", f"({_U32_2}, int64, int64, {_U64_2})", 0.3),
    _k("sorting", "radix_sort_with", f"({_U64}, {_I64})", 0.5),
    _k("candidates", "bucket_bounds", f"({_U64},)", 0.2),
)
CONNECT = (
    _k(
        "candidates",
        "connect_band",
        f"({_I64}, {_I64}, {_I64}, {_I64}, int64, float64, int64, {_U32_2}, {_U64}, {_I64}, {_I64})",
        1.9,
    ),
)
PAIRS = (
    _k(
        "candidates",
        "pairs_band",
        f"(int64, {_U64_2}, {_I64}, {_I64}, {_I64}, {_I64}, {_I64}, {_I64}, {_F64}, int64, int64, float64, int64, "
        f"{_U32_2}, {_U64}, {_I64}, {_I64})",
        1.9,
    ),
)
ROOTS = (_k("unionfind", "roots", f"({_I64},)", 0.3),)
EXACT_PAIRS = (
    _k("exact", "pairs_within", f"({_I64}, {_I64}, {_I64}, int64)", 0.2),
    _k("exact", "cross", f"({_I64}, {_I64}, {_I64}, {_I64}, {_F64})", 0.5),
)
SIMILARITY = (
    _k(
        "candidates",
        "similarity_rows",
        f"({_I64}, {_I64}, int64, float64, int64, {_U32_2}, {_U64}, {_I64}, {_I64})",
        0.4,
    ),
)
WRITE_JSONL = (_k("lines", "copy_kept", f"({_U8R}, {_I64}, {_B}, int64, {_U8})", 0.3),)
_FINGERPRINT = (
    f"({_U8R}, {_I64}, {_U8}, int64, int64, bool, {_U64}, bool, {_U64}, {_I64}, {_I64}, int64, int64, {_U64_2}, {_I64})"
)
SIMHASH_WORDS = (
    _k("simhash", "simhash_salt_array", "(uint64, int64)", 0.3),
    _k("simhash", "simhash_words_kernel", _FINGERPRINT, 6.5),
)
SIMHASH_CHARS = (
    _k("simhash", "simhash_salt_array", "(uint64, int64)", 0.3),
    _k("simhash", "simhash_chars_kernel", _FINGERPRINT, 6.5),
)
HAMMING_SEARCH = (
    _k("sorting", "radix_argsort_rows", f"({_U64_2},)", 1.7),
    _k("sorting", "unique_from_order", f"({_U64_2}, {_I64})", 0.4),
    _k("hamming", "table_entries", f"({_U64_2}, {_I64}, {_I64}, int64, int64, int64, {_U64})", 0.5),
    _k("sorting", "radix_sort_bits", f"({_U64}, int64, int64)", 0.6),
    _k("hamming", "scan_table", f"({_U64}, int64, {_U64_2}, int64, int64, {_U64}, {_I64}, {_I64})", 1.9),
    _k("unionfind", "union_edges", f"({_I64}, {_I64}, {_I64})", 0.3),
    _k("unionfind", "roots", f"({_I64},)", 0.3),
    _k("hamming", "expand", f"({_I64}, {_I64}, Array(int32, 1, 'C', False, aligned=True), {_I64}, {_I64})", 0.3),
)


def plan_for(
    config, *, jsonl_input: bool, jsonl_output: bool, pairs: bool, input_bytes: int | None = None
) -> tuple[Kernel, ...]:
    """The kernels a dedup job with ``config`` calls, in the order it calls them, as far as they
    are known: for a MinHash job of the default sketch and verification, or a SimHash job of
    count weights and the default verification, reading JSON Lines (the scanner only when the
    inputs hold ``input_bytes``, if known, of at least its warm-up: below that it is not called,
    :data:`neardup._kernels.jsonl.SCAN_WARMUP`), its exact pre-pass if on, the method's kernels,
    writing JSON Lines read from JSON Lines; other jobs have no plan (empty: they compile in the
    one process as before)."""
    from .jsonl import SCAN_WARMUP

    scanned = jsonl_input and (input_bytes is None or input_bytes > SCAN_WARMUP.hot)
    kernels: list[Kernel] = list(READ_JSONL) if scanned else []
    method = type(config).__name__
    default_minhash = (
        method == "MinHashConfig"
        and getattr(config, "sketch", None) == "classic"
        and getattr(config, "verify", None) == "signature"
    )
    default_simhash = (
        method == "SimHashConfig"
        and getattr(config, "weighting", None) == "count"
        and getattr(config, "verify", None) == "signature"
    )
    if not (default_minhash or default_simhash):
        return ()
    if default_minhash and scanned:
        kernels += PACKED_TEXTS
    kernels += EXACT_PREPASS if config.exact_prepass else ()
    if default_minhash and scanned and config.exact_prepass and config.shingling.casefold:
        kernels += PACKED_KEYS
    chars = config.shingling.kind == "char"
    if default_minhash:
        kernels += MINHASH_CHARS if chars else MINHASH_WORDS
        kernels += BANDS + (PAIRS if pairs else CONNECT) + ROOTS
        kernels += (EXACT_PAIRS if pairs and config.exact_prepass else ()) + SIMILARITY
    else:
        kernels += (SIMHASH_CHARS if chars else SIMHASH_WORDS) + HAMMING_SEARCH
        kernels += EXACT_PAIRS if pairs and config.exact_prepass else ()
    if jsonl_input and jsonl_output:
        kernels += WRITE_JSONL
    return tuple(kernels)


def split(kernels: Sequence[Kernel], parts: int) -> list[list[Kernel]]:
    """``kernels`` shared out to ``parts`` workers, each kernel in turn to the one with the least
    work so far (so each gets its kernels in the order of ``kernels``, and the work evens out)."""
    out: list[list[Kernel]] = [[] for _ in range(parts)]
    load = [0.0] * parts
    for k in kernels:
        i = min(range(parts), key=lambda j: (load[j], j))
        out[i].append(k)
        load[i] += max(k.seconds, 0.01)
    return [o for o in out if o]


class _Helpers:
    """The subprocesses compiling ``parts`` (lists of kernels) and, per kernel, an event set when
    its subprocess said it is done or ended."""

    def __init__(self, parts: list[list[Kernel]], env: dict) -> None:
        import json

        self.done = {k.key: threading.Event() for part in parts for k in part}
        self.procs = []
        self.threads = []
        for part in parts:
            arg = json.dumps([[k.module, k.name, k.args] for k in part])
            try:
                proc = subprocess.Popen(
                    [*_COMMAND, arg],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    text=True,
                )
            except OSError:
                for k in part:
                    self.done[k.key].set()  # the job compiles them
                continue
            self.procs.append((proc, part))
            thread = threading.Thread(target=self._follow, args=(proc, part), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _follow(self, proc, part: list[Kernel]) -> None:
        try:
            for line in proc.stdout:
                event = self.done.get(line.strip().partition(" ")[2])
                if event is not None:
                    event.set()
        except (OSError, ValueError):  # the pipe broke or was closed: nothing more to hear
            pass
        finally:
            for k in part:
                self.done[k.key].set()

    def stop(self) -> None:
        """End the subprocesses: one that compiled all its kernels is let exit, others killed."""
        for proc, part in self.procs:
            if all(self.done[k.key].is_set() for k in part):
                with suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for thread in self.threads:  # each ends at the end of its pipe, the subprocess being gone
            thread.join(timeout=10)
        for proc, _ in self.procs:
            if not any(t.is_alive() for t in self.threads):
                proc.stdout.close()


def _wait_then_load(cache, kernel: Kernel, dispatcher, done: threading.Event):
    """A ``load_overload`` for ``cache`` (numba's cache of ``dispatcher``) that first waits for a
    subprocess compiling ``kernel``, raising ``numba:compile`` meanwhile."""
    from numba.core import event

    load = cache.load_overload
    planned = kernel.signature()

    def load_overload(sig, target_context):
        if done.is_set() or tuple(sig) != planned:
            return load(sig, target_context)
        data = {"dispatcher": dispatcher, "args": tuple(sig), "return_type": None}
        with event.trigger_event("numba:compile", data=data):
            done.wait()
            return load(sig, target_context)

    return load_overload


@contextmanager
def precompiled(kernels: Sequence[Kernel], parts: int = HELPERS) -> Iterator[int]:
    """While the block runs, ``parts`` subprocesses compile those of ``kernels`` that are not
    cached yet, and a call of one of them waits for it (see the module docstring); yields how
    many kernels the subprocesses compile (0: none was needed, or ``NEARDUP_PRECOMPILE=0``).
    Any failure to set this up leaves the job to compile as it would without."""
    helpers = None
    hooked = []
    try:
        if os.environ.get("NEARDUP_PRECOMPILE", "1") != "0" and kernels:
            todo = [k for k in dict.fromkeys(kernels) if not cached(k.dispatcher())]
            if todo:
                package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
                path = os.environ.get("PYTHONPATH")
                env = {**os.environ, "PYTHONPATH": package + (os.pathsep + path if path else "")}
                helpers = _Helpers(split(todo, parts), env)
                for k in todo:
                    dispatcher = k.dispatcher()
                    cache = dispatcher._cache
                    cache.load_overload = _wait_then_load(cache, k, dispatcher, helpers.done[k.key])
                    hooked.append(cache)
    except Exception:  # numba's internals changed, no subprocess: the job compiles as before
        pass
    try:
        yield len(hooked)
    finally:
        for cache in hooked:
            vars(cache).pop("load_overload", None)
        if helpers is not None:
            helpers.stop()


def _main(argv: list[str]) -> int:
    """Compile the kernels ``[[module, name, args], ...]`` (JSON) into the cache, printing
    ``ok MODULE.NAME`` (or ``failed MODULE.NAME``) after each."""
    import json

    for module, name, args in json.loads(argv[0]):
        kernel = Kernel(module, name, args, 0.0)
        try:
            kernel.dispatcher().compile(kernel.signature())
            status = "ok"
        except Exception:  # the job compiles it then, and reports any error
            status = "failed"
        print(status, kernel.key, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
