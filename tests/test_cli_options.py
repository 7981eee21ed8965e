"""The method options of ``neardup dedup``: generated from the configs, one source of truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from neardup.cli.main import main
from neardup.cli.options import build_config, method_options
from neardup.methods.registry import get_method, method_names
from neardup.methods.spotsigs.config import SpotSigsConfig


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "in.jsonl"
    texts = ["the cat sat on the mat and looked at the rain outside today"] * 3 + ["something else entirely here"]
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    return path


def test_help_lists_every_field_of_every_method_with_its_default():
    out = run("dedup", "--help").output
    for name in method_names():
        cls = get_method(name)
        assert f"--method {name} (" in out
        section = out.split(f"--method {name} (")[1].split("\n--method ")[0]
        for f, spec in cls.params():
            if spec.cli is None or spec.cli.composite:
                continue
            flag = spec.cli.negative or spec.cli.flag or "--" + f.name.replace("-", "_").replace("_", "-")
            assert flag in section, f"{flag} missing in the {name} section"


def test_shared_options_are_one_option_each():
    names = [opt.name for opt in method_options()]
    assert len(names) == len(set(names))
    threshold = next(opt for opt in method_options() if opt.name == "threshold")
    assert set(threshold.methods) == {"minhash", "simhash", "spotsigs"}  # simhash: with --verify edit
    assert "[default: 0.8]" in threshold.helps["minhash"]
    # --verify is one option with the union of the methods' choices
    verify = next(opt for opt in method_options() if opt.name == "verify")
    assert set(verify.methods) == {"minhash", "simhash", "spotsigs"}
    assert list(verify.kwargs["type"].choices) == ["signature", "exact", "edit"]


def test_no_options_give_the_default_config():
    for name in method_names():
        ctx = click.Context(main.commands["dedup"])
        params = {opt.name: None for opt in method_options()}
        assert build_config(ctx, name, params) == get_method(name)()


def test_options_build_the_config(corpus, tmp_path, monkeypatch):
    seen = []
    import neardup.cli.dedup as dedup_module

    original = dedup_module.dedup

    def spy(inputs, config, **kwargs):
        seen.append(config)
        return original(inputs, config, **kwargs)

    monkeypatch.setattr(dedup_module, "dedup", spy)
    res = run(
        "dedup",
        corpus,
        "-o",
        tmp_path / "k.jsonl",
        "--method",
        "spotsigs",
        "--threshold",
        "0.6",
        "--chain",
        "3",
        "--spot-key",
        "chain",
        "--no-exact-prepass",
        "--idf-band",
        "0.1",
        "0.9",
        "-q",
    )
    assert res.exit_code == 0, res.output
    assert seen[-1] == SpotSigsConfig(threshold=0.6, chain=3, key="chain", exact_prepass=False, idf_band=(0.1, 0.9))
    res = run(
        "dedup",
        corpus,
        "-o",
        tmp_path / "k.jsonl",
        "--method",
        "simhash",
        "--bits",
        "64",
        "--max-distance",
        "3",
        "--char-ngram",
        "4",
        "-q",
    )
    assert res.exit_code == 0, res.output
    assert seen[-1].bits == 64 and seen[-1].shingling.kind == "char" and seen[-1].shingling.n == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--raw"], "--raw does not apply to --method minhash (it is for: exact)"),
        (["--method", "exact", "--threshold", "0.5"], "--threshold does not apply to --method exact"),
        (["--ngram", "3", "--char-ngram", "4"], "--ngram and --char-ngram are exclusive"),
        (["--num-perm", "4096"], "4096 is not in the range 1<=x<=2048"),
        (["--bands", "40", "--rows", "8"], "bands * rows must be <= num_perm"),
        (["--method", "simhash", "--max-distance", "64"], "max_distance must be an integer in [0, 63]"),
        (["--method", "simhash", "--blocks", "3"], "blocks must be an integer with max_distance < blocks"),
        (["--threshold", "1.5"], "1.5 is not in the range 0<x<=1"),
    ],
)
def test_bad_options_are_usage_errors(corpus, tmp_path, args, message):
    res = run("dedup", corpus, "-o", tmp_path / "k.jsonl", *args)
    assert res.exit_code == 2, res.output
    assert message in res.output


def test_an_unreadable_word_list_is_a_data_error(corpus, tmp_path):
    res = run(
        "dedup", corpus, "-o", tmp_path / "k.jsonl", "--method", "spotsigs", "--antecedents", tmp_path / "missing.txt"
    )
    assert res.exit_code in (1, 2) and "missing.txt" in res.output


PLUGIN = """
from dataclasses import dataclass

from neardup.core.plan import Plan
from neardup.core.validation import Integer
from neardup.methods.base import MethodConfig, param
from neardup.methods.exact.plan import exact_plan
from neardup.methods.exact.scheme import ExactScheme


@dataclass(frozen=True)
class ToyConfig(MethodConfig):
    \"\"\"A method from another distribution: exact keys under another name, with one option.\"\"\"

    name = "toy-exact"
    summary = "a plugin method"
    rank = 99
    toy_size: int = param(3, Integer(1, 10), "A toy setting.")
    raw: bool = False

    @property
    def scheme(self):
        return ExactScheme()

    def plan(self) -> Plan:
        return exact_plan(self)
"""


def test_a_method_from_another_distribution_gets_its_options_and_runs(corpus, tmp_path):
    """A plugin registered through the ``neardup.methods`` entry point group: nothing in neardup
    names it, yet --method takes it, --help lists its option, and the job runs."""
    site = tmp_path / "site"
    (site / "toy_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "toy_plugin.py").write_text(PLUGIN)
    (site / "toy_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-plugin\nVersion: 1.0\n"
    )
    (site / "toy_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[neardup.methods]\ntoy-exact = toy_plugin:ToyConfig\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "neardup", "dedup"]
    help_text = subprocess.run([*cmd, "--help"], env=env, capture_output=True, text=True, check=True).stdout
    assert "--toy-size" in help_text and "--method toy-exact (a plugin method)" in help_text
    out = tmp_path / "k.jsonl"
    ok = subprocess.run(
        [*cmd, str(corpus), "-o", str(out), "--method", "toy-exact", "--toy-size", "5", "-q"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert len(out.read_text().splitlines()) == 2
    bad = subprocess.run(
        [*cmd, str(corpus), "-o", str(out), "--toy-size", "5"], env=env, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--toy-size does not apply to --method minhash" in bad.stderr
