"""Engines run a method's plan: :class:`LocalEngine` on threads here, :class:`ReferenceEngine` by
definition (for tests); both give the same answer (:mod:`neardup.engine.base`)."""

from .base import Engine, JobResult
from .local import LocalEngine
from .reference import ReferenceEngine

__all__ = ["Engine", "JobResult", "LocalEngine", "ReferenceEngine"]
