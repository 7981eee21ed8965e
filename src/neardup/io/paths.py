"""Input paths as users write them: local files, folders of shards, globs, ``-`` and fsspec URLs.

:func:`expand_inputs` turns what a user typed into the ordered list of ``(path, format)`` sources
the scanners read:

* a local file: its format from the extension (``.jsonl``/``.ndjson``/``.json``, ``.csv``, each
  optionally ``.gz``/``.zst``; ``.parquet``; ``.arrow``), or ``input_format`` when given (it
  overrides the extension);
* a local folder: every shard under it (``.jsonl``, ``.ndjson``, ``.csv``, each optionally
  ``.gz``/``.zst``, ``.parquet``, ``.arrow``), recursively, in sorted path order (names starting
  with ``.`` or ``_`` skipped, as Spark and Hugging Face ``save_to_disk`` write their metadata
  there); a folder without shards is read as a folder of ``.txt``/``.html`` documents, as before;
  a folder with both is refused (which one was meant?);
* a glob (``data/**/*.jsonl.zst``, quoted so that the shell leaves it alone): the matching files,
  sorted; no match is an error;
* a single ``.txt``, ``.html`` or ``.htm`` file: one document (id = the path), as in a folder of them;
* ``-``: standard input, copied once to a temporary file (the job reads its input several times)
  in the format ``input_format`` names (required: a stream has no extension); ids and messages
  name it ``-``;
* a named pipe (FIFO), ``/dev/stdin``, a process substitution (``<(zcat x.gz)``) or any other
  input that is not a regular file: copied once to a temporary file as it is read, so that the
  job's later passes read the copy (a pipe can be read only once: reading it again would wait
  forever for a writer that is gone). Its format comes from its name or ``input_format``; ids
  and messages keep its name. The copy goes to the temporary directory (``TMPDIR``) and is
  removed at exit; a disk that fills up is a clear error;
* ``PROTOCOL://...`` (``s3://``, ``gs://``, ``https://``, ``hf://``, ``memory://``, ...): a file,
  a folder or a glob on an `fsspec <https://filesystem-spec.readthedocs.io>`_ filesystem, with the
  same rules as local paths. A protocol whose filesystem package is not installed raises
  :class:`~neardup.core.errors.InputError` naming the package to install.

Nothing is read here except folder listings and standard input; the scanners open the files with
:func:`open_binary`.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from ..core.errors import InputError
from .formats import HTML_SUFFIXES, TEXT_SUFFIXES, compression

__all__ = [
    "INPUT_FORMATS",
    "expand_inputs",
    "file_size",
    "is_url",
    "local_path",
    "open_binary",
    "shard_format",
]

INPUT_FORMATS = ("jsonl", "csv", "parquet", "arrow")
"""The formats ``--input-format`` accepts."""

_SHARD_SUFFIXES = (".jsonl", ".ndjson", ".csv")

# the package that provides each common protocol's filesystem (named in the error when missing)
_PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "hf": "huggingface_hub",
    "http": "aiohttp (fsspec[http])",
    "https": "aiohttp (fsspec[http])",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
}

_GLOB_CHARS = ("*", "?", "[")


def is_url(path: str) -> bool:
    """True for ``PROTOCOL://...`` paths other than ``file://`` (those are read through fsspec)."""
    head, sep, _ = path.partition("://")
    return bool(sep) and head.isascii() and head.replace("+", "").replace("-", "").isalnum() and head != "file"


def shard_format(name: str) -> str | None:
    """``"jsonl"``, ``"csv"``, ``"parquet"`` or ``"arrow"`` for a shard's file name, or None.

    Unlike single files, shards in a folder must say JSON Lines in their extension (``.jsonl``,
    ``.ndjson``): a folder's ``.json`` files are usually metadata.

    >>> shard_format("part-00001.jsonl.zst"), shard_format("dataset_info.json")
    ('jsonl', None)
    """
    lower = name.lower()
    base = lower[: lower.rfind(".")] if compression(lower) else lower
    if base.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if base.endswith((".csv", ".tsv")):
        return "csv"
    if lower.endswith(".parquet"):
        return "parquet"
    if lower.endswith(".arrow"):
        return "arrow"
    return None


def file_format(name: str) -> str | None:
    """The format of a single named input file from its extension (``.json`` counts as JSON Lines)."""
    fmt = shard_format(name)
    if fmt is not None:
        return fmt
    lower = name.lower()
    base = lower[: lower.rfind(".")] if compression(lower) else lower
    return "jsonl" if base.endswith(".json") else None


def _unknown(name: str) -> InputError:
    suffix = "".join(Path(name.split("://")[-1]).suffixes[-2:]) or "(none)"
    return InputError(
        name,
        None,
        f"unknown input format {suffix!r}; expected .jsonl[.gz|.zst], .csv/.tsv[.gz|.zst], .parquet, .arrow, "
        "a folder of those (or of .txt/.html files), a glob, or --input-format",
        reason="unknown format",
    )


