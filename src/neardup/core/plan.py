"""What a method's batch job is: a plan of stages of plain, picklable functions over arrays.

A method does not run its job; it describes it. Its config's ``plan()`` returns a :class:`Plan`,
a sequence of stages, and an engine (:mod:`neardup.engine`) runs it: on threads on one machine,
or, with the same plan, elsewhere. Every function a stage names is a module-level function (no
closure, no lambda) taking the method's frozen config first, so a plan pickles and its stages
can run in another process. Stages read and write named entries of the job's *state*, a dict
of arrays and small picklable objects.

Three kinds of stage:

- :class:`Scan`: one pass over the input documents. ``map(config, batch, *inputs)`` turns each
  batch into a *part* (on the workers); a :class:`Reducer` made by ``reduce(config)`` combines
  the parts in input order (``add``) and parts of neighbouring stretches of input (``merge``),
  and its ``result()`` is added to the state. A job reads its input once per scan.
- :class:`Step`: a computation over the state, ``fn(config, ctx, *inputs) -> dict``; ``ctx``
  (:class:`StageContext`) gives the job's threads.
- :class:`GroupBy`: the candidate stage as a group-by-key. ``keys(config, *inputs)`` gives every
  document's keys in ``t`` tables (uint64, one or more words a key) and which documents take part
  in each table; documents that share a key in a table form a group, ``verify(config, members,
  *inputs)`` returns the pairs of one group that are near-duplicates, and the job's result is the
  union of those pairs and its connected components. ``local(config, ctx, *inputs)`` computes the
  same result the fast way on one machine (sorting, skipping pairs already joined); an engine
  that spreads groups over machines uses ``keys`` and ``verify``.

The state a plan must end with: ``root`` (int64[n], the smallest document of each document's
cluster), ``empty`` (bool[n], documents with no features) and, when the job asks for pairs,
``pairs`` (``(a, b, similarity)``, a < b, sorted). ``similarity(config, state, docs, others)``
gives the method's similarity of ``docs[q]`` to ``others[q]``. Counters (numbers, never
formatted text) that stages return under ``"counters"`` are summed across stages and workers.

With ``prepass`` set, the engine first groups documents whose normalized texts are identical
(:mod:`neardup.methods.exact`) and runs the stages on the first of each group only; the result is
spread back to every document. Equal texts have equal features under every method, so the
result is the same; only the repeated work is saved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .budget import spill_rows
from .parallel import Threads

__all__ = ["GroupBy", "Plan", "Prepass", "Recheck", "Reducer", "Rows", "Scan", "Sharded", "StageContext", "Step"]


class Reducer(Protocol):
    """Combines the parts of a :class:`Scan`: ``add`` takes them in input order, ``merge`` takes a
    reducer that combined the stretch of input right after this one's; ``result`` is the state."""

    def add(self, part: Any) -> None: ...

    def merge(self, other: Reducer) -> None: ...

    def result(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Scan:
    """One pass over the input: ``map(config, batch, *inputs)`` per batch, combined by the
    reducer ``reduce(config)``.

    ``prepare`` (optional) splits ``map`` in two for the exact pre-pass: ``prepare(config, batch,
    keys_wanted) -> (prepared, keys)`` computes what the pre-pass needs (the uint64[n, 2] exact
    keys of the normalized texts) from the work the method does anyway, and ``map(config,
    prepared, chosen, *inputs)`` finishes the documents of ``chosen`` (bool[n], or None for all).

    ``table``: the reducer's result is one table of the collection (document frequencies: an
    entry a distinct term or shingle), not rows of every document, and its reducers pickle and
    merge; an engine that maps batches in other processes may reduce each process's parts there
    and merge the reducers (in input order), so that only the result moves.
    """

    name: str
    map: Callable[..., Any]
    reduce: Callable[[Any], Reducer]
    inputs: tuple[str, ...] = ()
    prepare: Callable[..., tuple[Any, Any]] | None = None
    table: bool = False


@dataclass(frozen=True)
class Step:
    """``fn(config, ctx, *inputs) -> dict`` over the state."""

    name: str
    fn: Callable[..., dict[str, Any]]
    inputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupBy:
    """Candidates grouped by key, verified per group, joined into clusters (see the module docs).

    ``keys(config, *inputs) -> (keys, member)``: ``keys`` uint64[n, t] or uint64[n, t, w] (a key of
    ``w`` words), ``member`` bool[n, t] (document i takes part in table j). ``verify(config,
    members, *inputs) -> (a, b, similarity)``: the near-duplicate pairs among the int64 document
    indices ``members`` of one group, ``a < b``. ``local(config, ctx, *inputs) -> dict`` returns
    ``root``, ``pairs`` (when ``ctx.want_pairs``) and ``counters``, equal to what ``keys`` and
    ``verify`` define.
    """

    name: str
    keys: Callable[..., tuple[np.ndarray, np.ndarray]]
    verify: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]
    local: Callable[..., dict[str, Any]]
    inputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prepass:
    """The exact pre-pass: documents whose texts are equal after this normalization are grouped,
    and only the first of each group goes through the plan."""

    nfkc: bool = True
    casefold: bool = True


