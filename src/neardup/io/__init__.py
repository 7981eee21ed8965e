"""Readers and writers: documents in, kept records and result tables out.

:func:`read_documents` streams the documents of JSON Lines, CSV and Parquet files and of
directories of text and HTML files as numbered batches; :func:`write_kept` writes the kept records
and :func:`write_table` the clusters and pairs tables. Modules: ``read`` and ``write`` (those
three), ``formats`` (a path's format, from its extension), ``policy`` (which fields, what a bad
record does, the counters, the error messages), ``streams`` (decompressed binary input in blocks of
whole lines), one scanner per input format (``jsonl``, whose kernel entry is ``jsonl_scan``,
``csv``, ``parquet`` and ``textdir``), ``arrow`` (pyarrow, imported on first use) and
``transaction`` (:class:`OutputSet`: several outputs replaced together, or not at all).
"""

from .formats import input_format, output_format
from .policy import ReadStats
from .read import read_documents
from .transaction import OutputSet
from .write import write_kept, write_table

__all__ = ["OutputSet", "ReadStats", "input_format", "output_format", "read_documents", "write_kept", "write_table"]
