"""Settings of the SpotSigs method: the single source of its defaults, limits and help.

The plan is imported when first used: the command line imports every method's config to build
its options, and a run needs the modules of one method only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core.plan import Plan
from ...core.validation import Boolean, Choice, Integer, Optional, Range, Real, Words, conflict
from ...text.edit import EDIT_LEVELS
from ...text.stopwords import ENGLISH_ANTECEDENTS, ENGLISH_STOPWORDS
from ..base import PREPASS_OFF, CliSpec, MethodConfig, param
from ..registry import register
from .scheme import MAX_CHAIN, SpotSigsScheme, load_words

__all__ = ["DEFAULT_CHAIN", "DEFAULT_KEY", "DEFAULT_SPOT_DISTANCE", "DEFAULT_THRESHOLD", "SpotSigsConfig"]

DEFAULT_THRESHOLD = 0.8
DEFAULT_SPOT_DISTANCE = 1
DEFAULT_CHAIN = 2
DEFAULT_KEY = "antecedent"

_READ_FILE = "read a file with neardup.methods.spotsigs.scheme.load_words(path)"


@register
@dataclass(frozen=True)
class SpotSigsConfig(MethodConfig):
    """Settings of the SpotSigs method (the CLI options map one to one).

    Two documents are near-duplicates when the weighted Jaccard of their spot signature
    multisets reaches ``threshold``; the job finds every such pair exactly, by length partitions
    and a pruned inverted index (:mod:`neardup.methods.spotsigs.pairs`).

    Attributes:
        threshold: weighted Jaccard at or above which two documents are near-duplicates.
        spot_distance: d >= 1; a chain takes every d-th non-stopword after its antecedent.
        chain: c >= 1, the number of words in a chain.
        antecedents: words a signature starts at; None for the English default
            (:data:`neardup.text.stopwords.ENGLISH_ANTECEDENTS`). ``load_words(path)`` reads a file.
        stopwords: words a chain skips (the antecedents are skipped too); None for the English
            default (:data:`neardup.text.stopwords.ENGLISH_STOPWORDS`).
        idf_band: ``(lo, hi)`` keeps only signatures whose normalised collection IDF
            ``log(N / df) / log(N)`` lies in ``[lo, hi]`` (reads the input twice); None keeps all.
        key: ``"antecedent"`` (signature "the:south:carolina") or ``"chain"`` ("south:carolina").
        exact_prepass: extract signatures only for the first of each group of identical
            normalized texts (same result, less work; off with an IDF band, whose document
            frequencies count every document).

    >>> SpotSigsConfig(threshold=0.9, idf_band=(0.2, 0.85)).scheme.chain
    2
    """

    name = "spotsigs"
    summary = "weighted Jaccard of stopword-anchored word chains, exact all pairs"
    rank = 20

    threshold: float = param(
        DEFAULT_THRESHOLD,
        Real(0, 1, low_open=True),
        "Weighted Jaccard of the spot signatures at or above which documents are near-duplicates "
        "(with --verify edit: the edit similarity a candidate pair must reach).",
    )
    verify: str = param(
        "exact",
        Choice(("exact", "edit")),
        "Keep a pair whose weighted Jaccard reaches --threshold (exact), or (edit) take the pairs "
        "at the candidate threshold as candidates and keep those whose normalized edit similarity "
        "reaches --threshold (re-reads the candidate texts).",
    )
    edit_level: str = param(
        "word",
        Choice(EDIT_LEVELS),
        "With --verify edit: edit distance over word tokens or characters.",
    )
    candidate_threshold: float | None = param(
        None,
        Optional(Real(0, 1, low_open=True)),
        "With --verify edit: the weighted Jaccard of the candidate pairs [default: from the edit "
        "threshold, as MinHash's for word (chain + 1)-grams; see docs/evaluation.md].",
    )
    spot_distance: int = param(
        DEFAULT_SPOT_DISTANCE, Integer(1, MAX_CHAIN), "A chain takes every D-th non-stopword after its antecedent."
    )
    chain: int = param(DEFAULT_CHAIN, Integer(1, MAX_CHAIN), "Words per spot signature.")
    antecedents: tuple[str, ...] | None = param(
        None,
        Optional(Words(_READ_FILE)),
        "Antecedent words, one per line, # comments [default: built-in English].",
        cli=CliSpec(metavar="FILE", path=True, load=load_words),
    )
    stopwords: tuple[str, ...] | None = param(
        None,
        Optional(Words(_READ_FILE)),
        "Words that chains skip, one per line [default: built-in English].",
        cli=CliSpec(metavar="FILE", path=True, load=load_words),
    )
    idf_band: tuple[float, float] | None = param(
        None,
        Optional(Range(Real(0, 1))),
        "Normalized-IDF band LO HI of the signatures kept [default: all] (reads the input twice).",
        cli=CliSpec(metavar="LO HI"),
    )
    key: str = param(
        DEFAULT_KEY,
        Choice(("antecedent", "chain")),
        "A signature is its antecedent and chain, or the chain alone.",
        cli=CliSpec(flag="--spot-key"),
    )
    exact_prepass: bool = param(
        True,
        Boolean(),
        "Extract signatures only for the first of each group of documents whose normalized texts are "
        "identical (the results are the same; off with --idf-band).",
        cli=CliSpec(
            negative="--no-exact-prepass",
            negative_help=PREPASS_OFF.format(
                "Extract the signatures of every document, also of exact copies of earlier ones"
            ),
        ),
    )
    _scheme: SpotSigsScheme = field(init=False, repr=False, compare=False)

    @property
    def edit_threshold(self) -> float:
        """With ``verify="edit"``: the edit similarity a candidate pair must reach (``threshold``)."""
        return self.threshold

    @property
    def edit_normalization(self) -> tuple[bool, bool]:
        """(nfkc, casefold) of the tokens ``verify="edit"`` compares, as the signatures'."""
        return self.scheme.nfkc, self.scheme.casefold

    @property
    def pair_threshold(self) -> float:
        """The weighted Jaccard the all-pairs search finds: ``threshold``, or with
        ``verify="edit"`` the candidate threshold (given, or from the edit threshold as
        :func:`~neardup.methods.minhash.edit.candidate_threshold` for word (chain + 1)-grams: a
        spot signature is its antecedent and ``chain`` words, so one changed word touches about as
        many signatures as it touches such n-grams)."""
        if self.verify != "edit":
            return self.threshold
        if self.candidate_threshold is not None:
            return self.candidate_threshold
        from ..minhash.edit import candidate_threshold

        return candidate_threshold(self.threshold, self.chain + 1)

    def validate(self) -> None:
        if self.verify != "edit" and self.candidate_threshold is not None:
            raise conflict("candidate_threshold is for verify='edit' only")
        if self.verify != "edit" and self.edit_level != "word":
            raise conflict("edit_level is for verify='edit' only")
        object.__setattr__(
            self,
            "_scheme",
            SpotSigsScheme(
                antecedents=self.antecedents if self.antecedents is not None else ENGLISH_ANTECEDENTS,
                stopwords=self.stopwords if self.stopwords is not None else ENGLISH_STOPWORDS,
                spot_distance=self.spot_distance,
                chain=self.chain,
                key=self.key,
            ),
        )

    @property
    def scheme(self) -> SpotSigsScheme:
        """The extraction scheme these settings make (validated word lists, d, c, key)."""
        return self._scheme

    def plan(self) -> Plan:
        from .plan import spotsigs_plan  # loaded on first use, see the module docs

        return spotsigs_plan(self)

    def describe(self, counters: dict[str, float]) -> dict[str, str]:
        c = {k: int(v) for k, v in counters.items()}
        documents = c.get("documents", 0)
        signatures = c.get("signatures", 0)
        lines = {}
        if self.exact_prepass and self.idf_band is None:
            lines["exact duplicates (pre-pass)"] = f"{c.get('exact_duplicates', 0):,}"
        lines["SpotSigs"] = (
            f"d={self.spot_distance} c={self.chain} key={self.key}, "
            f"{len(self.scheme.antecedents)} antecedents, {len(self.scheme.skipped)} skipped words"
        )
        lines["spot signatures"] = (
            f"{signatures:,} in {documents:,} documents ({signatures / max(documents, 1):.1f} per non-empty document)"
        )
        if self.idf_band is not None:
            lines["IDF band"] = (
                f"[{self.idf_band[0]:g}, {self.idf_band[1]:g}]: kept {c.get('kept', 0):,} of "
                f"{c.get('before', 0):,} signatures"
            )
        t = self.pair_threshold
        lines["length partitions"] = f"{c.get('partitions', 0):,} (threshold {t})"
        lines["similarity computations"] = f"{c.get('computed', 0):,} ({c.get('pairs', 0):,} pairs >= {t})"
        lines["pruned by length bound"] = (
            f"{c.get('pruned', 0):,} list entries; {c.get('lists_cut', 0):,} lists cut "
            f"short, {c.get('lists_skipped', 0):,} never opened"
        )
        if self.verify == "edit":
            lines["edit verification"] = (
                f"{c.get('verified', 0):,} of {c.get('checked', 0):,} candidate pairs reach "
                f"{self.edit_level} edit similarity {self.threshold}"
            )
        return lines
