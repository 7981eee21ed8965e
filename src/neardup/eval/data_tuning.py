"""Choosing a threshold from the user's own data, without labels.

:func:`data_tuning` runs the MinHash job once at a low threshold (the floor) with every verified
pair, then, for each threshold t from the floor to 1, counts the pairs at or above t and the
documents a run at t would remove (connected components of those pairs, and greedy centers:
:mod:`neardup.core.components`), and picks sample pairs whose similarity is near a chosen threshold,
with the start of both texts, to read. Pairs found at the floor hold every pair a run at a higher
threshold verifies, up to the LSH misses of the floor's banding (lower than at t: the S-curve is
chosen for the floor).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api import dedup
from ..core.components import center_clusters, components
from ..methods.minhash.config import MinHashConfig


def data_tuning(
    paths: list[str],
    *,
    threshold: float = 0.8,
    floor: float = 0.5,
    step: float = 0.05,
    verify: str = "signature",
    num_perm: int = 128,
    samples: int = 5,
    snippet: int = 200,
    text_field: str = "text",
    id_field: str | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """The similarities of the candidate pairs of ``paths`` at or above ``floor`` and, per
    threshold, what a run would remove (see the module docs)."""
    if not 0 < floor <= threshold <= 1:
        raise ValueError(f"need 0 < floor <= threshold <= 1, got floor {floor} and threshold {threshold}")
    config = MinHashConfig(threshold=floor, verify=verify, num_perm=num_perm)
    result = dedup(paths, config, want_pairs=True, text_field=text_field, id_field=id_field, workers=workers)
    n = result.n_documents
    a, b, s = (np.asarray(x) for x in result.pairs)
    thresholds = sorted({round(float(t), 4) for t in np.arange(floor, 1.0 + 1e-9, step)} | {threshold})
    order = np.arange(n, dtype=np.int64)
    rows = []
    for t in thresholds:
        m = s >= t - 1e-12
        roots = components(n, a[m], b[m])
        _, kept, _ = center_clusters(n, a[m], b[m], s[m], order)
        rows.append(
            {
                "threshold": t,
                "pairs": int(m.sum()),
                "removed_components": int(n - len(np.unique(roots))),
                "removed_center": int(np.count_nonzero(kept != order)),
            }
        )
    edges = np.linspace(floor, 1.0, 21)
    counts, _ = np.histogram(s, bins=edges)
    near = np.flatnonzero(np.abs(s - threshold) <= step)
    near = near[np.argsort(np.abs(s[near] - threshold), kind="stable")][:samples]
    wanted = set(a[near].tolist()) | set(b[near].tolist())
    texts = _texts_of(result.source, wanted)
    ids = result.ids
    picked = [
        {
            "id_a": ids[int(a[k])],
            "id_b": ids[int(b[k])],
            "similarity": float(s[k]),
            "text_a": texts.get(int(a[k]), "")[:snippet],
            "text_b": texts.get(int(b[k]), "")[:snippet],
        }
        for k in near
    ]
    return {
        "documents": n,
        "floor": floor,
        "threshold": threshold,
        "verify": verify,
        "num_perm": num_perm,
        "pairs": len(s),
        "histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
        "thresholds": rows,
        "samples": picked,
        "similarities": s,
    }


def _texts_of(source, wanted: set[int]) -> dict[int, str]:
    """The texts of the documents numbered ``wanted``, read again from the job's source."""
    out: dict[int, str] = {}
    if not wanted:
        return out
    last = max(wanted)
    for batch in source():
        for k, text in enumerate(batch.texts):
            if batch.start + k in wanted:
                out[batch.start + k] = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
        if batch.start + len(batch) > last:
            break
    return out
