"""Parameter checks: one idiom, one message template, one exception type per kind of mistake.

Every public setting of neardup (a method config, a scheme, an index, the batch job's options) is
checked here, in one place, by a :class:`Constraint` that also describes itself for help texts
and the command line. A mistake raises one of three exceptions, each with the message

    ``{name} must be {what the constraint allows}, got {value!r}``

- :class:`ParameterError` (a ``ValueError``): the value is not allowed, e.g. a threshold of 1.5
  or ``num_perm=100000`` (upper bounds keep settings that make no sense, or would run for hours,
  from being accepted);
- :class:`ParameterTypeError` (a ``ParameterError`` and a ``TypeError``): the value has the wrong
  type, e.g. the string ``"0.8"`` for a threshold or the float ``128.0`` for ``num_perm``; never a
  raw comparison error;
- :class:`ParameterConflictError` (a ``ParameterError``): two settings that are fine alone do not
  go together, e.g. ``bands * rows > num_perm``.

Every one is a ``ValueError`` (as scikit-learn's ``InvalidParameterError`` is), so ``except
ValueError`` catches any mistake in the settings.

>>> check("threshold", 0.8, Real(0, 1, low_open=True))
0.8
>>> check("threshold", "0.8", Real(0, 1, low_open=True))
Traceback (most recent call last):
...
neardup.core.validation.ParameterTypeError: threshold must be a number in (0, 1], got '0.8' (str)
>>> check("num_perm", 100000, Integer(1, 4096))
Traceback (most recent call last):
...
neardup.core.validation.ParameterError: num_perm must be an integer in [1, 4096], got 100000
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import NeardupError

__all__ = [
    "Boolean",
    "Choice",
    "Constraint",
    "Instance",
    "Integer",
    "Optional",
    "ParameterConflictError",
    "ParameterError",
    "ParameterTypeError",
    "Range",
    "Real",
    "Words",
    "check",
    "check_int",
    "check_real",
    "conflict",
]


class ParameterError(NeardupError, ValueError):
    """A parameter has a value it cannot take (out of range, not one of the choices)."""


class ParameterTypeError(ParameterError, TypeError):
    """A parameter has the wrong type (a string where a number is expected, a float for a count).
    Also a ``ValueError``, as every parameter mistake is."""


class ParameterConflictError(ParameterError):
    """Two parameters that are valid alone do not go together."""


def _shown(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


class Constraint:
    """What a parameter may be. ``check`` returns the value in its canonical form (a Python
    ``int`` for any integer type, a tuple for any sequence ...) or raises; ``describe`` is the
    text after "must be" in messages and help."""

    def check(self, name: str, value: Any) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def _type_error(self, name: str, value: Any) -> ParameterTypeError:
        return ParameterTypeError(f"{name} must be {self.describe()}, got {_shown(value)}")

    def _value_error(self, name: str, value: Any) -> ParameterError:
        return ParameterError(f"{name} must be {self.describe()}, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer (any ``numbers.Integral`` but bool) in ``[low, high]``; None: unbounded."""

    low: int | None = None
    high: int | None = None

    def check(self, name: str, value: Any) -> int:
        if not _is_int(value):
            raise self._type_error(name, value)
        value = int(value)
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise self._value_error(name, value)
        return value

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            if _power_of_two(self.high + 1):  # [0, 2**64 - 1] reads [0, 2**64)
                return f"an integer in [{_shown_int(self.low)}, {_shown_int(self.high + 1)})"
            return f"an integer in [{_shown_int(self.low)}, {_shown_int(self.high)}]"
        if self.low is not None:
            return f"an integer >= {_shown_int(self.low)}"
        if self.high is not None:
            return f"an integer <= {_shown_int(self.high)}"
        return "an integer"


def _power_of_two(v: int) -> bool:
    """``v`` is 2**k with k >= 32 (a bound better read as a power than as its digits)."""
    return v >= 2**32 and v & (v - 1) == 0


def _shown_int(v: int) -> str:
    return f"2**{v.bit_length() - 1}" if _power_of_two(v) else str(v)


