"""Readers and writers: documents in, kept records and result tables out (one module per format)."""

from .formats import input_format, output_format
from .policy import ReadStats
from .read import read_documents
from .write import write_kept, write_table

__all__ = ["ReadStats", "input_format", "output_format", "read_documents", "write_kept", "write_table"]
