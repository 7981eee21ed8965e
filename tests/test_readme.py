"""The Python examples of the README and of docs/usage.md run as written, from the repository root,
and print what the documents show.

The convention of the documents: every ``print(...)`` of an example ends with a comment
``# -> TEXT`` (or is followed by a line with only that comment), the text the call prints (compared as a doctest compares: ``...`` matches anything,
and whitespace runs are one space). A print
that never runs (an ``except`` branch whose exception was not raised) fails the test, so an
example that promises an exception is checked to raise it."""

from __future__ import annotations

import ast
import doctest
import re
import sys

import pytest

from conftest import REPO

DOCUMENTS = ("README.md", "docs/usage.md")
EXPECTED = re.compile(r"#\s*->\s*(.*?)\s*$")
_CHECKER = doctest.OutputChecker()
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def python_blocks() -> list[tuple[str, str]]:
    """(document, block) of every Python example."""
    found = []
    for name in DOCUMENTS:
        text = (REPO / name).read_text(encoding="utf-8")
        found += [(name, block) for block in re.findall(r"```python\n(.*?)```", text, flags=re.S)]
    return found


def expected_prints(block: str) -> dict[tuple[int, int], str | None]:
    """The line span (first, last) of every ``print(...)`` call of ``block`` and the text its
    ``# -> `` comment promises (None where the call has none)."""
    lines = block.splitlines()
    found = {}
    for node in ast.walk(ast.parse(block)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            match = EXPECTED.search(lines[node.end_lineno - 1])
            if match is None and node.end_lineno < len(lines) and lines[node.end_lineno].lstrip().startswith("#"):
                match = EXPECTED.search(lines[node.end_lineno])  # a long call: the comment on the next line
            found[(node.lineno, node.end_lineno)] = match.group(1) if match else None
    return found


def test_readme_has_python_examples():
    assert {name for name, _ in python_blocks()} == set(DOCUMENTS)


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_every_print_of_an_example_shows_its_output(index):
    name, block = python_blocks()[index]
    missing = [span for span, text in expected_prints(block).items() if text is None]
    assert not missing, f"{name}: the print(...) at block lines {missing} has no '# -> ' comment"


def test_the_checker_fails_a_wrong_output_and_a_print_that_never_ran():
    """The comparison itself: a wrong value fails, and so does an ``except`` branch never taken."""
    with pytest.raises(AssertionError, match="printed '2'"):
        run_block("test", "print(1 + 1)  # -> 3\n")
    with pytest.raises(AssertionError, match="never ran"):
        run_block("test", "try:\n    int('1')\nexcept ValueError as exc:\n    print(exc)  # -> invalid literal ...\n")
    run_block("test", "try:\n    int('x')\nexcept ValueError as exc:\n    print(exc)  # -> invalid literal ...\n")
    run_block("test", "print(0.83333, [1, 2])  # -> 0.833... [1, 2]\n")


def run_block(name: str, block: str) -> None:
    """Run ``block``, recording what each print call prints, and compare with its comment."""
    import io

    spans = expected_prints(block)
    printed: dict[tuple[int, int], list[str]] = {span: [] for span in spans}

    def recording_print(*args, **kwargs):
        if kwargs.get("file") not in (None, sys.stdout):
            return print(*args, **kwargs)
        buffer = io.StringIO()
        print(*args, **{**kwargs, "file": buffer})
        line = sys._getframe(1).f_lineno
        span = next(s for s in spans if s[0] <= line <= s[1])
        printed[span].append(buffer.getvalue())

    exec(compile(block, f"{name}", "exec"), {"__name__": "readme", "print": recording_print})
    for span, expected in spans.items():
        if expected is None:
            continue
        assert printed[span], f"{name}, block line {span[0]}: the print never ran (expected {expected!r})"
        for got in printed[span]:
            assert _CHECKER.check_output(expected + "\n", got, _FLAGS), (
                f"{name}, block line {span[0]}: printed {got.strip()!r}, the document shows {expected!r}"
            )


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_block_runs(index, monkeypatch):
    monkeypatch.chdir(REPO)
    name, block = python_blocks()[index]
    run_block(f"{name} block {index}", block)
