"""Settings of the I-Match method: identical set of mid-frequency terms.

The plan is imported when first used: the command line imports every method's config to build
its options, and a run needs the modules of one method only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.plan import Plan
from ...core.validation import Integer, Range, Real
from ..base import CliSpec, MethodConfig, param
from ..registry import register
from .scheme import MAX_LEXICONS, IMatchScheme

__all__ = ["DEFAULT_IDF_BAND", "DEFAULT_LEXICON_FRACTION", "IMatchConfig"]

DEFAULT_IDF_BAND = (0.4, 0.75)
DEFAULT_LEXICON_FRACTION = 0.7


@register
@dataclass(frozen=True)
class IMatchConfig(MethodConfig):
    """Settings of the I-Match method (Chowdhury et al. 2002; multi-lexicon: Kołcz et al. 2004).

    Two reads of the input: the first counts, for every word term, the documents that contain
    it; the second keeps the terms whose normalized IDF lies in the band and hashes each
    document's sorted kept terms into one signature per lexicon; documents that agree under any
    lexicon form a cluster. See :mod:`neardup.methods.imatch.signatures` for the definitions.

    Attributes:
        idf_band: ``(lo, hi)``, 0 <= lo <= hi <= 1: the terms whose normalized collection IDF
            ``ln(N / df) / ln(N)`` lies in [lo, hi] form the lexicon; very common terms (low IDF)
            and very rare ones (high IDF: typos, names, the words an edit introduces) are left out.
        lexicons: L, signatures per document: the full lexicon plus L - 1 random sub-lexicons;
            documents match when any signature agrees (more recall, a little less precision).
        lexicon_fraction: share of the lexicon's terms each random sub-lexicon keeps, in (0, 1].
        min_terms: documents with fewer lexicon terms get no signature (1: classic I-Match).
        seed: seed of the random sub-lexicons.
    """

    name = "imatch"
    summary = "identical set of mid-frequency terms (I-Match)"
    rank = 40

    idf_band: tuple[float, float] = param(
        DEFAULT_IDF_BAND,
        Range(Real(0, 1)),
        "Normalized-IDF band of the terms kept: LO HI with 0 <= LO <= HI <= 1 (reads the input twice).",
        cli=CliSpec(metavar="LO HI"),
    )
    lexicons: int = param(
        1,
        Integer(1, MAX_LEXICONS),
        "Signatures per document (the lexicon plus N - 1 random sub-lexicons); a match under any of them counts.",
    )
    lexicon_fraction: float = param(
        DEFAULT_LEXICON_FRACTION, Real(0, 1, low_open=True), "Share of the lexicon each random sub-lexicon keeps."
    )
    min_terms: int = param(1, Integer(1, 1_000_000), "Documents with fewer kept terms get no signature.")
    seed: int = param(1, Integer(0, 2**64 - 1), "Seed of the random sub-lexicons.")

    @property
    def scheme(self) -> IMatchScheme:
        return IMatchScheme(self.idf_band, self.lexicons, self.lexicon_fraction, self.min_terms, self.seed)

    def plan(self) -> Plan:
        from .plan import imatch_plan  # loaded on first use, see the module docs

        return imatch_plan(self)

    @property
    def pair_threshold(self) -> float:
        """1 / lexicons: a pair matching under one of the L signatures is a near-duplicate."""
        return 1.0 / self.lexicons

    def describe(self, counters: dict[str, float]) -> dict[str, str]:
        lo, hi = self.idf_band
        n_docs = int(counters.get("documents", 0))
        return {
            "I-Match lexicon": (
                f"IDF in [{lo:g}, {hi:g}] = df in [{int(counters.get('df_lo', 0)):,}, "
                f"{int(counters.get('df_hi', 0)):,}] of {n_docs:,} documents: "
                f"{int(counters.get('lexicon_terms', 0)):,} of {int(counters.get('terms', 0)):,} terms"
            ),
            "I-Match signatures": (
                f"{self.lexicons} per document"
                if self.lexicons == 1
                else f"{self.lexicons} per document (full lexicon + {self.lexicons - 1} random "
                f"{self.lexicon_fraction:.0%} sub-lexicons, seed {self.seed})"
            ),
            "I-Match groups": (
                f"{int(counters.get('groups', 0)):,} groups of 2+ documents, "
                f"{int(counters.get('duplicates', 0)):,} duplicates"
            ),
        }
