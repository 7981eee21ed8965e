"""Kernels compiled for other CPU targets give the host build's values bit for bit.

numba compiles for the host CPU by default; ``NUMBA_CPU_NAME`` with an empty ``NUMBA_CPU_FEATURES``
compiles for a named CPU's own feature set instead. The classic MinHash fold differs by target
(:func:`neardup._kernels.minhash.fold_set`: permutation-major in 64-bit lanes with AVX-512DQ,
in 32-bit lanes on AVX2 without it, shingle-major on the SSE2 baseline), and the shingling
kernels' first passes take other paths without AVX-512 VBMI2 (:data:`neardup._kernels.intrinsics.SIMD64`,
:data:`~neardup._kernels.intrinsics.PACK8` on AVX2, the byte loop on SSE2). Each target runs in
a subprocess on generated texts and hash sets; its signatures, and the first passes' buffers on
texts made for the 64-byte steps' edges, must equal this process's.
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
from neardup._kernels import intrinsics, minhash
from neardup._kernels.charclass import CHAR_CLASS
from neardup._kernels.shingles import _char_units, _word_tokens
from neardup.methods.minhash.sketch import MinHasher
from neardup.text.shingles import Shingling

def edge_texts(rng):
    # for the first passes' 64-byte steps: separators only, runs of spaces across the 8-, 32-
    # and 64-byte edges, upper case, lengths about 32 and 64, ASCII with non-ASCII
    texts = ["".join(map(chr, range(33))) + "\x7f" * 40, " " * 200, "\t\n" * 70]
    base = "Word" * 60 + "the QUICK Brown fox! 9x, " * 10
    for edge in (8, 31, 32, 33, 63, 64, 65, 128):
        for run in (1, 2, 9, 40):
            t = base[: max(edge - run, 0)] + " " * (2 * run) + base[edge + run :]
            texts += [t, t[:96]]
    for length in (31, 32, 33, 63, 64, 65, 127, 128, 129, 300):
        texts += [base[:length], base[7 : 7 + length].upper(), "".join(rng.choice(list("aZ9 .,\t\x7f-"), length))]
    for at in (0, 1, 30, 63, 64, 65, 100, 129):
        for rare in ("é", "京都", "\u00a0", "\u200b", "É"):
            texts.append(base[:at] + rare + base[at:200])
    return texts

def first_passes(texts):
    # every text's tokens and character streams from the first passes, one int64 row each:
    # [lowbit, units, length, unit starts, bytes]
    rows = []
    for text in texts:
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        size = data.shape[0]
        for lowbit in (0, 32):
            buf = np.zeros(2 * size + 88, dtype=np.uint8)
            tok = np.zeros(size + 34, dtype=np.int64)
            nt, blen = _word_tokens(data, 0, size, CHAR_CLASS, buf, tok, np.uint8(lowbit))
            rows.append(np.concatenate([[lowbit, nt, blen], tok[: nt + 1], buf[: max(blen, 0)]]))
            for strip in (False, True):
                buf[:] = 0
                nch, blen = _char_units(data, 0, size, CHAR_CLASS, strip, buf, tok, np.uint8(lowbit))
                starts = tok[: nch + 1] if nch != blen else []
                rows.append(np.concatenate([[lowbit, nch, blen], starts, buf[:blen]]))
    return np.concatenate(rows).astype(np.int64)

def values():
    rng = np.random.default_rng(19)
    words = ["alpha", "Beta", "gamma", "delta", "x", "Émile", "naïve", "ÆSIR", "straße", "42", "q-r", "z"]
    texts = [" ".join(rng.choice(words, rng.integers(0, 400))) for _ in range(40)]
    texts += ["", "a", "a b c d e", "x " * 3000, "The  quick\tbrown FOX.\n" * 50]
    edges = edge_texts(rng)
    texts += edges
    out = {"first-passes": first_passes(edges)}
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
    steps = np.array([intrinsics.SIMD64, intrinsics.PACK8])
    np.savez(sys.argv[1], wide=np.array(minhash.WIDE_MULTIPLY), steps=steps, **values())
"""


def _host_features() -> set[str]:
    import llvmlite.binding as ll

    return set(ll.get_host_cpu_features().flatten().split(","))


@pytest.mark.parametrize(
    ("target", "needs", "wide", "pack8"), [("haswell", "+avx2", False, True), ("x86-64", "+sse2", True, False)]
)
@pytest.mark.slow
def test_target_build_gives_the_host_build_values(tmp_path, target, needs, wide, pack8):
    """The ``haswell`` (AVX2: the 32-bit-lane fold, first passes packed with pshufb) and
    ``x86-64`` (SSE2: the 64-bit fold, byte-by-byte first passes) builds give the first passes'
    tokens and character streams and sign texts (word and character shingles, ASCII and not, empty and long) and hash sets
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
    assert got["steps"].tolist() == [False, pack8]  # no vpcompressb; pshufb steps on AVX2 only
    here = child.values()
    for name, expected in here.items():
        assert np.array_equal(got[name], expected), name