@dataclass(frozen=True)
class Recheck:
    """A verification of the candidate pairs on what a second scan reads of their documents again
    (``verify="exact"`` and ``"edit"``: their shingle sets or tokens), in the sharded form
    (:class:`Sharded`): the pairs that :attr:`Sharded.verify` gives are candidates, and only the
    documents in one are read again.

    - ``scan``: the plan's own re-read scan (``map(config, batch, wanted)``, ``wanted`` a bool per
      document in the batch's numbering; its reducer a :class:`~neardup.core.arrays.CsrParts`);
      an engine keeps each partition's rows as one :class:`~neardup.core.arrays.CsrRows` column
      ``"reread"``, beside the partition's shard;
    - ``verify(config, a, b, rows) -> (a, b, similarity)``: the candidate pairs (row positions in
      ``rows``, which hold the ``"reread"`` rows of some documents) that the verifier accepts.

    :attr:`Sharded.similarity` of such a plan reads the ``"reread"`` rows too.
    """

    scan: Scan
    verify: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Sharded:
    """The plan's work after its last scan, on *shards* of per-document state, so that an engine
    can leave each shard where it was computed (the Dask engine keeps it on the worker that
    read the documents, and no process holds every document's state).

    A shard is the last scan's reducer result for a stretch of consecutive documents, of which
    the engine keeps ``columns`` (``rows`` below): row-aligned arrays, or objects of rows with
    ``len``, ``take(positions)``, a class method ``concat(pieces)`` and ``nbytes`` (CSR lists,
    such as SpotSigs' signatures). The stages before the
    last scan (a scan of document frequencies and the table made of it, say) run as they do
    without a sharded form, and their results are the last scan's inputs. The functions must
    give what the plan's stages after the last scan give (the contract tests check it):

    - ``keys(config, rows, documents) -> (keys, member)``: the candidate stage's group-by keys of
      the shard's documents (as :class:`GroupBy` ``keys``, on the shard's rows); ``documents`` is
      the number of documents of every shard, for a method whose choice of tables depends on it
      (the pairs found must not);
    - ``verify(config, members, bounds, rows) -> (a, b, similarity)``: the near-duplicate pairs
      of every group ``members[bounds[g]:bounds[g + 1]]`` (as :class:`GroupBy` ``verify`` of
      each; a pair may be listed more than once), ``members`` and the pairs being row positions
      in ``rows`` (the rows of some documents, gathered from their shards, in document order);
    - ``similarity(config, rows, docs, others)``: the plan's similarity of ``docs[q]`` to
      ``others[q]``, positions in ``rows`` (the plan's own ``similarity`` serves when it reads
      only ``columns`` of its state);
    - ``empty(config, rows)``: bool per document, those with no features;
    - ``connect(config, members, bounds, rows) -> (a, b)`` (optional, for jobs that want clusters
      only): pairs of row positions whose connected components are those of ``verify``'s pairs
      of the same groups (for instance the edges of a spanning forest, which need fewer
      comparisons than every pair);
    - ``recheck`` (optional, :class:`Recheck`): ``verify``'s pairs are candidates, verified again
      on the rows of a later scan (the shard's scan is then the last scan before it);
    - ``pairwise``: whether ``verify`` finds a pair of two documents in every group that holds
      both (its answer depends on the pair, not on the group): an engine may then keep each
      pair only where its first table groups it (MinHash, SimHash; not SpotSigs, whose group of
      two length partitions finds a pair only when its shorter document is in the lower one).
    """

    columns: tuple[str, ...]
    keys: Callable[..., tuple[np.ndarray, np.ndarray]]
    verify: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]
    similarity: Callable[..., np.ndarray]
    empty: Callable[..., np.ndarray]
    connect: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None
    recheck: Recheck | None = None
    pairwise: bool = False


