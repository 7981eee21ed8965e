"""TODO: docstring."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..core.documents import DocBatch
from ..text.html import html_to_text
from .csv import scan_csv
from .formats import input_format
from .jsonl import scan_jsonl
from .parquet import scan_parquet
from .policy import Chunk, Policy, ReadStats, make_policy
from .textdir import scan_txtdir


def scan(path: str, fmt: str, pol: Policy, full: bool, rows: int) -> Iterator[Chunk]:
    if fmt == "jsonl":
        return scan_jsonl(path, pol, full)
    if fmt == "csv":
        return scan_csv(path, pol, full)
    if fmt == "parquet":
        return scan_parquet(path, pol, full, rows)
    return scan_txtdir(path, pol, full)


# --------------------------------------------------------------------------------------------
# Reading
def resolve_inputs(paths) -> list[tuple[str, str]]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    sources = [(str(p), input_format(p)) for p in paths]
    if not sources:
        raise ValueError("no input paths given")
    return sources


def read_documents(
    paths,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    on_error: str = "fail",
    batch_size: int = 2048,
    stats: ReadStats | None = None,
    html: bool = False,
    main_content: bool = False,
) -> Iterator[DocBatch]:
    """Stream the documents of ``paths`` (read in the order given) as :class:`DocBatch` es.

    Every batch but the last holds ``batch_size`` documents. Paths are checked before this
    returns (a missing path or unknown extension raises :class:`InputError` at once); records are
    read lazily. ``stats``, if given, is updated as batches are produced.

    ``html=True``: the text field of JSONL, CSV and Parquet records is HTML, converted with
    :func:`neardup.text.html.html_to_text` (``.html``/``.htm`` files of a directory are always converted,
    ``.txt`` files never). ``main_content=True``: keep only the main block of each HTML page.

    >>> stats = ReadStats()
    >>> for batch in read_documents(["docs.jsonl.gz"], on_error="skip", stats=stats):  # doctest: +SKIP
    ...     print(batch.start, batch.ids[:2])
    0 ['doc-1', 'doc-2']
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    pol = make_policy(text_field, id_field, on_error, stats, html, main_content)
    sources = resolve_inputs(paths)
    return _batches(sources, pol, batch_size)


def _batches(sources: list[tuple[str, str]], pol: Policy, batch_size: int) -> Iterator[DocBatch]:
    start = 0
    ids: list[str] = []
    texts: list[str] = []
    for path, fmt in sources:
        convert = pol.html and fmt != "txtdir"
        for chunk in scan(path, fmt, pol, False, batch_size):
            pol.stats.documents += len(chunk.ids)
            ids += chunk.ids
            if convert:
                texts += [html_to_text(t, main_content=pol.main_content) for t in chunk.texts]
            else:
                texts += chunk.texts
            while len(ids) >= batch_size:
                yield DocBatch(start, ids[:batch_size], texts[:batch_size])
                del ids[:batch_size], texts[:batch_size]
                start += batch_size
    if ids:
        yield DocBatch(start, ids, texts)
