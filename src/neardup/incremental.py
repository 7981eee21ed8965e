"""Dedup against an index: remove what a durable index already holds, then (optionally) add the rest.

``neardup dedup NEW --against PATH [--update]`` runs the batch job on NEW as usual, then asks the
index about every document of NEW. A cluster of NEW (its documents linked by verified pairs) that
holds a document with a match in the index is removed whole: each of its documents is a
near-duplicate, directly or through the cluster, of something already kept. The kept documents
are the batch job's kept documents of the other clusters. With ``update``, they are added to the
index in one transaction after the outputs are written; a run that fails before adds nothing.

The answer is the same as deduplicating the union (the index's documents first, then NEW) with
one documented difference: documents of NEW are compared with what the index holds, not with the
documents removed from earlier batches (those were never stored), and documents already in the
index are not re-clustered among themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .core.documents import DocumentSource
from .index.durable import DurableIndex

__all__ = ["AgainstResult", "match_against"]


@dataclass(frozen=True, eq=False)
class AgainstResult:
    """For every document of the new batch: whether it is kept now, and its best match in the index."""

    keep_mask: np.ndarray
    """bool[n]: kept by the batch job and in a cluster without a match in the index."""
    match_id: list[str | None]
    """The id of the best match in the index of the document's cluster (None: no match)."""
    match_similarity: np.ndarray
    """float64[n]: the similarity of that match (NaN: none)."""
    direct_matches: int
    """Documents of the batch with a match in the index themselves."""
    kept_ids: list[str]
    kept_texts: list[str]

    @property
    def n_removed_by_index(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.match_similarity)))

    def add_kept_to(self, index: DurableIndex) -> int:
        """Add the kept documents to ``index`` (one transaction); returns how many."""
        index.add(self.kept_ids, self.kept_texts)
        return len(self.kept_ids)


def match_against(
    index: DurableIndex,
    source: DocumentSource,
    root: np.ndarray,
    keep_mask: np.ndarray,
    *,
    min_similarity: float | None = None,
) -> AgainstResult:
    """Query ``index`` with every document of ``source`` (the batch job's input, read again) and
    remove the clusters (``root``: the batch job's cluster of each document) that hold a match."""
    n = len(root)
    best_id: list[str | None] = [None] * n
    best_sim = np.full(n, np.nan)
    kept_ids: list[str] = []
    kept_texts: list[str] = []
    seen = 0
    for batch in source():
        found = index.query_batch(batch.texts, min_similarity=min_similarity, limit=1)
        for i, matches in enumerate(found):
            if matches:
                best_id[batch.start + i], best_sim[batch.start + i] = matches[0]
        sel = np.flatnonzero(keep_mask[batch.start : batch.start + len(batch)])
        kept_ids += [batch.ids[i] for i in sel]
        kept_texts += [batch.texts[i] for i in sel]
        seen += len(batch)
    if seen != n:
        raise RuntimeError(f"the input gave {seen} documents on the index pass, {n} before")
    direct = ~np.isnan(best_sim)
    # the best match of each cluster, spread to every member
    cluster_sim = np.full(n, -1.0)
    cluster_doc = np.full(n, -1, dtype=np.int64)
    for d in np.flatnonzero(direct):
        r = root[d]
        if best_sim[d] > cluster_sim[r]:
            cluster_sim[r], cluster_doc[r] = best_sim[d], d
    hit = cluster_doc[root] >= 0
    match_id = [best_id[cluster_doc[root[d]]] if hit[d] else None for d in range(n)]
    match_sim = np.where(hit, cluster_sim[root], np.nan)
    new_keep = keep_mask & ~hit
    still = new_keep[np.flatnonzero(keep_mask)]
    return AgainstResult(
        keep_mask=new_keep,
        match_id=match_id,
        match_similarity=match_sim,
        direct_matches=int(np.count_nonzero(direct)),
        kept_ids=[i for i, k in zip(kept_ids, still) if k],
        kept_texts=[t for t, k in zip(kept_texts, still) if k],
    )
