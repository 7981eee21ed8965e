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


class InputChangedError(NeardupError):
    """The input gave other documents when it was read again (a job that reads its input several
    times needs the same documents every time)."""
