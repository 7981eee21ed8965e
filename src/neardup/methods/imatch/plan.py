"""The I-Match batch job as a plan: count terms, sign with the lexicon, group equal signatures.

1. scan ``read + count terms``: every document's set of word terms, counted into collection
   document frequencies (:class:`~neardup.methods.imatch.signatures.DocumentFrequencies`);
2. step ``lexicon``: the document-frequency range of the IDF band;
3. scan ``re-read + sign``: each document's L signatures over its lexicon terms;
4. group-by ``group``: documents agreeing under any signature form a cluster; a pair's similarity
   is the share of the L signatures on which it agrees.

Sharded (:class:`~neardup.core.plan.Sharded`): the signatures of scan 3 stay where they were
made; one table per lexicon keyed by the signature, a group's pairs verified by agreement (all
of them agree under the group's lexicon), and (clusters only) each member joined to its group's
first member.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.documents import DocBatch
from ...core.plan import GroupBy, Plan, Rows, Scan, Sharded, StageContext, Step
from ..exact.groups import group_counters, groups_pairs, groups_stars
from .signatures import (
    DocumentFrequencies,
    df_bounds,
    imatch_signatures,
    match_pairs,
    match_roots,
    match_similarity,
    term_sets,
)

if TYPE_CHECKING:
    from .config import IMatchConfig

__all__ = ["imatch_plan"]


def imatch_plan(config: IMatchConfig) -> Plan:
    """The plan of ``config`` (see the module docs)."""
    return Plan(
        config,
        (
            Scan("read + count terms", count_terms, TermFrequencies, table=True),
            Step("lexicon", lexicon, ("terms", "df", "documents")),
            Scan("re-read + sign", sign_batch, signature_rows, ("terms", "df", "df_range")),
            GroupBy("group", signature_groups, agreeing, group, ("sigs", "has")),
        ),
        similarity,
        sharded=Sharded(("sigs", "has"), shard_keys, shard_verify, similarity, shard_empty, shard_connect),
    )


def count_terms(config: IMatchConfig, batch: DocBatch):
    """Map: the batch's term sets as CSR (values, offsets)."""
    return term_sets(batch.texts)


class TermFrequencies:
    """Reduce: the document frequency of every term of the collection."""

    def __init__(self, config: IMatchConfig) -> None:
        self.df = DocumentFrequencies()

    def add(self, part) -> None:
        self.df.add(*part)

    def merge(self, other: TermFrequencies) -> None:
        self.df.merge(other.df)

    def result(self) -> dict[str, Any]:
        terms, df = self.df.finish()
        return {"terms": terms, "df": df, "documents": self.df.n_documents}


def lexicon(
    config: IMatchConfig, ctx: StageContext, terms: np.ndarray, df: np.ndarray, documents: int
) -> dict[str, Any]:
    """Step: the document-frequency range ``[df_lo, df_hi]`` of the IDF band."""
    lo, hi = df_bounds(documents, config.idf_band)
    in_lexicon = int(np.count_nonzero((df >= lo) & (df <= hi)))
    return {
        "df_range": (lo, hi),
        "counters": {
            "documents": documents,
            "terms": len(terms),
            "df_lo": lo,
            "df_hi": hi,
            "lexicon_terms": in_lexicon,
        },
    }


def sign_batch(
    config: IMatchConfig, batch: DocBatch, terms: np.ndarray, df: np.ndarray, df_range: tuple[int, int]
) -> dict[str, np.ndarray]:
    """Map: the L signatures (uint64[n, L, 2]) of every document, and which it has (bool[n, L])."""
    values, offsets = term_sets(batch.texts)
    sigs, has = imatch_signatures(
        values, offsets, terms, df, df_range, config.lexicons, config.lexicon_fraction, config.seed, config.min_terms
    )
    return {"sigs": sigs, "has": has, "empty": ~has[:, 0]}


def signature_rows(config: IMatchConfig) -> Rows:
    """Reduce: every document's signatures, in input order."""
    return Rows({"sigs": ((config.lexicons, 2), np.uint64), "has": ((config.lexicons,), bool), "empty": ((), bool)})


def signature_groups(config: IMatchConfig, sigs: np.ndarray, has: np.ndarray):
    """Group-by keys: one table per lexicon, keyed by the 128-bit signature."""
    return sigs, has


def agreeing(config: IMatchConfig, members: np.ndarray, sigs: np.ndarray, has: np.ndarray):
    """Group-by verify: every pair of a group, with the share of lexicons on which it agrees."""
    members = np.sort(np.asarray(members, dtype=np.int64))
    a, b = np.triu_indices(len(members), k=1)
    a, b = members[a], members[b]
    return a, b, match_similarity(sigs, has, a, b)


def group(config: IMatchConfig, ctx: StageContext, sigs: np.ndarray, has: np.ndarray) -> dict[str, Any]:
    """Group-by, locally: documents agreeing under any lexicon (union over the L groupings)."""
    root = match_roots(sigs, has)
    out: dict[str, Any] = {"root": root, "counters": group_counters(root)}
    if ctx.want_pairs:
        out["pairs"] = match_pairs(sigs, has)
    return out


# --------------------------------------------------------------------------------------------
# the group-by on shards of rows (core.plan.Sharded): the signatures of some documents


def shard_keys(config: IMatchConfig, rows: dict[str, np.ndarray], documents: int):
    """The signatures of a shard's documents (as ``signature_groups``)."""
    return rows["sigs"], rows["has"]


def shard_verify(config: IMatchConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """Every pair of each group ``members[bounds[g]:bounds[g + 1]]`` that agrees under some
    lexicon (all of them: a group is one signature), with the share of lexicons that agree."""
    a, b = groups_pairs(members, bounds)
    s = match_similarity(rows["sigs"], rows["has"], a, b)
    keep = s > 0
    return a[keep], b[keep], s[keep]


def shard_connect(config: IMatchConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """Clusters only: each member joined to its group's first member (they agree: no comparison)."""
    return groups_stars(members, bounds)


def shard_empty(config: IMatchConfig, rows: dict[str, np.ndarray]) -> np.ndarray:
    """The documents without a signature (as ``sign_batch``)."""
    return ~rows["has"][:, 0]


def similarity(config: IMatchConfig, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """The share of the L signatures on which ``docs[q]`` and ``others[q]`` agree (1.0 for itself)."""
    return match_similarity(state["sigs"], state["has"], docs, others)
