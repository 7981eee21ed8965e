"""Why two documents are (or are not) near-duplicates: every measure, side by side, with the shingles.

:func:`compare` shingles two texts exactly as the dedup job does and reports the exact Jaccard,
weighted (multiset) Jaccard and containment in both directions, the MinHash estimate with its
confidence interval, the SimHash distance when :mod:`neardup.methods.simhash` is available, and the
shared and differing shingles as readable strings.

The strings come from :func:`shingle_strings`, a slow Python reference built on
:func:`neardup.text.normalize.tokenize` and :func:`neardup.text.normalize.char_stream`; hashing them with
:func:`neardup._kernels.hashing.hash_str` gives exactly the hashes :func:`neardup.text.shingles.shingle` returns
(tested), so what is shown is what the kernels compared.

>>> c = compare("Jack London traveled to Oakland", "Jack London traveled to the city of Oakland",
...             Shingling("word", 2))
>>> c.jaccard, c.containment_a_in_b, c.shared
(0.375, 0.75, ['jack london', 'london traveled', 'traveled to'])
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from .._kernels.measures import containment_sorted, jaccard_sorted
from ..core.measures import weighted_jaccard
from ..methods.minhash.estimate import Estimate
from ..methods.minhash.sketch import MinHasher
from ..text.edit import edit_diff
from ..text.normalize import char_stream, tokenize
from ..text.shingles import Shingling, shingle_batch


def shingle_strings(text: str, shingling: Shingling = Shingling()) -> list[str]:
    """The shingles of ``text`` as strings, in text order with repeats (see the module docstring).

    >>> shingle_strings("The cat, the hat!", Shingling("word", 2))
    ['the cat', 'cat the', 'the hat']
    >>> shingle_strings("Ab, c", Shingling("char", 3, strip_punctuation=True))
    ['ab ', 'b c']
    """
    if shingling.kind == "word":
        units = tokenize(text, nfkc=shingling.nfkc, casefold=shingling.casefold)
        sep = " "
    else:
        units = list(
            char_stream(
                text, strip_punctuation=shingling.strip_punctuation, nfkc=shingling.nfkc, casefold=shingling.casefold
            )
        )
        sep = ""
    n = shingling.n
    if not units:
        return []
    if len(units) < n:
        return [sep.join(units)]
    return [sep.join(units[i : i + n]) for i in range(len(units) - n + 1)]


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare` (``as_dict`` gives the JSON form).

    Attributes:
        shingling: how the texts became sets.
        shingles_a, shingles_b: distinct shingles of each text.
        jaccard: exact |A n B| / |A u B| of the shingle sets.
        weighted_jaccard: exact multiset Jaccard (shingles counted with repeats).
        containment_a_in_b, containment_b_in_a: |A n B| / |A| and |A n B| / |B|.
        minhash: the MinHash estimate of the Jaccard with its confidence interval.
        simhash: ``{"distance", "bits", "similarity", "cosine"}`` of 64-bit SimHash fingerprints of
            the same shingles (same seed), or ``None`` when :mod:`neardup.methods.simhash` is unavailable.
        shared, only_a, only_b: up to ``limit`` shingle strings of each kind, in text order.
        n_shared, n_only_a, n_only_b: how many there are in all.
        edit: ``{"level", "similarity", "differences", "n_differences"}``: the
            normalized edit similarity 1 - d / max(|a|, |b|) over words (characters for character
            shingling) and up to ``limit`` aligned differences ``{"tag", "old", "new"}`` (words
            inserted, deleted, replaced) of one optimal alignment (:func:`neardup.text.edit.edit_diff`);
            ``None`` without rapidfuzz.
    """

    shingling: Shingling
    shingles_a: int
    shingles_b: int
    jaccard: float
    weighted_jaccard: float
    containment_a_in_b: float
    containment_b_in_a: float
    minhash: Estimate
    simhash: dict | None
    shared: list[str] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    n_shared: int = 0
    n_only_a: int = 0
    n_only_b: int = 0
    edit: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def compare(
    a: str,
    b: str,
    shingling: Shingling = Shingling(),
    *,
    num_perm: int = 128,
    seed: int = 1,
    level: float = 0.95,
    limit: int | None = 20,
) -> Comparison:
    """Compare two texts by every measure neardup offers (see :class:`Comparison`).

    ``limit`` caps each list of shingle strings (``None``: all of them).
    """
    sets, set_off = shingle_batch([a, b], shingling)
    bags, bag_off = shingle_batch([a, b], shingling, unique=False)
    set_a, set_b = sets[set_off[0] : set_off[1]], sets[set_off[1] : set_off[2]]
    bag_a, bag_b = bags[bag_off[0] : bag_off[1]], bags[bag_off[1] : bag_off[2]]
    sigs = MinHasher(num_perm=num_perm, seed=seed, shingling=shingling).sign([a, b])
    strings_a, strings_b = shingle_strings(a, shingling), shingle_strings(b, shingling)
    in_a, in_b = set(strings_a), set(strings_b)
    shared = _ordered(s for s in strings_a if s in in_b)
    only_a = _ordered(s for s in strings_a if s not in in_b)
    only_b = _ordered(s for s in strings_b if s not in in_a)
    cut = slice(None) if limit is None else slice(limit)
    return Comparison(
        shingling=shingling,
        shingles_a=len(set_a),
        shingles_b=len(set_b),
        jaccard=float(jaccard_sorted(set_a, set_b)),
        weighted_jaccard=float(weighted_jaccard(Counter(bag_a.tolist()), Counter(bag_b.tolist()))),
        containment_a_in_b=float(containment_sorted(set_a, set_b)),
        containment_b_in_a=float(containment_sorted(set_b, set_a)),
        minhash=sigs.estimate(0, j=1, level=level),
        simhash=simhash_distance(a, b, shingling, seed=seed),
        shared=shared[cut],
        only_a=only_a[cut],
        only_b=only_b[cut],
        n_shared=len(shared),
        n_only_a=len(only_a),
        n_only_b=len(only_b),
        edit=_edit(a, b, shingling, limit),
    )


def _edit(a: str, b: str, shingling: Shingling, limit: int | None) -> dict | None:
    level = "word" if shingling.kind == "word" else "char"
    try:
        sim, diffs = edit_diff(a, b, level, nfkc=shingling.nfkc, casefold=shingling.casefold)
    except ImportError:
        return None
    cut = slice(None) if limit is None else slice(limit)
    return {
        "level": level,
        "similarity": sim,
        "differences": [{"tag": d.tag, "old": d.old, "new": d.new} for d in diffs[cut]],
        "n_differences": len(diffs),
    }


def _ordered(items) -> list[str]:
    return list(dict.fromkeys(items))


def simhash_distance(
    a: str, b: str, shingling: Shingling | None = None, *, seed: int = 1, bits: int = 64
) -> dict | None:
    """``{"distance", "bits", "similarity", "cosine"}`` of the two texts' SimHash fingerprints
    (shingle counts as weights; similarity = 1 - distance / bits, cosine = cos(pi distance / bits)),
    or ``None`` when :mod:`neardup.methods.simhash` is not available.
    """
    try:
        from ..methods.simhash.sketch import SimHasher
    except ImportError:
        return None
    fps = SimHasher(bits=bits, seed=seed, shingling=shingling).sign([a, b])
    distance = fps.hamming(0, j=1)
    return {
        "distance": distance,
        "bits": fps.bits,
        "similarity": 1.0 - distance / fps.bits,
        "cosine": fps.cosine(0, j=1),
    }
