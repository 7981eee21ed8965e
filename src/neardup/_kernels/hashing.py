"""Stable 64-bit hashing, the base of every sketch neardup computes.

Python's ``hash()`` is salted per process, so nothing here uses it. The functions below are
fully specified, written for numba, and give the same values on every process, platform and
worker count. They are part of the sketch scheme: changing any constant changes every
signature, which the golden tests catch.

``hash_bytes`` (scheme "nd64", version 1)
    The input is cut into 8-byte little-endian words, the last one zero-padded. For each word
    ``w``: ``h = rotl64(h ^ (w * P1), 31) * P2`` starting from ``h = SEED``; finally
    ``h = fmix64(h ^ len)``. The length in the finaliser tells apart inputs that differ only in
    trailing zero bytes. ``fmix64`` is the MurmurHash3 64-bit finaliser (Appleby), whose output
    bits each depend on every input bit.

``hash_int``
    ``fmix64(x ^ INT_SALT)`` for a 64-bit integer ``x`` (negative values in two's complement).

``splitmix64``
    Vigna's SplitMix64 step, used to derive per-permutation parameters from a user seed.
"""

from __future__ import annotations

import numba as nb
import numpy as np

MASK64 = (1 << 64) - 1


P1 = np.uint64(0x9E3779B185EBCA87)


P2 = np.uint64(0xC2B2AE3D27D4EB4F)


SEED = np.uint64(0x27D4EB2F165667C5)


INT_SALT = np.uint64(0x165667B19E3779F9)


F1 = np.uint64(0xFF51AFD7ED558CCD)


F2 = np.uint64(0xC4CEB9FE1A85EC53)


SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)


_SM_M1 = np.uint64(0xBF58476D1CE4E5B9)


_SM_M2 = np.uint64(0x94D049BB133111EB)


@nb.njit(inline="always", cache=True)
def rotl64(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@nb.njit(inline="always", cache=True)
def fmix64(h):
    h ^= h >> np.uint64(33)
    h *= F1
    h ^= h >> np.uint64(33)
    h *= F2
    h ^= h >> np.uint64(33)
    return h


@nb.njit(inline="always", cache=True)
def hash_span(data, start, end):
    """Hash ``data[start:end]`` (a uint8 array) with ``hash_bytes`` without copying."""
    h = SEED
    i = start
    while i + 8 <= end:
        w = (
            np.uint64(data[i])
            | (np.uint64(data[i + 1]) << np.uint64(8))
            | (np.uint64(data[i + 2]) << np.uint64(16))
            | (np.uint64(data[i + 3]) << np.uint64(24))
            | (np.uint64(data[i + 4]) << np.uint64(32))
            | (np.uint64(data[i + 5]) << np.uint64(40))
            | (np.uint64(data[i + 6]) << np.uint64(48))
            | (np.uint64(data[i + 7]) << np.uint64(56))
        )
        h = rotl64(h ^ (w * P1), 31) * P2
        i += 8
    if i < end:
        w = np.uint64(0)
        shift = np.uint64(0)
        while i < end:
            w |= np.uint64(data[i]) << shift
            shift += np.uint64(8)
            i += 1
        h = rotl64(h ^ (w * P1), 31) * P2
    return fmix64(h ^ np.uint64(end - start))


@nb.njit(inline="always", cache=True)
def hash_span_words(words, start, end):
    """``hash_span`` over a byte buffer seen as little-endian uint64 ``words``.

    Same value as ``hash_span(buffer, start, end)``, reading whole words (two loads and a
    funnel shift per 8 bytes at an unaligned start) instead of single bytes. The buffer must
    extend at least 8 bytes past ``end``.
    """
    h = SEED
    n = end - start
    q = start >> 3
    shift = np.uint64(8 * (start & 7))
    full = n >> 3
    if shift == 0:
        for m in range(full):
            h = rotl64(h ^ (words[q + m] * P1), 31) * P2
    else:
        back = np.uint64(64) - shift
        lo = words[q]
        for m in range(full):
            hi = words[q + m + 1]
            h = rotl64(h ^ (((lo >> shift) | (hi << back)) * P1), 31) * P2
            lo = hi
    rem = n & 7
    if rem:
        p = start + 8 * full
        q2 = p >> 3
        s2 = np.uint64(8 * (p & 7))
        w = words[q2] >> s2
        if (p & 7) + rem > 8:
            w |= words[q2 + 1] << (np.uint64(64) - s2)
        w &= (np.uint64(1) << np.uint64(8 * rem)) - np.uint64(1)
        h = rotl64(h ^ (w * P1), 31) * P2
    return fmix64(h ^ np.uint64(n))


@nb.njit(cache=True, nogil=True)
def hash_spans(data, offsets):
    """Hash every span ``data[offsets[i]:offsets[i+1]]``; returns uint64[len(offsets) - 1]."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = hash_span(data, offsets[i], offsets[i + 1])
    return out


@nb.njit(cache=True, nogil=True)
def hash_ints(values):
    """``hash_int`` of every element of an int64/uint64 array."""
    out = np.empty(values.shape[0], dtype=np.uint64)
    for i in range(values.shape[0]):
        out[i] = fmix64(np.uint64(values[i]) ^ INT_SALT)
    return out


@nb.njit(inline="always", cache=True)
def splitmix_mix(z):
    """SplitMix64's output function, a bijection of uint64 (Steele, Lea and Flood, OOPSLA 2014)."""
    z = (z ^ (z >> np.uint64(30))) * _SM_M1
    z = (z ^ (z >> np.uint64(27))) * _SM_M2
    return z ^ (z >> np.uint64(31))


@nb.njit(inline="always", cache=True)
def splitmix64(state):
    """One SplitMix64 output for ``state`` (the state is advanced by the caller)."""
    return splitmix_mix(state + SPLITMIX_GAMMA)


def hash_bytes(b: bytes) -> int:
    """The stable 64-bit hash of a byte string (see the module docstring)."""
    arr = np.frombuffer(b, dtype=np.uint8)
    return int(hash_spans(arr, np.array([0, len(b)], dtype=np.int64))[0])


def hash_str(s: str) -> int:
    """The stable 64-bit hash of a string's UTF-8 bytes."""
    return hash_bytes(s.encode("utf-8", "surrogatepass"))


def hash_int(x: int) -> int:
    """The stable 64-bit hash of an integer in [-2**63, 2**64)."""
    if not -(1 << 63) <= x < (1 << 64):
        raise ValueError(f"integer {x} does not fit in 64 bits")
    return int(hash_ints(np.array([x & MASK64], dtype=np.uint64))[0])
