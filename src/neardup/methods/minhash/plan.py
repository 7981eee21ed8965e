"""The MinHash + LSH batch job as a plan: shingle -> MinHash -> band -> verify -> cluster.

Stages (:mod:`neardup.core.plan`), each a module-level function of the config and arrays:

1. scan ``read + sketch``: texts -> signatures and shingle counts. ``encode_batch`` (the
   ``prepare`` phase) normalizes a batch to UTF-8 and, for the exact pre-pass, computes the
   128-bit keys of the normalized bytes from that same encoding; ``sketch_batch`` signs the
   documents the pre-pass chose;
2. step ``band``: signatures -> one 64-bit key per band (:func:`~neardup.methods.minhash.lsh.band_keys`),
   and the documents with at least one shingle (the others are never near-duplicates);
3. ``verify="exact"`` only: step ``find candidate texts`` (documents that share a bucket with
   another), scan ``re-read candidate texts`` (their exact shingle sets) and step ``verifier``;
   otherwise step ``verifier`` compares signatures;
4. group-by ``verify + cluster``: documents sharing a band key are candidates, verified by the
   verifier and joined into clusters (:func:`~neardup.methods.minhash.candidates.find_clusters`
   locally; ``band_groups`` and ``verify_group`` by definition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._kernels.candidates import connect_groups, verify_groups
from ..._kernels.charclass import CHAR_CLASS
from ..._kernels.exact import lowered_keys_kernel
from ..._kernels.minhash import LONG_DOC, WINDOW, shingle_set_long_doc
from ..._kernels.shingles import lower_ascii_inplace, unique_rows
from ...core.arrays import CsrParts, concat_consuming
from ...core.budget import current_spill
from ...core.documents import DocBatch
from ...core.plan import GroupBy, Plan, Prepass, Recheck, Rows, Scan, Sharded, StageContext, Step
from ...text.shingles import encode_packed, encode_segments, kind_code, shingle_encoded
from ...text.utf8 import PackedTexts, TextRuns
from ..exact.keys import keys_from_encoded
from .candidates import Verifier, find_clusters, in_buckets, similarity_to, verify_pairs
from .lsh import band_keys
from .sketch import hasher_for

if TYPE_CHECKING:
    from .config import MinHashConfig

__all__ = ["minhash_plan"]


def minhash_plan(config: MinHashConfig) -> Plan:
    """The plan of ``config`` (see the module docs)."""
    stages: list[Any] = [
        Scan("read + sketch", sketch_batch, sketch_rows, prepare=encode_batch),
        Step("band", band, ("values", "counts")),
    ]
    if config.verify == "edit":
        from ..verify_edit import edit_recheck, edit_similarity_of, edit_verifier, shard_edit_similarity
        from .edit import cluster_edit, verify_group_edit

        recheck = edit_recheck()
        stages += [
            Step("find candidate texts", candidate_texts, ("keys", "candidates")),
            recheck.scan,
            Step("verifier", edit_verifier, ("wanted", "token_docs", "token_ids", "token_offsets")),
            GroupBy(
                "verify + cluster",
                edit_groups,
                verify_group_edit,
                cluster_edit,
                ("keys", "candidates", "values", "verifier"),
            ),
        ]
        prepass = Prepass(config.shingling.nfkc, config.shingling.casefold) if config.exact_prepass else None
        columns = ("values", "counts")
        sharded = Sharded(
            columns, shard_keys, shard_candidates, shard_edit_similarity, shard_empty, recheck=recheck, pairwise=True
        )
        return Plan(config, tuple(stages), edit_similarity_of, prepass, sharded)
    if config.verify == "exact":
        recheck = Recheck(Scan("re-read candidate texts", shingle_sets, ShingleSets, ("wanted",)), shard_exact_verify)
        stages += [
            Step("find candidate texts", candidate_texts, ("keys", "candidates")),
            recheck.scan,
            Step("verifier", exact_verifier, ("values", "set_docs", "set_values", "set_offsets")),
        ]
        columns = ("values", "counts")
        sharded = Sharded(
            columns, shard_keys, shard_candidates, shard_exact_similarity, shard_empty, recheck=recheck, pairwise=True
        )
    else:
        stages.append(Step("verifier", signature_verifier, ("values",)))
        sharded = Sharded(("values", "counts"), shard_keys, shard_verify, shard_similarity, shard_empty, shard_connect)
    stages.append(GroupBy("verify + cluster", band_groups, verify_group, cluster, ("keys", "candidates", "verifier")))
    prepass = Prepass(config.shingling.nfkc, config.shingling.casefold) if config.exact_prepass else None
    return Plan(config, tuple(stages), similarity, prepass, sharded, utf8_texts=True)


def encode_batch(config: MinHashConfig, batch: DocBatch, keys_wanted: bool):
    """Prepare: the batch's texts normalized and packed as UTF-8 segments ``(first text, data,
    offsets)`` (:func:`~neardup.text.shingles.encode_segments`: a huge text read as its bytes is
    a segment of its own, not copied; a run of texts the reader packed,
    :class:`~neardup.text.utf8.PackedTexts`, is a segment of its bytes where they need no
    normalization: :func:`~neardup.text.shingles.encode_packed`), and (when wanted) the exact
    keys of the normalized bytes, i.e. of :func:`~neardup.text.shingles.encode_texts`' bytes."""
    shingling = config.shingling
    texts = batch.texts
    runs = texts.runs if type(texts) is TextRuns else (texts,)
    segments = []
    first = 0
    for run in runs:
        if type(run) is PackedTexts:
            segments.append((first, *encode_packed(run, shingling)))
        else:
            writable = keys_wanted and shingling.casefold
            segments += [
                (first + at, data, offsets) for at, data, offsets in encode_segments(run, shingling, writable=writable)
            ]
        first += len(run)
    if not keys_wanted:
        return segments, None
    keys = [_segment_keys(data, offsets, shingling.casefold) for _, data, offsets in segments]
    return segments, (keys[0] if len(keys) == 1 else np.concatenate(keys))


