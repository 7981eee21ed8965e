"""A job's memory budget, and the disk that takes what grows past it.

A batch job holds a few arrays with a row per document: MinHash signatures (4K bytes a
document), band keys (8b bytes), union-find parents, roots, kept documents and similarities
(8 bytes each). Under the budget they are plain arrays in memory, as they always were. An array
that would take the job past the budget is made on disk instead: a file under the spill
folder (``--tmp-dir``, default the system's temporary folder), mapped into memory and seen as a
plain C-contiguous NumPy array, so the kernels read and write it unchanged (and no new
compilation happens). Its pages live in the operating system's page cache, which evicts them
to the file when memory is short; :meth:`Spill.release` unmaps the pages a stage has touched so
far (``madvise(MADV_DONTNEED)``; the data stays in the page cache or on disk), so that the
process's resident memory stays near the budget, however many documents there are.

Every spill file is created without a name (``O_TMPFILE``, or removed as soon as it is made),
so nothing is left behind after success, failure, Ctrl-C, SIGTERM or ``kill -9``: the space
returns to the file system when the job lets go of its arrays. Space is reserved when a file is
made (``posix_fallocate``), so a disk that fills is a clear :class:`SpillError` at that moment,
never a crash at a later write into a mapping.

The budget counts what the job's arrays hold; the process's own footprint before the job (the
interpreter, NumPy, the compiled kernels: about 200 MB) and the batches in flight are the small
constant on top of it.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import errno
import functools
import mmap
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from .arrays import RowBuffer
from .errors import NeardupError

__all__ = [
    "BudgetError",
    "Spill",
    "SpillError",
    "SpillRows",
    "available_memory",
    "current_spill",
    "default_memory",
    "format_size",
    "parse_size",
    "resident_bytes",
    "spill_rows",
    "trim",
    "using",
]

_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)


class SpillError(NeardupError):
    """The job could not put what did not fit in its memory budget on disk (the spill folder is
    full, missing or not writable): names the folder, what was needed and what to do."""


class BudgetError(NeardupError):
    """A stage that holds its working set in memory (it has no form on disk) needs more than the
    job's memory budget: names the stage, what it needs and what to do."""


def parse_size(text: str | int) -> int:
    """Bytes from a size such as ``2GB``, ``512MiB``, ``1.5G`` or ``800000000`` (decimal units
    K, M, G, T of 1000; binary ones KiB, MiB, GiB, TiB of 1024).

    >>> parse_size("2GB"), parse_size("512MiB"), parse_size("1.5g"), parse_size(4096)
    (2000000000, 536870912, 1500000000, 4096)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        found = _SIZE.match(str(text))
        if not found:
            raise ValueError(f"{text!r} is not a size; give bytes or a number with a unit, such as 2GB or 512MiB")
        number, unit, binary = found.groups()
        scale = 1024 ** "kmgt".index(unit.lower()) * 1024 if unit and binary else _UNITS[unit.lower()]
        value = int(float(number) * scale)
    if value <= 0:
        raise ValueError(f"a memory size must be more than 0 bytes, got {text!r}")
    return value


def format_size(n: float) -> str:
    """A byte count for people: ``1.5 GB``.

    >>> format_size(1_500_000_000), format_size(999)
    ('1.5 GB', '999 B')
    """
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_memory() -> int:
    """Bytes this process could still take: the system's available memory (``MemAvailable``),
    or less where a control group's limit (cgroup v2 ``memory.max``) leaves less."""
    found = None
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                found = int(line.split()[1]) * 1024
                break
    if found is None:
        found = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    limit, used = _read_int("/sys/fs/cgroup/memory.max"), _read_int("/sys/fs/cgroup/memory.current")
    if limit is not None and used is not None:
        found = min(found, max(limit - used, 0))
    return found


