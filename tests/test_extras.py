"""A job that needs an optional dependency that is missing stops at once, before reading, with one
line naming the extra (exit 2); no silent fallback. Each case runs the command in a subprocess
whose import of the extra's module fails (``sys.modules[name] = None``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

RUN = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # import NAME -> ImportError
from neardup.cli.main import main
sys.argv = ["neardup"] + {args!r}
main()
"""


def run_without(blocked: list[str], *args: str) -> subprocess.CompletedProcess:
    code = RUN.format(blocked=blocked, args=[str(a) for a in args])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.fixture
def missing_input(tmp_path):
    """A path that does not exist: a job that read before checking would fail on it instead."""
    return tmp_path / "never-read.jsonl"


@pytest.fixture
def html_input(tmp_path):
    path = tmp_path / "pages.jsonl"
    page = "<html><body><nav>menu</nav><article><p>" + "words of the article " * 20 + "</p></article></body></html>"
    path.write_text("".join(json.dumps({"text": page + str(i)}) + "\n" for i in range(3)))
    return path


CASES = [
    (["rapidfuzz"], ["--verify", "edit"], "neardup[edit]"),
    (["rapidfuzz"], ["--method", "simhash", "--verify", "edit"], "neardup[edit]"),
    (["resiliparse"], ["--html", "--main-content"], "neardup[html]"),
    (["dask", "dask.distributed"], ["--engine", "dask"], "neardup[dask]"),
]


@pytest.mark.parametrize(
    ("blocked", "options", "extra"), CASES, ids=lambda x: "-".join(x) if isinstance(x, list) else x
)
def test_a_missing_extra_stops_before_reading_with_one_line(tmp_path, missing_input, blocked, options, extra):
    res = run_without(blocked, "dedup", missing_input, "-o", tmp_path / "out.jsonl", *options)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"pip install '{extra}'" in lines[0] and options[-2 if options[-1] == "edit" else -1] in lines[0]
    assert not (tmp_path / "out.jsonl").exists()


def test_plot_without_matplotlib_stops_before_the_work(tmp_path):
    gold = tmp_path / "gold.csv"
    gold.write_text("id,cluster\na,1\nb,1\n")
    res = run_without(["matplotlib"], "eval", "--gold", gold, "--pred", gold, "--sweep", "--plot", tmp_path / "p.png")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "neardup: error: --plot needs plots from the optional matplotlib: pip install 'neardup[plot]'"
    ]


def test_the_main_content_heuristic_is_an_explicit_choice(tmp_path, html_input):
    out = tmp_path / "out.jsonl"
    res = run_without(
        ["resiliparse"], "dedup", html_input, "-o", out, "--html", "--main-content", "--main-content-heuristic", "-q"
    )
    assert res.returncode == 0, res.stderr
    assert out.exists()


def test_the_api_checks_rapidfuzz_before_reading(missing_input):
    code = (
        "import sys\nsys.modules['rapidfuzz'] = None\nimport neardup\n"
        "from neardup.methods.minhash.config import MinHashConfig\n"
        "try:\n"
        f"    neardup.dedup([{str(missing_input)!r}], MinHashConfig(verify='edit'))\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "pip install 'neardup[edit]'" in res.stdout, res.stderr