def _segment_keys(data: np.ndarray, offsets: np.ndarray, casefold: bool) -> np.ndarray:
    """The exact keys of one segment of :func:`encode_batch`: nd128 of its texts' bytes, ASCII
    lower-cased when case is folded (the bytes that :func:`~neardup.text.shingles.encode_texts`
    gives, which differ from these in ASCII case only)."""
    if not casefold:
        return keys_from_encoded(data, offsets, raw=True)
    if data.flags.writeable:
        # the sketch kernels lower-case ASCII themselves, so lowering the bytes in place
        # changes no shingle and spares a copy of the batch's text
        lower_ascii_inplace(data)
        data.flags.writeable = False  # the kernels are compiled for read-only bytes
        return keys_from_encoded(data, offsets, raw=True)
    # a huge text's or the reader's packed bytes, not ours to write: hashed lower-cased as read
    out = np.empty((len(offsets) - 1, 2), dtype=np.uint64)
    lowered_keys_kernel(data, offsets, out)
    return out


def sketch_batch(config: MinHashConfig, prepared, chosen: np.ndarray | None) -> dict[str, np.ndarray]:
    """Map: signatures (uint32[m, K]) and shingle counts (int64[m]) of the chosen documents."""
    hasher = hasher_for(config.scheme)
    values, counts = [], []
    for first, data, offsets in prepared:
        starts, ends = offsets[:-1], offsets[1:]
        if chosen is not None:
            idx = np.flatnonzero(chosen[first : first + len(starts)])
            starts, ends = starts[idx], ends[idx]
        v, c = hasher.sign_encoded(data, starts, ends)
        values.append(v)
        counts.append(c)
    if len(values) == 1:
        return {"values": values[0], "counts": counts[0]}
    return {"values": np.concatenate(values), "counts": np.concatenate(counts)}


def sketch_rows(config: MinHashConfig) -> Rows:
    """Reduce: the signatures and counts of every document, in input order."""
    return Rows({"values": ((config.num_perm,), np.uint32), "counts": ((), np.int64)})


def band(config: MinHashConfig, ctx: StageContext, values: np.ndarray, counts: np.ndarray) -> dict[str, Any]:
    """Step: the band keys (uint64[n, b]), the documents that take part (those with shingles)
    and the empty ones."""
    lsh = config.lsh
    return {
        "keys": _band_keys_on(ctx.threads, values, lsh.bands, lsh.rows),
        "candidates": np.flatnonzero(counts > 0),
        "empty": counts == 0,
    }


_BAND_ROWS_MIN = 20_000  # signatures from which the band keys are computed in parts on the workers


