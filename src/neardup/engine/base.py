"""The engine contract: run a method's plan over a document source and return the clusters.

An engine takes a :class:`~neardup.core.plan.Plan` and a
:class:`~neardup.core.documents.DocumentSource` and returns a :class:`JobResult`: for every
document its cluster (root), its kept document and its similarity to it, the verified pairs
when asked for, numeric counters and the seconds each stage took. Engines differ in where the
work runs, never in the answer: for the same input and plan, every engine and every number of
workers gives the same ids, roots, kept documents, similarities and pairs (the contract tests
check this for every registered method).

What every engine shares lives here: choosing the kept document of each cluster, and spreading a
result found on the representatives of the exact pre-pass back to every document.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from ..core.budget import current_spill
from ..core.components import choose_kept
from ..core.documents import DocumentSource
from ..core.plan import Plan
from ..core.validation import Choice, check
from ..methods.exact.groups import ExactGroups

__all__ = ["Engine", "JobResult", "NoProgress", "Progress", "finish_job"]

Keep = Literal["first", "longest"]
KEEP = Choice(("first", "longest"))


class Progress(Protocol):
    """Told by the engine what runs: ``stage(name)`` as each stage starts, ``advance(n)`` as each
    batch of ``n`` documents of a scan is done."""

    def stage(self, name: str) -> None: ...

    def advance(self, n: int) -> None: ...


class NoProgress:
    """A :class:`Progress` that shows nothing."""

    def stage(self, name: str) -> None:
        pass

    def advance(self, n: int) -> None:
        pass


@dataclass(frozen=True, eq=False)
class JobResult:
    """What a batch job found, for every document of its input (in input order)."""

    ids: Sequence[str]
    """A list, or past the job's memory budget an :class:`~neardup.core.ids.IdColumn`."""
    lengths: np.ndarray
    """int64[n] text length in characters."""
    root: np.ndarray
    """int64[n] smallest document index of each document's cluster."""
    kept: np.ndarray
    """int64[n] index of the kept document of each document's cluster."""
    similarity: np.ndarray
    """float64[n] similarity of each document to its kept document (1.0 for kept ones)."""
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    """Verified pairs (index a < index b, similarity), sorted, when asked for."""
    empty: np.ndarray
    """bool[n] documents with no features (never near-duplicates of anything)."""
    counters: dict[str, float]
    """The method's counters (candidate pairs checked, ...), summed over stages and workers."""
    timings: dict[str, float]
    """Seconds per stage."""
    spilled_bytes: int = 0
    """The most bytes the job had on disk at once past its memory budget (0: it stayed in
    memory; :mod:`neardup.core.budget`)."""

    @property
    def keep_mask(self) -> np.ndarray:
        """bool[n]: the documents kept."""
        return self.kept == np.arange(len(self.kept))


class Engine(Protocol):
    """Runs plans; see the module docs."""

    def run(
        self,
        plan: Plan,
        source: DocumentSource,
        *,
        keep: Keep = "first",
        want_pairs: bool = False,
        progress: Progress | None = None,
    ) -> JobResult: ...


def finish_job(
    plan: Plan,
    state: dict[str, Any],
    groups: ExactGroups | None,
    ids: Sequence[str],
    lengths: np.ndarray,
    keep: Keep,
    want_pairs: bool,
    counters: dict[str, float],
    timings: dict[str, float],
    similarity: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    similarity_row_bytes: int = 4096,
) -> JobResult:
    """The :class:`JobResult` of a plan whose stages have run, ``state`` holding ``root``, ``empty``
    and (with ``want_pairs``) ``pairs`` over the documents the stages saw: every document, or the
    representatives of the exact pre-pass ``groups``.

    With the pre-pass, a document joins its representative's cluster; pairs inside a group have
    similarity 1.0 and a pair of representatives stands for every pair of their members. Groups
    whose representative has no features are dissolved: empty documents never match, not even
    each other.

    ``similarity(docs, others)`` (default: the plan's similarity over ``state``) gives the
    similarity of each document to its kept one, as indices among the documents the stages saw:
    an engine that keeps the per-document state elsewhere computes it there. Past the budget it
    is called a stretch of ``work / similarity_row_bytes`` documents at a time (the bytes this
    process holds for each document of a call: a signature's row here, less where the rows are
    elsewhere).
    """
    keep = check("keep", keep, KEEP)
    for name in ("root", "empty") + (("pairs",) if want_pairs else ()):
        if name not in state:
            raise RuntimeError(f"the {plan.config.name} plan ended without {name!r}")
    sub_root = np.asarray(state["root"], dtype=np.int64)
    sub_empty = np.asarray(state["empty"], dtype=bool)
    sub_pairs = state.get("pairs") if want_pairs else None
    n = len(ids)
    pairs = sub_pairs
    if groups is not None and sub_pairs is not None:
        pairs = groups.expand_pairs(*sub_pairs, sub_empty=sub_empty)
    if similarity is None:

        def similarity(docs: np.ndarray, others: np.ndarray) -> np.ndarray:
            return plan.similarity(plan.config, state, docs, others)

    spill = current_spill()
    if spill is not None and spill.spilled:
        spread = _spread_spilled(
            plan, groups, n, sub_root, sub_empty, keep, lengths, similarity, spill, similarity_row_bytes
        )
        root, kept, found, empty = spread
        return JobResult(ids, lengths, root, kept, found, pairs, empty, counters, timings)
    if groups is None:
        root, empty = sub_root, sub_empty

        def to_sub(docs: np.ndarray) -> np.ndarray:
            return docs
    else:
        every = groups.to_sketched(np.arange(n))
        root = groups.expand_root(sub_root, sub_empty)
        empty = sub_empty[every]
        to_sub = groups.to_sketched
    if len(root) != n:
        raise RuntimeError(f"the {plan.config.name} plan gave {len(root)} roots for {n} documents")
    kept = choose_kept(root, keep, lengths)
    docs = np.arange(n, dtype=np.int64)
    found = np.asarray(similarity(to_sub(docs), to_sub(kept)), dtype=np.float64)
    return JobResult(ids, lengths, root, kept, found, pairs, empty, counters, timings)


