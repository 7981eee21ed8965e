"""The registry of methods: every package under :mod:`neardup.methods` registers its config.

Adding a method is adding a package here whose ``__init__`` imports its config class, decorated
with :func:`register`; nothing else in neardup changes (the command line, the contract tests and
``neardup.dedup`` find it here). Methods from other distributions register through the
``neardup.methods`` entry point group, pointing at their config class.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import pkgutil
from importlib import metadata
from typing import Any

from ..core.schemes import Scheme
from ..core.schemes import scheme_from_dict as _scheme_from_dict
from ..core.validation import ParameterError
from .base import MethodConfig

__all__ = [
    "DEFAULT_METHOD",
    "config_from_dict",
    "config_to_dict",
    "get_method",
    "method_names",
    "register",
    "scheme_from_dict",
]

DEFAULT_METHOD = "minhash"

_METHODS: dict[str, type[MethodConfig]] = {}
_loaded = False


def register(cls: type[MethodConfig]) -> type[MethodConfig]:
    """Class decorator: make ``cls`` (a :class:`MethodConfig` with a ``name``) a method."""
    if not (isinstance(cls, type) and issubclass(cls, MethodConfig)) or not cls.name:
        raise TypeError(f"register() takes a MethodConfig subclass with a name, got {cls!r}")
    other = _METHODS.get(cls.name)
    if other is not None and other is not cls:
        raise ValueError(f"method {cls.name!r} is registered twice: {other.__module__} and {cls.__module__}")
    _METHODS[cls.name] = cls
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    package = importlib.import_module(__package__)
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            importlib.import_module(f"{__package__}.{info.name}")
    for entry in metadata.entry_points(group="neardup.methods"):
        register(entry.load())
    _loaded = True


def method_names() -> list[str]:
    """The registered methods, the default first."""
    _load()
    return sorted(_METHODS, key=lambda n: (_METHODS[n].rank, n))


def get_method(name: str) -> type[MethodConfig]:
    """The config class of method ``name`` (a built-in method is imported alone: opening an
    index of one method need not import every method's kernels)."""
    if name not in _METHODS and not _loaded and isinstance(name, str) and name.isidentifier():
        with contextlib.suppress(ImportError):
            if importlib.util.find_spec(f"{__package__}.{name}") is not None:
                importlib.import_module(f"{__package__}.{name}")
    if name in _METHODS:
        return _METHODS[name]
    _load()
    try:
        return _METHODS[name]
    except KeyError:
        raise ParameterError(f"method must be one of {', '.join(method_names())}, got {name!r}") from None


def config_from_dict(data: dict[str, Any]) -> MethodConfig:
    """A method config from ``{"method": name, **fields}`` (as :func:`config_to_dict` writes)."""
    data = dict(data)
    return get_method(data.pop("method", DEFAULT_METHOD)).from_dict(data)


def config_to_dict(config: MethodConfig) -> dict[str, Any]:
    """``{"method": name, **config.to_dict()}``."""
    return {"method": config.name, **config.to_dict()}


def scheme_from_dict(data: dict[str, Any]) -> Scheme:
    """Any method's scheme from its ``to_dict`` form (every method package is loaded first)."""
    _load()
    return _scheme_from_dict(data)
