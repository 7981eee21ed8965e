"""Command-line options generated from the methods' configs.

Every method option of ``neardup dedup`` (and of later commands that take a method) comes from a
field of a registered :class:`~neardup.methods.base.MethodConfig` declared with
:func:`~neardup.methods.base.param`: its flag, type, limits, help and default are read from
there, so they cannot drift from the config. A flag that several methods share (``--threshold``,
``--seed``, ``--ngram`` ...) is one option whose help names each method's meaning and default.

Method options default to "not given" on the command line; :func:`build_config` then takes the
method's own default, so ``--threshold`` means 0.8 for minhash and whatever spotsigs says for
spotsigs. An option given for a method that does not have it is a usage error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from ..core.validation import (
    Boolean,
    Choice,
    Constraint,
    Integer,
    Optional,
    ParameterError,
    Range,
    Real,
    Words,
)
from ..methods.base import MethodConfig, Param
from ..methods.registry import get_method, method_names
from ..text.shingles import Shingling
from .groups import GroupedCommand

__all__ = [
    "MethodCommand",
    "MethodOption",
    "add_method_options",
    "build_config",
    "method_options",
    "reject_foreign_options",
    "shingling_option",
]

SHINGLING_FLAGS = ("ngram", "char_ngram", "strip_punctuation")
DEFAULT_MAP = click.core.ParameterSource.DEFAULT_MAP


def shingling_option(
    ngram: int | None, char_ngram: int | None, strip_punctuation: bool, default: Shingling
) -> Shingling:
    """The Shingling chosen by ``--ngram`` / ``--char-ngram`` / ``--strip-punctuation`` (word
    n-grams of the default size when neither size is given)."""
    if ngram is not None and char_ngram is not None:
        raise click.UsageError("--ngram and --char-ngram are exclusive: choose word or character shingles")
    if char_ngram:
        return Shingling("char", char_ngram, strip_punctuation=bool(strip_punctuation))
    return Shingling("word", ngram or default.n)


@dataclass
class MethodOption:
    """One command-line option and the config fields of the methods that have it."""

    name: str
    """The click parameter name (``num_perm``)."""
    decls: tuple[str, ...]
    kwargs: dict[str, Any]
    helps: dict[str, str] = field(default_factory=dict)
    """method -> help text with its default."""

    @property
    def methods(self) -> list[str]:
        return list(self.helps)


def _click_type(constraint: Constraint) -> tuple[Any, dict[str, Any]]:
    """The click type (and extra option settings) for a constraint."""
    if isinstance(constraint, Optional):
        return _click_type(constraint.inner)
    if isinstance(constraint, Integer):
        return click.IntRange(constraint.low, constraint.high), {}
    if isinstance(constraint, Real):
        return click.FloatRange(
            constraint.low, constraint.high, min_open=constraint.low_open, max_open=constraint.high_open
        ), {}
    if isinstance(constraint, Choice):
        return click.Choice([str(o) for o in constraint.options]), {}
    if isinstance(constraint, Range):
        inner, _ = _click_type(constraint.inner)
        return (inner, inner), {}
    raise TypeError(f"no command-line type for {constraint!r}")


def _shown_default(value: Any) -> str:
    if isinstance(value, tuple):
        return " ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, Shingling):
        return f"{value.kind} {value.n}-grams"
    return str(value)


def _field_options(cls: type[MethodConfig], f: dataclasses.Field, spec: Param) -> list[tuple[str, tuple, dict, str]]:
    """(param name, declarations, click kwargs, help) of the options of one config field."""
    cli = spec.cli
    default = cls.default_of(f)
    if cli.composite == "shingling":
        return [
            (
                "ngram",
                ("--ngram",),
                {"type": click.IntRange(min=1, max=256), "default": None},
                f"word n-gram shingle size [default: {default.n if default.kind == 'word' else 5}]",
            ),
            (
                "char_ngram",
                ("--char-ngram",),
                {"type": click.IntRange(min=1, max=256), "default": None},
                "use character n-gram shingles of this size instead of word n-grams",
            ),
            (
                "strip_punctuation",
                ("--strip-punctuation",),
                {"is_flag": True, "default": None},
                "drop punctuation before character shingling",
            ),
        ]
    flag = cli.flag or "--" + f.name.replace("_", "-")
    help_text = spec.help.rstrip(".")
    constraint = spec.constraint
    if isinstance(constraint, Boolean):
        if cli.negative:
            off = (cli.negative_help or help_text).rstrip(".")
            return [(f.name, (cli.negative, f.name), {"flag_value": False, "default": None}, off)]
        return [(f.name, (flag, f.name), {"is_flag": True, "default": None}, help_text)]
    kwargs: dict[str, Any] = {"default": None}
    if cli.path:
        kwargs["type"] = click.Path(dir_okay=False)
    elif (isinstance(constraint, Optional) and isinstance(constraint.inner, Words)) or isinstance(constraint, Words):
        kwargs["type"] = str
    else:
        kwargs["type"], extra = _click_type(constraint)
        kwargs.update(extra)
    if cli.metavar:
        kwargs["metavar"] = cli.metavar
    if "[default" not in help_text:
        help_text += f" [default: {_shown_default(default)}]" if default is not None else ""
    name = flag.lstrip("-").replace("-", "_")
    return [(name, (flag, name), kwargs, help_text)]


def method_options() -> list[MethodOption]:
    """Every option of every registered method, merged by flag, in method then field order."""
    options: dict[str, MethodOption] = {}
    for method in method_names():
        cls = get_method(method)
        for f, spec in cls.params():
            if spec.cli is None:
                continue
            for name, decls, kwargs, help_text in _field_options(cls, f, spec):
                opt = options.get(name)
                if opt is None:
                    opt = options[name] = MethodOption(name, decls, dict(kwargs))
                elif isinstance(opt.kwargs.get("type"), click.Choice) and isinstance(kwargs.get("type"), click.Choice):
                    # one flag, the union of the methods' choices (--verify); each config checks its own
                    merged = list(opt.kwargs["type"].choices)
                    merged += [c for c in kwargs["type"].choices if c not in merged]
                    opt.kwargs["type"] = click.Choice(merged)
                elif repr(opt.kwargs.get("type")) != repr(kwargs.get("type")):
                    raise TypeError(f"option {decls[0]} has different types in {opt.methods} and {method}")
                opt.helps[method] = help_text
    return list(options.values())


def _help(opt: MethodOption) -> str:
    """``"minhash, spotsigs: text"`` where the methods agree, else one clause per method."""
    by_text: dict[str, list[str]] = {}
    for method, text in opt.helps.items():
        by_text.setdefault(text, []).append(method)
    return "; ".join(f"{', '.join(methods)}: {text}" for text, methods in by_text.items()) + "."


def add_method_options(command: Callable) -> Callable:
    """Decorator: add the generated method options (and ``--method``) to a click command."""
    for opt in reversed(method_options()):
        command = click.option(*opt.decls, help=_help(opt), **opt.kwargs)(command)
    names = method_names()
    lines = "; ".join(f"{n}: {get_method(n).summary}" for n in names)
    return click.option("--method", type=click.Choice(names), default=names[0], show_default=True, help=lines + ".")(
        command
    )


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) in (
        click.core.ParameterSource.COMMANDLINE,
        click.core.ParameterSource.ENVIRONMENT,
        DEFAULT_MAP,  # --config FILE.toml
    )


def reject_foreign_options(ctx: click.Context, method: str) -> None:
    """A method option given on the command line for a method that does not have it: usage error."""
    for opt in method_options():
        if method not in opt.helps and _given(ctx, opt.name):
            flag = next(p for p in ctx.command.params if p.name == opt.name).opts[0]
            where = " (set in --config)" if ctx.get_parameter_source(opt.name) == DEFAULT_MAP else ""
            raise click.UsageError(
                f"{flag}{where} does not apply to --method {method} (it is for: {', '.join(opt.methods)})"
            )


def build_config(ctx: click.Context, method: str, params: dict[str, Any]) -> MethodConfig:
    """The config of ``method`` from the command-line values (defaults for what was not given).

    A word-list file that cannot be read is a data error (:class:`NeardupError`); a value the
    config refuses is a usage error.
    """
    cls = get_method(method)
    values: dict[str, Any] = {}
    for f, spec in cls.params():
        cli = spec.cli
        if cli is None:
            continue
        if cli.composite == "shingling":
            if any(_given(ctx, n) for n in SHINGLING_FLAGS):
                values[f.name] = shingling_option(
                    params["ngram"], params["char_ngram"], params["strip_punctuation"], cls.default_of(f)
                )
            continue
        name = _field_options(cls, f, spec)[0][0]
        if not _given(ctx, name):
            continue
        value = params[name]
        if isinstance(spec.constraint, Choice) and all(isinstance(o, int) for o in spec.constraint.options):
            value = int(value)
        if cli.load is not None and value is not None:
            value = cli.load(value)
        values[f.name] = value
    try:
        return cls(**values)
    except ParameterError as exc:
        raise click.UsageError(str(exc)) from None


class MethodCommand(GroupedCommand):
    """A click command whose ``--help`` lists the common options first, then the grouped ones
    (:class:`~neardup.cli.groups.GroupedCommand`), then one section per method with that method's
    options and help (an option shared by methods appears in each). ``--method`` leads the
    common options."""

    def option_groups(self, ctx: click.Context, skip=()) -> list[tuple[str, list[click.Option]]]:
        groups = super().option_groups(ctx, skip)
        return [
            (title, sorted(opts, key=lambda p: p.name != "method") if title == "Options" else opts)
            for title, opts in groups
        ]

    def extra_sections(self, ctx: click.Context) -> tuple[set[str], list[tuple[str, list[tuple[str, str]]]]]:
        by_name = {opt.name: opt for opt in method_options()}
        params = {p.name: p for p in self.get_params(ctx) if isinstance(p, click.Option)}
        sections = []
        for method in method_names():
            rows = []
            cls = get_method(method)
            for f, spec in cls.params():
                if spec.cli is None:
                    continue
                for name, *_ in _field_options(cls, f, spec):
                    if name not in params:  # a method registered after this command was made
                        continue
                    record = params[name].get_help_record(ctx)
                    text = by_name[name].helps[method]
                    rows.append((record[0], text[:1].upper() + text[1:] + "."))
            sections.append((f"--method {method} ({get_method(method).summary})", rows))
        return set(by_name), sections