def _longest_spilled(root: np.ndarray, lengths: np.ndarray, spill, step: int) -> np.ndarray:
    """``choose_kept(root, "longest", lengths)`` a stretch of documents at a time, in arrays of
    the budget: ``best[r]`` (the longest member of root r's cluster seen so far, the earliest on
    ties) starts at r, the cluster's first member, and is replaced only by a strictly longer
    later member; each stretch's own best member of each cluster (a sort of the stretch) is
    offered to it."""
    n = len(root)
    best = spill.array(n, np.int64)
    for lo in range(0, n, step):
        best[lo : lo + step] = np.arange(lo, min(lo + step, n), dtype=np.int64)
    for lo in range(0, n, step):
        r = np.asarray(root[lo : lo + step], dtype=np.int64)
        size = np.asarray(lengths[lo : lo + step], dtype=np.int64)
        docs = np.arange(lo, lo + len(r), dtype=np.int64)
        order = np.lexsort((docs, -size, r))
        first = np.ones(len(r), dtype=bool)
        first[1:] = r[order][1:] != r[order][:-1]
        cr, ci, cl = r[order][first], docs[order][first], size[order][first]
        better = cl > lengths[best[cr]]
        best[cr[better]] = ci[better]
        spill.relieve()
    kept = spill.array(n, np.int64)
    for lo in range(0, n, step):
        kept[lo : lo + step] = best[root[lo : lo + step]]
        spill.relieve()
    return kept


def _spread_spilled(plan, groups, n, sub_root, sub_empty, keep, lengths, similarity, spill, row_bytes=4096):
    """``(root, kept, similarity, empty)`` of :func:`finish_job` past the memory budget: the same
    arrays, made a stretch of documents at a time into arrays of the budget, with no temporary
    over every document. With the pre-pass, ``at[d]`` is the representative's position among
    the representatives (what ``ExactGroups.to_sketched`` gives), filled in document order: a
    document's representative comes first, so its entry is there when read."""
    step = max(spill.work // 64, 64)
    if groups is None:
        root, empty, at = sub_root, sub_empty, None
    else:
        rep = groups.rep
        at, root, empty = spill.array(n, np.int64), spill.array(n, np.int64), spill.array(n, bool)
        index = spill.array(len(sub_root), np.int64)  # the representatives, in order
        count = 0
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            docs = np.arange(lo, hi, dtype=np.int64)
            first = rep[lo:hi] == docs
            position = np.cumsum(first) - 1 + count
            index[position[first]] = docs[first]
            count += int(np.count_nonzero(first))
            chunk = at[lo:hi]
            chunk[first] = position[first]
            chunk[~first] = at[rep[lo:hi][~first]]
            e = sub_empty[chunk]
            empty[lo:hi] = e
            root[lo:hi] = np.where(e, docs, index[sub_root[chunk]])
            spill.relieve()
        if count != len(sub_root):
            raise RuntimeError(f"the {plan.config.name} plan gave {len(sub_root)} roots for {count} representatives")
    if len(root) != n:
        raise RuntimeError(f"the {plan.config.name} plan gave {len(root)} roots for {n} documents")
    if keep == "first":
        kept = spill.array(n, np.int64)
        for lo in range(0, n, step):
            kept[lo : lo + step] = root[lo : lo + step]
    else:
        kept = _longest_spilled(root, lengths, spill, step)
    found = spill.array(n, np.float64)
    step = max(spill.work // row_bytes, 64)
    for lo in range(0, n, step):
        docs = np.arange(lo, min(lo + step, n), dtype=np.int64)
        others = kept[lo : lo + step]
        if at is not None:
            docs, others = at[docs], at[others]
        found[lo : lo + step] = similarity(docs, others)
        spill.relieve()
    return root, kept, found, empty
