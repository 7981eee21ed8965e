"""Which format a path is: input and output formats, and compression, from the extension.

Inputs: JSON Lines (``.jsonl``, ``.ndjson``, ``.json``) and CSV, each optionally ``.gz``/``.zst``,
``.parquet``, and directories (of ``.txt`` and ``.html``/``.htm`` files). Outputs: JSON Lines,
CSV (each optionally compressed) and Parquet.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import InputError

TEXT_SUFFIXES = (".txt",)


HTML_SUFFIXES = (".html", ".htm")


_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")


def compression(path: str) -> str | None:
    name = path.lower()
    if name.endswith(".gz"):
        return "gz"
    if name.endswith(".zst"):
        return "zst"
    return None


def input_format(path: str | os.PathLike) -> str:
    """The input format of ``path``: ``"jsonl"``, ``"csv"``, ``"parquet"`` or ``"txtdir"``.

    Raises :class:`InputError` (with ``line=None``) if the path does not exist or its extension is
    not one of the supported ones.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> open(os.path.join(folder, "corpus.jsonl.zst"), "wb").close()
    >>> input_format(os.path.join(folder, "corpus.jsonl.zst"))
    'jsonl'
    >>> import shutil; shutil.rmtree(folder)
    """
    name = str(path)
    if os.path.isdir(name):
        return "txtdir"
    if not os.path.exists(name):
        raise InputError(name, None, "no such file or directory", reason="unreadable file")
    fmt = _table_format(name)
    if fmt is not None:
        return fmt
    suffix = "".join(Path(name).suffixes[-2:]) or "(none)"
    raise InputError(
        name,
        None,
        f"unknown input format {suffix!r}; expected .jsonl[.gz|.zst], .csv, .parquet "
        "or a directory of .txt/.html files",
        reason="unknown format",
    )


def _table_format(name: str) -> str | None:
    """``"jsonl"``, ``"csv"`` or ``"parquet"`` from a file name's extension (JSONL and CSV may
    end in .gz/.zst), or None."""
    lower = name.lower()
    base = lower[: lower.rfind(".")] if compression(lower) else lower
    if base.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if base.endswith((".csv", ".tsv")):
        return "csv"
    if lower.endswith(".parquet"):
        return "parquet"
    return None


def csv_delimiter(path: str) -> str:
    """The field separator of a CSV input: a tab for ``.tsv`` files (optionally ``.gz``/``.zst``),
    else a comma.

    >>> csv_delimiter("data.tsv.gz"), csv_delimiter("data.csv")
    ('\\t', ',')
    """
    lower = str(path).lower()
    base = lower[: lower.rfind(".")] if compression(lower) else lower
    return "\t" if base.endswith(".tsv") else ","


def output_format(path: str | os.PathLike) -> str:
    """The output format of ``path`` from its extension: ``"jsonl"``, ``"csv"`` or ``"parquet"``.

    JSONL and CSV may end in ``.gz`` or ``.zst`` to be compressed. Raises ``ValueError`` otherwise.

    >>> output_format("out/kept.jsonl.gz")
    'jsonl'
    """
    fmt = _table_format(str(path))
    if fmt is not None:
        return fmt
    raise ValueError(
        f"cannot tell the output format of {str(path)!r} from its extension; use .jsonl "
        "(or .jsonl.gz, .jsonl.zst), .csv (or .csv.gz, .csv.zst) or .parquet"
    )
