"""Threads for nogil kernels: one bounded pool, an ordered map, and nothing when one worker is asked.

numba kernels compiled with ``nogil=True`` release the GIL, so threads scale over them without
pickling batches to other processes. :class:`Threads` wraps one ``ThreadPoolExecutor`` (or none
for a single worker, when everything runs inline on the calling thread) and is what engines and
algorithms share: an engine makes one for a job and hands it to every stage, so ``--workers``
is honoured everywhere and no algorithm decides the number of threads itself. Results always
come back in input order, so they never depend on the number of workers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .validation import check_int

__all__ = ["MAX_WORKERS", "Threads", "as_threads"]

T = TypeVar("T")
R = TypeVar("R")

MAX_WORKERS = 1024
"""The most worker threads anything accepts."""


class _Done(Future):
    """A future that is already resolved (the inline path of a single worker)."""

    def __init__(self, fn: Callable, args: tuple) -> None:
        super().__init__()
        try:
            self.set_result(fn(*args))
        except BaseException as exc:  # re-raised by result(), as a pool's future would
            self.set_exception(exc)


class Threads:
    """``workers`` threads (one: the calling thread only), used as a context manager or closed
    with :meth:`close`.

    >>> with Threads(2) as threads:
    ...     threads.map(lambda x: x * x, range(5))
    [0, 1, 4, 9, 16]
    """

    def __init__(self, workers: int = 1) -> None:
        self.workers = check_int("workers", workers, 1, MAX_WORKERS)
        self._pool = ThreadPoolExecutor(max_workers=self.workers) if self.workers > 1 else None

    def __enter__(self) -> Threads:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def submit(self, fn: Callable[..., R], *args: Any) -> Future:
        """Run ``fn(*args)`` on a worker; with one worker, now, on this thread."""
        if self._pool is None:
            return _Done(fn, args)
        return self._pool.submit(fn, *args)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[fn(x) for x in items]``, computed on the workers, in input order."""
        if self._pool is None:
            return [fn(x) for x in items]
        return list(self._pool.map(fn, items))

    def stream(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``map(fn, items)`` as a stream: results in input order, with at most ``2 * workers``
        items in flight, so a long input is never read far ahead of its processing."""
        if self._pool is None:
            yield from map(fn, items)
            return
        pending: deque[Future] = deque()
        for item in items:
            pending.append(self._pool.submit(fn, item))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def as_threads(threads: Threads | int | None) -> tuple[Threads, bool]:
    """``(threads, owned)``: the given ``Threads``, or a new one for an int (None: one worker);
    ``owned`` says the caller must close it."""
    if isinstance(threads, Threads):
        return threads, False
    return Threads(1 if threads is None else threads), True
