"""The Python examples of the README and of docs/usage.md run as written, from the repository root."""

from __future__ import annotations

import re

import pytest

from conftest import REPO

DOCUMENTS = ("README.md", "docs/usage.md")


def python_blocks() -> list[tuple[str, str]]:
    """(document, block) of every Python example."""
    found = []
    for name in DOCUMENTS:
        text = (REPO / name).read_text(encoding="utf-8")
        found += [(name, block) for block in re.findall(r"```python\n(.*?)```", text, flags=re.S)]
    return found


def test_readme_has_python_examples():
    assert {name for name, _ in python_blocks()} == set(DOCUMENTS)


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_block_runs(index, monkeypatch):
    monkeypatch.chdir(REPO)
    name, block = python_blocks()[index]
    exec(compile(block, f"{name} block {index}", "exec"), {"__name__": "readme"})