def default_memory() -> int:
    """The budget of a job that names none: half the memory available when it starts (at least
    256 MB)."""
    return max(available_memory() // 2, 256 * 10**6)


@functools.cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 (glibc only)
    except (OSError, AttributeError):
        return None
    return libc


def trim() -> None:
    """Hand the C heap's free memory back to the system (glibc's ``malloc_trim``; nothing
    elsewhere): the arrays a stage freed stay resident in the heap otherwise, and a job past its
    budget counts on getting them back."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_STATM: dict[int, int] = {}  # pid -> a descriptor of its /proc/PID/statm, read again with pread


def _statm() -> tuple[int, int]:
    """(resident bytes, of which pages of files and shared memory) of this process, now."""
    try:
        pid = os.getpid()  # a forked child must not read its parent's descriptor
        if pid not in _STATM:
            _STATM.clear()
            _STATM[pid] = os.open(f"/proc/{pid}/statm", os.O_RDONLY)
        fields = os.pread(_STATM[pid], 256, 0).split()
        return int(fields[1]) * _PAGE_SIZE, int(fields[2]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return 0, 0


def resident_bytes() -> int:
    """This process's resident memory now (``/proc/self/statm``; 0 where there is none)."""
    return _statm()[0]


class Spill:
    """One job's budget: arrays in memory while they fit in ``limit`` bytes, on disk under
    ``tmp_dir`` past it (see the module docs). ``limit=None``: no budget, everything in memory.

    >>> spill = Spill(limit=1000)
    >>> spill.array((10,), np.int64).flags.owndata, spill.array((1000,), np.int64).flags.owndata
    (True, False)
    >>> spill.spilled
    True
    """

    def __init__(
        self,
        limit: int | None,
        tmp_dir: str | os.PathLike | None = None,
        work: int = 1 << 28,
        cap: int | None = None,
        ceiling: int | None = None,
    ) -> None:
        self.limit = limit
        self.ceiling = ceiling
        """The most bytes a stage that cannot spill may hold (:meth:`require`; None: no bound):
        the budget when one was given, else the memory available when the job started."""
        self.cap = cap
        """The resident memory above which :meth:`relieve` unmaps the spill files' pages (None:
        it always does)."""
        self.work = work
        """Bytes a stage may take for its working arrays at a time (the candidate stage sorts one
        band's keys in parts of about this size once the job spills)."""
        self.tmp_dir = os.fspath(tmp_dir) if tmp_dir is not None else tempfile.gettempdir()
        self._held = 0
        self._maps: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()
        self.disk_bytes = 0
        """Bytes of spill files made so far."""
        self.disk_now = 0
        """Bytes of the spill files in use now (a file's space is freed with its last array)."""
        self.disk_peak = 0
        """The most bytes of spill files in use at once."""
        self.external: set[str] = set()
        """The stages that ran in their external form (:func:`neardup.core.extsort.external`)."""

    def __repr__(self) -> str:
        limit = "none" if self.limit is None else format_size(self.limit)
        return f"Spill(limit={limit}, tmp_dir={self.tmp_dir!r})"

    @property
    def spilled(self) -> bool:
        """Whether anything of the job went to disk."""
        return self.disk_bytes > 0

    @property
    def held(self) -> int:
        """Bytes of the job's arrays in memory that the budget counts."""
        return self._held

    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more stay within the budget."""
        return self.limit is None or self._held + nbytes <= self.limit

    def require(self, nbytes: int, stage: str, advice: str) -> None:
        """Refuse, with a :class:`BudgetError` of one line, a stage that must hold ``nbytes`` in
        memory at once when that is more than :attr:`ceiling`."""
        if self.ceiling is not None and nbytes > self.ceiling:
            raise BudgetError(
                f"{stage} holds about {format_size(nbytes)} in memory at once, more than the "
                f"memory budget ({format_size(self.ceiling)}); {advice}"
            )

    def hold(self, nbytes: int) -> None:
        """Count ``nbytes`` more against the budget (:meth:`give_back` returns them)."""
        self._held += int(nbytes)

    def give_back(self, nbytes: int) -> None:
        self._held = max(self._held - int(nbytes), 0)

    def held_array(self, array: np.ndarray) -> np.ndarray:
        """``array``, counted against the budget until it is freed."""
        self.hold(array.nbytes)
        weakref.finalize(array, self.give_back, array.nbytes)
        return array

    def array(self, shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised array: in memory when it fits in the budget, else a spill file."""
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if self.fits(nbytes) or nbytes == 0:
            return self.held_array(np.empty(shape, dtype=dtype))
        return self.mapped(shape, dtype)

    def mapped(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An array of zeros in a new spill file, its space reserved now."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        with self._file() as f:
            try:
                os.posix_fallocate(f.fileno(), 0, nbytes)
            except OSError as exc:
                raise self._error(exc, nbytes) from None
            return self._map(f, nbytes).view(dtype).reshape(shape)

    def _map(self, f, nbytes: int) -> np.ndarray:
        m = mmap.mmap(f.fileno(), nbytes)  # the mapping keeps the file; its descriptor may close
        self._maps.add(m)
        self._on_disk(nbytes)
        weakref.finalize(m, self._on_disk, -nbytes)
        return np.frombuffer(m, dtype=np.uint8)

    def _on_disk(self, nbytes: int) -> None:
        self.disk_now += nbytes
        if nbytes > 0:
            self.disk_bytes += nbytes
            self.disk_peak = max(self.disk_peak, self.disk_now)

    @contextlib.contextmanager
    def _file(self) -> Iterator[Any]:
        try:
            f = tempfile.TemporaryFile(prefix="neardup-spill-", dir=self.tmp_dir)  # noqa: SIM115
        except OSError as exc:
            raise self._error(exc, 0) from None
        with f:
            yield f

    def _error(self, exc: OSError, nbytes: int) -> SpillError:
        try:
            free = f"{format_size(shutil.disk_usage(self.tmp_dir).free)} free"
        except OSError:
            free = "its free space unknown"
        what = f"{format_size(nbytes)} more" if nbytes else "a file"
        budget = format_size(self.limit) if self.limit is not None else "none"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            cause = f"not enough free space in {self.tmp_dir} ({free}) for {what}"
        else:
            cause = f"cannot write in {self.tmp_dir}: {exc.strerror or exc}"
        return SpillError(
            f"the job is past its memory budget ({budget}) and {cause}; "
            "give --tmp-dir a folder on a larger disk, or a larger --memory"
        )

    def rows(self, row_shape: tuple[int, ...], dtype: Any) -> SpillRows:
        """A :class:`SpillRows` of this budget."""
        return SpillRows(self, row_shape, dtype)

    def relieve(self) -> None:
        """:meth:`release` when the process's resident memory is above ``cap`` and a good part of
        it (an eighth of ``work``) is pages of mapped files (releasing only those helps):
        called as often as a stage may have touched ``work`` bytes of spill files (a read of a
        mapped file maps the pages around it too, 64 KB on Linux by default, however little was
        read)."""
        if not self._maps:
            return
        if self.cap is not None:
            resident, mapped = _statm()
            if resident <= self.cap or mapped < self.work // 8:
                return
        self.release()

    def release(self) -> None:
        """Unmap the pages of every spill file that this process touched (they stay in the page
        cache or on disk and come back when read): resident memory back to the budget."""
        for m in list(self._maps):
            with contextlib.suppress(ValueError, OSError):  # a mapping being closed
                m.madvise(mmap.MADV_DONTNEED)


class SpillRows:
    """:class:`~neardup.core.arrays.RowBuffer` under a budget: rows appended in memory while they
    fit, written to a spill file from the batch that would not (the writes go through the page
    cache and cost no resident memory), and mapped back as one array by :meth:`finish`."""

    def __init__(self, spill: Spill, row_shape: tuple[int, ...], dtype: Any) -> None:
        self._spill = spill
        self._row_shape = tuple(row_shape)
        self._dtype = np.dtype(dtype)
        self._memory: RowBuffer | None = RowBuffer(row_shape, dtype)
        self._file = None
        self._n = 0
        self._held = 0
        self._written = 0

    def __len__(self) -> int:
        return self._n

    def append(self, rows: np.ndarray) -> None:
        rows = np.ascontiguousarray(rows, dtype=self._dtype)
        if self._memory is not None:
            if self._spill.fits(rows.nbytes):
                self._memory.append(rows)
                self._spill.hold(rows.nbytes)
                self._held += rows.nbytes
                self._n += len(rows)
                return
            self._to_file()
        self._write(rows)
        self._n += len(rows)

    def _to_file(self) -> None:
        with self._spill._file() as f:
            self._file = os.dup(f.fileno())  # a descriptor of the unnamed file, kept open
        done = self._memory.finish()
        self._memory = None
        self._write(done)
        del done
        self._spill.give_back(self._held)
        self._held = 0

    def _write(self, rows: np.ndarray) -> None:
        view = memoryview(rows.reshape(-1).view(np.uint8))
        self._written += len(view)
        self._spill._on_disk(len(view))
        try:
            while len(view):
                written = os.write(self._file, view[: 1 << 30])
                view = view[written:]
        except OSError as exc:
            self._close()
            raise self._spill._error(exc, len(view)) from None

    def _close(self) -> None:
        if self._file is not None:
            os.close(self._file)
            self._file = None
            self._spill._on_disk(-self._written)  # the file is gone, or counted by its mapping now
            self._written = 0

    def finish(self) -> np.ndarray:
        """The rows appended, as one array (the buffer must not be used afterwards)."""
        if self._memory is not None:
            out = self._memory.finish()
            self._memory = None
            self._spill.give_back(self._held)
            return self._spill.held_array(out)
        nbytes = self._n * int(np.prod(self._row_shape, dtype=np.int64)) * self._dtype.itemsize
        try:
            if nbytes == 0:
                return np.empty((0,) + self._row_shape, dtype=self._dtype)
            fd, self._file = self._file, None
            self._spill._on_disk(-self._written)
            self._written = 0
            with os.fdopen(fd, "rb") as f:
                data = self._spill._map(f, nbytes)
            return data.view(self._dtype).reshape((self._n,) + self._row_shape)
        finally:
            self._close()

    def __del__(self) -> None:
        self._close()


_CURRENT: contextvars.ContextVar[Spill | None] = contextvars.ContextVar("neardup_spill", default=None)


def current_spill() -> Spill | None:
    """The budget of the job running on this thread (None: no budget, everything in memory)."""
    return _CURRENT.get()


@contextlib.contextmanager
def using(spill: Spill | None) -> Iterator[Spill | None]:
    """Make ``spill`` the current budget inside the block (on this thread)."""
    token = _CURRENT.set(spill)
    try:
        yield spill
    finally:
        _CURRENT.reset(token)


def spill_rows(row_shape: tuple[int, ...], dtype: Any) -> RowBuffer | SpillRows:
    """A row buffer of the current budget (a plain :class:`RowBuffer` when there is none)."""
    spill = current_spill()
    return RowBuffer(row_shape, dtype) if spill is None else spill.rows(row_shape, dtype)
