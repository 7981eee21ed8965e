"""Shingling: how a text becomes a set (or multiset) of 64-bit shingle hashes.

:class:`Shingling` is the setting (word or character n-grams, their size, punctuation, NFKC and
case folding), a serializable :class:`~neardup.core.schemes.Record` that the MinHash and SimHash
schemes nest; :func:`shingle_batch` and :func:`shingle` hash the shingles of texts, and
:func:`encode_texts` / :func:`encode_for_sketch` pack normalized texts as the numba kernels read
them (UTF-8 bytes and offsets), for the sketching kernels that shingle as they hash.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .._kernels.charclass import CHAR_CLASS
from .._kernels.shingles import (
    CHAR_KIND,
    LOWER_ASCII,
    WORD_KIND,
    shingle_chars_kernel,
    shingle_words_kernel,
    unique_rows,
)
from ..core.schemes import Record
from ..core.validation import Boolean, Choice, Integer, check
from .normalize import normalize
from .utf8 import PackedTexts, Utf8Text, as_str

__all__ = [
    "MAX_SHINGLE_SIZE",
    "Shingling",
    "encode_for_sketch",
    "encode_packed",
    "encode_segments",
    "encode_texts",
    "kind_code",
    "shingle",
    "shingle_batch",
]

MAX_SHINGLE_SIZE = 256
"""The longest shingle accepted, in words or characters: longer ones are unique to their text
(every pair of documents with a long enough common passage has Jaccard near 0 anyway)."""


@dataclass(frozen=True)
class Shingling(Record):
    """How a text becomes a set of 64-bit shingle hashes (a part of the MinHash and SimHash
    schemes; serializes with ``to_dict`` / ``from_dict``).

    Attributes:
        kind: ``"word"`` for word n-grams, ``"char"`` for character n-grams.
        n: shingle size in words or characters, in [1, :data:`MAX_SHINGLE_SIZE`].
        strip_punctuation: for character shingles, drop punctuation and symbols first
            (word tokens never contain them, so it changes nothing for word shingles and is
            stored as False there).
        nfkc: apply Unicode NFKC normalization.
        casefold: fold case (``str.casefold``).

    >>> Shingling("char", 4).to_dict()
    {'kind': 'char', 'n': 4, 'strip_punctuation': False, 'nfkc': True, 'casefold': True}
    >>> Shingling("word", 0)
    Traceback (most recent call last):
    ...
    neardup.core.validation.ParameterError: shingle size n must be an integer in [1, 256], got 0
    """

    kind: Literal["word", "char"] = "word"
    n: int = 5
    strip_punctuation: bool = False
    nfkc: bool = True
    casefold: bool = True

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "kind", check("shingle kind", self.kind, Choice(("word", "char"))))
        set_(self, "n", check("shingle size n", self.n, Integer(1, MAX_SHINGLE_SIZE)))
        for name in ("strip_punctuation", "nfkc", "casefold"):
            set_(self, name, check(name, getattr(self, name), Boolean()))
        if self.kind == "word" and self.strip_punctuation:
            set_(self, "strip_punctuation", False)


def encode_texts(texts: Sequence[str], shingling: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """Normalize texts (NFKC, case folding) and pack their UTF-8 bytes as (data, offsets).

    An ASCII text is its own NFKC form and case-folds to its ASCII lower case, so it is encoded
    as it is and lower-cased with ``bytes.lower`` (a third of the time of ``str.casefold``);
    other texts go through :func:`neardup.text.normalize.normalize`. Same bytes either way.
    """
    nfkc, casefold = shingling.nfkc, shingling.casefold
    texts = [as_str(t) for t in texts]
    if casefold:
        encoded = [
            t.encode("ascii").lower()
            if t.isascii()
            else normalize(t, nfkc=nfkc, casefold=True).encode("utf-8", "surrogatepass")
            for t in texts
        ]
    else:
        encoded = [
            t.encode("ascii")
            if t.isascii()
            else normalize(t, nfkc=nfkc, casefold=False).encode("utf-8", "surrogatepass")
            for t in texts
        ]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


_ASCII_BYTES = bytes(range(128))


_ENCODE_CHUNK = 256


def _encode_lean(text: str, nfkc: bool, casefold: bool) -> bytes:
    """:func:`neardup.text.normalize.normalize`'d UTF-8 bytes of a non-ASCII text, up to ASCII case.

    ``str.casefold`` costs about 4 ns a character, ASCII ones included. It acts on each
    character alone, and on ASCII it is lower-casing, which the kernels do; so when every
    non-ASCII character of the text folds to itself (the common case: accented lower-case
    letters, quotes, dashes), the NFKC form is encoded as it is. The non-ASCII characters are
    found by deleting the ASCII bytes from the encoding (``bytes.translate``, C speed).
    """
    if nfkc:
        text = unicodedata.normalize("NFKC", text)
    data = text.encode("utf-8", "surrogatepass")
    if casefold:
        rest = data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
        if rest.casefold() != rest:
            data = text.casefold().encode("utf-8", "surrogatepass")
    return data


def encode_for_sketch(
    texts: Sequence[str], shingling: Shingling, writable: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode_texts` for the shingling kernels only: the bytes may keep ASCII upper case.

    The kernels lower-case ASCII A-Z themselves when the kind code carries ``LOWER_ASCII``
    (:func:`kind_code` sets it when the shingling folds case), as they copy each byte, so the
    shingles are those of :func:`encode_texts`' bytes. That saves ``bytes.lower`` on ASCII
    texts and most ``str.casefold`` calls on the others (:func:`_encode_lean`), both with the
    GIL held; runs of consecutive ASCII texts are joined as one string and encoded with one
    call, not one per text. Texts go in chunks of :data:`_ENCODE_CHUNK`, each looked at once
    for its length and ASCII-ness and then joined while its string objects are still in cache
    and TLB (touching 20,000 cold string objects costs about 150 ns each here). The bytes
    differ from :func:`encode_texts`' in ASCII case only, so this must not feed anything that
    hashes them raw (the exact pre-pass).

    A text of more than :data:`_HUGE_TEXT` characters is not joined with others (that would
    copy it as a string first): the batch's bytes are then assembled in one ``bytearray`` and an
    ASCII text is encoded into it a slice at a time, so a 200 MB document costs its 200 MB of
    bytes here and no more.

    ``writable=True``: the bytes are a writable array (a copy only for batches of ordinary
    texts, never for a huge one), so that a caller can lower-case them in place
    (:func:`neardup._kernels.shingles.lower_ascii_inplace`) instead of copying a large text;
    otherwise they are read-only, as the kernels are compiled for.
    """
    if not isinstance(texts, list):
        texts = list(texts)
    n = len(texts)
    nfkc, casefold = shingling.nfkc, shingling.casefold
    lengths = np.empty(n, dtype=np.int64)
    pieces: list = []  # bytes, or a huge ASCII str to encode in place
    for a in range(0, n, _ENCODE_CHUNK):
        part = texts[a : a + _ENCODE_CHUNK]
        others = []
        for i, t in enumerate(part):
            lengths[a + i] = len(t)
            if len(t) > _HUGE_TEXT or not t.isascii() or type(t) is Utf8Text:
                others.append(i)
        done = 0
        for i in others:
            if i > done:
                pieces.append("".join(part[done:i]).encode("ascii"))
            t = part[i]
            if type(t) is Utf8Text and t.isascii():
                pieces.append(t.data)  # its bytes as they are
            elif t.isascii():
                pieces.append(t)  # huge: encoded into the batch's buffer below
            else:
                b = _encode_lean(as_str(t), nfkc, casefold)
                pieces.append(b)
                lengths[a + i] = len(b)
            done = i + 1
        if done < len(part):
            pieces.append("".join(part[done:]).encode("ascii"))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if any(type(p) is str for p in pieces):
        data = bytearray(int(offsets[-1]))
        at = 0
        for p in pieces:
            if type(p) is str:
                for k in range(0, len(p), _HUGE_TEXT):
                    chunk = p[k : k + _HUGE_TEXT].encode("ascii")
                    data[at : at + len(chunk)] = chunk
                    at += len(chunk)
            else:
                data[at : at + len(p)] = p
                at += len(p)
    elif writable:
        data = bytearray(pieces[0]) if len(pieces) == 1 else bytearray().join(pieces)
    else:
        data = bytes(pieces[0]) if len(pieces) == 1 else b"".join(pieces)
    arr = np.frombuffer(data, dtype=np.uint8)
    if not writable and arr.flags.writeable:
        arr.flags.writeable = False
    return arr, offsets


