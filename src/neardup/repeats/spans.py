"""Exact repeated spans (ExactSubstr, Lee et al. 2022): a suffix array over the token stream.

**Within a shard.** The documents' tokens (:mod:`neardup.repeats.tokens`) get dense ids ``1..V``
(by their 64-bit keys, in the order first seen: a hash table, O(n)), and are concatenated with a
separator ``0`` after each document. The suffix array of that stream is built by libdivsufsort
(``pydivsufsort``) over the ids written as fixed-width big-endian bytes (1 to 4 bytes an id, the
fewest that hold ``V``), whose byte order is the ids' order; only the positions at id boundaries
are kept. The LCP array (Kasai et al. 2001, :func:`~neardup._kernels.repeats.kasai_lcp`) counts
common prefixes that hold no separator, so a repeat never crosses a document's end. Suffixes
that share their first ``L`` tokens are neighbours in the suffix array: a maximal run of ranks
with ``lcp >= L`` is every occurrence of one ``L``-token sequence, and its size is how many
times it occurs. A position starts a repeat when that count is at least ``min_count``; every
token within ``L`` tokens after such a start is removed. So the removed tokens are exactly the
union of every occurrence of every ``L``-token sequence that occurs ``min_count`` times or more
(a longer repeat is the union of its ``L``-token windows, each repeated as often).

**Across shards.** A collection whose stream does not fit the memory budget is cut into shards
of whole documents, each with its own suffix array. Every position of every shard also gets a
64-bit hash of its ``L`` tokens (:func:`~neardup._kernels.repeats.rolling_hashes`); each shard
keeps its distinct hashes with their counts, and for each shard the counts of its hashes in
every other shard are added (a merge of the sorted arrays), one other shard at a time. A
position starts a repeat when its count in its shard plus its counts elsewhere reach
``min_count``. Two different ``L``-token sequences share a hash with probability ``2^-64``
per pair (``N_a N_b / 2^64`` for shards of ``N_a`` and ``N_b`` positions: below ``10^-3`` for
two shards of ``10^8``).

**Memory.** A shard of ``n`` tokens takes about :data:`BYTES_PER_TOKEN` bytes a token at its
peak (keys, offsets, the id stream and its byte form, the suffix arrays of the bytes and of
the ids, rank, LCP, counts); shards are cut at ``budget / BYTES_PER_TOKEN`` tokens, and the
cross-shard merge holds one shard's hashes and one other's (24 bytes a position each).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._kernels.repeats import (
    compact_positions,
    cover_runs,
    covered_runs,
    dense_ids,
    kasai_lcp,
    merge_counts,
    repeat_groups,
    rolling_hashes,
)
from ..core.errors import NeardupError
from .tokens import TokenBatch

BYTES_PER_TOKEN = 128
"""Peak bytes a token of the shard being searched (measured in benchmarks/bench_repeats.py)."""


@dataclass(frozen=True)
class Spans:
    """Removed spans, one row each, in document order: document number, character offsets in
    it (``start``, ``end``), length in tokens, the least count of their ``L``-token windows, and
    another document holding the first window: the least other one in the shard, else one of the
    first other shard that holds it (the same document when only it holds it)."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    length: np.ndarray
    occurrences: np.ndarray
    other: np.ndarray


def suffix_array(ids: np.ndarray) -> np.ndarray:
    """The suffix array of ``ids`` (non-negative integers), by libdivsufsort over their
    big-endian bytes of the fewest width that holds them (one byte: the bytes themselves);
    int32 while the bytes number below 2^31, else int64."""
    try:
        from pydivsufsort import divsufsort
    except ImportError:
        raise NeardupError(
            "the span mode needs pydivsufsort, an optional dependency: pip install 'neardup[repeats]'"
        ) from None

    top = int(ids.max()) if len(ids) else 0
    width = 1 if top < 1 << 8 else 2 if top < 1 << 16 else 3 if top < 1 << 24 else 4
    raw = np.empty((len(ids), width), dtype=np.uint8)
    for b in range(width):  # big-endian: the most significant byte first
        raw[:, b] = (ids >> (8 * (width - 1 - b))) & 0xFF
    raw = raw.reshape(-1)
    sa = divsufsort(raw, force64=raw.size >= 1 << 31)
    del raw
    if width == 1:
        return sa
    k = compact_positions(sa, width)
    out = sa[:k].copy()
    del sa
    return out


@dataclass
class _Shard:
    """One shard's stream: ids with separators, the document of each position, the token at
    each position (-1 at a separator), and its first document."""

    stream: np.ndarray
    doc_of: np.ndarray
    token_at: np.ndarray
    keys: np.ndarray


def _stream(keys: np.ndarray, per_doc: np.ndarray, first_doc: int) -> _Shard:
    ids, _ = dense_ids(keys)
    n_tok, n_docs = len(keys), len(per_doc)
    tok_doc = np.repeat(np.arange(n_docs, dtype=np.int64), per_doc)
    pos = np.arange(n_tok, dtype=np.int64) + tok_doc  # one separator after each earlier document
    n = n_tok + n_docs
    stream = np.zeros(n, dtype=np.int32)
    stream[pos] = ids
    token_at = np.full(n, -1, dtype=np.int32)
    token_at[pos] = np.arange(n_tok, dtype=np.int32)
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int32), per_doc + 1) + np.int32(first_doc)
    hashes = np.zeros(n, dtype=np.uint64)
    hashes[pos] = keys
    return _Shard(stream, doc_of, token_at, hashes)


def _in_shard(sh: _Shard, length: int) -> tuple[np.ndarray, np.ndarray]:
    sa = suffix_array(sh.stream)
    lcp = kasai_lcp(sh.stream, sa)
    count, other = repeat_groups(sa, lcp, sh.doc_of, length)
    del sa, lcp
    fits = rolling_hashes(sh.stream, sh.keys, length) != 0
    count[~fits] = 0  # a position whose L tokens reach a separator starts nothing
    return count, other


