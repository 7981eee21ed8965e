"""The ``neardup`` command group: the entry point, with every command of :mod:`neardup.cli` registered on it."""

from __future__ import annotations

import click

from .. import __version__
from .compare import compare_cmd
from .dedup import dedup_cmd
from .evaluate import eval_cmd
from .index import index_group
from .repeats import repeats_cmd
from .report import report_cmd
from .serve import serve_cmd
from .tune import tune_cmd


class _MainGroup(click.Group):
    """The ``neardup`` group; its ``--help`` also lists every registered method."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_options(ctx, formatter)
        from ..methods.registry import get_method, method_names

        with formatter.section("Methods (neardup dedup --method NAME; neardup dedup --help lists their options)"):
            formatter.write_dl([(name, get_method(name).summary) for name in method_names()])


@click.group(cls=_MainGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find near-duplicate documents: MinHash + LSH, SimHash, SpotSigs, I-Match and exact hashing.

    Run `neardup COMMAND --help` for the options of a command. Shell completion: add
    `eval "$(_NEARDUP_COMPLETE=bash_source neardup)"` to ~/.bashrc (zsh_source, fish_source).
    """


for _command in (dedup_cmd, repeats_cmd, index_group, serve_cmd, tune_cmd, compare_cmd, eval_cmd, report_cmd):
    main.add_command(_command)
