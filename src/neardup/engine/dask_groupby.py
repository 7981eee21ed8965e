"""The candidate stage spread over Dask workers: shuffle on (table, key), verify per bucket,
connected components by merging forests.

Plain functions over arrays, run as Dask tasks by :class:`~neardup.engine.dask_engine.DaskEngine`:

1. **Shuffle.** Every (document, table) entry that takes part goes to bucket
   ``h(table, key) mod P``, where ``h`` is the splitmix64 finalizer (Steele, Lea and Flood,
   "Fast splittable pseudorandom number generators", OOPSLA 2014) of the key's words folded with
   the table number. All documents that share a key in a table land in the same bucket, so a
   bucket's groups are complete.
2. **Verify.** A bucket sorts its entries by (table, key) and calls the method's ``verify`` on each
   group of two or more documents; a pair found in several tables of the bucket counts once.
   On shards (below), a job that wants clusters only may verify with the method's ``connect``
   instead: a member is compared only with the earlier members of its group not yet in its
   component, which gives the same components with fewer comparisons.
3. **Components.** Each bucket turns its pairs into a *forest*: the sorted documents it touches
   and the smallest document of each one's component among its pairs (union-find, path
   compression). Two forests merge by joining each document to its root in both and taking the
   components again; forests are merged in a tree, a few at a time, so a process holds at most
   a few forests (O(documents touched), never the list of every edge). The last forest gives each
   document's root: the smallest document of its cluster, as every engine defines it.

A pair found in buckets of different tables is one pair: the union of the buckets' pairs, with
duplicates dropped, is what the reference engine (:mod:`neardup.engine.reference`) computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernels.shuffle import first_shared_buckets, group_entries, key_bucket, split_entries
from ..core.arrays import sorted_unique
from ..core.components import components

__all__ = ["bucket_entries", "merge_forests", "pairs_forest", "roots_from_forest", "verify_bucket"]


def bucket_entries(keys: np.ndarray, member: np.ndarray, buckets: int, start: int = 0) -> list[dict[str, np.ndarray]]:
    """Split the (document, table) entries that take part into ``buckets`` shuffle buckets.

    ``keys``: uint64[n, t] or uint64[n, t, w]; ``member``: bool[n, t]. Each bucket is a dict of
    ``table`` (int32[m]), ``key`` (uint64[m, w]) and ``doc`` (int64[m], ``start`` + the row), in
    (table, document) order; the buckets are views of one array each.

    >>> keys = np.array([[1, 5], [1, 6], [2, 5]], dtype=np.uint64)
    >>> parts = bucket_entries(keys, np.ones((3, 2), dtype=bool), 2)
    >>> sorted(int(d) for p in parts for d in p["doc"])
    [0, 0, 1, 1, 2, 2]
    """
    return _split([_entry_arrays(keys, member)], [start], buckets)


def _entry_arrays(keys: np.ndarray, member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``keys`` as uint64[n, t, w] and ``member`` as bool[n, t], contiguous."""
    keys = np.asarray(keys, dtype=np.uint64)
    n, tables = keys.shape[0], keys.shape[1]
    keys = np.ascontiguousarray(keys.reshape(n, tables, keys.shape[2] if keys.ndim == 3 else 1))
    return keys, np.ascontiguousarray(np.asarray(member, dtype=bool).reshape(n, tables))


def _split(arrays: list[tuple[np.ndarray, np.ndarray]], starts: list[int], buckets: int) -> list[dict[str, np.ndarray]]:
    """The entries of ``(keys, member)`` pieces whose first documents are ``starts``, split into
    ``buckets`` (views of one array per column)."""
    bounds, table, key, doc = split_entries([k for k, _ in arrays], [m for _, m in arrays], starts, int(buckets))
    return [
        {"table": table[lo:hi], "key": key[lo:hi], "doc": doc[lo:hi]}
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())
    ]


