"""Versioned, serializable settings: every sketch, index and output says how it was made.

A :class:`Record` is a frozen dataclass that turns into a JSON-ready dict (``to_dict``) and back
(``from_dict``): tuples become lists, nested records become dicts, and ``from_dict`` rebuilds
them from the field types, running the class's own validation. A :class:`Scheme` is a record
that determines sketch values (a MinHash scheme: K, seed, shingling, hash family, format
version); its dict carries ``"scheme"`` (the kind) and ``"format_version"``, and
:func:`scheme_from_dict` rebuilds any registered scheme from it. A scheme written by a newer
format than this neardup reads is refused with :class:`~neardup.core.errors.IncompatibleSketchError`
naming both versions, never misread.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Toy(Scheme):
...     kind = "toy"
...     format_version: int = 1
...     size: int = 3
...     words: tuple = ("a", "b")
>>> Toy().to_dict()
{'scheme': 'toy', 'format_version': 1, 'size': 3, 'words': ['a', 'b']}
>>> scheme_from_dict({'scheme': 'toy', 'format_version': 1, 'size': 4, 'words': ['x']})
Toy(format_version=1, size=4, words=('x',))
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, ClassVar

from .errors import IncompatibleSketchError
from .validation import ParameterError, ParameterTypeError

__all__ = ["Record", "Scheme", "scheme_from_dict", "scheme_kinds"]

_SCHEMES: dict[str, type[Scheme]] = {}


def _encode(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot serialize {value!r} ({type(value).__name__})")


def _decode(tp: Any, value: Any, name: str) -> Any:
    """``value`` (from JSON) as the field type ``tp``: records rebuilt, lists to tuples.

    Only the shape is rebuilt here (a dict into its record, a list into a tuple); whether the
    values are allowed is for the record's own validation, which the constructor runs.
    """
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _decode(typing.get_args(tp)[0], value, name)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        records = [a for a in args if isinstance(a, type) and issubclass(a, Record)]
        for arg in records:
            if isinstance(value, arg):
                return value
        if isinstance(value, dict) and len(records) == 1:
            return records[0].from_dict(value)
        return _decode(args[0], value, name) if len(args) == 1 else _decode_plain(value)
    if isinstance(tp, type) and issubclass(tp, Record):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ParameterTypeError(
                f"{name} must be a mapping of the fields of {tp.__name__}, got {value!r} ({type(value).__name__})"
            )
        return tp.from_dict(value)
    if origin is tuple or tp is tuple:
        if not isinstance(value, (list, tuple)):
            return value  # the constructor's check says what it should be
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]
            return tuple(_decode(args[0], v, name) for v in value)
        if args and args != ((),) and len(args) == len(value):  # tuple[X, Y]: one type per item
            return tuple(_decode(a, v, name) for a, v in zip(args, value))
        return tuple(_decode_plain(v) for v in value)
    # Literal[...], int, float, str, bool, Any: JSON has them as they are
    return _decode_plain(value)


def _decode_plain(value: Any) -> Any:
    return tuple(_decode_plain(v) for v in value) if isinstance(value, list) else value


class Record:
    """Mixin for frozen dataclasses: ``to_dict`` / ``from_dict`` / ``to_json``.

    ``from_dict`` rejects unknown keys (a typo must not silently become a default) and builds the
    instance through its constructor, so the class's validation runs on what was read.
    """

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (tuples as lists, nested records as dicts)."""
        return {f.name: _encode(getattr(self, f.name)) for f in dataclasses.fields(self) if f.init}

    def to_json(self) -> str:
        """``to_dict`` as compact JSON with sorted keys (stable: two equal records give equal text)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        """The record whose ``to_dict`` is ``data``."""
        if not isinstance(data, dict):
            raise ParameterTypeError(f"{cls.__name__} must be read from a mapping, got {data!r}")
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ParameterError(
                f"{cls.__name__} has no field(s) {', '.join(map(repr, unknown))}; its fields are {', '.join(fields)}"
            )
        kwargs = {name: _decode(hints.get(name, Any), value, f"{cls.__name__}.{name}") for name, value in data.items()}
        return cls(**kwargs)


class Scheme(Record):
    """A record that determines sketch values. Subclasses set ``kind`` and have a
    ``format_version`` field; they are registered for :func:`scheme_from_dict`."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("kind"):
            _SCHEMES[cls.kind] = cls

    def to_dict(self) -> dict[str, Any]:
        """``{"scheme": kind, "format_version": v, ...fields}``."""
        fields = super().to_dict()
        return {"scheme": self.kind, "format_version": fields.pop("format_version"), **fields}

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        """The scheme of ``data`` (as ``to_dict`` wrote it); refuses another kind and newer formats."""
        if not isinstance(data, dict):
            raise ParameterTypeError(f"a {cls.kind} scheme must be read from a mapping, got {data!r}")
        data = dict(data)
        kind = data.pop("scheme", cls.kind)
        if kind != cls.kind:
            raise IncompatibleSketchError(f"expected a {cls.kind!r} scheme, got a {kind!r} one")
        current = _current_version(cls)
        version = data.get("format_version", current)
        # a version that is no integer is for the constructor to refuse (a parameter type error)
        if isinstance(version, int) and not isinstance(version, bool) and version > current:
            raise IncompatibleSketchError(
                f"this {cls.kind} scheme was written with format version {version!r}; this neardup reads "
                f"format version {current} and older: upgrade neardup to read it"
            )
        return super().from_dict.__func__(cls, data)


def _current_version(cls: type) -> int:
    for f in dataclasses.fields(cls):
        if f.name == "format_version":
            return f.default
    raise TypeError(f"{cls.__name__} has no format_version field")


def scheme_kinds() -> list[str]:
    """The kinds of the schemes registered so far (a method's schemes register when its package is
    imported; :func:`neardup.methods.registry.scheme_from_dict` imports them all)."""
    return sorted(_SCHEMES)


def scheme_from_dict(data: dict[str, Any]) -> Scheme:
    """A registered scheme from its ``to_dict`` form (dispatch on ``data["scheme"]``)."""
    if not isinstance(data, dict) or "scheme" not in data:
        raise ParameterError(f"a scheme must be a mapping with a 'scheme' key, got {data!r}")
    cls = _SCHEMES.get(data["scheme"])
    if cls is None:
        raise IncompatibleSketchError(f"unknown scheme {data['scheme']!r}; known: {', '.join(scheme_kinds())}")
    return cls.from_dict(data)
