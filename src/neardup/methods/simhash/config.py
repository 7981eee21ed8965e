"""Settings of the SimHash method: the single source of its defaults, limits and help.

The plan and the sketcher are imported when first used: the command line imports every method's
config to build its options, and a run needs the modules of one method only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from ...core.plan import Plan
from ...core.validation import Boolean, Choice, Instance, Integer, Optional, Real, conflict
from ...text.edit import EDIT_LEVELS
from ...text.shingles import Shingling
from ..base import PREPASS_OFF, CliSpec, MethodConfig, Sketched, param
from ..registry import register
from .scheme import SimHashScheme

__all__ = ["DEFAULT_BITS", "DEFAULT_EDIT_THRESHOLD", "DEFAULT_MAX_DISTANCE", "SimHashConfig"]

# 128 bits within 12 (similarity >= 0.906): 98% of light edits, no unrelated pair in 5e9 on the
# generated benchmark corpus, where Manku et al.'s 64 bits within 3 keeps only ~70% (docs/simhash.md)
DEFAULT_MAX_DISTANCE = 12
DEFAULT_BITS = 128
DEFAULT_EDIT_THRESHOLD = 0.8
"""With ``verify="edit"`` and no ``threshold``: the edit similarity pairs must reach (MinHash's
default threshold)."""


@register
@dataclass(frozen=True)
class SimHashConfig(MethodConfig):
    """Settings of the SimHash method (the CLI options map one to one).

    Two documents are near-duplicates when their fingerprints differ in at most ``max_distance``
    of ``bits`` bits (similarity 1 - k / bits; cosine of the shingle-count vectors about
    cos(pi k / bits)); every such pair is found by Manku et al.'s permuted tables
    (:mod:`neardup.methods.simhash.search`).

    Attributes:
        max_distance: k, at most half the width: unrelated fingerprints differ in about bits / 2.
        bits: fingerprint width, 64 or 128.
        shingling: how texts become features (word 2-grams by default, see docs/simhash.md).
        seed: seed of the hyperplanes.
        weighting: ``"count"`` (shingle counts) or ``"idf"`` (counts times inverse document
            frequency learned from the input itself; reads the input twice).
        min_df: with ``"idf"``, shingles in fewer documents share the largest weight.
        blocks: m, the permuted-table blocks; chosen from the number of documents when None.
        verify: ``"signature"`` (a pair within ``max_distance`` is a near-duplicate) or ``"edit"``
            (such a pair is a candidate, kept when its normalized edit similarity reaches
            ``threshold``; :mod:`neardup.methods.verify_edit`). Only pairs within the distance
            are checked: a larger ``max_distance`` finds more of the pairs the verifier accepts.
        threshold: with ``"edit"``, the edit similarity to reach (default 0.8).
        edit_level: with ``"edit"``, word tokens or characters.
        exact_prepass: fingerprint only the first of each group of identical normalized texts
            (same result, less work; off with IDF weighting, whose document frequencies count
            every document).

    >>> SimHashConfig(max_distance=70)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    neardup.core.validation.ParameterConflictError: max_distance must be an integer in [0, 63] for ...
    """

    name = "simhash"
    summary = "Hamming distance of SimHash fingerprints (cosine of shingle counts)"
    rank = 10

    max_distance: int = param(
        DEFAULT_MAX_DISTANCE,
        Integer(0, 127),
        "Near-duplicates differ in at most K fingerprint bits (similarity 1 - K/bits).",
    )
    bits: int = param(DEFAULT_BITS, Choice((64, 128)), "Fingerprint width.")
    shingling: Shingling = param(
        constraint=Instance(Shingling),
        default_factory=partial(Shingling, "word", 2),
        help="How texts become features: word or character n-grams.",
        cli=CliSpec(composite="shingling"),
    )
    seed: int = param(1, Integer(0, 2**64 - 1), "Seed of the hyperplanes.")
    weighting: str = param(
        "count",
        Choice(("count", "idf")),
        "Feature weights: shingle counts, or counts x IDF learned from the input (reads it twice).",
    )
    min_df: int = param(
        2, Integer(1, 2**62), "With --weighting idf, shingles in fewer documents share the largest weight."
    )
    blocks: int | None = param(
        None, Optional(Integer(1, 128)), "Permuted-table blocks M > K [default: chosen from the document count]."
    )
    verify: str = param(
        "signature",
        Choice(("signature", "edit")),
        "Keep a pair within the distance (signature), or (edit) take it as a candidate and keep it "
        "when its normalized edit similarity reaches --threshold (re-reads the candidate texts).",
    )
    threshold: float | None = param(
        None,
        Optional(Real(0, 1, low_open=True)),
        f"With --verify edit: the edit similarity at or above which a candidate pair is a "
        f"near-duplicate [default: {DEFAULT_EDIT_THRESHOLD}].",
    )
    edit_level: str = param(
        "word",
        Choice(EDIT_LEVELS),
        "With --verify edit: edit distance over word tokens or characters.",
    )
    exact_prepass: bool = param(
        True,
        Boolean(),
        "Fingerprint only the first of each group of documents whose normalized texts are identical "
        "(the results are the same; off with --weighting idf).",
        cli=CliSpec(
            negative="--no-exact-prepass",
            negative_help=PREPASS_OFF.format("Fingerprint every document, also exact copies of earlier ones"),
        ),
    )

    @property
    def edit_threshold(self) -> float:
        """With ``verify="edit"``: the edit similarity a candidate pair must reach."""
        return DEFAULT_EDIT_THRESHOLD if self.threshold is None else self.threshold

    @property
    def edit_normalization(self) -> tuple[bool, bool]:
        """(nfkc, casefold) of the tokens ``verify="edit"`` compares, as the shingles'."""
        return self.shingling.nfkc, self.shingling.casefold

    def validate(self) -> None:
        if self.verify != "edit" and self.threshold is not None:
            raise conflict("threshold is for verify='edit' only (simhash's own bound is max_distance)")
        if self.verify != "edit" and self.edit_level != "word":
            raise conflict("edit_level is for verify='edit' only")
        half = self.bits // 2
        if self.max_distance >= half:
            raise conflict(
                f"max_distance must be an integer in [0, {half - 1}] for {self.bits}-bit fingerprints "
                f"(unrelated ones differ in about {half} bits), got {self.max_distance}"
            )
        if self.blocks is not None and not self.max_distance < self.blocks <= self.bits:
            raise conflict(
                f"blocks must be an integer with max_distance < blocks <= bits "
                f"({self.max_distance} < m <= {self.bits}), got {self.blocks}"
            )
        SimHashScheme(bits=self.bits, seed=self.seed, shingling=self.shingling, weighting=self.weighting)

    @property
    def scheme(self) -> SimHashScheme:
        """The fingerprint scheme (without the IDF digest, which the data decides)."""
        return SimHashScheme(bits=self.bits, seed=self.seed, shingling=self.shingling, weighting=self.weighting)

    def plan(self) -> Plan:
        from .plan import simhash_plan  # loaded on first use, see the module docs

        return simhash_plan(self)

    @property
    def pair_threshold(self) -> float:
        """1 - max_distance / bits (the similarity of a pair at the largest distance accepted), or
        with ``verify="edit"`` the edit similarity pairs must reach."""
        if self.verify == "edit":
            return self.edit_threshold
        return 1.0 - self.max_distance / self.bits

    def describe(self, counters: dict[str, float]) -> dict[str, str]:
        f, k = self.bits, self.max_distance
        idf = (
            f", {int(counters.get('idf_shingles', 0)):,} shingles with df >= {self.min_df}"
            if self.weighting == "idf"
            else ""
        )
        lines = {}
        if self.exact_prepass and self.weighting != "idf":
            lines["exact duplicates (pre-pass)"] = f"{int(counters.get('exact_duplicates', 0)):,}"
        lines |= {
            "SimHash": f"{f}-bit, max distance {k} (similarity >= {1 - k / f:.3f}), {self.weighting} weighting{idf}",
            "permuted tables": f"m={int(counters.get('blocks', 0))} blocks, {int(counters.get('tables', 0))} tables, "
            f"{int(counters.get('distinct', 0)):,} distinct fingerprints",
            "pairs within distance": f"{int(counters.get('pairs', 0)):,} "
            f"({int(counters.get('searched', counters.get('checked', 0))):,} candidates checked)",
        }
        if self.verify == "edit":
            lines["edit verification"] = (
                f"{int(counters.get('verified', 0)):,} of {int(counters.get('checked', 0)):,} pairs reach "
                f"{self.edit_level} edit similarity {self.edit_threshold}"
            )
        return lines

    def sketch_texts(self, texts: Sequence[str]) -> Sketched:
        if self.weighting == "idf":
            raise ValueError(
                "an index of SimHash fingerprints needs weighting='count' (IDF weights depend on the whole collection)"
            )
        from .sketch import SimHasher

        values, counts = SimHasher(scheme=self.scheme).sign_texts_with_counts(list(texts))
        return Sketched(values, counts == 0)