class ShardStore(Sequence):
    """The token shards of a job: each full shard written to an unnamed folder under
    ``tmp_dir`` (NumPy files), read back one at a time; the last one held."""

    def __init__(self, tmp_dir: str | None = None) -> None:
        self._tmp_dir = tmp_dir
        self._scratch: tempfile.TemporaryDirectory | None = None
        self._items: list = []
        self.docs: list[int] = []
        self.tokens: list[int] = []

    def append(self, shard: TokenBatch, spill: bool) -> None:
        self.docs.append(len(shard.per_doc))
        self.tokens.append(len(shard.key))
        if not spill:
            self._items.append(shard)
            return
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="neardup-shards-", dir=self._tmp_dir)
        path = os.path.join(self._scratch.name, f"shard-{len(self._items)}.npz")
        np.savez(path, **{f: getattr(shard, f) for f in TokenBatch.__dataclass_fields__})
        self._items.append(path)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):
        item = self._items[i]
        if isinstance(item, TokenBatch):
            return item
        with np.load(item) as z:
            return TokenBatch(**{f: z[f] for f in TokenBatch.__dataclass_fields__})

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None


def find_spans(shards: Sequence[TokenBatch], length: int, min_count: int, tmp_dir: str | None = None) -> Spans:
    """The removed spans of documents given as consecutive shards of tokens (see the module)."""
    docs = shards.docs if isinstance(shards, ShardStore) else [len(s.per_doc) for s in shards]
    firsts = np.cumsum([0] + list(docs))
    if len(shards) <= 1:
        parts = [_shard_spans(shards[0], 0, length, min_count, None)] if shards else []
        return _join(parts)
    with tempfile.TemporaryDirectory(prefix="neardup-repeats-", dir=tmp_dir) as scratch:
        for i, sh in enumerate(shards):  # each shard's distinct L-gram hashes, counts, least document
            s = _stream(sh.key, sh.per_doc, int(firsts[i]))
            rh = rolling_hashes(s.stream, s.keys, length)
            live = rh != 0
            u, first_at, inv, counts = np.unique(rh[live], return_index=True, return_inverse=True, return_counts=True)
            at = np.full(len(rh), -1, dtype=np.int32)  # each position's hash in u (-1: none)
            at[live] = inv.reshape(-1)
            np.savez(os.path.join(scratch, f"{i}.npz"), u=u, c=counts.astype(np.int32), d=s.doc_of[live][first_at])
            np.save(os.path.join(scratch, f"{i}.at.npy"), at)
            del s, rh, live, u, first_at, inv, counts, at, sh  # before the next shard's
        parts = []
        for i in range(len(shards)):
            parts.append(_shard_spans(shards[i], int(firsts[i]), length, min_count, (scratch, i, len(shards))))
        return _join(parts)


def _external(scratch: str, me: int, n_shards: int) -> tuple[np.ndarray, np.ndarray]:
    """For each position of shard ``me``: the count of its ``L`` tokens in the other shards and
    a document there (-1: none), by merging its sorted distinct hashes with theirs."""
    mine = np.load(os.path.join(scratch, f"{me}.npz"))["u"]
    ext = np.zeros(len(mine), dtype=np.int32)
    ext_doc = np.full(len(mine), -1, dtype=np.int32)
    for t in range(n_shards):
        if t != me:
            with np.load(os.path.join(scratch, f"{t}.npz")) as other:
                merge_counts(mine, other["u"], other["c"], other["d"], ext, ext_doc)
    del mine
    at = np.load(os.path.join(scratch, f"{me}.at.npy"))
    live = at >= 0
    out, out_doc = np.zeros(len(at), np.int32), np.full(len(at), -1, np.int32)
    out[live] = ext[at[live]]
    out_doc[live] = ext_doc[at[live]]
    return out, out_doc


def _shard_spans(sh: TokenBatch, first_doc: int, length: int, min_count: int, merge) -> Spans:
    s = _stream(sh.key, sh.per_doc, first_doc)
    total, other = _in_shard(s, length)  # counts in this shard (0: no L tokens start there)
    valid = total > 0
    if merge is not None:
        scratch, me, n_shards = merge
        ext, ext_doc = _external(scratch, me, n_shards)
        ext[~valid] = 0
        alone = ((total == 1) | (other == s.doc_of)) & (ext_doc >= 0)  # prefer another document
        other[alone] = ext_doc[alone]
        del ext_doc, alone
        total += ext  # and in the other shards
        del ext
    starts = (total >= min_count) & valid
    covered = cover_runs(starts, length, len(s.stream))
    tok = s.token_at >= 0
    tok_total = np.where(starts, total, 0)[tok]
    tok_other = other[tok]
    bounds = np.zeros(len(sh.per_doc) + 1, dtype=np.int64)
    np.cumsum(sh.per_doc, out=bounds[1:])
    doc, first, stop, occ, oth = covered_runs(covered[tok], bounds, tok_total, tok_other)
    oth = np.where(oth < 0, doc + first_doc, oth)
    start = sh.start[first].astype(np.int64)
    end = sh.end[stop - 1].astype(np.int64) if len(stop) else np.zeros(0, np.int64)
    return Spans(doc + first_doc, start, end, stop - first, occ, oth)


def _join(parts: list[Spans]) -> Spans:
    if not parts:
        z = np.zeros(0, np.int64)
        return Spans(z, z, z, z, z)
    return Spans(*(np.concatenate([getattr(p, f) for p in parts]) for f in Spans.__dataclass_fields__))
