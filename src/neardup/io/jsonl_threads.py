"""JSON Lines read on the job's worker threads: :func:`scan_jsonl_threaded`.

The calling thread only reads the file in blocks of whole lines (:func:`~neardup.io.streams.raw_blocks`)
and counts each block's lines (the first line number of the next block, for ``FILE:LINE`` ids and
errors); each block is then scanned, its texts and ids decoded to ``str`` and, with ``html``,
converted to text on a worker (:class:`~neardup.core.parallel.Threads`). The scanning kernel
releases the GIL, so two workers scan two blocks at once. Blocks come back in file order, each
with the skips it counted in a :class:`~neardup.io.policy.ReadStats` of its own, added to the
pass's counters in that order: records, ids, errors, skip counts and ``--skipped`` details are
those of :func:`neardup.io.jsonl.scan_jsonl`, whatever the number of workers (one worker scans
each block on the calling thread as it is read).

:func:`copy_kept_threaded` writes the kept lines of a JSONL file the same way: the workers find
each block's lines and copy its kept ones, the calling thread reads and writes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import replace
from functools import partial
from queue import Empty, SimpleQueue

import numpy as np

from .._kernels.lines import copy_kept
from ..core.parallel import Threads
from ..text.html import html_to_text
from . import jsonl
from .jsonl import _field_keys, _parse_block, block_lines
from .policy import Chunk, Policy, ReadStats
from .streams import StreamDamage, damaged, open_input, raw_blocks

__all__ = ["copy_kept_threaded", "scan_jsonl_threaded"]


def scan_jsonl_threaded(path: str, pol: Policy, threads: Threads, convert: bool) -> Iterator[Chunk]:
    """The records of a JSONL file (``pol.id_policy`` must be ``"field"``), as
    :func:`~neardup.io.jsonl.scan_jsonl` without a payload gives them, a block at a time; ``convert``:
    texts are HTML, converted by :func:`~neardup.text.html.html_to_text` on the workers.

    At most ``2 * threads.workers`` blocks are in work at once. A block holding a line of many MiB
    waits for the blocks before it and is scanned alone, so such lines are held one at a time.
    """
    if pol.id_policy != "field":
        raise ValueError("scan_jsonl_threaded reads with id_policy='field' only ('line' needs the ids before each)")
    stream = open_input(path, pol)
    if stream is None:
        return
    buffers: SimpleQueue = SimpleQueue()  # the kernel's output buffers, reused by the blocks in turn
    work = partial(_read_block, path, pol, _field_keys(pol), buffers, convert)
    pending: deque[Future] = deque()
    records = 0
    try:
        with stream:
            base = 0
            damage = None
            try:
                for block in raw_blocks(stream, path, pol, damage=True):
                    huge = len(block) > jsonl._HUGE_BLOCK
                    while pending and (huge or len(pending) >= 2 * threads.workers):
                        chunk = _finish(pol, pending.popleft())
                        records += len(chunk.ids)
                        yield chunk
                    pending.append(threads.submit(work, block, base))
                    base += block_lines(block)
                    del block  # a huge block is freed once scanned
            except StreamDamage as exc:  # the records before the damage are read
                damage = exc
            while pending:
                chunk = _finish(pol, pending.popleft())
                records += len(chunk.ids)
                yield chunk
            if damage is not None:
                pol.reject(damaged(path, damage, records))
    finally:
        for future in pending:  # an error, or a reader that stopped early: no more work
            future.cancel()


def _read_block(path: str, pol: Policy, keys, buffers: SimpleQueue, convert: bool, block, base: int):
    """On a worker: ``(ids, texts, stats)`` of one block, its skips counted in ``stats``."""
    local = replace(pol, stats=ReadStats(details=[] if pol.stats.details is not None else None))
    try:
        buffer = buffers.get_nowait()
    except Empty:
        buffer = None
    # the job's stages take UTF-8 (pol.utf8_texts): the texts stay the scanner's bytes, unless
    # converted from HTML, which needs a str
    ids, texts, buffer = _parse_block(block, path, local, base, keys, buffer, packed=pol.utf8_texts and not convert)
    if buffer is not None:
        buffers.put(buffer)
    if convert:
        texts = [html_to_text(t, main_content=pol.main_content) for t in texts]
    return ids, texts, local.stats


def _finish(pol: Policy, future: Future) -> Chunk:
    """The chunk of a block's result, its skip counts added to the pass's (in block order)."""
    ids, texts, stats = future.result()
    if stats.skipped:
        total = pol.stats
        total.skipped += stats.skipped
        total.reasons.update(stats.reasons)
        total.file_errors += stats.file_errors
        if total.details is not None:
            total.details += stats.details
    return Chunk(ids, texts, None)


def copy_kept_threaded(path: str, pol: Policy, keep: np.ndarray, start: int, sink, threads: Threads) -> int:
    """:func:`~neardup.io.jsonl.copy_kept_jsonl` with the work on ``threads``: the same bytes.

    A block's first record number is the count of non-blank lines before it, so each block goes
    through two tasks: its newlines and record count, then (once the blocks before it are
    counted, on the calling thread) the copy of its kept lines; the calling thread reads the
    blocks and writes the copies in order. A block holding a line of many MiB waits for the
    blocks before it and is written from views on the calling thread, as without threads.
    """
    stream = open_input(path, pol)
    if stream is None:
        return start
    counting: deque[tuple[object, Future]] = deque()  # (block, future of (newlines, records))
    copying: deque[Future] = deque()  # futures of (buffer, bytes to write)
    buffers: SimpleQueue = SimpleQueue()
    depth = 2 * threads.workers

    def count_next() -> None:
        nonlocal start
        block, counted = counting.popleft()
        newlines, records = counted.result()
        copying.append(threads.submit(_copy_block, block, newlines, keep, start, buffers))
        start += records

    def write_next() -> None:
        out, n = copying.popleft().result()
        if n:
            sink.write_bytes(memoryview(out)[:n])
        buffers.put(out)

    try:
        with stream:
            for block in raw_blocks(stream, path, pol):
                huge = len(block) > jsonl._HUGE_BLOCK
                while counting and (huge or len(counting) >= depth):
                    count_next()
                while copying and (huge or len(copying) >= depth or copying[0].done()):
                    write_next()
                if huge:
                    start = jsonl._copy_kept_views(block, keep, start, sink)
                else:
                    counting.append((block, threads.submit(_count_block, block)))
                del block
            while counting:
                count_next()
            while copying:
                write_next()
    finally:
        for _, future in counting:
            future.cancel()
        for future in copying:
            future.cancel()
    return start


_NO_KEEP = np.zeros(0, dtype=np.bool_)
_NO_OUT = np.zeros(1, dtype=np.uint8)


def _count_block(block) -> tuple[np.ndarray, int]:
    """On a worker: the newline offsets of a block and its records (non-blank lines)."""
    data = np.frombuffer(block, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    _, records = copy_kept(data, newlines, _NO_KEEP, 0, _NO_OUT)  # keeps nothing: only counts
    return newlines, records


def _copy_block(block, newlines: np.ndarray, keep: np.ndarray, start: int, buffers: SimpleQueue):
    """On a worker: ``(buffer, n)``, the kept lines of a block (records from ``start``) in ``buffer[:n]``."""
    data = np.frombuffer(block, dtype=np.uint8)
    try:
        out = buffers.get_nowait()
    except Empty:
        out = None
    if out is None or len(out) <= len(block):
        out = np.empty(len(block) + 1, dtype=np.uint8)
    n, _ = copy_kept(data, newlines, keep, start, out)
    return out, n