_HUGE_TEXT = 1 << 23


def encode_segments(
    texts: Sequence[str | Utf8Text], shingling: Shingling, *, writable: bool = False
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """:func:`encode_for_sketch` of ``texts`` in segments ``(first text, data, offsets)``, in
    order: runs of texts packed together, and each :class:`~neardup.text.utf8.Utf8Text` alone:
    an ASCII one as a view of its own bytes (read-only even with ``writable``: never copied),
    another normalized window by window (:func:`_normalized_windows`).

    A huge document's bytes are then the reader's and nobody else's: packing them with the
    batch's other texts would copy them (a 200 MB document twice). An ASCII text needs no NFKC
    and its case is folded by the kernels, so its bytes are already what the sketch reads.

    >>> segs = encode_segments(["a", Utf8Text(memoryview(b"B c")), "d"], Shingling())
    >>> [(first, bytes(data), offsets.tolist()) for first, data, offsets in segs]
    [(0, b'a', [0, 1]), (1, b'B c', [0, 3]), (2, b'd', [0, 1])]
    """
    if not isinstance(texts, list):
        texts = list(texts)
    views = [i for i, t in enumerate(texts) if type(t) is Utf8Text]
    out = []
    at = 0
    for i in views:
        if i > at:
            out.append((at, *encode_for_sketch(texts[at:i], shingling, writable=writable)))
        t = texts[i]
        data = t.array() if t.isascii() else _normalized_windows(t, shingling.nfkc, shingling.casefold, writable)
        out.append((i, data, np.array([0, len(data)], dtype=np.int64)))
        at = i + 1
    if at < len(texts) or not out:
        out.append((at, *encode_for_sketch(texts[at:], shingling, writable=writable)))
    return out


def encode_packed(texts: PackedTexts, shingling: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode_for_sketch` of packed texts, as ``(data, offsets)`` (read-only bytes;
    ``offsets`` may not start at 0), without a ``str`` of any ASCII text.

    A text's bytes are already what the sketch reads when it is stable
    (:func:`~neardup.text.utf8.stable_table`: ASCII, or of characters that NFKC and case folding
    keep; ASCII case is folded by the kernels), and any text's when neither NFKC nor case folding
    is asked (``_encode_lean`` then encodes the text back to the same UTF-8). Without other texts
    the packed buffer itself is returned; otherwise each of those is decoded and normalized by
    :func:`_encode_lean`, and the runs of bytes between them are joined around the results.
    """
    data, offsets = texts.data, texts.offsets
    if not (shingling.nfkc or shingling.casefold):
        return data, offsets
    others = np.flatnonzero(~texts.stable)
    if not len(others):
        return data, offsets
    view = memoryview(data)
    lengths = np.diff(offsets)
    pieces: list = []
    at = int(offsets[0])
    for i in others.tolist():
        start, end = int(offsets[i]), int(offsets[i + 1])
        if start > at:
            pieces.append(view[at:start])
        encoded = _encode_lean(str(view[start:end], "utf-8"), shingling.nfkc, shingling.casefold)
        pieces.append(encoded)
        lengths[i] = len(encoded)
        at = end
    if int(offsets[-1]) > at:
        pieces.append(view[at : int(offsets[-1])])
    packed = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=packed[1:])
    return np.frombuffer(b"".join(pieces), dtype=np.uint8), packed


def _normalized_windows(text: Utf8Text, nfkc: bool, casefold: bool, writable: bool) -> np.ndarray:
    """:func:`_encode_lean` of a non-ASCII :class:`~neardup.text.utf8.Utf8Text`, a window of about
    :data:`_HUGE_TEXT` bytes at a time (no ``str`` of the whole text).

    Windows are cut between two ASCII characters, where NFKC and case folding act on each side
    alone: decomposition and case folding map each character by itself, canonical reordering
    stops at a character of combining class 0 (every ASCII one), and no composition joins two
    ASCII characters, nor crosses a starter that does not compose with the one before it. The
    windows' bytes may differ from the whole text's in ASCII case only (``_encode_lean`` folds
    a window's case only where a character needs it), which the kernels fold, and which the
    exact pre-pass lowers before hashing.
    """
    data = text.data
    out = bytearray()
    at = 0
    while at < len(data):
        end = _ascii_pair_cut(data, at + _HUGE_TEXT)
        out += _encode_lean(str(data[at:end], "utf-8"), nfkc, casefold)
        at = end
    arr = np.frombuffer(out, dtype=np.uint8)
    if not writable:
        arr.flags.writeable = False
    return arr


def _ascii_pair_cut(data: memoryview, i: int) -> int:
    """The first index ``j >= i`` with ``data[j - 1]`` and ``data[j]`` both ASCII, else ``len(data)``."""
    step = 1 << 16
    while i < len(data):
        b = np.frombuffer(data[i - 1 : i + step], dtype=np.uint8)
        hit = np.flatnonzero((b[:-1] < 0x80) & (b[1:] < 0x80))
        if len(hit):
            return i + int(hit[0])
        i += step
    return len(data)


def kind_code(shingling: Shingling) -> int:
    """The kernels' kind argument: word or char, with ``LOWER_ASCII`` when case is folded (a
    no-op on :func:`encode_texts`' bytes, which hold no A-Z then; needed for
    :func:`encode_for_sketch`'s)."""
    kind = WORD_KIND if shingling.kind == "word" else CHAR_KIND
    return kind | LOWER_ASCII if shingling.casefold else kind


def shingle_batch(texts: Sequence[str], shingling: Shingling = Shingling(), *, unique: bool = True):
    """Shingle hashes of many texts as CSR arrays ``(hashes uint64[m], offsets int64[n + 1])``.

    Document ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``: sorted and duplicate-free when
    ``unique`` (a set), else in text order with repeats (a multiset, for weighted Jaccard).

    >>> h, off = shingle_batch(["a b c", "a b"], Shingling("word", 2))
    >>> off.tolist()
    [0, 2, 3]
    """
    data, offsets = encode_for_sketch(texts, shingling)
    values, off = shingle_encoded(data, offsets, shingling)
    return unique_rows(values, off) if unique else (values, off)


def shingle_encoded(data: np.ndarray, offsets: np.ndarray, shingling: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """The shingle hashes of texts already encoded (:func:`encode_texts`, :func:`encode_for_sketch`)
    as CSR arrays, in text order with repeats, by the kernel of the shingling's kind."""
    kernel = shingle_chars_kernel if shingling.kind == "char" else shingle_words_kernel
    return kernel(data, offsets, CHAR_CLASS, kind_code(shingling), shingling.n, shingling.strip_punctuation)


def shingle(text: str, shingling: Shingling = Shingling(), *, unique: bool = True) -> np.ndarray:
    """The shingle hashes of one text (see :func:`shingle_batch`).

    >>> from neardup._kernels.hashing import hash_str
    >>> shingle("Jack London traveled", Shingling("word", 2)).tolist() == sorted(
    ...     [hash_str("jack london"), hash_str("london traveled")])
    True
    """
    return shingle_batch([text], shingling, unique=unique)[0]