def _filesystem(url: str):
    """The fsspec filesystem of ``url`` and the path inside it; a clear error when missing."""
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec comes with the [remote] extra
        raise InputError(url, None, "reading URLs needs fsspec: pip install 'neardup[remote]'") from exc
    protocol = url.split("://", 1)[0]
    try:
        fs, inner = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        package = _PACKAGES.get(protocol)
        if package is None and "protocol" in str(exc).lower():
            raise InputError(url, None, f"unknown protocol {protocol!r}: {exc}", reason="unreadable file") from exc
        need = package or "the fsspec filesystem package for it"
        raise InputError(
            url,
            None,
            f"reading {protocol}:// paths needs {need}; install it (pip install {need.split(' ')[0]})",
            reason="unreadable file",
        ) from exc
    return fs, inner


def _file_or_broken_link(p: Path) -> bool:
    """A regular file, or a symbolic link that leads to no file (dangling, a loop, no permission):
    listed, so that reading it fails naming it (an error, or one skipped file with ``--on-error
    skip``) rather than the folder quietly losing a shard."""
    return p.is_file() or (p.is_symlink() and not p.is_dir())


def _special_file(p: Path) -> str:
    """Why an entry of an input folder named like a shard or a document, but not a regular file
    (a named pipe, a socket, a device), is not read: reading a pipe of a folder would wait for a
    writer, so it is refused by name rather than skipped unseen."""
    mode = p.stat().st_mode
    kind = "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return (
        f"not a regular file ({kind}) in an input folder; remove it from the folder, or give it as an "
        "input of its own (a pipe given by name is read once)"
    )


def _local_folder(root: str, fmt: str | None) -> list[tuple[str, str]]:
    base = Path(root)
    shards: list[tuple[str, str]] = []
    documents = False
    for p in sorted(base.rglob("*")):
        rel = p.relative_to(base)
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        if not _file_or_broken_link(p):
            if (
                not p.is_dir()
                and p.exists()
                and (shard_format(p.name) or p.suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES)
            ):
                raise InputError(str(p), None, _special_file(p), reason="unreadable file")
            continue
        kind = shard_format(p.name)
        if p.suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES:
            documents = True
        elif kind is not None or (fmt is not None and not p.suffix):
            shards.append((os.path.join(root, str(rel)), kind or fmt))
    if shards and documents:
        raise InputError(
            root,
            None,
            "the folder holds both data shards (.jsonl/.csv/.parquet/.arrow) and .txt/.html documents; "
            "give the shards as a glob or move one kind elsewhere",
            reason="unknown format",
        )
    if shards:
        return shards
    return [(root, "txtdir")]


def _remote(url: str, fmt: str | None) -> list[tuple[str, str]]:
    fs, inner = _filesystem(url)
    protocol = url.split("://", 1)[0]

    def full(p: str) -> str:
        return p if is_url(p) else f"{protocol}://{p.lstrip('/') if protocol != 'memory' else p}"

    if any(c in inner for c in _GLOB_CHARS) and protocol not in ("http", "https"):
        found = sorted(fs.glob(inner))
        files = [p for p in found if not fs.isdir(p)]
        if not files:
            raise InputError(url, None, "no file matches this pattern", reason="unreadable file")
        return [(full(p), _format_of(full(p), fmt)) for p in files]
    try:
        is_dir = protocol not in ("http", "https") and fs.isdir(inner)
    except OSError as exc:
        raise InputError(url, None, f"cannot list it: {exc}", reason="unreadable file") from exc
    if is_dir:
        shards = []
        for p in sorted(fs.find(inner)):
            rel = p[len(inner.rstrip("/")) :].lstrip("/")
            if any(part.startswith((".", "_")) for part in rel.split("/")):
                continue
            kind = fmt if fmt is not None else shard_format(p)
            if kind is not None:
                shards.append((full(p), kind))
        if not shards:
            raise InputError(
                url, None, "no .jsonl/.csv/.parquet/.arrow shards in this folder", reason="unreadable file"
            )
        return shards
    try:
        exists = fs.exists(inner)
    except OSError as exc:
        raise InputError(url, None, f"cannot reach it: {exc}", reason="unreadable file") from exc
    if not exists:
        raise InputError(url, None, "no such file or directory", reason="unreadable file")
    return [(url, _format_of(url, fmt))]


def _format_of(name: str, fmt: str | None) -> str:
    if fmt is not None:
        return fmt
    path = name.split("?", 1)[0]
    kind = file_format(path)
    if kind is None:
        if Path(path).suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES:
            return "txtdir"  # one document, read as a folder of one
        raise _unknown(name)
    return kind


