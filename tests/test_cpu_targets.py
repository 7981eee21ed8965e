"""Kernels compiled for other CPU targets give the host build's values bit for bit.

numba compiles for the host CPU by default; ``NUMBA_CPU_NAME`` with an empty ``NUMBA_CPU_FEATURES``
compiles for a named CPU's own feature set instead. The classic MinHash fold differs by target
(:func:`neardup._kernels.minhash.fold_set`: permutation-major in 64-bit lanes with AVX-512DQ,
in 32-bit lanes on AVX2 without it, shingle-major on the SSE2 baseline), and the shingling
kernels take other paths without AVX-512 (:data:`neardup._kernels.intrinsics.SIMD64`). Each
target runs in a subprocess on generated texts and hash sets; its signatures must equal this
process's.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

CHILD = r"""
import sys
import numpy as np
from neardup._kernels import minhash
from neardup.methods.minhash.sketch import MinHasher
from neardup.text.shingles import Shingling

def values():
    rng = np.random.default_rng(19)
    words = ["alpha", "Beta", "gamma", "delta", "x", "Émile", "naïve", "ÆSIR", "straße", "42", "q-r", "z"]
    texts = [" ".join(rng.choice(words, rng.integers(0, 400))) for _ in range(40)]
    texts += ["", "a", "a b c d e", "x " * 3000, "The  quick\tbrown FOX.\n" * 50]
    out = {}
    for kind, n in (("word", 5), ("char", 5), ("word", 1)):
        for k in (7, 64, 128, 200):
            mh = MinHasher(num_perm=k, seed=3, shingling=Shingling(kind, n))
            out[f"{kind}{n}-{k}"] = mh.sign(texts).values
    lengths = rng.integers(0, 3000, 25)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    hashes = rng.integers(0, 2**64, offsets[-1], dtype=np.uint64, endpoint=False)
    hashes[:4] = [0, 2**64 - 1, 2**32 - 1, 2**32]
    for k in (1, 8, 24, 131, 256):
        out[f"hashed-{k}"] = MinHasher.for_sets(k, seed=5).sign_hashed(hashes, offsets).values
    return out

if __name__ == "__main__":
    np.savez(sys.argv[1], wide=np.array(minhash.WIDE_MULTIPLY), **values())
"""


def _host_features() -> set[str]:
    import llvmlite.binding as ll

    return set(ll.get_host_cpu_features().flatten().split(","))


@pytest.mark.parametrize(("target", "needs", "wide"), [("haswell", "+avx2", False), ("x86-64", "+sse2", True)])
def test_target_build_gives_the_host_build_values(tmp_path, target, needs, wide):
    """The ``haswell`` (AVX2: the 32-bit-lane fold) and ``x86-64`` (SSE2: the 64-bit fold)
    builds sign texts (word and character shingles, ASCII and not, empty and long) and hash sets
    (K from 1 to 256, not all multiples of 8) exactly as the host build does."""
    if needs not in _host_features():
        pytest.skip(f"this CPU cannot run {target} code")
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = {**os.environ, "NUMBA_CPU_NAME": target, "NUMBA_CPU_FEATURES": ""}
    subprocess.run([sys.executable, str(script), str(tmp_path / "out.npz")], env=env, check=True, timeout=1800)
    sys.path.insert(0, str(tmp_path))
    try:
        import child
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("child", None)
    got = np.load(tmp_path / "out.npz")
    assert bool(got["wide"]) is wide
    here = child.values()
    for name, expected in here.items():
        assert np.array_equal(got[name], expected), name
