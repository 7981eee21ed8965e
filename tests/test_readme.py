"""The README's Python examples run as written, from the repository root."""

from __future__ import annotations

import re

import pytest

from conftest import REPO


def python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_python_examples():
    assert python_blocks()


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_block_runs(index, monkeypatch):
    monkeypatch.chdir(REPO)
    exec(compile(python_blocks()[index], f"README.md block {index}", "exec"), {"__name__": "readme"})