def verify_bucket(
    verify, config: Any, bucket: dict[str, np.ndarray], inputs: list[Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The verified pairs ``(a, b, similarity)`` of one bucket's groups, a < b, each pair once
    (the first table's similarity), and the number of groups verified (a group of the same
    documents as one already verified, from another table, is not verified again: ``verify``
    depends only on the members)."""
    table, key, doc = bucket["table"], bucket["key"], bucket["doc"]
    m = len(doc)
    empty = np.empty(0, dtype=np.int64)
    if m < 2:
        return empty, empty.copy(), np.empty(0, dtype=np.float64), 0
    order = np.lexsort((doc, *key.T[::-1], table))
    table, key, doc = table[order], key[order], doc[order]
    change = np.ones(m + 1, dtype=bool)
    change[1:-1] = (table[1:] != table[:-1]) | (key[1:] != key[:-1]).any(axis=1)
    bounds = np.flatnonzero(change)
    found_a, found_b, found_s = [], [], []
    groups = 0
    seen: set[bytes] = set()
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if hi - lo >= 2:
            members = doc[lo:hi]
            signature = members.tobytes()
            if signature in seen:  # the same documents grouped by another table: same pairs
                continue
            seen.add(signature)
            groups += 1
            a, b, s = verify(config, members, *inputs)
            found_a.append(np.asarray(a, dtype=np.int64))
            found_b.append(np.asarray(b, dtype=np.int64))
            found_s.append(np.asarray(s, dtype=np.float64))
    if not found_a:
        return empty, empty.copy(), np.empty(0, dtype=np.float64), groups
    a, b, s = np.concatenate(found_a), np.concatenate(found_b), np.concatenate(found_s)
    if np.any(a >= b):
        raise RuntimeError("verify must return pairs with a < b")
    a, b, s = unique_pairs(a, b, s)
    return a, b, s, groups


def unique_pairs(a: np.ndarray, b: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs sorted by (a, b), each once (the first occurrence's similarity)."""
    order = np.lexsort((b, a))
    a, b, s = a[order], b[order], s[order]
    keep = np.ones(len(a), dtype=bool)
    keep[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[keep], b[keep], s[keep]


def pairs_forest(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The forest of a set of pairs: (documents touched, sorted; smallest document of each one's
    component).

    >>> nodes, root = pairs_forest(np.array([7, 3]), np.array([9, 7]))
    >>> nodes.tolist(), root.tolist()
    ([3, 7, 9], [3, 3, 3])
    """
    nodes = sorted_unique(np.concatenate([a, b]).astype(np.int64))
    if not len(nodes):
        return nodes, nodes.copy()
    label = components(len(nodes), np.searchsorted(nodes, a), np.searchsorted(nodes, b))
    return nodes, nodes[label]


def merge_forests(*forests: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One forest with the components of all ``forests`` joined (each document joined to its root)."""
    nodes = np.concatenate([f[0] for f in forests])
    roots = np.concatenate([f[1] for f in forests])
    return pairs_forest(nodes, roots)


def roots_from_forest(n: int, forest: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """int64[n]: each document's root (itself when the forest does not touch it)."""
    root = np.arange(n, dtype=np.int64)
    nodes, roots = forest
    root[nodes] = roots
    return root


# --------------------------------------------------------------------------------------------
# The same stage on shards of per-document state that stay on the workers (core.plan.Sharded).
# A shard is a dict: ``start`` (its first document), ``n`` (its documents) and ``rows`` (the
# row-aligned columns the method's Sharded functions read). Only (table, key, document) entries
# travel in the shuffle; a bucket then asks each shard for the rows of the documents of its
# groups of two or more (most band keys are alone, so few rows move), and verifies them there.


def entries_bytes(parts: list[dict[str, np.ndarray]]) -> int:
    """Bytes of a shard's entries (what its part of the shuffle moves)."""
    return sum(int(a.nbytes) for part in parts for a in part.values())


def grouped_entries(*pieces: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One bucket's entries from every shard, keeping only the groups of two or more documents
    with equal (table, key) (group ``g`` is ``doc[bounds[g]:bounds[g + 1]]``, in document order;
    the groups in an order of their keys, :func:`neardup._kernels.shuffle.group_entries`), and
    ``docs``: the documents they name, sorted."""
    table = np.concatenate([p["table"] for p in pieces])
    key = np.concatenate([p["key"] for p in pieces])
    doc = np.concatenate([p["doc"] for p in pieces])
    picked, bounds = group_entries(table, np.ascontiguousarray(key), doc)
    table, key, doc = table[picked], key[picked], doc[picked]
    return {"table": table, "key": key, "doc": doc, "bounds": bounds, "docs": sorted_unique(doc)}


def take_rows(shard: dict[str, Any], wanted: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The documents of sorted ``wanted`` that the shard holds, and their rows."""
    start = shard["start"]
    lo, hi = np.searchsorted(wanted, [start, start + shard["n"]])
    docs = np.asarray(wanted[lo:hi], dtype=np.int64)
    return docs, {name: _take(column, docs - start) for name, column in shard["rows"].items()}


def _take(column, rows: np.ndarray):
    """Rows of a column: an array, or an object of rows with ``take(rows)`` and a ``concat``
    class method (CSR rows, such as SpotSigs' signature lists)."""
    return column[rows] if isinstance(column, np.ndarray) else column.take(rows)


def _concat(columns: list):
    """Pieces of a column (:func:`_take`'s), one after the other."""
    return np.concatenate(columns) if isinstance(columns[0], np.ndarray) else type(columns[0]).concat(columns)


def shards_entries(
    keys_fn, config: Any, buckets: int, documents: int, *shards: dict[str, Any]
) -> list[dict[str, np.ndarray]]:
    """The (table, key, document) entries of several shards (those one worker holds; keys by
    ``keys_fn``, document numbers of the whole job of ``documents``) split into ``buckets`` as
    :func:`bucket_entries` splits them, each bucket's entries from every shard in one array (the
    buckets' groups do not depend on the order of their entries)."""
    arrays = [_entry_arrays(*keys_fn(config, shard["rows"], documents)) for shard in shards]
    return _split(arrays, [shard["start"] for shard in shards], buckets)


def take_group_rows(wanted, *shards: dict[str, Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """:func:`take_rows` of several shards, joined: ``wanted`` is sorted documents, or a
    bucket of :func:`grouped_entries` (its ``docs``)."""
    if isinstance(wanted, dict):
        wanted = wanted["docs"]
    taken = [take_rows(shard, wanted) for shard in shards]
    docs, rows, _ = _joined_rows(taken)
    return docs, rows


def union_docs(*buckets: dict[str, np.ndarray]) -> np.ndarray:
    """The sorted documents named by any of the grouped ``buckets`` (:func:`grouped_entries`):
    what one worker's buckets need, so that another worker sends each row once for all of them."""
    if not buckets:
        return np.empty(0, dtype=np.int64)
    return sorted_unique(np.concatenate([b["docs"] for b in buckets]))


def rows_from(wanted: np.ndarray, shards: tuple, taken: tuple) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(wanted, rows)``: the rows of the sorted documents ``wanted``, in that order, copied
    once from the ``shards`` that hold them (on this worker: read in place) and from rows
    ``taken`` from other workers' shards (``(docs, rows)``, docs sorted, possibly a superset:
    a worker's buckets share one take). Every wanted document must be in one of them."""
    wanted = np.asarray(wanted, dtype=np.int64)
    out: dict[str, Any] = {}
    pieces: dict[str, list] = {}  # columns of row objects (not arrays): (positions, rows) pieces
    filled = 0

    def put(at, columns: dict[str, Any], src: np.ndarray) -> None:
        for name, column in columns.items():
            if not isinstance(column, np.ndarray):
                positions = np.arange(at.start, at.stop) if isinstance(at, slice) else at
                pieces.setdefault(name, []).append((positions, _take(column, src)))
                continue
            if name not in out:
                out[name] = np.empty((len(wanted), *column.shape[1:]), dtype=column.dtype)
            out[name][at] = column[src]

    for shard in shards:
        start = shard["start"]
        lo, hi = np.searchsorted(wanted, [start, start + shard["n"]])
        if hi > lo:
            put(slice(lo, hi), shard["rows"], wanted[lo:hi] - start)
            filled += int(hi - lo)
    for docs, rows in taken:
        if not len(docs):
            continue
        pos = np.minimum(np.searchsorted(docs, wanted), len(docs) - 1)
        at = np.flatnonzero(docs[pos] == wanted)
        if len(at):
            put(at, rows, pos[at])
            filled += len(at)
    if filled != len(wanted):
        raise RuntimeError(f"rows of {len(wanted) - filled} of {len(wanted)} documents were not found in any shard")
    for name, parts in pieces.items():  # joined, then put in the order of wanted
        order = np.argsort(np.concatenate([positions for positions, _ in parts]), kind="stable")
        out[name] = _take(_concat([rows for _, rows in parts]), order)
    return wanted, out


def check_bucket(check, fn, config: Any, bucket: dict[str, np.ndarray], shards_here: int, *sources):
    """``check`` (:func:`verify_with_rows` or :func:`connect_with_rows`) of one bucket on the
    worker that holds the first ``shards_here`` of ``sources`` (shards, read in place); the rest
    are rows taken from the other workers' shards for all this worker's buckets."""
    rows = rows_from(bucket["docs"], sources[:shards_here], sources[shards_here:])
    return check(fn, config, bucket, rows)


def _joined_rows(taken) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """Rows taken from shards (disjoint documents): their documents and rows, joined, and the
    order that sorts the documents (the pieces may come from shards in any order)."""
    if len(taken) == 1 and np.all(taken[0][0][1:] > taken[0][0][:-1]):  # one sorted piece: no copy
        docs, rows = taken[0]
        return docs, rows, np.arange(len(docs))
    docs = np.concatenate([t[0] for t in taken])
    rows = {name: _concat([t[1][name] for t in taken]) for name in taken[0][1]}
    return docs, rows, np.argsort(docs, kind="stable")


def _positions(docs: np.ndarray, order: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Where each of ``wanted`` (all in ``docs``) is in ``docs`` (distinct; ``order`` sorts them).

    A bucket's documents are spread over the job's numbers, but densely enough that a table
    indexed by document number (at most 16 entries a document) is small; it answers each lookup
    with one read instead of a binary search (~10x fewer cache misses). Otherwise a binary
    search of the sorted documents (a copy: ``sorter=`` makes every probe an indirect read)."""
    if not len(docs) or not len(wanted):
        return np.zeros(len(wanted), dtype=np.int64)
    lo, hi = int(docs.min()), int(docs.max())
    if hi - lo < 16 * len(docs):
        table = np.empty(hi - lo + 1, dtype=np.int64)
        table[docs - lo] = np.arange(len(docs))
        return table[np.asarray(wanted) - lo]
    return order[np.searchsorted(docs[order], wanted)]


def verify_with_rows(verify, config: Any, bucket: dict[str, np.ndarray], *taken):
    """The verified pairs of a bucket of grouped entries (:func:`grouped_entries`), on the rows
    its shards sent, all groups in one ``verify`` call: ``(a, b, similarity, groups)`` as
    :func:`verify_bucket` gives them."""
    doc, bounds = bucket["doc"], bucket["bounds"]
    groups = len(bounds) - 1
    empty = np.empty(0, dtype=np.int64)
    if groups <= 0:
        return empty, empty.copy(), np.empty(0, dtype=np.float64), 0
    docs, rows, order = _joined_rows(taken)
    pos = _positions(docs, order, doc)
    a, b, s = verify(config, pos, bounds, rows)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if np.any(a >= b):
        raise RuntimeError("verify must return pairs with a < b")
    a, b = docs[a], docs[b]
    a, b, s = unique_pairs(np.minimum(a, b), np.maximum(a, b), np.asarray(s, dtype=np.float64))
    return a, b, s, groups


def connect_with_rows(connect, config: Any, bucket: dict[str, np.ndarray], *taken):
    """As :func:`verify_with_rows` for a job that wants clusters only: ``connect`` gives pairs
    whose components are those of every verified pair of the bucket's groups (a spanning
    forest's edges, found with fewer comparisons); ``(a, b, None, groups)``."""
    doc, bounds = bucket["doc"], bucket["bounds"]
    groups = len(bounds) - 1
    empty = np.empty(0, dtype=np.int64)
    if groups <= 0:
        return empty, empty.copy(), None, 0
    docs, rows, order = _joined_rows(taken)
    a, b = connect(config, _positions(docs, order, doc), bounds, rows)
    return docs[np.asarray(a, dtype=np.int64)], docs[np.asarray(b, dtype=np.int64)], None, groups


def candidates_with_rows(fn: tuple, config: Any, bucket: dict[str, np.ndarray], *taken):
    """:func:`verify_with_rows` of a bucket whose pairs are candidates for a
    :class:`~neardup.core.plan.Recheck`, each kept only in the bucket of the first table that
    groups it (``fn``: the plan's ``(verify, keys, documents, buckets)``; its ``verify`` must be
    pairwise, :attr:`~neardup.core.plan.Sharded.pairwise`). Two documents alike share many
    tables, whose groups lie in different buckets: without this a pair would be verified again
    in each (measured on 100k documents: 1.43M candidates for 607k distinct pairs with MinHash
    ``verify="edit"``, 105k for 14k with SimHash)."""
    verify, keys_fn, documents, buckets = fn
    a, b, s, groups = verify_with_rows(verify, config, bucket, *taken)
    if not len(a):
        return a, b, s, groups
    docs, rows, order = _joined_rows(taken)
    keys, member = _entry_arrays(*keys_fn(config, rows, documents))
    home = first_shared_buckets(keys, member, _positions(docs, order, a), _positions(docs, order, b), buckets)
    here = key_bucket(int(bucket["table"][0]), np.ascontiguousarray(bucket["key"][0]), buckets)
    keep = (home == here) | (home < 0)
    return a[keep], b[keep], s[keep], groups


def candidate_bucket(result: tuple) -> dict[str, Any]:
    """A bucket's candidate pairs (:func:`verify_with_rows`'s result) as the next verification
    takes them (:func:`recheck_with_rows`): ``a``, ``b``, the sorted ``docs`` they name, and the
    number of ``groups`` they came from."""
    a, b, _, groups = result
    return {"a": a, "b": b, "docs": sorted_unique(np.concatenate([a, b])), "groups": groups}


def docs_between(docs: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The sorted ``docs`` in ``[start, stop)``, numbered from ``start``.

    >>> docs_between(np.array([1, 5, 9, 12]), 5, 12).tolist()
    [0, 4]
    """
    lo, hi = np.searchsorted(docs, [start, stop])
    return np.asarray(docs[lo:hi], dtype=np.int64) - start


def recheck_with_rows(verify, config: Any, bucket: dict[str, Any], *taken):
    """The candidate pairs of a bucket (:func:`candidate_bucket`) that ``verify`` (a
    :class:`~neardup.core.plan.Recheck`'s) accepts on the rows the shards sent: ``(a, b,
    similarity, groups)`` as :func:`verify_with_rows` gives them."""
    a, b = bucket["a"], bucket["b"]
    if not len(a):
        return a, b, np.empty(0, dtype=np.float64), bucket["groups"]
    docs, rows, order = _joined_rows(taken)
    ka, kb, s = verify(config, _positions(docs, order, a), _positions(docs, order, b), rows)
    a, b = docs[np.asarray(ka, dtype=np.int64)], docs[np.asarray(kb, dtype=np.int64)]
    a, b, s = unique_pairs(np.minimum(a, b), np.maximum(a, b), np.asarray(s, dtype=np.float64))
    return a, b, s, bucket["groups"]


def similarity_with_rows(similarity, config: Any, docs_q: np.ndarray, others_q: np.ndarray, *taken) -> np.ndarray:
    """The method's similarity of ``docs_q[q]`` to ``others_q[q]`` on the rows the shards sent."""
    docs, rows, order = _joined_rows(taken)
    return np.asarray(
        similarity(config, rows, _positions(docs, order, docs_q), _positions(docs, order, others_q)),
        dtype=np.float64,
    )


def shards_empty(empty_fn, config: Any, *shards: dict[str, Any]) -> list[np.ndarray]:
    """Each shard's documents without features."""
    return [np.asarray(empty_fn(config, shard["rows"]), dtype=bool) for shard in shards]
