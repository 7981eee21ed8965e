"""The SpotSigs batch job as a plan: extract spot signatures -> (IDF filter) -> exact all pairs -> cluster.

1. (with an IDF band only) scan ``read + count signatures (IDF)``: in how many documents each
   signature occurs; nothing else is kept;
2. scan ``read + extract spot signatures``: texts -> spot signature multisets, filtered by the IDF
   band when there is one;
3. step ``all pairs``: every pair with weighted Jaccard >= threshold, exactly, by length
   partitions and a pruned inverted index (:func:`~neardup.methods.spotsigs.pairs.all_pairs`),
   and the connected components of that pair graph.

With ``verify="edit"``, step 3 is ``all pairs (candidates)`` at the candidate threshold, followed
by the edit-verification stages every method shares (:mod:`neardup.methods.verify_edit`).

Otherwise there is no candidate stage and nothing to verify: the pairs are the complete graph of pairs at
or above the threshold, no more, no less. Documents without signatures (after the filter) are
never paired and are reported as empty. The all-pairs search is one step over every document's
signatures: its length partitions are where an engine that spreads the work would cut it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.components import components
from ...core.documents import DocBatch
from ...core.plan import Plan, Prepass, Scan, StageContext, Step
from .pairs import all_pairs, weighted_jaccard_rows
from .signatures import DocumentFrequencies, SpotSignatures, extract, idf_filter

if TYPE_CHECKING:
    from .config import SpotSigsConfig

__all__ = ["spotsigs_plan"]


def spotsigs_plan(config: SpotSigsConfig) -> Plan:
    """The plan of ``config`` (see the module docs)."""
    stages: list[Any] = []
    extract_inputs: tuple[str, ...] = ()
    if config.idf_band is not None:
        stages.append(Scan("read + count signatures (IDF)", extract_batch, SignatureFrequencies))
        extract_inputs = ("frequencies",)
    stages.append(Scan("read + extract spot signatures", filtered_batch, SignatureRows, extract_inputs))
    prepass = None
    if config.exact_prepass and config.idf_band is None:
        prepass = Prepass(config.scheme.nfkc, config.scheme.casefold)
    if config.verify == "edit":
        from ..verify_edit import TokenRows, edit_similarity_of, edit_token_rows, edit_verifier, verify_candidates

        stages += [
            Step("all pairs (candidates)", candidate_pairs, ("signatures",)),
            Scan("re-read candidate texts", edit_token_rows, TokenRows, ("wanted",)),
            Step("verifier", edit_verifier, ("wanted", "token_docs", "token_ids", "token_offsets")),
            Step("verify + cluster", verify_candidates, ("wanted", "candidate_a", "candidate_b", "verifier")),
        ]
        return Plan(config, tuple(stages), edit_similarity_of, prepass)
    stages.append(Step("all pairs", pairs_and_clusters, ("signatures",)))
    return Plan(config, tuple(stages), similarity, prepass)


def extract_batch(config: SpotSigsConfig, batch: DocBatch) -> SpotSignatures:
    """Map (IDF): the spot signatures of the batch's texts."""
    return extract(batch.texts, config.scheme)


class SignatureFrequencies:
    """Reduce (IDF): the document frequency of every signature of the collection."""

    def __init__(self, config: SpotSigsConfig) -> None:
        self.df = DocumentFrequencies()

    def add(self, part: SpotSignatures) -> None:
        self.df.add(part)

    def merge(self, other: SignatureFrequencies) -> None:
        self.df.merge(other.df)

    def result(self) -> dict[str, Any]:
        self.df.table()  # merge now: the extraction workers only read it
        return {"frequencies": self.df}


def filtered_batch(
    config: SpotSigsConfig, batch: DocBatch, frequencies: DocumentFrequencies | None = None
) -> tuple[SpotSignatures, int]:
    """Map: the batch's signatures (IDF-filtered with a band), and how many there were before."""
    sigs = extract(batch.texts, config.scheme)
    before = int(sigs.counts.sum())
    if frequencies is not None:
        sigs = idf_filter(sigs, config.idf_band, frequencies)
    return sigs, before


class SignatureRows:
    """Reduce: the signatures of every document (CSR), in input order."""

    def __init__(self, config: SpotSigsConfig) -> None:
        self.scheme = config.scheme
        self.parts: list[SpotSignatures] = []
        self.before = 0

    def add(self, part: tuple[SpotSignatures, int]) -> None:
        self.parts.append(part[0])
        self.before += part[1]

    def merge(self, other: SignatureRows) -> None:
        self.parts.extend(other.parts)
        self.before += other.before

    def result(self) -> dict[str, Any]:
        sigs = SpotSignatures.concat(self.parts, self.scheme)
        lengths = sigs.lengths
        return {
            "signatures": sigs,
            "signature_lengths": lengths,
            "empty": lengths == 0,
            "counters": {"before": self.before, "kept": int(sigs.counts.sum())},
        }


def _counters(res, signatures: SpotSignatures) -> dict[str, int]:
    c = res.counters
    return {
        "documents": c.documents,
        "signatures": int(signatures.lengths.sum()),
        "partitions": c.partitions,
        "computed": c.computed,
        "pairs": c.pairs,
        "pruned": c.pruned,
        "lists_cut": c.lists_cut,
        "lists_skipped": c.lists_skipped,
    }


def candidate_pairs(config: SpotSigsConfig, ctx: StageContext, signatures: SpotSignatures) -> dict[str, Any]:
    """Step (``verify="edit"``): every pair at or above the candidate threshold, as candidates for
    edit verification, and the documents in one."""
    res = all_pairs(signatures, config.pair_threshold, workers=ctx.threads)
    wanted = np.zeros(len(signatures), dtype=bool)
    wanted[res.a] = True
    wanted[res.b] = True
    return {"candidate_a": res.a, "candidate_b": res.b, "wanted": wanted, "counters": _counters(res, signatures)}


def pairs_and_clusters(config: SpotSigsConfig, ctx: StageContext, signatures: SpotSignatures) -> dict[str, Any]:
    """Step: every pair at or above the threshold, and the clusters they make."""
    res = all_pairs(signatures, config.threshold, workers=ctx.threads)
    out: dict[str, Any] = {
        "root": components(len(signatures), res.a, res.b),
        "counters": _counters(res, signatures),
    }
    if ctx.want_pairs:
        out["pairs"] = (res.a, res.b, res.similarity)
    return out


def similarity(config: SpotSigsConfig, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Weighted Jaccard of the signature multisets of ``docs[q]`` and ``others[q]``."""
    return weighted_jaccard_rows(state["signatures"], docs, others, state["signature_lengths"])