def _band_keys_on(threads, values: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """:func:`band_keys` of ``values``, in one part of rows per worker (the kernel releases the
    GIL), each written into its rows of one array: the same keys (no copy joins the parts; at 1M
    signatures that copy was 136 MB on the calling thread). Past the job's memory budget the
    keys go to a spill file, computed a stretch of rows at a time (:mod:`neardup.core.budget`)."""
    n = values.shape[0]
    spill = current_spill()
    if spill is not None and (spill.spilled or not spill.fits(8 * n * bands)):
        out = spill.array((n, bands), np.uint64)
        step = max(spill.work // (8 * bands + values.itemsize * values.shape[1]), 64)
        part = -(-step // threads.workers)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            threads.map(
                lambda a, hi=hi: band_keys(values[a : min(a + part, hi)], bands, rows, out[a : min(a + part, hi)]),
                range(lo, hi, part),
            )
            spill.relieve()
        return out
    if threads.workers < 2 or n < _BAND_ROWS_MIN:
        return band_keys(values, bands, rows)
    out = np.empty((n, bands), dtype=np.uint64)
    step = -(-n // threads.workers)
    threads.map(lambda a: band_keys(values[a : a + step], bands, rows, out[a : a + step]), range(0, n, step))
    return out


def signature_verifier(config: MinHashConfig, ctx: StageContext, values: np.ndarray) -> dict[str, Any]:
    """Step: verify candidates by their signature estimate r/K >= threshold."""
    return {"verifier": Verifier.signature(values, config.threshold)}


def candidate_texts(
    config: MinHashConfig, ctx: StageContext, keys: np.ndarray, candidates: np.ndarray
) -> dict[str, Any]:
    """Step (exact verification): the documents that share a bucket with another."""
    return {"wanted": in_buckets(keys, candidates)}


def shingle_sets(config: MinHashConfig, batch: DocBatch, wanted: np.ndarray):
    """Map (exact verification): the sorted shingle sets of the batch's wanted documents, as
    (document indices, CSR values, set sizes)."""
    idx = np.flatnonzero(wanted[batch.start : batch.start + len(batch)])
    if not len(idx):
        return idx, np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    shingling = config.shingling
    values, sizes = [], []
    # encode_for_sketch's bytes differ from encode_texts' in ASCII case only, which the kernel
    # folds itself (kind_code): the same sets, and a huge text's bytes are not copied
    kind = kind_code(shingling)
    for _, data, offsets in encode_segments([batch.texts[i] for i in idx], shingling):
        if len(offsets) == 2 and offsets[1] > LONG_DOC:  # a huge text alone
            v = shingle_set_long_doc(
                data, 0, offsets[1], CHAR_CLASS, kind, shingling.n, shingling.strip_punctuation, WINDOW
            )
            values.append(v)
            sizes.append(np.array([len(v)], dtype=np.int64))
            continue
        v, off = unique_rows(*shingle_encoded(data, offsets, shingling))
        values.append(v)
        sizes.append(np.diff(off))
    return batch.start + idx, concat_consuming(values, np.empty(0, np.uint64)), np.concatenate(sizes)


class ShingleSets(CsrParts):
    """Reduce (exact verification): the shingle sets of every wanted document, as CSR."""

    def __init__(self, config: MinHashConfig) -> None:
        super().__init__(np.uint64)

    def result(self) -> dict[str, Any]:
        docs, values, offsets = self.joined()
        return {"set_docs": docs, "set_values": values, "set_offsets": offsets}


def exact_verifier(
    config: MinHashConfig,
    ctx: StageContext,
    values: np.ndarray,
    set_docs: np.ndarray,
    set_values: np.ndarray,
    set_offsets: np.ndarray,
) -> dict[str, Any]:
    """Step (exact verification): verify candidates by the exact Jaccard of their shingle sets."""
    set_row = np.full(len(values), -1, dtype=np.int64)
    set_row[set_docs] = np.arange(len(set_docs))
    return {"verifier": Verifier.exact(values, config.threshold, set_values, set_offsets, set_row)}


def band_groups(config: MinHashConfig, keys: np.ndarray, candidates: np.ndarray, verifier: Verifier):
    """Group-by keys: one table per band; the documents with shingles take part."""
    member = np.zeros(keys.shape, dtype=bool)
    member[candidates] = True
    return keys, member


def edit_groups(config: MinHashConfig, keys: np.ndarray, candidates: np.ndarray, values: np.ndarray, verifier):
    """Group-by keys of ``verify="edit"``: the band keys, as :func:`band_groups`."""
    return band_groups(config, keys, candidates, verifier)


def verify_group(
    config: MinHashConfig, members: np.ndarray, keys: np.ndarray, candidates: np.ndarray, verifier: Verifier
):
    """Group-by verify: every pair of one bucket that the verifier accepts."""
    return verify_pairs(members, verifier)


def cluster(
    config: MinHashConfig, ctx: StageContext, keys: np.ndarray, candidates: np.ndarray, verifier: Verifier
) -> dict[str, Any]:
    """Group-by, locally: buckets by sorting band keys, verification, union-find."""
    result = find_clusters(keys, candidates, verifier, want_pairs=ctx.want_pairs, threads=ctx.threads)
    out: dict[str, Any] = {
        "root": result.root,
        "counters": {
            "buckets": result.stats.buckets,
            "checked": result.stats.checked,
            "verified": result.stats.verified,
        },
    }
    if ctx.want_pairs:
        out["pairs"] = (result.pairs_a, result.pairs_b, result.pairs_similarity)
    return out


# --------------------------------------------------------------------------------------------
# verify="signature" on shards of rows (core.plan.Sharded): the band step, the verifier and the
# group-by's keys and verify above, on the signatures and counts of some documents


def shard_keys(config: MinHashConfig, rows: dict[str, np.ndarray], documents: int) -> tuple[np.ndarray, np.ndarray]:
    """The band keys of a shard's documents; those with shingles take part (as ``band_groups``)."""
    keys = band_keys(rows["values"], config.lsh.bands, config.lsh.rows)
    member = np.repeat((rows["counts"] > 0)[:, None], keys.shape[1], axis=1)
    return keys, member


def shard_verify(config: MinHashConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """The pairs of every group ``members[bounds[g]:bounds[g + 1]]`` that the signature verifier
    accepts (as ``verify_group``, all groups in one kernel call)."""
    verifier = Verifier.signature(rows["values"], config.threshold)
    members, bounds = np.ascontiguousarray(members, np.int64), np.ascontiguousarray(bounds, np.int64)
    return verify_groups(members, bounds, *verifier.args())


def shard_connect(config: MinHashConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """Clusters only: edges spanning the components found by verifying every group as
    ``cluster`` does (a member is compared only with earlier members not yet in its component),
    which are those of :func:`shard_verify`'s pairs."""
    verifier = Verifier.signature(rows["values"], config.threshold)
    members, bounds = np.ascontiguousarray(members, np.int64), np.ascontiguousarray(bounds, np.int64)
    a, b, _, _ = connect_groups(members, bounds, *verifier.args())
    return a, b


def shard_similarity(config: MinHashConfig, rows: dict[str, np.ndarray], docs: np.ndarray, others: np.ndarray):
    """The signature similarity of ``docs[q]`` to ``others[q]`` (as ``similarity``)."""
    return similarity_to(docs, others, Verifier.signature(rows["values"], config.threshold))


def shard_candidates(config: MinHashConfig, members: np.ndarray, bounds: np.ndarray, rows: dict[str, np.ndarray]):
    """``verify="exact"`` and ``"edit"``: the candidate pairs of every group, to be verified on
    their re-read texts (:class:`~neardup.core.plan.Recheck`): every pair (exact, as
    ``verify_group`` takes them), or those whose signature estimate reaches the edit plan's
    prefilter (as :func:`~neardup.methods.minhash.edit.verify_group_edit`)."""
    from .edit import PREFILTER

    floor = PREFILTER * config.lsh_threshold if config.verify == "edit" else 0.0
    verifier = Verifier.signature(rows["values"], floor)
    members, bounds = np.ascontiguousarray(members, np.int64), np.ascontiguousarray(bounds, np.int64)
    return verify_groups(members, bounds, *verifier.args())


def _exact_on(config: MinHashConfig, rows: dict[str, Any]) -> Verifier:
    """The exact verifier of the shingle sets in ``rows`` (``"reread"``, CSR rows)."""
    sets = rows["reread"]
    no_sigs = np.zeros((1, 1), dtype=np.uint32)  # the exact mode reads only the sets
    return Verifier.exact(no_sigs, config.threshold, sets.values, sets.offsets, np.arange(len(sets), dtype=np.int64))


def shard_exact_verify(config: MinHashConfig, a: np.ndarray, b: np.ndarray, rows: dict[str, Any]):
    """The candidate pairs whose shingle sets' exact Jaccard reaches the threshold, with it."""
    s = similarity_to(a, b, _exact_on(config, rows))
    keep = s >= config.threshold
    return a[keep], b[keep], s[keep]


def shard_exact_similarity(config: MinHashConfig, rows: dict[str, Any], docs: np.ndarray, others: np.ndarray):
    """The exact Jaccard of ``docs[q]``'s and ``others[q]``'s shingle sets (as ``similarity``)."""
    return similarity_to(docs, others, _exact_on(config, rows))


def shard_empty(config: MinHashConfig, rows: dict[str, np.ndarray]) -> np.ndarray:
    """The documents without shingles (as ``band``)."""
    return rows["counts"] == 0


def similarity(config: MinHashConfig, state: dict[str, Any], docs: np.ndarray, others: np.ndarray) -> np.ndarray:
    """The verifier's similarity of ``docs[q]`` to ``others[q]`` (1.0 for a document itself)."""
    return similarity_to(docs, others, state["verifier"])
