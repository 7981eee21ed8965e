r"""Judge near-duplicate results against gold labels: pairwise P/R/F1, macro F1, ARI, threshold sweeps.

Both the prediction and the gold standard are either **clusters** (every item has a cluster id;
items of one cluster are near-duplicates of each other) or **pairs** (an explicit list of
near-duplicate pairs, optionally with a similarity). ``neardup dedup --clusters`` writes the first
kind, ``--pairs`` the second.

Definitions (``n`` items; ``a_i`` = size of gold cluster i, ``b_j`` = size of predicted cluster j,
``n_ij`` = items in both; ``C(x, 2) = x (x - 1) / 2``):

- **Pairwise precision, recall, F1.** Gold pairs G and predicted pairs P are the unordered pairs
  of distinct items that are near-duplicates: the listed pairs, or every pair inside a cluster.
  ``precision = |P n G| / |P|``, ``recall = |P n G| / |G|``, ``F1 = 2 |P n G| / (|P| + |G|)``.
  Clusters are never expanded into pairs: ``|P n G| = sum_ij C(n_ij, 2)`` when both are clusters.
  When a ratio has a zero denominator it is 1.0 if both P and G are empty, else 0.0.
- **Macro F1 per gold cluster** (the per-cluster average used to evaluate SpotSigs, Theobald et
  al. 2008, so that big clusters do not dominate): for each gold cluster g with two or more items,
  ``recall_g = |P n G_g| / C(a_g, 2)`` where ``G_g`` are the gold pairs inside g, and
  ``precision_g = |P n G_g| / |P_g|`` where ``P_g`` are the predicted pairs with at least one item
  in g (so a prediction that glues g to another cluster is penalised once for each);
  ``F1_g = 2 |P n G_g| / (|P_g| + |G_g|)``; macro F1 is the mean of ``F1_g``. With gold pairs,
  the gold clusters are the connected components of the pairs and ``G_g`` the listed pairs inside.
- **Adjusted Rand index** (Hubert & Arabie 1985), the Rand index corrected for chance under the
  permutation model with the cluster sizes fixed::

      index = sum_ij C(n_ij, 2);  A = sum_i C(a_i, 2);  B = sum_j C(b_j, 2)
      expected = A B / C(n, 2);   ARI = (index - expected) / ((A + B) / 2 - expected)

  1.0 for identical partitions, about 0 for random ones (it can be negative). When the
  denominator is 0 (both partitions all singletons, or both one cluster) it is 1.0. Pairs are
  turned into clusters by connected components for the ARI.

Items: the union of the ids in the prediction and the gold standard; an item missing from one
side is a singleton there (for pairs: every item in no pair is). Give cluster files of *all*
documents for a meaningful ARI; the pairwise scores do not depend on the singletons.

>>> gold = Clusters(["a", "b", "c", "d"], [0, 0, 1, 1])
>>> pred = Clusters(["a", "b", "c", "d"], [0, 0, 1, 2])
>>> s = evaluate(pred, gold)
>>> (s.precision, s.recall, round(s.f1, 4), round(s.ari, 4))
(1.0, 0.5, 0.6667, 0.5714)
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..core.arrays import sorted_unique
from ..core.components import components
from ..core.errors import InputError
from ..io import input_format

#: Column names recognised as the cluster id of a clusters file, in order of preference.
CLUSTER_FIELDS = ("cluster", "group", "cluster_id", "label")


# --------------------------------------------------------------------------------------------
# Label sets
@dataclass(frozen=True, eq=False)
class Clusters:
    """Items with a cluster id each: ``cluster[i]`` of ``ids[i]`` (any hashable; ``None`` = alone).

    ``similarity[i]``, when known, is the item's similarity to its cluster's kept document (as
    ``neardup dedup --clusters`` writes it; NaN where unknown). The metrics do not use it.
    """

    ids: Sequence[str]
    cluster: Sequence[Any]
    similarity: np.ndarray | None = None

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.cluster):
            raise ValueError(f"got {len(self.ids)} ids for {len(self.cluster)} cluster ids")
        if self.similarity is not None and len(self.similarity) != len(self.ids):
            raise ValueError(f"got {len(self.similarity)} similarities for {len(self.ids)} ids")


@dataclass(frozen=True, eq=False)
class Pairs:
    """Near-duplicate pairs ``(a[i], b[i])``, with a similarity each when known."""

    a: Sequence[str]
    b: Sequence[str]
    similarity: np.ndarray | None = None

    def __post_init__(self) -> None:
        if len(self.a) != len(self.b):
            raise ValueError(f"got {len(self.a)} first ids for {len(self.b)} second ids")
        if self.similarity is not None and len(self.similarity) != len(self.a):
            raise ValueError(f"got {len(self.similarity)} similarities for {len(self.a)} pairs")


Labels = Clusters | Pairs


# --------------------------------------------------------------------------------------------
# Encoding: ids -> dense integers over one universe
def _as_array(values: Sequence) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array([v if v is None or isinstance(v, str) else str(v) for v in values], pa.string())
    if not pa.types.is_string(values.type) and not pa.types.is_large_string(values.type):
        values = pc.cast(values, pa.string())
    return values.cast(pa.string()) if pa.types.is_large_string(values.type) else values


@dataclass(frozen=True, eq=False)
class _Encoded:
    """One side (gold or prediction) in universe indices."""

    kind: str  # "clusters" or "pairs"
    labels: np.ndarray  # int64[n]: a partition of the universe (clusters, or pair components)
    a: np.ndarray | None = None  # pairs only: int64, a < b, unique
    b: np.ndarray | None = None
    similarity: np.ndarray | None = None


def _encode(pred: Labels, gold: Labels) -> tuple[_Encoded, _Encoded, int, int, int]:
    """Encode both sides; also returns n and how many ids only the prediction / only the gold has."""
    parts = []
    for side in (gold, pred):
        if isinstance(side, Clusters):
            parts.append([_as_array(side.ids)])
        elif isinstance(side, Pairs):
            parts.append([_as_array(side.a), _as_array(side.b)])
        else:
            raise TypeError(f"expected Clusters or Pairs, got {type(side).__name__}")
    arrays = [arr for part in parts for arr in part]
    if any(arr.null_count for arr in arrays):
        raise ValueError("ids must not be null")
    encoded = pa.chunked_array(arrays, pa.string()).combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n = len(encoded.dictionary)
    pieces, lo = [], 0
    for arr in arrays:
        pieces.append(codes[lo : lo + len(arr)])
        lo += len(arr)
    gold_codes = pieces[: len(parts[0])]
    pred_codes = pieces[len(parts[0]) :]
    in_gold = np.zeros(n, dtype=bool)
    in_pred = np.zeros(n, dtype=bool)
    for c in gold_codes:
        in_gold[c] = True
    for c in pred_codes:
        in_pred[c] = True
    g = _side(gold, gold_codes, n)
    p = _side(pred, pred_codes, n)
    return p, g, n, int(np.count_nonzero(in_pred & ~in_gold)), int(np.count_nonzero(in_gold & ~in_pred))


def _side(labels: Labels, codes: list[np.ndarray], n: int) -> _Encoded:
    if isinstance(labels, Clusters):
        idx = codes[0]
        if len(sorted_unique(idx)) != len(idx):
            dup = _first_duplicate(idx, labels.ids)
            raise ValueError(f"id {dup!r} is listed twice in a clusters table")
        cl = _as_array(labels.cluster).dictionary_encode()
        cl_codes = cl.indices.to_numpy(zero_copy_only=False)
        valid = ~np.asarray(pc.is_null(cl.indices).to_numpy(zero_copy_only=False), dtype=bool)
        out = np.arange(n, dtype=np.int64) + len(cl.dictionary)  # everything else: a singleton
        out[idx[valid]] = cl_codes[valid].astype(np.int64)
        return _Encoded("clusters", _compact(out))
    a, b = codes
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    sim = None if labels.similarity is None else np.asarray(labels.similarity, dtype=np.float64)
    keep = lo != hi
    lo, hi = lo[keep], hi[keep]
    if sim is not None:
        sim = sim[keep]
    key = lo * n + hi
    if sim is not None:  # duplicates keep their highest similarity
        order = np.lexsort((-sim, key))
    else:
        order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    sel = order[first]
    lo, hi = lo[sel], hi[sel]
    if sim is not None:
        sim = sim[sel]
    return _Encoded("pairs", _compact(components(n, lo, hi)), lo, hi, sim)


def _first_duplicate(idx: np.ndarray, ids: Sequence) -> str:
    seen: set[int] = set()
    for k, v in enumerate(idx.tolist()):
        if v in seen:
            return str(ids[k])
        seen.add(v)
    return "?"


def _compact(labels: np.ndarray) -> np.ndarray:
    return np.unique(labels, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _c2(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    return x * (x - 1) // 2


# --------------------------------------------------------------------------------------------
# Metrics
@dataclass(frozen=True)
class Scores:
    """The agreement of a prediction with the gold standard (see the module docstring).

    Attributes:
        items: ids in the union of both sides.
        only_in_pred, only_in_gold: ids that only one side mentions (singletons on the other).
        gold_pairs, pred_pairs, true_pairs: ``|G|``, ``|P|``, ``|P n G|``.
        precision, recall, f1: pairwise scores.
        macro_f1: mean per-gold-cluster F1; ``None`` without gold clusters of 2+ items.
        gold_clusters, pred_clusters: clusters (or pair components) of two or more items.
        ari: adjusted Rand index of the two partitions.
    """

    items: int
    only_in_pred: int
    only_in_gold: int
    gold_pairs: int
    pred_pairs: int
    true_pairs: int
    precision: float
    recall: float
    f1: float
    macro_f1: float | None
    gold_clusters: int
    pred_clusters: int
    ari: float

    def as_dict(self) -> dict:
        return asdict(self)


def _prf(tp: int, npred: int, ngold: int) -> tuple[float, float, float]:
    if npred == 0 and ngold == 0:
        return 1.0, 1.0, 1.0
    precision = tp / npred if npred else 0.0
    recall = tp / ngold if ngold else 0.0
    return precision, recall, 2 * tp / (npred + ngold)


def adjusted_rand_index(labels_a: Sequence, labels_b: Sequence) -> float:
    """ARI of two partitions of the same items (Hubert & Arabie 1985; see the module docstring).

    >>> adjusted_rand_index([0, 0, 1, 1], [5, 5, 7, 7])
    1.0
    >>> round(adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]), 4)
    0.5714
    """
    a = _compact(np.asarray(labels_a))
    b = _compact(np.asarray(labels_b))
    if a.shape != b.shape:
        raise ValueError(f"the partitions have {len(a)} and {len(b)} items")
    return _ari(a, b)


def _contingency(g: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-zero cells of the contingency table: (gold label, predicted label, count)."""
    width = int(p.max()) + 1 if len(p) else 1
    cells, counts = np.unique(g * width + p, return_counts=True)
    return cells // width, cells % width, counts


