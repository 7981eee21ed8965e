"""``--config FILE.toml``: option values from a TOML file, the command line winning.

The keys are the command's long option names without the dashes (``threshold = 0.7``,
``num-perm = 256``, ``method = "simhash"``, ``output = "kept.parquet"``; ``num_perm`` is accepted
too). A flag takes ``true`` (``html = true``, ``no-exact-prepass = true``); an option of two values
takes a list (``idf-band = [0.2, 0.8]``). The values become click's ``default_map``, so every value
is checked as on the command line, and an option given on the command line overrides the file.
A key that is no option of the command, a value of the wrong kind, a file that cannot be read or
is not TOML: usage error (exit 2) naming the file and the key or line.

TOML is read by ``tomllib`` (Python 3.11+) or, on 3.10, by the ``tomli`` package where installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .groups import option

__all__ = ["config_option", "load_config"]

_NOT_KEYS = {"config_file", "help", "version"}


def _toml():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise click.UsageError(
                "--config needs a TOML reader: Python 3.11+, or pip install tomli on Python 3.10"
            ) from None
    return tomllib


def _by_key(command: click.Command, ctx: click.Context) -> dict[str, tuple[click.Option, Any]]:
    """Option key -> (option, the value ``key = true`` stands for; None: the TOML value itself)."""
    keys: dict[str, tuple[click.Option, Any]] = {}
    for p in command.get_params(ctx):
        if not isinstance(p, click.Option) or p.name in _NOT_KEYS:
            continue
        for decl in p.opts:
            if decl.startswith("--"):
                keys[decl[2:]] = (p, p.flag_value if p.is_flag and p.flag_value is not True else None)
        for decl in p.secondary_opts:
            if decl.startswith("--"):
                keys[decl[2:]] = (p, False)
    return keys


def load_config(path: str, command: click.Command, ctx: click.Context) -> dict[str, Any]:
    """The ``default_map`` (parameter name -> value) of the TOML file ``path`` for ``command``."""
    tomllib = _toml()
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror or exc}", param_hint="--config") from None
    except tomllib.TOMLDecodeError as exc:
        raise click.BadParameter(f"{path} is not valid TOML: {exc}", param_hint="--config") from None
    keys = _by_key(command, ctx)
    values: dict[str, Any] = {}
    for key, value in data.items():
        found = keys.get(key) or keys.get(key.replace("_", "-"))
        if found is None:
            known = ", ".join(sorted(keys))
            raise click.BadParameter(
                f"{path}: {key!r} is not an option of neardup {command.name} (the keys are the long option "
                f"names: {known})",
                param_hint="--config",
            )
        param, flag_value = found
        values[param.name] = _value(path, key, value, param, flag_value)
    return {name: v for name, v in values.items() if v is not _UNSET}


_UNSET = object()


def _value(path: str, key: str, value: Any, param: click.Option, flag_value: Any) -> Any:
    """The click value of ``key = value``, or _UNSET for a flag set to false."""

    def wrong(expected: str) -> click.BadParameter:
        return click.BadParameter(f"{path}: {key} = {value!r}: expected {expected}", param_hint="--config")

    if isinstance(value, dict):
        raise wrong("a value, not a table")
    if param.is_flag:
        if not isinstance(value, bool):
            raise wrong("true or false")
        if flag_value is None:
            return value
        return flag_value if value else _UNSET
    if param.nargs != 1 or param.multiple:
        if not isinstance(value, list):
            raise wrong(f"a list of {param.nargs} values" if param.nargs > 1 else "a list")
        return tuple(_scalar(v, param) for v in value)
    if isinstance(value, list):
        raise wrong("one value, not a list")
    return _scalar(value, param)


def _scalar(value: Any, param: click.Option) -> Any:
    """TOML numbers for a choice of numbers (``bits = 128``) as the text click's Choice compares."""
    if isinstance(param.type, click.Choice) and not isinstance(value, str):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return value


def _callback(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    ctx.default_map = {**(ctx.default_map or {}), **load_config(value, ctx.command, ctx)}


def config_option(command: Callable) -> Callable:
    """Decorate a click command with ``--config FILE.toml`` (processed before the other options)."""
    return option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False),
        metavar="FILE.toml",
        is_eager=True,
        expose_value=False,
        callback=_callback,
        help="Read option values from this TOML file; its keys are the long option names "
        '(threshold = 0.7, num-perm = 256, method = "simhash"); options on the command line win.',
    )(command)