@dataclass(frozen=True)
class Real(Constraint):
    """A real number (int or float, not bool or NaN) in an interval, open or closed at each end;
    ``finite`` refuses the infinities too (for an interval open at infinity)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    finite: bool = False

    def check(self, name: str, value: Any) -> float:
        if not _is_real(value):
            raise self._type_error(name, value)
        value = float(value)
        if math.isnan(value) or (self.finite and math.isinf(value)):
            raise self._value_error(name, value)
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            raise self._value_error(name, value)
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            raise self._value_error(name, value)
        return value

    def describe(self) -> str:
        number = "a finite number" if self.finite else "a number"
        if self.low is None and self.high is None:
            return number
        if self.high is None:
            return f"{number} {'>' if self.low_open else '>='} {self.low:g}"
        if self.low is None:
            return f"{number} {'<' if self.high_open else '<='} {self.high:g}"
        return f"{number} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"


@dataclass(frozen=True)
class Choice(Constraint):
    """One of a fixed set of values (strings or integers), compared by equality and type."""

    options: tuple

    def check(self, name: str, value: Any) -> Any:
        for option in self.options:
            if type(option) is str and isinstance(value, str) and value == option:
                return option
            if _is_int(option) and _is_int(value) and int(value) == option:
                return option
        if not any(isinstance(value, str) if type(o) is str else _is_int(value) for o in self.options):
            raise self._type_error(name, value)
        raise self._value_error(name, value)

    def describe(self) -> str:
        shown = [repr(o) for o in self.options]
        return "one of " + ", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else f"{shown[0]}"


@dataclass(frozen=True)
class Boolean(Constraint):
    """True or False (numpy booleans accepted; 0 and 1 are not)."""

    def check(self, name: str, value: Any) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise self._type_error(name, value)
        return bool(value)

    def describe(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class Optional(Constraint):
    """None, or a value that ``inner`` accepts."""

    inner: Constraint

    def check(self, name: str, value: Any) -> Any:
        return None if value is None else self.inner.check(name, value)

    def describe(self) -> str:
        return f"None or {self.inner.describe()}"


@dataclass(frozen=True)
class Range(Constraint):
    """A pair ``(lo, hi)`` with ``lo <= hi``, each accepted by ``inner``; returned as a tuple."""

    inner: Constraint

    def check(self, name: str, value: Any) -> tuple:
        if isinstance(value, (str, bytes)) or (not isinstance(value, Sequence) and not isinstance(value, np.ndarray)):
            raise self._type_error(name, value)
        if len(value) != 2:
            raise self._value_error(name, value)
        lo, hi = (self.inner.check(f"{name}[{i}]", v) for i, v in enumerate(value))
        if lo > hi:
            raise self._value_error(name, tuple(value))
        return lo, hi

    def describe(self) -> str:
        return f"a pair (lo, hi) with lo <= hi, each {self.inner.describe()}"


@dataclass(frozen=True)
class Words(Constraint):
    """A sequence of strings (not a single string), returned as a tuple; ``hint`` says what to
    do instead of passing a single string (a file name, say)."""

    hint: str = ""

    def check(self, name: str, value: Any) -> tuple[str, ...]:
        if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, set, frozenset)):
            error = self._type_error(name, value)
            if self.hint:
                error = ParameterTypeError(f"{error}; {self.hint}")
            raise error
        words = tuple(value)
        for w in words:
            if not isinstance(w, str):
                raise ParameterTypeError(f"{name} must be {self.describe()}, got an item {_shown(w)}")
        return words

    def describe(self) -> str:
        return "a sequence of words (strings), not a single string"


@dataclass(frozen=True)
class Instance(Constraint):
    """An instance of ``cls``."""

    cls: type

    def check(self, name: str, value: Any) -> Any:
        if not isinstance(value, self.cls):
            raise self._type_error(name, value)
        return value

    def describe(self) -> str:
        name = self.cls.__name__
        return f"{'an' if name[:1] in 'AEIOU' else 'a'} {name}"


def check(name: str, value: Any, constraint: Constraint) -> Any:
    """``constraint.check(name, value)``: the value in canonical form, or a parameter error."""
    return constraint.check(name, value)


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``, or a parameter error."""
    return Integer(low, high).check(name, value)


def check_real(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a float in the interval, or a parameter error."""
    return Real(low, high, low_open, high_open).check(name, value)


def conflict(message: str) -> ParameterConflictError:
    """The error for settings that do not go together; ``raise conflict("bands * rows ...")``."""
    return ParameterConflictError(message)
