"""Normalized edit similarity of texts, over word tokens or characters.

The edit similarity of token sequences ``a`` and ``b`` is

    sim(a, b) = 1 - d(a, b) / max(|a|, |b|)        (1.0 when both are empty)

with ``d`` the Levenshtein distance (unit-cost insertions, deletions and substitutions;
Levenshtein 1966). It is the syntactic similarity the near-duplicate literature starts from
(Broder 1997 approximates it by shingle resemblance). Tokens are the words of
:func:`neardup.text.normalize.tokenize` (as 64-bit hashes, the tokenizer kernel's, so two equal
words are one id) for ``level="word"``, or the characters of the normalized text for
``level="char"``.

The distance comes from `rapidfuzz <https://github.com/rapidfuzz/RapidFuzz>`_ (Hyyrö's
bit-parallel algorithm, banded with the largest distance that still reaches ``score_cutoff``,
so a pair that cannot reach the threshold stops early). :func:`edit_similarities` runs many
pairs on worker threads (``rapidfuzz.process.cpdist``, which releases the GIL).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .normalize import normalize, tokenize
from .shingles import Shingling, shingle_batch

__all__ = [
    "EDIT_LEVELS",
    "Diff",
    "edit_diff",
    "edit_similarities",
    "edit_similarity",
    "edit_tokens",
    "token_sequences",
]

EDIT_LEVELS = ("word", "char")


def require_rapidfuzz() -> None:
    """Raise ImportError (naming the ``[edit]`` extra) when rapidfuzz is not installed: a job
    that verifies by edit similarity checks it before it reads anything."""
    _rapidfuzz()


def _rapidfuzz():
    """rapidfuzz's Levenshtein and ``cpdist`` (the ``[edit]`` extra), imported on first use."""
    try:
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cpdist
    except ImportError:  # pragma: no cover - depends on the installation
        raise ImportError("edit similarity needs rapidfuzz: pip install 'neardup[edit]'") from None
    return Levenshtein, cpdist


def _check_level(level: str) -> None:
    if level not in EDIT_LEVELS:
        raise ValueError(f"level must be one of {EDIT_LEVELS}, got {level!r}")


def edit_tokens(
    texts: Sequence[str], level: str = "word", *, nfkc: bool = True, casefold: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of many texts as CSR ``(ids, offsets int64[n + 1])``, in text order.

    ``level="word"``: uint64 hashes of the word tokens (the shingling kernel with n = 1, repeats
    kept); ``level="char"``: the uint32 code points of the normalized text.

    >>> ids, off = edit_tokens(["a b a", "b"])
    >>> off.tolist(), bool(ids[0] == ids[2]), bool(ids[1] == ids[3])
    ([0, 3, 4], True, True)
    """
    _check_level(level)
    if level == "word":
        return shingle_batch(list(texts), Shingling("word", 1, nfkc=nfkc, casefold=casefold), unique=False)
    norm = [normalize(t, nfkc=nfkc, casefold=casefold) for t in texts]
    offsets = np.zeros(len(norm) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in norm], out=offsets[1:])
    ids = np.frombuffer("".join(norm).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return ids.copy(), offsets


def token_sequences(ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> list:
    """The ``rows`` of a CSR token array in the form rapidfuzz compares fastest: a ``str`` of
    code points (char level, uint32 ids) or a list of ints (word level, uint64 ids)."""
    out = []
    char = ids.dtype == np.uint32
    for r in rows.tolist():
        seg = ids[offsets[r] : offsets[r + 1]]
        out.append(seg.tobytes().decode("utf-32-le", "surrogatepass") if char else seg.tolist())
    return out


def edit_similarities(a: Sequence, b: Sequence, threshold: float = 0.0, workers: int = 1) -> np.ndarray:
    """sim(a[i], b[i]) for every i (float64), 0.0 where it is below ``threshold`` (the
    computation stops early there). Runs on ``workers`` threads."""
    if len(a) != len(b):
        raise ValueError(f"a and b must have the same length, got {len(a)} and {len(b)}")
    if not len(a):
        return np.empty(0, dtype=np.float64)
    levenshtein, cpdist = _rapidfuzz()
    # rapidfuzz (3.14) refuses pairs exactly at a normalized cutoff (d = 1 of 5 words at 0.8, and
    # still at 0.8 - 1e-9): ask for a little less, then apply ">= threshold" to the values themselves
    out = cpdist(
        a,
        b,
        scorer=levenshtein.normalized_similarity,
        score_cutoff=max(0.0, threshold - 1e-6),
        workers=max(1, int(workers)),
        dtype=np.float64,
    )
    out = np.asarray(out, dtype=np.float64)
    out[out < threshold] = 0.0
    # rapidfuzz gives 0 for two empty sequences (0/0); by the definition above they are equal
    for i in np.flatnonzero(out == 0).tolist():
        if not len(a[i]) and not len(b[i]):
            out[i] = 1.0
    return np.asarray(out, dtype=np.float64)


def edit_similarity(a: str, b: str, level: str = "word", *, nfkc: bool = True, casefold: bool = True) -> float:
    """Normalized edit similarity 1 - d / max(|a|, |b|) of two texts (see the module docs).

    >>> edit_similarity("the cat sat on the mat", "the cat sat on a mat")
    0.8333333333333334
    >>> edit_similarity("abcd", "abed", level="char")
    0.75
    """
    ids, off = edit_tokens([a, b], level, nfkc=nfkc, casefold=casefold)
    sa, sb = token_sequences(ids, off, np.arange(2))
    return float(edit_similarities([sa], [sb])[0])


@dataclass(frozen=True)
class Diff:
    """One aligned difference: ``tag`` is ``"insert"``, ``"delete"`` or ``"replace"``; ``old``
    and ``new`` are the tokens of the first and second text it covers."""

    tag: str
    old: str
    new: str


def edit_diff(
    a: str, b: str, level: str = "word", *, nfkc: bool = True, casefold: bool = True
) -> tuple[float, list[Diff]]:
    """The edit similarity of two texts and the differences of one optimal alignment (the words,
    or characters, inserted, deleted and replaced), from rapidfuzz's Levenshtein opcodes.

    >>> sim, diffs = edit_diff("the cat sat on the mat", "the cat sat on a mat today")
    >>> [(d.tag, d.old, d.new) for d in diffs]
    [('replace', 'the', 'a'), ('insert', '', 'today')]
    """
    _check_level(level)
    sim = edit_similarity(a, b, level, nfkc=nfkc, casefold=casefold)
    if level == "word":
        ta = tokenize(a, nfkc=nfkc, casefold=casefold)
        tb = tokenize(b, nfkc=nfkc, casefold=casefold)
        join = " ".join
    else:
        ta = list(normalize(a, nfkc=nfkc, casefold=casefold))
        tb = list(normalize(b, nfkc=nfkc, casefold=casefold))
        join = "".join
    diffs = [
        Diff(op.tag, join(ta[op.src_start : op.src_end]), join(tb[op.dest_start : op.dest_end]))
        for op in _rapidfuzz()[0].opcodes(ta, tb)
        if op.tag != "equal"
    ]
    return sim, diffs
