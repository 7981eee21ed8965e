"""The exceptions neardup raises on purpose: the base class, bad input data, incompatible sketches.

The exceptions of bad parameters (:class:`~neardup.core.validation.ParameterError` and its
subclasses) derive from :class:`NeardupError` too; they live with the checks in
:mod:`neardup.core.validation`.
"""

from __future__ import annotations


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""


class InputError(NeardupError):
    """Bad input data: names the file, the line (or row) and what was expected.

    ``line`` is 1-based for line-oriented formats (JSONL, CSV) and the 1-based row for Parquet;
    ``None`` when the error concerns the whole file.
    """

    def __init__(self, path: str, line: int | None, message: str, reason: str = "invalid"):
        self.path = str(path)
        self.line = line
        self.message = message
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        # raised in another process (a Dask worker reading its partition) and pickled back
        return type(self), (self.path, self.line, self.message, self.reason)


class IncompatibleSketchError(NeardupError, ValueError):
    """Two sketches were made with different schemes (hash family, seed, K, shingling, version)."""


class InputChangedError(NeardupError, ValueError):
    """The input gave other documents when it was read again (a job that reads its input several
    times needs the same documents every time); a ValueError too, as the wrong ``keep`` given to
    :func:`~neardup.io.write.write_kept` is detected the same way."""


_OUTPUT_REASONS = {
    "ENOSPC": "no space left on device; free some space or write elsewhere",
    "EDQUOT": "disk quota exceeded; free some space or write elsewhere",
    "EACCES": "permission denied; write to a folder you may write in",
    "EPERM": "permission denied; write to a folder you may write in",
    "EROFS": "read-only file system; write elsewhere",
    "EISDIR": "it is a directory; give a file path (or end -o with '/' to write parts into a folder)",
    "ENOTDIR": "a part of its path is a file, not a folder",
}


class OutputError(NeardupError):
    """An output cannot be written (disk full, permission denied, a folder in the way): names the
    output and the reason, like an :class:`InputError` names the input.

    ``errno`` is the operating system's error number when there is one (``errno.ENOSPC``, ...).
    """

    def __init__(self, path: object, cause: BaseException | str):
        import errno as _errno
        import re

        self.path = str(path)
        self.errno = getattr(cause, "errno", None)
        if isinstance(cause, str):
            message = cause
        else:
            if self.errno is None:  # pyarrow words the OS error in its message only
                found = re.search(r"\[Errno (\d+)\]", str(cause))
                self.errno = int(found.group(1)) if found else None
            code = _errno.errorcode.get(self.errno or 0, "")
            message = _OUTPUT_REASONS.get(code) or getattr(cause, "strerror", None) or str(cause)
        self.message = message
        super().__init__(f"cannot write {self.path}: {message}")


class LinesNeeded(Exception):
    """Not an error: a stream read without knowing its first line number met a line whose record
    needs it (an id ``FILE:LINE``, an error naming the line, or a line only the slow path parses).
    The reader of a byte range raises it (:mod:`neardup.io.jsonl`); the engine that read the
    range unnumbered counts the lines before it and reads it again (the Dask engine)."""
