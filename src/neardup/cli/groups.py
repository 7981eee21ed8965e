"""Options that name the section of ``--help`` they are listed in.

click lists every option under one "Options" heading; a command with forty options needs
sections. An option made by :func:`option` (a :class:`GroupedOption`) carries a ``group``
("Input", "Output", ...); :class:`GroupedCommand` lists the options without a group first, under
"Options", then one section per group, in the command's ``group_order`` and then in first-seen
order. A new option only declares its group::

    @option("--removed", group="Output", help="...")

Anywhere else a :class:`GroupedOption` is an ordinary click option.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import click

__all__ = ["GroupedCommand", "GroupedOption", "option"]


class GroupedOption(click.Option):
    """A click option with the ``--help`` section it belongs in (None: the common "Options")."""

    def __init__(self, *args, group: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.group = group


def option(*decls: str, group: str | None = None, **kwargs) -> Callable:
    """``click.option`` for a :class:`GroupedOption` listed in the ``group`` section of ``--help``."""
    return click.option(*decls, cls=GroupedOption, group=group, **kwargs)


class GroupedCommand(click.Command):
    """A click command whose ``--help`` lists its options by group (see the module's docstring).

    ``group_order`` names the groups that come first, in that order; other groups follow in the
    order their first option was declared. :meth:`extra_sections` lets a subclass add sections
    after the groups (the method options of :class:`~neardup.cli.options.MethodCommand`) and
    hold options back from "Options" (``skip``).
    """

    group_order: tuple[str, ...] = ("Input", "Output")

    def option_groups(self, ctx: click.Context, skip: Iterable[str] = ()) -> list[tuple[str, list[click.Option]]]:
        """[(section title, options)] in the order ``--help`` lists them; the common options first."""
        skip = set(skip)
        groups: dict[str, list[click.Option]] = {"Options": []}
        for name in self.group_order:
            groups[name] = []
        for p in self.get_params(ctx):
            if isinstance(p, click.Option) and p.name not in skip:
                groups.setdefault(getattr(p, "group", None) or "Options", []).append(p)
        return [(title, opts) for title, opts in groups.items() if opts]

    def extra_sections(self, ctx: click.Context) -> tuple[set[str], list[tuple[str, list[tuple[str, str]]]]]:
        """(names of options listed in the extra sections, [(title, help rows)]); none here."""
        return set(), []

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        skip, extra = self.extra_sections(ctx)
        sections = [
            (title, [r for r in (p.get_help_record(ctx) for p in opts) if r is not None])
            for title, opts in self.option_groups(ctx, skip)
        ]
        for title, rows in sections + extra:
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