def _ari(g: np.ndarray, p: np.ndarray) -> float:
    n = len(g)
    _, _, nij = _contingency(g, p)
    index = int(_c2(nij).sum())
    sum_a = int(_c2(np.bincount(g)).sum()) if n else 0
    sum_b = int(_c2(np.bincount(p)).sum()) if n else 0
    total = n * (n - 1) // 2
    if total == 0:
        return 1.0
    expected = sum_a * sum_b / total
    denominator = (sum_a + sum_b) / 2 - expected
    if denominator == 0:
        return 1.0
    return float((index - expected) / denominator)


def _pairs_within(side: _Encoded, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bool per pair (a[k], b[k]): is it a pair of ``side``?"""
    if side.kind == "clusters":
        return side.labels[a] == side.labels[b]
    n = len(side.labels)
    return np.isin(a * n + b, side.a * n + side.b)


def evaluate(pred: Labels, gold: Labels) -> Scores:
    """Pairwise precision/recall/F1, macro F1 per gold cluster and ARI of ``pred`` against ``gold``.

    >>> gold = Pairs(["a", "c"], ["b", "d"])
    >>> s = evaluate(Pairs(["b", "c"], ["a", "e"]), gold)
    >>> (s.true_pairs, s.pred_pairs, s.gold_pairs, s.precision, s.recall)
    (1, 2, 2, 0.5, 0.5)
    """
    p, g, n, only_pred, only_gold = _encode(pred, gold)
    ngold_g = np.bincount(g.labels, minlength=n)  # gold cluster sizes
    big = ngold_g >= 2
    if p.kind == "clusters" and g.kind == "clusters":
        gi, pj, nij = _contingency(g.labels, p.labels)
        size_p = np.bincount(p.labels, minlength=n)
        true_cell = _c2(nij)
        tp = int(true_cell.sum())
        npred = int(_c2(size_p).sum())
        ngold = int(_c2(ngold_g).sum())
        tp_g = np.bincount(gi, weights=true_cell, minlength=n)
        touch_g = np.bincount(gi, weights=_c2(size_p[pj]) - _c2(size_p[pj] - nij), minlength=n)
        gold_g = _c2(ngold_g).astype(np.float64)
    else:
        if p.kind == "pairs":
            correct = _pairs_within(g, p.a, p.b)
            tp = int(np.count_nonzero(correct))
            npred = len(p.a)
            tp_g = np.bincount(g.labels[p.a[correct]], minlength=n).astype(np.float64)
            ga, gb = g.labels[p.a], g.labels[p.b]
            touch_g = (np.bincount(ga, minlength=n) + np.bincount(gb[ga != gb], minlength=n)).astype(np.float64)
        else:  # predicted clusters, gold pairs
            found = _pairs_within(p, g.a, g.b)
            tp = int(np.count_nonzero(found))
            size_p = np.bincount(p.labels, minlength=n)
            npred = int(_c2(size_p).sum())
            tp_g = np.bincount(g.labels[g.a[found]], minlength=n).astype(np.float64)
            gi, pj, nij = _contingency(g.labels, p.labels)
            touch_g = np.bincount(gi, weights=_c2(size_p[pj]) - _c2(size_p[pj] - nij), minlength=n)
        if g.kind == "clusters":
            ngold = int(_c2(ngold_g).sum())
            gold_g = _c2(ngold_g).astype(np.float64)
        else:
            ngold = len(g.a)
            gold_g = np.bincount(g.labels[g.a], minlength=n).astype(np.float64)
    precision, recall, f1 = _prf(tp, npred, ngold)
    macro = None
    if big.any():
        macro = float(np.mean(2 * tp_g[big] / (touch_g[big] + gold_g[big])))
    pred_sizes = np.bincount(p.labels, minlength=n)
    return Scores(
        n,
        only_pred,
        only_gold,
        ngold,
        npred,
        tp,
        precision,
        recall,
        f1,
        macro,
        int(np.count_nonzero(big)),
        int(np.count_nonzero(pred_sizes >= 2)),
        _ari(g.labels, p.labels),
    )


# --------------------------------------------------------------------------------------------
# Threshold sweeps
@dataclass(frozen=True, eq=False)
class Sweep:
    """Precision, recall and F1 when keeping the scores ``>= threshold[k]``, for every distinct score.

    Attributes:
        threshold: the distinct scores, descending.
        precision, recall, f1: at each threshold.
        kept: how many items (pairs) are kept at each threshold.
        positives: the number of gold positives (the recall denominator).
        best: index of the best F1 (ties: the highest threshold).
    """

    threshold: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    kept: np.ndarray
    positives: int

    @property
    def best(self) -> int:
        return int(np.argmax(self.f1)) if len(self.f1) else -1

    def at(self, t: float) -> tuple[float, float, float]:
        """(precision, recall, F1) when keeping the scores >= ``t``."""
        k = int(np.searchsorted(-self.threshold, -t, side="right")) - 1
        if k < 0:
            return _prf(0, 0, self.positives)
        return float(self.precision[k]), float(self.recall[k]), float(self.f1[k])


def _sweep(scores: np.ndarray, correct: np.ndarray, positives: int) -> Sweep:
    scores = np.asarray(scores, dtype=np.float64)
    correct = np.asarray(correct, dtype=bool)
    if scores.shape != correct.shape:
        raise ValueError(f"got {len(scores)} scores for {len(correct)} labels")
    if np.isnan(scores).any():
        raise ValueError("scores must not be NaN")
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    tp = np.cumsum(correct[order])
    last = np.ones(len(s), dtype=bool)  # the last item of each run of equal scores
    last[:-1] = s[:-1] != s[1:]
    kept = np.flatnonzero(last) + 1
    tp = tp[last]
    precision = tp / kept
    recall = tp / positives if positives else np.zeros(len(tp))  # at least one pair is kept: as _prf
    f1 = 2 * tp / (kept + positives)
    return Sweep(s[last], precision, recall, f1, kept, positives)


def threshold_sweep(pred: Pairs, gold: Labels) -> Sweep:
    """Pairwise P/R/F1 of the predicted pairs with similarity >= t, for every t among the similarities.

    Gold pairs that are not among the predicted pairs count as missed at every threshold.

    >>> gold = Clusters(["a", "b", "c", "d"], [1, 1, 2, 2])
    >>> pred = Pairs(["a", "a", "c"], ["b", "c", "d"], np.array([0.9, 0.7, 0.5]))
    >>> sw = threshold_sweep(pred, gold)
    >>> sw.threshold.tolist(), sw.f1.round(3).tolist(), float(sw.threshold[sw.best])
    ([0.9, 0.7, 0.5], [0.667, 0.5, 0.8], 0.5)
    """
    if not isinstance(pred, Pairs) or pred.similarity is None:
        raise ValueError("a threshold sweep needs predicted pairs with a similarity column")
    p, g, _, _, _ = _encode(pred, gold)
    correct = _pairs_within(g, p.a, p.b)
    positives = int(_c2(np.bincount(g.labels)).sum()) if g.kind == "clusters" else len(g.a)
    return _sweep(p.similarity, correct, positives)


def best_threshold(scores: Sequence[float], labels: Sequence[bool]) -> tuple[float, float, float, float]:
    """The score threshold t with the best F1 for "label is true iff score >= t": (t, P, R, F1).

    For scoring items one at a time (e.g. each answer's similarity to its source) rather than pairs.

    >>> best_threshold([0.9, 0.8, 0.3, 0.1], [True, True, False, True])
    (0.1, 0.75, 1.0, 0.857...)
    """
    labels = np.asarray(labels, dtype=bool)
    sw = _sweep(np.asarray(scores, dtype=np.float64), labels, int(labels.sum()))
    k = sw.best
    return float(sw.threshold[k]), float(sw.precision[k]), float(sw.recall[k]), float(sw.f1[k])


# --------------------------------------------------------------------------------------------
# Reading label files
def read_labels(path: str | os.PathLike, *, id_field: str = "id", cluster_field: str | None = None) -> Labels:
    """Read a pairs file (columns ``id_a``, ``id_b`` and optionally ``similarity``) or a clusters file
    (``id_field`` and ``cluster_field``, by default the first of :data:`CLUSTER_FIELDS` present).

    Formats as for ``neardup dedup`` outputs: JSONL (.gz/.zst), CSV (.gz/.zst), Parquet. Ids are read
    as strings (a number ``7`` becomes ``"7"``, as ``neardup dedup`` does). Raises ``InputError``
    naming the file (and line) when it is neither kind or a value is missing.
    """
    name = str(path)
    fmt = input_format(name)
    if fmt == "txtdir":
        raise InputError(
            name,
            None,
            "expected a pairs or clusters table (.jsonl, .csv, .parquet), got a directory",
            reason="unknown format",
        )
    try:
        if fmt == "jsonl":
            columns, where = _read_jsonl_columns(name, id_field, cluster_field)
        else:
            columns, where = _read_table_columns(name, fmt, id_field, cluster_field), None
    except (OSError, pa.ArrowException) as exc:
        raise InputError(name, None, f"cannot read: {exc}", reason="unreadable file") from None
    kind, fields = _choose_kind(name, list(columns), id_field, cluster_field)
    for f in fields:
        col = columns[f]
        if f != "similarity" and col.null_count and not (kind == "clusters" and f != id_field):
            line = int(np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False))[0])
            line = where[line] if where is not None else line + (2 if fmt == "csv" else 1)
            raise InputError(name, line, f"field {f!r} is missing or null", reason="missing id field")
    sim = None
    if "similarity" in columns:
        try:
            sim = pc.cast(columns["similarity"], pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowException:
            raise InputError(name, None, "the similarity column is not numeric", reason="invalid") from None
    if kind == "pairs":
        if sim is not None and np.isnan(sim).any():
            line = int(np.flatnonzero(np.isnan(sim))[0])
            line = where[line] if where is not None else line + (2 if fmt == "csv" else 1)
            raise InputError(name, line, "similarity is missing or not a number", reason="invalid")
        return Pairs(_as_array(columns["id_a"]), _as_array(columns["id_b"]), sim)
    ids = _as_array(columns[id_field])
    codes = ids.dictionary_encode().indices.to_numpy(zero_copy_only=False)
    repeated = np.ones(len(codes), dtype=bool)
    repeated[np.unique(codes, return_index=True)[1]] = False
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        line = where[row] if where is not None else row + (2 if fmt == "csv" else 1)
        raise InputError(name, line, f"id {ids[row].as_py()!r} is listed twice", reason="invalid")
    return Clusters(ids, _as_array(columns[fields[1]]), sim)


def _choose_kind(name: str, names: list[str], id_field: str, cluster_field: str | None) -> tuple[str, list[str]]:
    if cluster_field is None and "id_a" in names and "id_b" in names:
        return "pairs", ["id_a", "id_b"] + (["similarity"] if "similarity" in names else [])
    wanted = [cluster_field] if cluster_field else list(CLUSTER_FIELDS)
    found = next((c for c in wanted if c in names), None)
    if id_field in names and found is not None:
        return "clusters", [id_field, found]
    raise InputError(
        name,
        None,
        f"not a pairs table (id_a, id_b[, similarity]) nor a clusters table ({id_field!r} and "
        f"{' or '.join(repr(c) for c in wanted)}); its columns are {', '.join(map(repr, names)) or 'none'}",
        reason="invalid",
    )


def _read_table_columns(name: str, fmt: str, id_field: str, cluster_field: str | None) -> dict[str, pa.Array]:
    text_cols = ["id_a", "id_b", id_field, *(CLUSTER_FIELDS if cluster_field is None else (cluster_field,))]
    if fmt == "parquet":
        table = pq.read_table(name)
    else:
        with pa.input_stream(name, compression="detect") as stream:
            table = pacsv.read_csv(
                stream,
                convert_options=pacsv.ConvertOptions(
                    column_types={c: pa.string() for c in text_cols}, strings_can_be_null=True, null_values=[""]
                ),
            )
    return {c: table.column(c).combine_chunks() for c in table.column_names}


def _read_jsonl_columns(name: str, id_field: str, cluster_field: str | None):
    """The needed fields of a JSONL file as Arrow arrays, and the 1-based line of every record."""
    with pa.input_stream(name, compression="detect") as stream:
        data = stream.read()
    wanted = {"id_a", "id_b", "similarity", id_field, *(CLUSTER_FIELDS if cluster_field is None else (cluster_field,))}
    columns: dict[str, list] = {}
    lines: list[int] = []
    count = 0
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InputError(name, lineno, f"malformed JSON: {exc}", reason="malformed JSON") from None
        if not isinstance(rec, dict):
            raise InputError(name, lineno, "not a JSON object", reason="not a JSON object")
        for key in wanted.intersection(rec):
            columns.setdefault(key, [None] * count)
        for key, col in columns.items():
            value = rec.get(key)
            if key == "similarity":
                col.append(value if isinstance(value, (int, float)) and not isinstance(value, bool) else None)
            else:
                col.append(value if value is None or isinstance(value, str) else _jsonl_str(value))
        lines.append(lineno)
        count += 1
    out = {}
    for key, col in columns.items():
        if key == "similarity":
            out[key] = pa.array([math.nan if v is None else float(v) for v in col], pa.float64())
        else:
            out[key] = pa.array(col, pa.string())
    return out, lines


def _jsonl_str(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


# --------------------------------------------------------------------------------------------
# Expected errors of an LSH banding (for ``neardup tune``)
def reported_probability(s, num_perm: int, bands: int, rows: int, threshold: float) -> np.ndarray:
    """P(a pair of Jaccard ``s`` is reported): it becomes an LSH candidate *and* its estimate reaches
    the threshold (``--verify signature``), computed exactly under the MinHash model.

    Model: each of the K slots agrees independently with probability ``s`` (the model under which
    r/K is Binomial(K, s) and the S-curve holds). The two events are not independent -- a
    candidate already has ``r`` equal slots -- so the product ``P(candidate) * P(accept)`` is only an
    approximation; by Harris' inequality (both events are increasing in the agreement vector) it is
    a lower bound. Exactly: with ``f_j = C(r, j) s^j (1-s)^(r-j)`` the law of one band's agreements,
    a dynamic programme over the bands carries the joint law of (agreements m among the ``b*r``
    banded slots, whether some band agrees fully); the ``K - b*r`` unbanded slots add an
    independent Binomial(K - b r, s), so::

        P(reported) = sum_m P(m, some band full) * P(Binomial(K - b r, s) >= need - m)

    with ``need = ceil(threshold * K)`` (the verifier's rule). Every term is a sum of positive
    products, so even tiny probabilities keep their relative accuracy. O(K^2) per similarity.

    >>> p = reported_probability([0.5, 0.8, 0.9], 128, 17, 7, 0.8)
    >>> [round(float(x), 4) for x in p]
    [0.0, 0.4994, 0.9996]
    """
    s, k, b, r, need = _reported_args(s, num_perm, bands, rows, threshold)
    f = _binomial_pmf(s, r)  # (ns, r + 1)
    width = b * r + 1
    none_full = np.zeros((len(s), width))
    some_full = np.zeros((len(s), width))
    none_full[:, 0] = 1.0
    for band in range(b):
        hi = band * r + 1  # agreements so far are at most band * r
        new_none = np.zeros_like(none_full)
        new_some = np.zeros_like(some_full)
        for x in range(r + 1):
            fx = f[:, x : x + 1]
            new_some[:, x : x + hi] += some_full[:, :hi] * fx
            (new_some if x == r else new_none)[:, x : x + hi] += none_full[:, :hi] * fx
        none_full, some_full = new_none, new_some
    return _finish(some_full, s, k, b, r, need)


def _reported_probability_fft(s, num_perm: int, bands: int, rows: int, threshold: float) -> np.ndarray:
    """:func:`reported_probability` in O(K log K) per similarity, to absolute error about 1e-13.

    ``P(m, no band full) = [z^m] (sum_{j<r} f_j z^j)^b`` is a polynomial power, taken by FFT, and
    ``P(m, some band full)`` is Binomial(b r, s)(m) minus it. The subtraction loses tiny values
    (below 1e-13), harmless for the error areas this is used for (integrals of order 1e-3).
    """
    s, k, b, r, need = _reported_args(s, num_perm, bands, rows, threshold)
    band = _binomial_pmf(s, r)
    band[:, r] = 0.0  # a band that does not agree fully
    size = 1 << (b * r).bit_length()  # > b * r: no wrap-around in the cyclic convolution
    none_full = np.fft.irfft(np.fft.rfft(band, size) ** b, size)[:, : b * r + 1]
    some_full = np.clip(_binomial_pmf(s, b * r) - none_full, 0.0, 1.0)
    return _finish(some_full, s, k, b, r, need)


def _reported_args(s, num_perm, bands, rows, threshold):
    s = np.atleast_1d(np.asarray(s, dtype=np.float64))
    k, b, r = int(num_perm), int(bands), int(rows)
    if b * r > k:
        raise ValueError(f"bands * rows must be <= num_perm, got {b} * {r} > {k}")
    return s, k, b, r, math.ceil(threshold * k - 1e-9)


def _finish(some_full: np.ndarray, s: np.ndarray, k: int, b: int, r: int, need: int) -> np.ndarray:
    """Add the unbanded slots: sum_m P(m, some band full) * P(Binomial(K - b r, s) >= need - m)."""
    extra = k - b * r
    tail = np.cumsum(_binomial_pmf(s, extra)[:, ::-1], axis=1)[:, ::-1]  # tail[:, q] = P(X >= q)
    rest = need - np.arange(b * r + 1)  # agreements still needed from the unbanded slots
    still = np.where(rest <= 0, 1.0, tail[:, np.clip(rest, 0, extra)] * (rest <= extra))
    return np.clip((some_full * still).sum(axis=1), 0.0, 1.0)


def _binomial_pmf(s: np.ndarray, n: int) -> np.ndarray:
    """P(Binomial(n, s) = m) for m = 0..n, one row per s (in log space: no overflow for large n)."""
    m = np.arange(n + 1)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
    log_comb = log_fact[n] - log_fact[m] - log_fact[n - m]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_s, log_q = np.log(s)[:, None], np.log1p(-s)[:, None]
        out = np.exp(log_comb + np.where(m > 0, m * log_s, 0.0) + np.where(m < n, (n - m) * log_q, 0.0))
    return np.nan_to_num(out, nan=0.0)


def tuning(
    threshold: float,
    num_perm: int,
    *,
    bands: int | None = None,
    rows: int | None = None,
    fp_weight: float | None = None,
    fn_weight: float | None = None,
    alternatives: int = 8,
    similarities: Sequence[float] = tuple(round(0.1 * i, 1) for i in range(1, 11)),
) -> dict:
    """Everything ``neardup tune`` shows, as a JSON-ready dict.

    Keys: the banding (``bands``, ``rows``, ``effective_threshold``, ``chosen``: "optimal" or
    "given"), the error areas of the candidates (``fp_area``, ``fn_area``, see
    :func:`neardup.methods.minhash.lsh.false_positive_area`) and of the reported pairs after signature verification
    (``reported_fp_area``, ``reported_fn_area``, from :func:`reported_probability`), one row per
    similarity (``candidate`` = P(candidate), ``accept`` = P(estimate >= threshold), ``reported`` =
    exact P(both), ``reported_approx`` = the product, ``reported_exact_verify`` = P(candidate) if
    s >= threshold else 0), and the ``alternatives``: the best bandings by the weighted objective
    near the optimum (r within 2 of the optimal r, b within 30%, at least 3, of the optimal b).

    >>> t = tuning(0.8, 128)
    >>> (t["bands"], t["rows"], t["chosen"])
    (17, 7, 'optimal')
    """
    from ..methods.minhash import lsh
    from ..methods.minhash.estimate import acceptance_probability

    fp_w = lsh.DEFAULT_FP_WEIGHT if fp_weight is None else fp_weight
    fn_w = lsh.DEFAULT_FN_WEIGHT if fn_weight is None else fn_weight
    params = lsh.params_for(threshold, num_perm, bands, rows, fp_weight=fp_w, fn_weight=fn_w)
    b, r, t, k = params.bands, params.rows, params.threshold, num_perm
    sims = np.asarray(similarities, dtype=np.float64)
    cand = lsh.candidate_probability(sims, b, r)
    accept = np.array([acceptance_probability(float(x), k, t) for x in sims])
    reported = reported_probability(sims, k, b, r, t)
    table = [
        {
            "similarity": float(x),
            "candidate": float(c),
            "accept": float(a),
            "reported": float(p),
            "reported_approx": float(c * a),
            "reported_exact_verify": float(c) if x >= t else 0.0,
        }
        for x, c, a, p in zip(sims, cand, accept, reported)
    ]
    # reported areas: P(reported) is a polynomial of degree K in s, so Gauss-Legendre with the
    # nodes neardup.methods.minhash.lsh uses for the S-curve integrates it exactly
    nodes, weights = lsh._unit_rule(k)
    fp_rep = t * float(_reported_probability_fft(t * nodes, k, b, r, t) @ weights)
    fn_rep = (1 - t) * float((1 - _reported_probability_fft(t + (1 - t) * nodes, k, b, r, t)) @ weights)
    best = params if bands is None and rows is None else lsh.optimal_params(t, k, fp_weight=fp_w, fn_weight=fn_w)
    b_lo = max(1, min(int(best.bands * 0.7), best.bands - 3))
    b_hi = max(int(best.bands * 1.3), best.bands + 3)
    near = [
        (nb, nr) for nr in range(max(1, best.rows - 2), best.rows + 3) for nb in range(b_lo, b_hi + 1) if nb * nr <= k
    ]
    all_b, all_r = np.array([x[0] for x in near]), np.array([x[1] for x in near])
    fp_all, fn_all = lsh._areas(t, all_b, all_r)
    objective = fp_w * fp_all + fn_w * fn_all
    order = np.lexsort((all_r, all_b, objective))[:alternatives]
    alts = [
        {
            "bands": int(all_b[i]),
            "rows": int(all_r[i]),
            "effective_threshold": lsh.effective_threshold(int(all_b[i]), int(all_r[i])),
            "fp_area": float(fp_all[i]),
            "fn_area": float(fn_all[i]),
            "objective": float(objective[i]),
            "candidate_at_threshold": float(lsh.candidate_probability(t, int(all_b[i]), int(all_r[i]))),
        }
        for i in order
    ]
    return {
        "threshold": t,
        "num_perm": k,
        "fp_weight": fp_w,
        "fn_weight": fn_w,
        "bands": b,
        "rows": r,
        "chosen": "optimal" if bands is None and rows is None else "given",
        "optimal": {"bands": best.bands, "rows": best.rows},
        "effective_threshold": params.effective_threshold,
        "fp_area": params.false_positive_area,
        "fn_area": params.false_negative_area,
        "objective": fp_w * params.false_positive_area + fn_w * params.false_negative_area,
        "reported_fp_area": fp_rep,
        "reported_fn_area": fn_rep,
        "similarities": table,
        "alternatives": alts,
    }
