"""The outputs of one run as one transaction: every file is written in full before any is replaced.

A run stages each output (:meth:`OutputSet.stage` gives a temporary path ``.NAME.PID.tmp`` beside
it) and the writers fill the temporaries. :meth:`OutputSet.commit` then, in this order:

1. flushes every temporary to disk (``fsync``);
2. writes a small journal ``.neardup-commit.PID.json`` in every folder it writes to, listing
   every ``(temporary, output)`` rename (written to ``.part`` and renamed, so it is whole or
   absent; one in each folder, so that the next run finds it whichever of the folders it writes);
3. renames the temporaries over the outputs, in the order they were staged;
4. removes the journal.

Steps 2 to 4 run under an exclusive lock of every folder written to (``flock`` on the folder
itself, or on ``.neardup-commit.lock`` in it where a folder cannot be locked), taken in sorted
order: two runs writing the same outputs at once commit one after the other, so the outputs are
one run's complete set (the one that committed last), never a mix of both. :func:`recover` takes
the same lock.

Until step 2 completes, a crash (even ``kill -9`` or power loss) leaves every previous output as it
was: only temporaries, which the next run that stages the same output removes (their process is
gone). During step 3 (a few ``rename`` calls) a crash can leave some outputs new and some old; the
journal stays behind and :func:`recover` finishes the renames (roll forward: every temporary it
names was complete before the journal was written). Every run calls :func:`recover` on its output
directories before it stages anything, so the next run over the same directory completes or cleans
up whatever a killed run left. A reader that must never see a mix can check that no
``.neardup-commit.*.json`` file is in the directory (or call :func:`recover` first).

:meth:`OutputSet.abort` (called on any exception, ``KeyboardInterrupt`` and the CLI's SIGTERM
exception included) removes the temporaries; the previous outputs stay.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson

__all__ = ["OutputSet", "recover", "remove_stale_temporaries", "temporary_path"]

JOURNAL_PREFIX = ".neardup-commit."
LOCK_NAME = ".neardup-commit.lock"
"""The lock file of a folder that cannot be locked itself (the lock is on the folder where it can)."""


def _lock_folder(folder: Path) -> int | None:
    """An exclusive lock of ``folder`` (waits for another run's commit there); the descriptor to
    close to release it, or None where file locks do not exist."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; commits are not serialized there
        return None
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        fd = None
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return fd
        except OSError:  # a file system that cannot lock a folder: a lock file in it instead
            os.close(fd)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def folders_locked(folders: Iterable[str | os.PathLike]):
    """Hold the commit lock of every folder in ``folders`` (taken in sorted order, so that runs
    that write to several of the same folders cannot deadlock)."""
    fds: list[int] = []
    try:
        for folder in sorted({Path(f) for f in folders}):
            fd = _lock_folder(folder)
            if fd is not None:
                fds.append(fd)
        yield
    finally:
        for fd in reversed(fds):
            with contextlib.suppress(OSError):
                os.close(fd)


def temporary_path(final: Path, pid: int | None = None) -> Path:
    """``.NAME.PID.tmp`` beside ``final``: hidden, and naming the process that writes it."""
    return final.with_name(f".{final.name}.{os.getpid() if pid is None else pid}.tmp")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def remove_stale_temporaries(final: Path) -> None:
    """Remove ``.NAME.PID.tmp`` files beside ``final`` left by runs that were killed (their
    process is gone): a kill -9 cannot clean up, the next run does."""
    for tmp in final.parent.glob(f".{glob.escape(final.name)}.*.tmp"):
        pid = tmp.name[len(final.name) + 2 : -4]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def _stale_temporaries(folder: Path) -> dict[str, list[Path]]:
    """The ``.NAME.PID.tmp`` files in ``folder`` whose process is gone, by ``NAME``: one listing
    of the folder for every output staged in it (:func:`remove_stale_temporaries` lists it per
    output, which for thousands of parts is quadratic)."""
    found: dict[str, list[Path]] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return found
    for entry in names:
        if not (entry.startswith(".") and entry.endswith(".tmp")):
            continue
        name, _, pid = entry[1:-4].rpartition(".")
        if name and pid.isdigit() and not _alive(int(pid)):
            found.setdefault(name, []).append(folder / entry)
    return found


def recover(directory: str | os.PathLike) -> int:
    """Finish the commits that killed runs left half done in ``directory``; return how many.

    A journal ``.neardup-commit.PID.json`` whose process is gone lists renames that were all
    ready; the ones still pending (their temporary exists) are done now, then the journal is
    removed. Journals being written (``.part``) by dead processes are removed: their run had not
    started replacing anything.
    """
    done = 0
    folder = Path(directory)
    if not folder.is_dir():
        return 0
    journals = [j for j in sorted(folder.glob(f"{JOURNAL_PREFIX}*")) if j.name != LOCK_NAME]
    if not journals:
        return 0
    with folders_locked([folder]):
        for journal in journals:
            done += _recover_one(journal)
    return done


def _recover_one(journal: Path) -> int:
    """Finish the commit of one journal if its process is gone (1), else leave it (0)."""
    done = 0
    if journal.exists():
        name = journal.name[len(JOURNAL_PREFIX) :]
        pid, _, rest = name.partition(".")
        if not pid.isdigit() or _alive(int(pid)):
            return 0
        if rest == "json":
            try:
                renames = orjson.loads(journal.read_bytes())["renames"]
            except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
                renames = []
            for tmp, final in renames:
                if os.path.exists(tmp):
                    os.replace(tmp, final)
            done = 1
        with contextlib.suppress(OSError):
            journal.unlink()
    return done


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be opened
        _fsync_file(path)


class OutputSet:
    """The outputs of one run, replaced together by :meth:`commit` (see the module docs).

    >>> import json, os, tempfile
    >>> import numpy as np
    >>> from neardup.io.write import write_kept, write_table
    >>> folder = tempfile.mkdtemp()
    >>> docs = os.path.join(folder, "docs.jsonl")
    >>> with open(docs, "w") as f:
    ...     for key, text in zip("abc", ["x y", "x y", "z"]):
    ...         print(json.dumps({"id": key, "text": text}), file=f)
    >>> visible = lambda: sorted(n for n in os.listdir(folder) if not n.startswith("."))
    >>> with OutputSet() as outputs:
    ...     write_kept([docs], np.array([True, False, True]), f"{folder}/kept.jsonl", outputs=outputs)
    ...     write_table({"id": list("abc"), "cluster": list("aac")}, f"{folder}/clusters.csv", outputs=outputs)
    ...     visible()  # staged: nothing in place before the commit
    ...     outputs.commit()
    2
    ['docs.jsonl']
    >>> visible()
    ['clusters.csv', 'docs.jsonl', 'kept.jsonl']
    >>> import shutil; shutil.rmtree(folder)
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []
        self._finals: set[Path] = set()
        self._stale: dict[Path, dict[str, list[Path]]] = {}
        """Per folder staged in: its stale temporaries by output name, listed (and the folder
        recovered) when the first output there is staged."""
        self._committed = False
        self._renaming = False

    @property
    def committed(self) -> bool:
        """True once the outputs are replaced (by :meth:`commit`, or by an :meth:`abort` that
        came during the renames and finished them)."""
        return self._committed

    @property
    def finals(self) -> list[Path]:
        """The outputs staged so far, in staging (and renaming) order."""
        return [final for _, final in self._staged]

    def stage(self, path: str | os.PathLike) -> Path:
        """The temporary path to write ``path`` to (created directories included). Finishes any
        commit a killed run left in that directory and removes its stale temporaries first."""
        if self._committed:
            raise RuntimeError("this output set is committed already")
        final = Path(os.path.abspath(path))
        if final in self._finals:
            raise ValueError(f"{path} is staged twice in one output set")
        folder = final.parent
        if folder not in self._stale:  # once per folder: a set may stage thousands of parts in one
            folder.mkdir(parents=True, exist_ok=True)
            recover(folder)
            self._stale[folder] = _stale_temporaries(folder)
        for stale in self._stale[folder].pop(final.name, ()):
            with contextlib.suppress(OSError):
                stale.unlink()
        tmp = temporary_path(final)
        self._staged.append((tmp, final))
        self._finals.add(final)
        return tmp

    def commit(self, after: Callable[[], None] | None = None) -> None:
        """Replace every staged output by its temporary (all of them, or, after a crash, see
        :func:`recover`), under the commit lock of their folders; ``after`` runs under that lock
        too, once they are replaced (e.g. removing files that are not part of the new set)."""
        if self._committed:
            return
        for tmp, final in self._staged:
            if not tmp.exists():
                raise FileNotFoundError(f"the temporary file of {final} was not written: {tmp}")
            _fsync_file(tmp)
        with folders_locked(final.parent for _, final in self._staged):
            try:
                self._commit_locked()
            except BaseException:
                self.abort()  # under the lock: during the renames it finishes them
                raise
            if after is not None:
                after()

    def _commit_locked(self) -> None:
        journals = self._journals() if len(self._staged) > 1 else []  # one rename is atomic by itself
        if journals:
            body = orjson.dumps({"pid": os.getpid(), "renames": [[str(t), str(f)] for t, f in self._staged]})
            for journal in journals:
                part = journal.with_name(journal.name + ".part")
                with open(part, "wb") as f:
                    f.write(body)
                    f.flush()
                    os.fsync(f.fileno())
            self._renaming = True  # from here on, an interrupt finishes the renames (abort)
            for journal in journals:
                os.replace(journal.with_name(journal.name + ".part"), journal)
                _fsync_dir(journal.parent)
        self._renaming = True
        self._finish_renames()
        for folder in dict.fromkeys(final.parent for _, final in self._staged):
            _fsync_dir(folder)
        self._remove_journals()
        self._committed = True

    def _journals(self) -> list[Path]:
        """This commit's journal in every folder it writes to, so that whichever of them the
        next run writes to first, its :func:`recover` finishes the whole commit."""
        folders = dict.fromkeys(final.parent for _, final in self._staged)
        return [folder / f"{JOURNAL_PREFIX}{os.getpid()}.json" for folder in folders]

    def _remove_journals(self) -> None:
        for journal in self._journals():
            for leftover in (journal, journal.with_name(journal.name + ".part")):
                with contextlib.suppress(OSError):
                    leftover.unlink()

    def _finish_renames(self) -> None:
        for tmp, final in self._staged:
            if tmp.exists():
                os.replace(tmp, final)

    def abort(self) -> None:
        """Remove the temporaries (the previous outputs stay as they were); during the renames of
        :meth:`commit` (an interrupt arrived there) finish them instead."""
        if self._committed or not self._staged:
            return
        if self._renaming:  # interrupted between renames: every temporary is complete, go forward
            self._finish_renames()
            self._remove_journals()
            self._committed = True
            return
        for tmp, _ in self._staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        self._remove_journals()

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._committed:
            self.abort()
