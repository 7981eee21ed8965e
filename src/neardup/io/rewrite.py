"""Writing every record with its text replaced (the repeats job's output): :func:`write_rewritten`.

The inputs are re-read with the numbering and skipping of :func:`~neardup.io.read.read_documents`;
``edit(start, texts)`` gives, for the documents of a chunk, each one's new text and fields to add
(or None: the record is not written). Every other field is written as it was read (JSON Lines records are parsed and
written again, so their other values keep their JSON meaning, not their exact bytes). Formats,
atomic replacement and output sets are those of :func:`~neardup.io.write.write_kept`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.errors import InputChangedError
from ..text.utf8 import as_str
from .formats import compression, output_format
from .policy import Chunk, make_policy
from .read import resolve_inputs, scan
from .streams import WRITE_ROWS
from .transaction import OutputSet
from .write import _atomic_output, _chunk_records, _CsvOnePassSink, _CsvSink, _open_sink, _refuse_clash, _text_records

Edit = Callable[[int, list], "list[tuple[str | None, dict[str, Any]] | None]"]


def write_rewritten(
    paths,
    out_path,
    edit: Edit,
    n_documents: int,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    on_error: str = "fail",
    input_format: str | None = None,
    id_policy: str = "field",
    snapshot: dict | None = None,
    outputs: OutputSet | None = None,
    added: dict | None = None,
) -> int:
    """Write the records of ``paths`` edited by ``edit`` to ``out_path``; return how many.

    ``edit(start, texts)`` is called once per chunk of documents (numbered from ``start``), in
    document order, and returns for each ``(new_text, fields)`` (``new_text`` None: the text as
    it was; ``fields`` added after the record's own, a clash with one of them an
    :class:`~neardup.core.errors.InputError`) or None to leave the record out. ``added``
    (name -> Arrow type) declares the added fields for CSV and Parquet outputs.
    ``n_documents``: documents of the first pass (a different count raises
    :class:`~neardup.core.errors.InputChangedError`).
    """
    pol = make_policy(text_field, id_field, on_error, None, id_policy=id_policy, snapshot=snapshot)
    sources = resolve_inputs(paths, input_format)
    out_fmt = output_format(out_path)
    keep = np.ones(n_documents, dtype=bool)

    def copy(sink) -> tuple[int, int]:
        written = start = 0
        try:
            for path, fmt in sources:
                for chunk in scan(path, fmt, pol, True, WRITE_ROWS):
                    n = len(chunk.ids)
                    if start + n > n_documents:
                        raise InputChangedError(f"{path}: more documents than when first read; did the input change?")
                    sel = list(range(n))
                    records = (
                        _chunk_records(fmt, chunk, sel)
                        if out_fmt == "parquet"
                        else _text_records(fmt, chunk, sel, text_field)
                    )
                    out = []
                    edits = edit(start, [as_str(t) for t in chunk.texts])
                    for record, res in zip(records, edits):
                        if res is None:
                            continue
                        text, fields = res
                        if fields:
                            _refuse_clash(path, record, fields)
                            record.update(fields)
                        if text is not None:
                            record[text_field] = text
                        out.append(record)
                    if out:
                        sink.write("records", Chunk([], [], out), list(range(len(out))))
                    written += len(out)
                    start += n
        finally:
            sink.close()
        return written, start

    with _atomic_output(out_path, outputs) as tmp:
        sink = _open_sink(out_fmt, str(out_path), tmp, sources, keep, pol, added)
        written, start = copy(sink)
        if isinstance(sink, _CsvOnePassSink) and sink.grew:
            written, start = copy(_CsvSink(tmp, compression(str(out_path)), list(sink.fields), pol.text_field))
        if start != n_documents:
            raise InputChangedError(
                f"the inputs hold {start} documents, {n_documents} when first read; did the inputs change?"
            )
    return written
