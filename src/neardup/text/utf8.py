"""A huge text held as its UTF-8 bytes, never as a Python ``str`` (issue 18).

A 200 MB JSON line whose text field has no escape holds the text's UTF-8 bytes as they are: the
reader (:mod:`neardup.io.jsonl`) can hand them on as a view of the line instead of decoding a
``str`` that the sketching kernels would only encode back into the same bytes (a ``str`` and
its bytes at once: twice the document). :class:`Utf8Text` is that view. The reader makes one
only when the job said its stages take them (a MinHash plan on the local engine:
:attr:`neardup.core.plan.Plan.utf8_texts`); everything else gets ``str`` as always.
"""

from __future__ import annotations

import codecs
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from functools import cache
from itertools import accumulate, pairwise

import numpy as np

__all__ = ["UTF8_TEXT_MIN", "PackedTexts", "TextRuns", "Utf8Text", "stable_table"]

UTF8_TEXT_MIN = 1 << 23
"""Texts of at least this many bytes are read as :class:`Utf8Text` where the job allows it."""

_WINDOW = 1 << 20


class Utf8Text:
    """The text whose UTF-8 bytes are ``data`` (read-only, checked to be valid UTF-8).

    ``len()`` is its length in characters and ``isascii()`` says whether every byte is ASCII,
    both found while checking the bytes; ``str()`` decodes it (the whole ``str``: for the
    consumers that need one, at the memory cost this class avoids).

    >>> t = Utf8Text(memoryview("naïve text".encode()))
    >>> len(t), t.isascii(), str(t), len(t.data)
    (10, False, 'naïve text', 11)
    >>> Utf8Text(memoryview(b"bad \\xff"))
    Traceback (most recent call last):
    ...
    UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 4: invalid start byte
    """

    __slots__ = ("_ascii", "_chars", "data")

    def __init__(self, data: memoryview) -> None:
        data = memoryview(data).cast("B").toreadonly()
        chars = at = 0
        while at < len(data):  # a window decoded at a time: no str of the whole, no bytes copy
            end = at + max(_WINDOW, 4)  # room for a whole character
            text, used = codecs.utf_8_decode(data[at:end], "strict", end >= len(data))
            chars += len(text)
            at += used
        self.data = data
        self._chars = chars
        self._ascii = chars == len(data)

    def __len__(self) -> int:
        return self._chars

    def isascii(self) -> bool:
        return self._ascii

    def array(self) -> np.ndarray:
        """The bytes as a read-only ``uint8`` array (no copy), as the kernels read texts."""
        return np.frombuffer(self.data, dtype=np.uint8)

    def __str__(self) -> str:
        return str(self.data, "utf-8")

    def __repr__(self) -> str:
        return f"Utf8Text({len(self.data):,} bytes)"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Utf8Text):
            return self.data == other.data
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def as_str(text) -> str:
    """``text`` as a ``str`` (decoding a :class:`Utf8Text`)."""
    return text if type(text) is str else str(text)


_STABLE_RANGES = ((0x80, 0x250), (0x370, 0x530), (0x2000, 0x20D0))
"""Where :func:`stable_table` looks: Latin-1 Supplement and Latin Extended-A/B, Greek and
Cyrillic, General Punctuation to Currency Symbols. No character there of combining class 0 is the
second of a canonical composition (those are combining marks, Hangul jamo and a few Indic vowel
signs, all elsewhere), which the argument of :func:`stable_table` needs."""


@cache
def stable_table() -> np.ndarray:
    """bool[c]: the code point ``c`` is ASCII, or lies in :data:`_STABLE_RANGES` with combining
    class 0, NFKC form itself and case folding itself (``chr(c).casefold() == chr(c)``).

    A text of such characters is its own NFKC form and its own case fold up to ASCII case, so
    ``_encode_lean`` (:mod:`neardup.text.shingles`) gives its UTF-8 bytes as they are: NFKD
    decomposes each character apart, reordering moves only combining marks, which stay behind
    their own starter (the next character is a starter), and recomposition rebuilds each
    character, since no starter of one can join the one before it (no starter here, nor ASCII, is
    a composition's second character); case folding maps each character alone.
    """
    table = np.zeros(_STABLE_RANGES[-1][1], dtype=np.bool_)
    table[:0x80] = True
    for lo, hi in _STABLE_RANGES:
        for c in range(lo, hi):
            ch = chr(c)
            table[c] = (
                unicodedata.category(ch) != "Cn"
                and unicodedata.combining(ch) == 0
                and unicodedata.normalize("NFKC", ch) == ch
                and ch.casefold() == ch
            )
    table.flags.writeable = False
    return table


