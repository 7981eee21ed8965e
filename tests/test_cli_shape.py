"""The shape of the command line: grouped ``dedup --help``, the top-level help, shell completion
and ``--config FILE.toml``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from neardup.cli.groups import GroupedCommand, option
from neardup.cli.main import main
from neardup.methods.registry import get_method, method_names

ROOT = Path(__file__).resolve().parents[1]
NEWS = ROOT / "examples" / "news.jsonl"


def run(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def sections(help_text: str) -> dict[str, str]:
    """Section title -> its text, for the sections of a click help page (lines ending in ':')."""
    out: dict[str, str] = {}
    title = None
    for line in help_text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            title = line[:-1]
            out[title] = ""
        elif title is not None:
            out[title] += line + "\n"
    return out


# --------------------------------------------------------------------------------------------
# help


def test_dedup_help_is_grouped_common_options_first_then_input_output_then_one_group_per_method():
    res = run("dedup", "--help")
    assert res.exit_code == 0
    found = sections(res.output)
    titles = [t for t in found if t != "Usage" and not t.startswith("  ")]
    methods = [f"--method {m} ({get_method(m).summary})" for m in method_names()]
    assert titles[:5] == ["Options", "Input", "Output", "Index", "Engine"]
    assert titles[5:] == methods
    assert [m.split()[1] for m in methods[:5]] == ["minhash", "simhash", "spotsigs", "exact", "imatch"]
    common = found["Options"]
    assert common.lstrip().startswith("--method")
    for flag in ("--keep", "--workers", "--config", "--quiet", "--help"):
        assert flag in common
    for flag in ("--input-format", "--text-field", "--id-field", "--html", "--on-error"):
        assert flag in found["Input"] and flag not in common
    for flag in ("--output", "--clusters", "--pairs"):
        assert flag in found["Output"] and flag not in common
    assert "--against" in found["Index"] and "--engine" in found["Engine"]
    assert "--threshold" not in common and "--num-perm" in found[methods[0]]
    assert "--raw" in found[methods[3]] and "--raw" not in found[methods[0]]


def test_an_option_declares_its_group_and_new_groups_follow_in_declaration_order():
    @click.command(cls=GroupedCommand)
    @option("--zeta", group="Later", help="z")
    @option("--alpha", help="a")
    @option("--removed", group="Output", help="r")
    @option("--fmt", group="Input", help="f")
    @click.option("--plain", help="p")  # a plain click option: a common one
    def cmd(**kw):
        pass

    found = sections(CliRunner().invoke(cmd, ["--help"]).output)
    assert [t for t in found if t != "Usage"] == ["Options", "Input", "Output", "Later"]
    assert "--alpha" in found["Options"] and "--plain" in found["Options"]
    assert "--removed" in found["Output"] and "--fmt" in found["Input"] and "--zeta" in found["Later"]
    assert CliRunner().invoke(cmd, ["--zeta", "1"]).exit_code == 0  # otherwise an ordinary option


def test_top_level_help_names_every_command_and_method():
    res = run("--help")
    assert res.exit_code == 0
    found = sections(res.output)
    for command in main.commands:
        assert f"  {command} " in found["Commands"]
    assert set(main.commands) >= {"dedup", "index", "serve", "tune", "compare", "eval", "report"}
    methods = next(t for t in found if t.startswith("Methods"))
    for name in method_names():
        assert f"  {name} " in found[methods]
        assert get_method(name).summary.split()[0] in found[methods]
    assert "_NEARDUP_COMPLETE=bash_source neardup" in res.output


# --------------------------------------------------------------------------------------------
# shell completion (real processes: completion reads the environment of the program)


def complete(words: str, tmp_path) -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)  # the word being completed
    env = dict(os.environ, _NEARDUP_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=str(cword))
    script = "import sys; from neardup.cli.main import main; main(prog_name='neardup')"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    return [line.split(",", 1)[1] for line in out.stdout.splitlines()]


def test_shell_completion_script_and_answers(tmp_path):
    env = dict(os.environ, _NEARDUP_COMPLETE="bash_source")
    script = "from neardup.cli.main import main; main(prog_name='neardup')"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "complete -o nosort -F _neardup_completion neardup" in out.stdout
    assert complete("neardup de", tmp_path) == ["dedup"]
    assert "--method" in complete("neardup dedup --meth", tmp_path)
    assert complete("neardup dedup --method s", tmp_path) == ["simhash", "spotsigs"]
    assert set(complete("neardup dedup --input-format ", tmp_path)) == {"jsonl", "csv", "parquet", "arrow"}


# --------------------------------------------------------------------------------------------
# --config FILE.toml


def read(path: Path) -> bytes:
    return path.read_bytes()


def dedup(tmp_path, name, *args, config_text=None):
    out = tmp_path / name
    extra = []
    if config_text is not None:
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(config_text, encoding="utf-8")
        extra = ["--config", cfg]
    res = run("dedup", NEWS, "-o", out / "kept.jsonl", "--clusters", out / "clusters.csv", "-q", *extra, *args)
    return res, out


def test_config_file_values_equal_the_same_flags(tmp_path):
    flags, a = dedup(tmp_path, "flags", "--threshold", "0.6", "--num-perm", "64", "--ngram", "3", "--keep", "longest")
    assert flags.exit_code == 0, flags.output
    toml = 'threshold = 0.6\nnum-perm = 64\nngram = 3\nkeep = "longest"\n'
    conf, b = dedup(tmp_path, "config", config_text=toml)
    assert conf.exit_code == 0, conf.output
    assert read(a / "kept.jsonl") == read(b / "kept.jsonl")
    assert read(a / "clusters.csv") == read(b / "clusters.csv")
    default, c = dedup(tmp_path, "default")
    assert read(c / "clusters.csv") != read(a / "clusters.csv"), "the settings change the result"


def test_command_line_flags_override_the_config_file(tmp_path):
    flags, a = dedup(tmp_path, "flags", "--threshold", "0.9")
    both, b = dedup(tmp_path, "both", "--threshold", "0.9", config_text="threshold = 0.5\n")
    assert flags.exit_code == both.exit_code == 0, both.output
    assert read(a / "clusters.csv") == read(b / "clusters.csv")


def test_config_file_flags_lists_choices_of_numbers_and_the_output(tmp_path):
    toml = (
        'method = "simhash"\nbits = 64\nmax-distance = 6\nno_exact_prepass = true\nhtml = false\n'
        f'output = "{(tmp_path / "cfg" / "kept.jsonl").as_posix()}"\n'
    )
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml, encoding="utf-8")
    res = run("dedup", NEWS, "--config", cfg, "-q")
    flags = run(
        "dedup", NEWS, "-o", tmp_path / "f" / "kept.jsonl", "--method", "simhash", "--bits", "64",
        "--max-distance", "6", "--no-exact-prepass", "-q",
    )  # fmt: skip
    assert res.exit_code == flags.exit_code == 0, res.output
    assert read(tmp_path / "cfg" / "kept.jsonl") == read(tmp_path / "f" / "kept.jsonl")
    imatch = tmp_path / "i.toml"
    imatch.write_text('method = "imatch"\nidf-band = [0.1, 0.9]\n', encoding="utf-8")
    res = run("dedup", NEWS, "-o", tmp_path / "i.jsonl", "--config", imatch, "-q")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("treshold = 0.7\n", "'treshold' is not an option of neardup dedup"),
        ("[minhash]\nthreshold = 0.7\n", "'minhash' is not an option"),
        ('threshold = "high"\n', "'high' is not a valid float"),
        ("threshold = [0.7]\n", "threshold = [0.7]: expected one value, not a list"),
        ("html = 1\n", "html = 1: expected true or false"),
        ("idf-band = 0.5\n", "idf-band = 0.5: expected a list of 2 values"),
        ("threshold = 0.7\nthreshold = 0.8\n", "is not valid TOML"),
        ("threshold = \n", "(at line 1, column 13)"),
        ('method = "exact"\nthreshold = 0.9\n', "--threshold (set in --config) does not apply to --method exact"),
    ],
)
def test_config_file_errors_name_the_file_and_the_key(tmp_path, text, message):
    cfg = tmp_path / "job.toml"
    cfg.write_text(text, encoding="utf-8")
    res = run("dedup", NEWS, "-o", tmp_path / "k.jsonl", "--config", cfg)
    assert res.exit_code == 2, res.output
    assert message in res.output
    if "does not apply" not in message and "valid float" not in message:
        assert str(cfg) in res.output
    assert "Traceback" not in res.output and not (tmp_path / "k.jsonl").exists()


def test_missing_config_file_is_a_usage_error(tmp_path):
    res = run("dedup", NEWS, "-o", tmp_path / "k.jsonl", "--config", tmp_path / "nope.toml")
    assert res.exit_code == 2
    assert f"cannot read {tmp_path / 'nope.toml'}" in res.output


def test_the_usage_config_example_runs(tmp_path, monkeypatch):
    """The ``--config`` example of docs/usage.md, run as written."""
    import re

    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", text, flags=re.S).group(1)
    cfg = tmp_path / "dedup.toml"
    cfg.write_text(block, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = run("dedup", NEWS, "--config", cfg, "-o", tmp_path / "kept.parquet", "-q")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "clusters.csv").exists() and (tmp_path / "kept.parquet").exists()
