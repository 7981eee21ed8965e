"""pyarrow and its compute, CSV and Parquet modules, each imported on first use (``pa``, ``pc``, ``pacsv``, ``pq``)."""

from __future__ import annotations

import importlib
from typing import Any


class _Lazy:
    """A module imported on first use: pyarrow costs ~40 MB of memory and 0.3 s of start-up,
    and a JSONL-to-JSONL run never needs it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._name)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


pa = _Lazy("pyarrow")


pc = _Lazy("pyarrow.compute")


pacsv = _Lazy("pyarrow.csv")


pq = _Lazy("pyarrow.parquet")
