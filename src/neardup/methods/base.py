"""The method contract: a frozen config that is the single source of its settings, and its plan.

A method is one package under :mod:`neardup.methods` whose config class derives from
:class:`MethodConfig` and is decorated with :func:`neardup.methods.registry.register`. The
config's fields are declared with :func:`param`, which holds, once, everything about a setting:
its default, its :class:`~neardup.core.validation.Constraint`, its help text and how it appears
on the command line. From that:

- ``MethodConfig(...)`` checks every field by its constraint (one message template, see
  :mod:`neardup.core.validation`), then the cross-field rules of ``validate``;
- the ``neardup dedup`` options (and those of later commands) are generated from the fields
  (:mod:`neardup.cli.options`), defaults and help included;
- ``to_dict`` / ``from_dict`` write and read the settings (:class:`~neardup.core.schemes.Record`).

A config provides ``scheme`` (a versioned :class:`~neardup.core.schemes.Scheme`: what
determines its sketch values), ``plan()`` (its batch job, :mod:`neardup.core.plan`) and
``describe(counters)`` (summary lines for people, from the job's numeric counters). Methods with
an index also provide ``sketch_texts`` (see :class:`Sketched`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..core.plan import Plan
from ..core.schemes import Record, Scheme
from ..core.validation import Constraint

__all__ = ["PREPASS_OFF", "CliSpec", "MethodConfig", "Param", "Sketched", "param"]

_MISSING = dataclasses.MISSING

PREPASS_OFF = (
    "{} (by default only the first of each group of identical normalized texts goes through the "
    "method; the results are the same)."
)
"""Help of ``--no-exact-prepass``, with what the method does to each document."""


@dataclass(frozen=True)
class CliSpec:
    """How a setting appears on the command line.

    Attributes:
        flag: the option, e.g. ``"--num-perm"`` (default: the field name with dashes).
        metavar: the placeholder shown in help.
        negative: for a boolean that defaults to True, the flag that turns it off
            (``"--no-exact-prepass"``); a boolean without it is a plain on-flag.
        negative_help: the help of the negative flag (what turning the setting off does).
        path: the value is a file path, read by ``load`` into the field's value.
        load: converts the command-line value (e.g. reads a word list from a path).
        composite: ``"shingling"`` for a :class:`~neardup.text.shingles.Shingling` field, set by
            ``--ngram`` / ``--char-ngram`` / ``--strip-punctuation``.
    """

    flag: str | None = None
    metavar: str | None = None
    negative: str | None = None
    negative_help: str | None = None
    path: bool = False
    load: Callable[[Any], Any] | None = None
    composite: str | None = None


@dataclass(frozen=True)
class Param:
    """A config field's constraint, help text and command-line spec (``None``: not an option)."""

    constraint: Constraint
    help: str
    cli: CliSpec | None = CliSpec()


def param(
    default: Any = _MISSING,
    constraint: Constraint | None = None,
    help: str = "",
    *,
    default_factory: Callable[[], Any] | None = None,
    cli: CliSpec | None = CliSpec(),
) -> Any:
    """A dataclass field of a :class:`MethodConfig` with its constraint, help and CLI spec."""
    if constraint is None:
        raise TypeError("param() needs a constraint")
    meta = {"param": Param(constraint, help, cli)}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True, eq=False)
class Sketched:
    """Sketches of texts for an index: ``values`` (one row per text, the method's sketch) and
    ``empty`` (bool[n], texts without features: stored but never near-duplicates)."""

    values: Any
    empty: np.ndarray


@dataclass(frozen=True)
class MethodConfig(Record):
    """Base of every method's config (see the module docs). Subclasses are frozen dataclasses."""

    name: ClassVar[str] = ""
    """The method's name (``--method NAME``)."""
    summary: ClassVar[str] = ""
    """One line: what near-duplicates are under this method (help of ``--method``)."""
    rank: ClassVar[int] = 100
    """Position in listings (the default method first)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            spec = f.metadata.get("param")
            if spec is not None:
                object.__setattr__(self, f.name, spec.constraint.check(f.name, getattr(self, f.name)))
        self.validate()

    def validate(self) -> None:
        """Cross-field rules (raise :func:`~neardup.core.validation.conflict`); after every field
        passed its own constraint."""

    @classmethod
    def params(cls) -> list[tuple[dataclasses.Field, Param]]:
        """The fields declared with :func:`param`, in order, with their specs."""
        return [(f, f.metadata["param"]) for f in dataclasses.fields(cls) if "param" in f.metadata]

    @classmethod
    def default_of(cls, field: dataclasses.Field) -> Any:
        """The default value of one of the config's fields."""
        if field.default_factory is not _MISSING:
            return field.default_factory()
        return field.default

    @property
    def scheme(self) -> Scheme:
        """What determines the method's sketch values (versioned, serializable)."""
        raise NotImplementedError

    def plan(self) -> Plan:
        """The batch job (:mod:`neardup.core.plan`)."""
        raise NotImplementedError

    @property
    def pair_threshold(self) -> float:
        """The least similarity of a verified pair, in the measure of the plan's ``similarity``
        (``threshold``, or 1.0 for methods that join identical keys only): a removed document
        below it to its kept document was joined to it through other documents."""
        threshold = getattr(self, "threshold", None)
        return 1.0 if threshold is None else float(threshold)

    def describe(self, counters: dict[str, float]) -> dict[str, str]:
        """Summary lines (label -> text) for people, from the job's counters."""
        return {}

    def sketch_texts(self, texts: Sequence[str]) -> Sketched:
        """Sketches of texts as this method's index stores them (methods with an index)."""
        raise NotImplementedError(f"method {self.name!r} has no index")
