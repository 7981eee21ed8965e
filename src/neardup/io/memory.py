"""Documents held in memory: a list of texts, a pandas DataFrame, a pyarrow Table or
RecordBatchReader, or a Hugging Face ``datasets.Dataset``.

pandas and ``datasets`` stay optional: they are never imported here; a DataFrame or a Dataset
is recognised by the methods it has (``to_arrow``-like conversions that each library provides).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..core.errors import InputError


def is_in_memory(data: Any) -> bool:
    """True when ``data`` is documents held in memory rather than input paths.

    A list of strings is paths when every item looks like one (no whitespace, and it exists or is
    ``-``, a URL, a glob or a name with an input extension), texts when none does; a list that mixes
    both is refused (a typo in one path must not turn the paths into texts).

    >>> is_in_memory(["a text, not a path"]), is_in_memory(pa.table({"text": ["x"]}))
    (True, True)
    """
    if isinstance(data, (str, os.PathLike)):
        return False
    if isinstance(data, (pa.Table, pa.RecordBatchReader, pa.RecordBatch)):
        return True
    if _is_dataframe(data) or _is_hf_dataset(data):
        return True
    if isinstance(data, Sequence):
        items = list(data)
        if not items or any(isinstance(x, os.PathLike) for x in items):
            return False
        if not all(isinstance(x, str) for x in items):
            bad = next(x for x in items if not isinstance(x, str))
            raise TypeError(f"a list given to dedup must hold texts or paths (str), got {type(bad).__name__}")
        looks = [_looks_like_path(x) for x in items]
        if all(looks):
            return False
        if any(looks):
            path = items[looks.index(True)]
            raise InputError(
                "<list>",
                None,
                f"the list mixes a path ({path[:80]!r}) with texts: give either paths (files, folders, globs, "
                "URLs) or texts",
            )
        return True
    return False


_EXTENSIONS = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".parquet", ".csv", ".arrow", ".txt", ".gz", ".zst")


def _looks_like_path(x: str) -> bool:
    """A string is read as a path when it has no whitespace and exists, is ``-``, a URL, a glob or
    ends in an input extension (a missing file then fails in the reader, naming it)."""
    if len(x) > 4096 or any(c.isspace() for c in x):
        return False
    if x == "-" or "://" in x or os.path.exists(x):
        return True
    return any(c in x for c in "*?[") or x.lower().endswith(_EXTENSIONS)


def _is_dataframe(data: Any) -> bool:
    return type(data).__module__.split(".")[0] == "pandas" and type(data).__name__ == "DataFrame"


def _is_hf_dataset(data: Any) -> bool:
    return type(data).__module__.split(".")[0] == "datasets" and hasattr(data, "data") and hasattr(data, "column_names")


def to_table(data: Any) -> pa.Table:
    """The documents of ``data`` as a pyarrow Table (a list of texts becomes one ``text`` column)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if _is_dataframe(data):
        return pa.Table.from_pandas(data, preserve_index=False)
    if _is_hf_dataset(data):
        table = data.data.table if hasattr(data.data, "table") else data.data
        indices = getattr(data, "_indices", None)
        if indices is not None:  # a filtered or shuffled Dataset: rows through its index mapping
            table = table.take(indices.column(0))
        return table
    return pa.table({"text": pa.array(list(data), pa.string())})


def texts_and_ids(data: Any, text_field: str = "text", id_field: str | None = None) -> tuple[list[str], list[str]]:
    """Texts and ids of in-memory ``data``; ids default to row positions ``"0"``, ``"1"``, ...

    >>> texts_and_ids(pa.table({"body": ["a", "b"], "k": [7, 9]}), "body", "k")
    (['a', 'b'], ['7', '9'])
    """
    table = to_table(data)
    if isinstance(data, Sequence) and not isinstance(data, (pa.Table, str)):
        text_field = "text"
    names = table.column_names
    if text_field not in names:
        raise InputError("<data>", None, f"text field {text_field!r} not found in the data; its columns are {names}")
    col = table.column(text_field)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        raise InputError("<data>", None, f"text field {text_field!r} must hold strings, its type is {col.type}")
    texts = col.to_pylist()
    nulls = [i for i, t in enumerate(texts) if t is None]
    if nulls:
        raise InputError(
            "<data>", nulls[0] + 1, f"text field {text_field!r} is null in row {nulls[0]} ({len(nulls)} null rows)"
        )
    if id_field is None:
        ids = default_ids(data, table)
    else:
        if id_field not in names:
            raise InputError("<data>", None, f"id field {id_field!r} not found in the data; its columns are {names}")
        ids = [str(v) for v in table.column(id_field).to_pylist()]
    return texts, ids


def default_ids(data: Any, table: pa.Table) -> list[str]:
    """Ids of in-memory data given no ``id_field``, as the command line takes them: the ``id``
    column where there is one, else a pandas DataFrame's index where it is not the default
    ``0, 1, ...``, else row positions ``"0"``, ``"1"``, ...

    >>> default_ids(None, pa.table({"id": ["a", "b"], "text": ["x", "y"]}))
    ['a', 'b']
    """
    if "id" in table.column_names:
        return [str(v) for v in table.column("id").to_pylist()]
    if _is_dataframe(data) and not _is_default_index(data.index):
        return [str(v) for v in data.index.tolist()]
    return [str(i) for i in range(table.num_rows)]


def _is_default_index(index: Any) -> bool:
    """A pandas ``RangeIndex`` 0, 1, ..., n - 1 (what pandas gives a frame nobody indexed)."""
    return type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1


def select_rows(data: Any, mask: Any, n: int) -> Any:
    """The rows of ``data`` where ``mask`` (bool[n]) is true, as the same type: a list (or other
    sequence: a list), a pandas DataFrame (its index kept), a pyarrow Table or RecordBatch, or a
    ``datasets.Dataset`` (``select``, which keeps an index mapping instead of copying).

    >>> select_rows(["a", "b", "c"], [True, False, True], 3)
    ['a', 'c']
    """
    import numpy as np

    mask = np.asarray(mask, dtype=bool)
    if isinstance(data, (str, os.PathLike)) or not is_in_memory(data):
        raise TypeError(
            "kept_rows/removed_rows take the in-memory data the result was computed from (a list, DataFrame, "
            "Arrow table or Dataset); for files, write the kept records with `neardup dedup -o`"
        )
    rows = len(data) if not isinstance(data, pa.RecordBatchReader) else None
    if rows is None:
        raise TypeError("a RecordBatchReader can be read once only: give the table it was read into")
    if rows != n:
        raise ValueError(f"data has {rows:,} rows, the result {n:,} documents: give the data it was computed from")
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return data.filter(pa.array(mask))
    if _is_dataframe(data):
        return data[mask]
    if _is_hf_dataset(data):
        return data.select(np.flatnonzero(mask))
    return [x for x, keep in zip(data, mask.tolist()) if keep]
