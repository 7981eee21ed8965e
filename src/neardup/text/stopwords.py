"""Default English word lists for SpotSigs: the antecedents and the stopwords.

A spot signature starts at an **antecedent** and is made of the non-stopwords that follow it
(see :mod:`neardup.methods.spotsigs.signatures`). Both lists are written for the tokenizer of
:mod:`neardup.text.normalize`: each entry is one word token after NFKC and case folding (so
contractions appear as their pieces: "don't" is the tokens "don", "t").

Antecedents (13 words). The SpotSigs talk (Theobald, Siddharth and Paepcke, SIGIR 2008) names
"the, that, {be}, {have}" as the stopwords whose occurrences tell running prose from navigation
and advertisements, and its worked example uses {a, an, the, is}. We take their union with the
common inflections of *be* and *have*: articles and auxiliaries are the most frequent words of
English prose (together roughly one token in seven of news text), they occur evenly through
every paragraph, and they are rare in menus, link lists, price boxes and footers. Rarer forms
(am, being, having) add few signatures and are left out; that keeps signatures about as dense
as in the paper.

Stopwords (the words a chain skips): articles and determiners, pronouns, auxiliaries and
modals, prepositions, conjunctions, a few particles and adverbs of degree and place, and the
pieces contractions leave behind. Chains of content words survive small edits of function words
("said the mayor" / "said mayor") and carry the information that tells two texts apart.
The antecedents are always skipped too, whatever the stopword list says.
"""

from __future__ import annotations

ENGLISH_ANTECEDENTS: tuple[str, ...] = (
    "a",
    "an",
    "the",
    "that",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "has",
    "have",
    "had",
)


_ARTICLES_DETERMINERS = """
a an the this that these those some any each every no all both either neither such
another other own same few many much more most less least several
"""


_PRONOUNS = """
i me my mine myself we us our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
who whom whose which what whatever whoever something anything nothing everything
someone anyone everyone nobody one
"""


_AUXILIARIES = """
am is are was were be been being have has had having do does did doing
will would shall should can could may might must ought
"""


_PREPOSITIONS = """
of in on at by for with without from to into onto upon about above below over under
between among through throughout during before after against around across along
toward towards within beyond behind beside besides near off out up down than via per
"""


_CONJUNCTIONS = """
and or but nor so yet if because while although though whether as unless until since
"""


_PARTICLES_ADVERBS = """
not also too very just only then there here when where why how again once ever even
still already now however thus else
"""


_CONTRACTION_PIECES = """
s t d ll m re ve
"""


ENGLISH_STOPWORDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        w
        for block in (
            _ARTICLES_DETERMINERS,
            _PRONOUNS,
            _AUXILIARIES,
            _PREPOSITIONS,
            _CONJUNCTIONS,
            _PARTICLES_ADVERBS,
            _CONTRACTION_PIECES,
        )
        for w in block.split()
    )
)
"""Function words skipped when a chain is formed (the antecedents are always skipped too)."""