@dataclass(frozen=True)
class Plan:
    """A method's batch job (see the module docs).

    ``sharded`` (optional): the stages after the last scan as functions of shards of
    per-document state (:class:`Sharded`), for engines that keep that state where it was made.
    """

    config: Any
    stages: tuple[Scan | Step | GroupBy, ...]
    similarity: Callable[[Any, dict[str, Any], np.ndarray, np.ndarray], np.ndarray]
    prepass: Prepass | None = None
    sharded: Sharded | None = None
    utf8_texts: bool = False
    """Its scans take a :class:`~neardup.text.utf8.Utf8Text` for a text (a huge one, read as its
    UTF-8 bytes: no ``str`` of it is ever made), not only ``str``, and batches whose texts are a
    :class:`~neardup.text.utf8.TextRuns` of lists and :class:`~neardup.text.utf8.PackedTexts`
    (the JSONL scanner's spans, never decoded unless indexed)."""

    @property
    def scans(self) -> int:
        """How many times the job reads its input."""
        return sum(isinstance(s, Scan) for s in self.stages)


@dataclass
class StageContext:
    """What an engine gives a :class:`Step` or a ``GroupBy.local``."""

    threads: Threads
    """The job's worker threads (``threads.workers`` of them)."""
    want_pairs: bool = False
    """The job reports every near-duplicate pair, not only the clusters."""
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def workers(self) -> int:
        return self.threads.workers


class Rows:
    """A :class:`Reducer` for row-aligned columns: each part is a dict of arrays whose first
    axis is the batch's (chosen) documents; ``result()`` concatenates them in input order.

    ``columns`` gives each column's row shape and dtype, so that an empty input still has
    correctly shaped columns. Rows are appended into :class:`~neardup.core.arrays.RowBuffer`s,
    so the peak memory is about the final arrays, not twice them; under a job's memory budget
    (:mod:`neardup.core.budget`) a column that outgrows it goes to a spill file.
    """

    def __init__(self, columns: dict[str, tuple[tuple[int, ...], Any]], counters: tuple[str, ...] = ()) -> None:
        self._buffers = {name: spill_rows(shape, dtype) for name, (shape, dtype) in columns.items()}
        self._counters = dict.fromkeys(counters, 0)

    def add(self, part: dict[str, Any]) -> None:
        for name, buf in self._buffers.items():
            buf.append(part[name])
        for name in self._counters:
            self._counters[name] += part[name]

    def merge(self, other: Rows) -> None:
        for name, buf in self._buffers.items():
            buf.append(other._buffers[name].finish())
        for name in self._counters:
            self._counters[name] += other._counters[name]

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: buf.finish() for name, buf in self._buffers.items()}
        if self._counters:
            out["counters"] = dict(self._counters)
        return out
