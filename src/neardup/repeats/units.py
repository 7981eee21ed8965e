"""Lines and paragraphs: their normalized 128-bit hashes, and which repeat.

A document's **lines** are its ``\\n``-separated pieces (a ``\\r`` before the ``\\n`` is
whitespace); its **paragraphs** are maximal runs of non-blank lines, each with the blank lines
after it (blank lines before the first paragraph form a unit of their own). A unit is compared
by its normalized content: the text normalized as everywhere in neardup (NFKC, case folding:
:func:`neardup.text.normalize.normalize`), then every run of whitespace collapsed to one space
and none at either end. Units with empty content (blank lines) are never counted nor removed.

Each unit's content is hashed to 128 bits (:func:`neardup._kernels.repeats.unit_hashes`); two
different contents share a hash with probability about ``N^2 / 2^129`` over ``N`` units
(below ``10^-20`` for ``N = 10^9``). The exact count table sorts the hashes
(:func:`repeated_units`), O(N log N) time and 24 bytes of memory a unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from .._kernels.repeats import count_groups, unit_hashes
from ..text.normalize import normalize


@dataclass(frozen=True)
class UnitBatch:
    """The units of consecutive documents: 128-bit hash ``(hi, lo)``, lines spanned, blank
    flag, and the units of each document (``per_doc``)."""

    hi: np.ndarray
    lo: np.ndarray
    lines: np.ndarray
    blank: np.ndarray
    per_doc: np.ndarray


def batch_units(texts, paragraphs: bool) -> UnitBatch:
    """The units of ``texts`` (one kernel call over their normalized UTF-8 bytes)."""
    encoded = []
    for t in texts:
        t = str(t)
        norm = normalize(t)
        if norm.count("\n") != t.count("\n"):  # never seen; per line keeps the line count exact
            norm = "\n".join(normalize(line) for line in t.split("\n"))
        encoded.append(norm.encode("utf-8", "surrogatepass"))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return UnitBatch(*unit_hashes(data, offsets, paragraphs))


def concat(batches: list[UnitBatch]) -> UnitBatch:
    if not batches:
        z = np.zeros(0, dtype=np.uint64)
        return UnitBatch(z, z, np.zeros(0, np.int32), np.zeros(0, bool), np.zeros(0, np.int64))
    return UnitBatch(*(np.concatenate([getattr(b, f) for b in batches]) for f in UnitBatch.__dataclass_fields__))


def repeated_units(units: UnitBatch, min_count: int, keep_first: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(remove, count, head)``: which units go, how many non-blank units share each one's
    content, and the first unit with it (itself for a blank one). A unit goes when its content
    occurs at least ``min_count`` times and it is not the first of them (with ``keep_first``).
    Blank units are never removed."""
    n = len(units.hi)
    live = np.flatnonzero(~units.blank)
    count = np.zeros(n, dtype=np.int64)
    head = np.arange(n, dtype=np.int64)
    remove = np.zeros(n, dtype=bool)
    if len(live):
        hi, lo = units.hi[live], units.lo[live]
        order = np.argsort(hi, kind="stable")
        c, h = count_groups(hi, lo, order)
        count[live] = c
        head[live] = live[h]
        gone = c >= min_count
        if keep_first:
            gone &= h != np.arange(len(live))
        remove[live] = gone
    return remove, count, head


def segments(text: str, lines: np.ndarray) -> list[tuple[int, int]]:
    """The character ranges of the units of ``text`` (``lines[u]`` lines each): a unit ends
    after the ``\\n`` that closes its last line (the last unit at the end of the text), so
    the units tile the text."""
    ends = list(accumulate(len(p) + 1 for p in text.split("\n")))  # each line with its \n
    out = []
    at = line = 0
    for n in lines.tolist():
        line += n
        end = min(ends[line - 1], len(text))
        out.append((at, end))
        at = end
    return out