class PackedTexts(Sequence):
    """Texts held as spans of one buffer of UTF-8 bytes, not as ``str`` objects (issue 19).

    Text ``i`` is ``data[offsets[i]:offsets[i + 1]]`` (``offsets`` need not start at 0: a slice
    shares the buffer), ``stable[i]`` says whether it needs no NFKC nor case folding beyond ASCII
    case (:func:`stable_table`; every ASCII text does) and ``chars[i]`` is its length in
    characters. The threaded JSONL reader packs the texts of a block this way for the MinHash
    plan (:attr:`neardup.core.plan.Plan.utf8_texts`), whose sketch reads the bytes directly
    (:func:`neardup.text.shingles.encode_packed`); indexing decodes one text to ``str`` for the
    consumers that need one.

    >>> t = PackedTexts.gather(np.frombuffer("xxnaïve ab ß".encode(), dtype=np.uint8), [2, 9, 12], [8, 11, 14])
    >>> len(t), t[0], t[1], t.stable.tolist(), t.char_lengths().tolist()
    (3, 'naïve', 'ab', [True, True, False], [5, 2, 1])
    >>> t[1:].offsets.tolist(), list(t[1:])
    ([6, 8, 10], ['ab', 'ß'])
    """

    __slots__ = ("chars", "data", "offsets", "stable")

    def __init__(self, data: np.ndarray, offsets: np.ndarray, stable: np.ndarray, chars: np.ndarray) -> None:
        self.data = data
        self.offsets = offsets
        self.stable = stable
        self.chars = chars

    @classmethod
    def gather(cls, src: np.ndarray, starts, ends) -> PackedTexts:
        """The texts ``src[starts[i]:ends[i]]`` (valid UTF-8) copied into a buffer of their own
        (one nogil kernel call)."""
        from .._kernels.jsonl import gather_spans

        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        n = len(starts)
        out = np.empty(int((ends - starts).sum()), dtype=np.uint8)
        offsets = np.empty(n + 1, dtype=np.int64)
        stable = np.empty(n, dtype=np.bool_)
        chars = np.empty(n, dtype=np.int64)
        src = src.view()
        src.flags.writeable = False  # one compiled kernel: read-only bytes, as the scanner's input
        gather_spans(src, starts, ends, stable_table(), out, offsets, stable, chars)
        out.flags.writeable = False  # the sketch and key kernels are compiled for read-only bytes
        return cls(out, offsets, stable, chars)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            a, b, step = i.indices(len(self))
            if step != 1:
                return [self[k] for k in range(a, b, step)]
            b = max(a, b)
            return PackedTexts(self.data, self.offsets[a : b + 1], self.stable[a:b], self.chars[a:b])
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text index out of range")
        return str(memoryview(self.data)[self.offsets[i] : self.offsets[i + 1]], "utf-8")

    def __iter__(self):
        view = memoryview(self.data)
        bounds = self.offsets.tolist()
        for a, b in pairwise(bounds):
            yield str(view[a:b], "utf-8")

    def char_lengths(self) -> np.ndarray:
        """int64[n]: ``len()`` of every text, without decoding any."""
        return self.chars

    def __repr__(self) -> str:
        return f"PackedTexts({len(self)} texts, {int(self.offsets[-1] - self.offsets[0]):,} bytes)"


class TextRuns(Sequence):
    """The texts of a batch as consecutive runs, each a list (of ``str`` or :class:`Utf8Text`) or
    a :class:`PackedTexts`: item ``i`` is that of the run holding it, runs in order.

    >>> r = TextRuns([["a", "b"], PackedTexts.gather(np.frombuffer(b"cd", dtype=np.uint8), [0, 1], [1, 2])])
    >>> len(r), r[2], list(r), r.char_lengths().tolist()
    (4, 'c', ['a', 'b', 'c', 'd'], [1, 1, 1, 1])
    """

    __slots__ = ("_ends", "runs")

    def __init__(self, runs) -> None:
        self.runs = tuple(runs)
        self._ends = list(accumulate(len(r) for r in self.runs))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text index out of range")
        r = bisect_right(self._ends, i)
        return self.runs[r][i - (self._ends[r - 1] if r else 0)]

    def __iter__(self):
        for run in self.runs:
            yield from run

    def char_lengths(self) -> np.ndarray:
        """int64[n]: ``len()`` of every text (a packed run's without decoding it)."""
        parts = [
            r.char_lengths() if type(r) is PackedTexts else np.fromiter(map(len, r), np.int64, len(r))
            for r in self.runs
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