_SPOOLED: dict[object, str] = {}
"""The temporary copy of each stream read so far, by the stream's key ("-" for standard input,
(device, inode) for a named pipe), so that every pass of a job reads the same copy."""

_NAMES: dict[str, str] = {}
"""Input name as given -> its temporary copy (what :func:`open_binary` and :func:`local_path` open)."""


def _spool(name: str, key: object, fmt: str | None, reader) -> str:
    """Copy a stream once to a temporary file (removed at exit) and map ``name`` to it."""
    if key not in _SPOOLED:
        suffix = f".{fmt}" if fmt else "".join(Path(name).suffixes[-2:])
        fd, tmp = tempfile.mkstemp(prefix="neardup-stream-", suffix=suffix)
        atexit.register(_remove, tmp)
        try:
            with os.fdopen(fd, "wb") as out, reader() as src:
                shutil.copyfileobj(src, out, 1 << 20)
        except OSError as exc:
            _remove(tmp)
            where = os.path.dirname(tmp)
            raise InputError(
                name,
                None,
                f"cannot copy this stream to a temporary file in {where} ({exc.strerror or exc}); "
                "a pipe is read once and copied, so its data must fit there (set TMPDIR to a larger disk)",
                reason="unreadable file",
            ) from exc
        _SPOOLED[key] = tmp
    _NAMES[name] = _SPOOLED[key]
    return name


def _stdin_file(fmt: str | None) -> str:
    """Standard input, copied once to a temporary file (removed at exit) in format ``fmt``."""
    if fmt is None:
        need = "reading standard input needs --input-format (jsonl, csv, parquet or arrow)"
        raise InputError("-", None, need, reason="unknown format")
    return _spool("-", "-", fmt, lambda: contextlib.nullcontext(sys.stdin.buffer))


def _stream_file(name: str) -> str:
    """A named pipe or other stream (not a regular file), copied once to a temporary file."""
    st = os.stat(name)
    return _spool(name, (st.st_dev, st.st_ino), None, lambda: open(name, "rb"))


def _remove(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)


def expand_inputs(paths, input_format: str | None = None) -> list[tuple[str, str]]:
    """The ``(path, format)`` sources of ``paths`` (see the module docs), in reading order.

    Raises :class:`InputError` for a missing path, an unknown extension, a glob without a match,
    ``-`` without ``input_format``, or a URL whose filesystem package is not installed.

    >>> expand_inputs(["no-such-folder/docs.jsonl"])
    Traceback (most recent call last):
    neardup.core.errors.InputError: no-such-folder/docs.jsonl: no such file or directory
    """
    if input_format is not None and input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {', '.join(INPUT_FORMATS)}, got {input_format!r}")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    sources: list[tuple[str, str]] = []
    for p in paths:
        name = os.fspath(p)
        if name == "-":
            sources.append((_stdin_file(input_format), input_format))
        elif name.startswith("file://"):
            sources += expand_inputs([name[len("file://") :]], input_format)
        elif is_url(name):
            sources += _remote(name, input_format)
        elif os.path.isdir(name):
            sources += _local_folder(name, input_format)
        elif os.path.exists(name):
            fmt = _format_of(name, input_format)
            if not stat.S_ISREG(os.stat(name).st_mode):
                name = _stream_file(name)  # a pipe: read it once
            sources.append((name, fmt))
        elif any(c in name for c in _GLOB_CHARS):
            matches = sorted(glob.glob(name, recursive=True))
            for f in matches:
                if not _file_or_broken_link(Path(f)) and os.path.exists(f) and not os.path.isdir(f):
                    raise InputError(
                        f,
                        None,
                        _special_file(Path(f)).replace("an input folder", "a glob's matches"),
                        reason="unreadable file",
                    )
            found = [f for f in matches if _file_or_broken_link(Path(f))]
            if not found:
                raise InputError(name, None, "no file matches this pattern", reason="unreadable file")
            sources += [(f, _format_of(f, input_format)) for f in found]
        else:
            raise InputError(name, None, "no such file or directory", reason="unreadable file")
    if not sources:
        raise ValueError("no input paths given")
    return sources


def local_path(name: str) -> str:
    """The local file to open for input ``name``: its temporary copy for ``-`` and pipes, else itself."""
    return _NAMES.get(name, name)


def open_binary(name: str):
    """Open a local file or an fsspec URL for binary reading (no decompression)."""
    name = local_path(name)
    if is_url(name):
        import fsspec

        return fsspec.open(name, "rb").open()
    return open(name, "rb")


def file_size(name: str) -> int:
    """Size in bytes of a local file or a URL (0 when the filesystem does not say)."""
    name = local_path(name)
    if is_url(name):
        fs, inner = _filesystem(name)
        with contextlib.suppress(OSError, TypeError, ValueError):
            return int(fs.size(inner) or 0)
        return 0
    return os.path.getsize(name)
