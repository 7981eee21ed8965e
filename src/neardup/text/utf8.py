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

import numpy as np

__all__ = ["UTF8_TEXT_MIN", "Utf8Text"]

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
