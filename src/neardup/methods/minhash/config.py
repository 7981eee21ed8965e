"""Settings of the MinHash + LSH method: the single source of its defaults, limits and help."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, partial

from ...core.plan import Plan
from ...core.validation import (
    Boolean,
    Choice,
    Instance,
    Integer,
    Optional,
    Real,
    conflict,
)
from ...text.edit import EDIT_LEVELS
from ...text.shingles import Shingling
from ..base import PREPASS_OFF, CliSpec, MethodConfig, Sketched, param
from ..registry import register
from .edit import candidate_threshold
from .lsh import LSHParams, params_for
from .plan import minhash_plan
from .scheme import MAX_NUM_PERM, SKETCHES, MinHashScheme
from .sketch import hasher_for

__all__ = ["DEFAULT_NGRAM", "DEFAULT_NUM_PERM", "DEFAULT_THRESHOLD", "MAX_NUM_PERM", "MinHashConfig"]

DEFAULT_THRESHOLD = 0.8
DEFAULT_NGRAM = 5
DEFAULT_NUM_PERM = 128
MAX_SEED = 2**64 - 1


@register
@dataclass(frozen=True)
class MinHashConfig(MethodConfig):
    """Settings of the MinHash + LSH method (the CLI options map one to one).

    Two documents are near-duplicates when the Jaccard similarity of their shingle sets reaches
    ``threshold``; MinHash signatures estimate it and LSH banding finds the candidate pairs
    (:mod:`neardup.methods.minhash.lsh`, :mod:`neardup.methods.minhash.candidates`).

    >>> MinHashConfig(threshold=0.9).lsh
    LSHParams(bands=10, rows=12, threshold=0.9, fp_weight=0.02, fn_weight=0.98)
    >>> MinHashConfig(num_perm=128.0)
    Traceback (most recent call last):
    ...
    neardup.core.validation.ParameterTypeError: num_perm must be an integer in [1, 2048], got 128.0 (float)
    """

    name = "minhash"
    summary = "Jaccard of shingle sets by MinHash + LSH"
    rank = 0

    threshold: float = param(
        DEFAULT_THRESHOLD,
        Real(0, 1, low_open=True),
        "Jaccard similarity of the shingle sets at or above which two documents are near-duplicates.",
    )
    shingling: Shingling = param(
        constraint=Instance(Shingling),
        default_factory=partial(Shingling, "word", DEFAULT_NGRAM),
        help="How texts become sets: word or character n-grams.",
        cli=CliSpec(composite="shingling"),
    )
    num_perm: int = param(DEFAULT_NUM_PERM, Integer(1, MAX_NUM_PERM), "Signature length K.")
    seed: int = param(1, Integer(0, MAX_SEED), "Seed of the MinHash permutations.")
    bands: int | None = param(
        None, Optional(Integer(1, MAX_NUM_PERM)), "LSH bands b [default: chosen from the threshold and K]."
    )
    rows: int | None = param(
        None, Optional(Integer(1, MAX_NUM_PERM)), "LSH rows per band r [default: chosen from the threshold and K]."
    )
    verify: str = param(
        "signature",
        Choice(("signature", "exact", "edit")),
        "Keep a candidate pair when its signature estimate reaches the threshold, when the exact "
        "Jaccard of its shingle sets does, or (edit) when its normalized edit similarity "
        "1 - d/max(|a|,|b|) does (both re-read the candidate texts).",
    )
    edit_level: str = param(
        "word",
        Choice(EDIT_LEVELS),
        "With --verify edit: edit distance over word tokens or characters.",
    )
    candidate_threshold: float | None = param(
        None,
        Optional(Real(0, 1, low_open=True)),
        "With --verify edit: the Jaccard threshold the LSH banding is chosen for [default: from "
        "the edit threshold by the measured relation in docs/evaluation.md].",
    )
    exact_prepass: bool = param(
        True,
        Boolean(),
        "Sketch only the first of each group of documents whose normalized texts are identical "
        "(the others join its cluster; the results are the same).",
        cli=CliSpec(
            negative="--no-exact-prepass",
            negative_help=PREPASS_OFF.format("Sketch every document, also exact copies of earlier ones"),
        ),
    )
    sketch: str = param(
        "classic",
        Choice(tuple(SKETCHES)),
        "K permutations (classic), or one-permutation hashing with optimal densification (oph: one "
        "hash per shingle, same estimate, its own signature values).",
    )

    @property
    def lsh_threshold(self) -> float:
        """The Jaccard threshold the banding is chosen for: ``threshold``, or with
        ``verify="edit"`` the candidate threshold (given, or :func:`.edit.candidate_threshold`)."""
        if self.verify != "edit":
            return self.threshold
        if self.candidate_threshold is not None:
            return self.candidate_threshold
        return candidate_threshold(self.threshold, self.shingling.n)

    @property
    def edit_threshold(self) -> float:
        """With ``verify="edit"``: the edit similarity a pair must reach (``threshold``)."""
        return self.threshold

    @property
    def edit_normalization(self) -> tuple[bool, bool]:
        """(nfkc, casefold) of the tokens ``verify="edit"`` compares, as the shingles'."""
        return self.shingling.nfkc, self.shingling.casefold

    def validate(self) -> None:
        if self.verify != "edit" and self.candidate_threshold is not None:
            raise conflict("candidate_threshold is for verify='edit' only")
        if self.verify != "edit" and self.edit_level != "word":
            raise conflict("edit_level is for verify='edit' only")
        try:
            params_for(min(self.lsh_threshold, 0.999), self.num_perm, self.bands, self.rows)
        except ValueError as exc:
            raise conflict(str(exc)) from None

    @cached_property  # made once: a served index sketches every query with it (its checks cost ~10 µs)
    def scheme(self) -> MinHashScheme:
        return MinHashScheme(
            num_perm=self.num_perm, seed=self.seed, shingling=self.shingling, hash_family=SKETCHES[self.sketch]
        )

    @property
    def lsh(self) -> LSHParams:
        """The banding: chosen from the threshold and K unless ``bands``/``rows`` are given."""
        # a threshold of exactly 1.0 bands like 0.999 (the S-curve needs t < 1)
        return params_for(min(self.lsh_threshold, 0.999), self.num_perm, self.bands, self.rows)

    def plan(self) -> Plan:
        return minhash_plan(self)

    def describe(self, counters: dict[str, float]) -> dict[str, str]:
        lsh = self.lsh
        dups = counters.get("exact_duplicates")
        return {
            "exact duplicates (pre-pass)": f"{int(dups):,}" if dups is not None else "off",
            "LSH": f"b={lsh.bands} r={lsh.rows} (threshold {self.lsh_threshold}, K={self.num_perm}"
            + (", one-permutation sketch)" if self.sketch == "oph" else ")"),
            "candidate pairs checked": (
                f"{int(counters['checked']):,} (verified by {self.verify})"
                if "checked" in counters
                else f"not counted by this engine (verified by {self.verify})"
            ),
        }

    def sketch_texts(self, texts: Sequence[str]) -> Sketched:
        values, counts = hasher_for(self.scheme).sign_texts_with_counts(list(texts))
        return Sketched(values, counts == 0)
