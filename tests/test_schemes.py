"""Schemes and configs as data: golden dicts, round trips, versions and refusals.

Every method's scheme says how its sketches were made (:mod:`neardup.core.schemes`); what
``to_dict`` writes is part of the stable format, so the default schemes' dicts are pinned here as
literals. Every scheme, shingling and method config must come back equal from its dict and its
JSON, for every setting of every field; a newer format version, an unknown key or another
method's scheme is refused, never misread.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.errors import IncompatibleSketchError
from neardup.core.schemes import Record, Scheme, scheme_kinds
from neardup.core.validation import ParameterError, ParameterTypeError
from neardup.methods.exact.config import ExactConfig
from neardup.methods.exact.scheme import ExactScheme
from neardup.methods.imatch.config import IMatchConfig
from neardup.methods.imatch.scheme import MAX_LEXICONS, IMatchScheme
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.oph import OPH_FAMILY
from neardup.methods.minhash.scheme import HASH_FAMILY, MAX_NUM_PERM, MinHashScheme
from neardup.methods.registry import config_from_dict, config_to_dict, get_method, method_names, scheme_from_dict
from neardup.methods.simhash.config import SimHashConfig
from neardup.methods.simhash.scheme import HASH_FAMILY as SIMHASH_FAMILY
from neardup.methods.simhash.scheme import VECTOR_FAMILY, SimHashScheme
from neardup.methods.spotsigs.config import SpotSigsConfig
from neardup.methods.spotsigs.scheme import MAX_CHAIN, SpotSigsScheme
from neardup.text.shingles import MAX_SHINGLE_SIZE, Shingling

MASK64 = 2**64 - 1

# ---------------------------------------------------------------------------------------------
# golden dicts: the format of every default scheme

WORD5 = {"kind": "word", "n": 5, "strip_punctuation": False, "nfkc": True, "casefold": True}
WORD2 = {"kind": "word", "n": 2, "strip_punctuation": False, "nfkc": True, "casefold": True}

GOLDEN = {
    "minhash": {
        "scheme": "minhash",
        "format_version": 2,
        "num_perm": 128,
        "seed": 1,
        "shingling": WORD5,
        "hash_family": "nd64/multiply-shift-32",
    },
    "simhash": {
        "scheme": "simhash",
        "format_version": 2,
        "bits": 64,
        "seed": 1,
        "shingling": WORD2,
        "weighting": "count",
        "idf_digest": None,
        "dim": None,
        "hash_family": "nd64/fmix64-sign",
    },
    "exact": {"scheme": "exact", "format_version": 1, "raw": False, "key_family": "nd128"},
    "imatch": {
        "scheme": "imatch",
        "format_version": 2,
        "idf_band": [0.4, 0.75],
        "lexicons": 1,
        "lexicon_fraction": 0.7,
        "min_terms": 1,
        "seed": 1,
        "lexicon_digest": None,
    },
}

SPOTSIGS_GOLDEN = {
    "scheme": "spotsigs",
    "format_version": 2,
    "antecedents": ["a", "an", "are", "be", "been", "had", "has", "have", "is", "that", "the", "was", "were"],
    "spot_distance": 1,
    "chain": 2,
    "key": "antecedent",
    "nfkc": True,
    "casefold": True,
    "hash_family": "nd64",
}
SPOTSIGS_STOPWORDS = 192
SPOTSIGS_STOPWORDS_SHA256 = "9bd3dea199a3ef5f725c834445eb349c5ebf870424b6a9a7acb40e0e8341a328"
SPOTSIGS_JSON_SHA256 = "511472f3a6cfd62bdc6279cf8d5847cc56580355a274030e9ae923321d7aa789"

SCHEME_CLASSES = {
    "minhash": MinHashScheme,
    "simhash": SimHashScheme,
    "spotsigs": SpotSigsScheme,
    "exact": ExactScheme,
    "imatch": IMatchScheme,
}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("kind", sorted(GOLDEN))
def test_default_scheme_dicts_are_pinned(kind):
    """The exact to_dict() of each default scheme (keys in this order)."""
    d = SCHEME_CLASSES[kind]().to_dict()
    assert d == GOLDEN[kind]
    assert list(d) == list(GOLDEN[kind])


def test_default_spotsigs_scheme_dict_is_pinned():
    """The default SpotSigs scheme: every field but the stopwords as literals; the stopword list
    by its length and the SHA-256 of its JSON, the whole scheme by the SHA-256 of to_json()."""
    scheme = SpotSigsScheme()
    d = scheme.to_dict()
    stopwords = d.pop("stopwords")
    assert d == SPOTSIGS_GOLDEN
    assert len(stopwords) == SPOTSIGS_STOPWORDS
    assert sha256(json.dumps(stopwords)) == SPOTSIGS_STOPWORDS_SHA256
    assert stopwords == sorted(set(stopwords))  # stored canonical: sorted, no repeats
    assert sha256(scheme.to_json()) == SPOTSIGS_JSON_SHA256


def test_default_configs_make_the_pinned_schemes():
    """Each method's default config makes the scheme of its defaults (SimHash: 128 bits)."""
    assert MinHashConfig().scheme.to_dict() == GOLDEN["minhash"]
    assert SimHashConfig().scheme.to_dict() == {**GOLDEN["simhash"], "bits": 128}
    assert ExactConfig().scheme.to_dict() == GOLDEN["exact"]
    assert IMatchConfig().scheme.to_dict() == GOLDEN["imatch"]
    assert SpotSigsConfig().scheme == SpotSigsScheme()


def test_every_method_has_a_registered_scheme():
    for name in method_names():
        scheme = get_method(name)().scheme
        assert isinstance(scheme, Scheme) and scheme.kind in scheme_kinds()
        assert scheme.to_dict()["scheme"] == scheme.kind


def test_to_json_is_compact_sorted_and_stable():
    text = MinHashScheme().to_json()
    assert text == json.dumps(GOLDEN["minhash"], sort_keys=True, separators=(",", ":"))
    assert MinHashScheme(seed=1).to_json() == text


# ---------------------------------------------------------------------------------------------
# round trips


def assert_round_trip(scheme: Scheme) -> None:
    assert type(scheme).from_dict(scheme.to_dict()) == scheme
    again = scheme_from_dict(json.loads(scheme.to_json()))
    assert type(again) is type(scheme) and again == scheme
    assert again.to_json() == scheme.to_json()


@pytest.mark.parametrize("kind", sorted(SCHEME_CLASSES))
def test_default_schemes_round_trip(kind):
    assert_round_trip(SCHEME_CLASSES[kind]())


@pytest.mark.parametrize("name", method_names())
def test_default_config_schemes_round_trip(name):
    assert_round_trip(get_method(name)().scheme)


shinglings = st.builds(
    Shingling,
    kind=st.sampled_from(["word", "char"]),
    n=st.integers(1, MAX_SHINGLE_SIZE),
    strip_punctuation=st.booleans(),
    nfkc=st.booleans(),
    casefold=st.booleans(),
)
seeds = st.integers(0, MASK64)


@given(shinglings)
def test_shingling_round_trip(sh):
    assert Shingling.from_dict(sh.to_dict()) == sh
    assert Shingling.from_dict(json.loads(sh.to_json())) == sh
    assert isinstance(sh, Record) and not isinstance(sh, Scheme)


def test_shingling_dict_and_canonical_form():
    assert Shingling("char", 4, strip_punctuation=True).to_dict() == {
        "kind": "char",
        "n": 4,
        "strip_punctuation": True,
        "nfkc": True,
        "casefold": True,
    }
    # word tokens hold no punctuation, so the setting is stored as False and reads back equal
    word = Shingling("word", 3, strip_punctuation=True)
    assert word.to_dict()["strip_punctuation"] is False
    assert Shingling.from_dict({"kind": "word", "n": 3, "strip_punctuation": True}) == word
    assert Shingling.from_dict({}) == Shingling()  # missing keys take their defaults


def test_shingling_from_dict_refuses_unknown_keys_and_bad_values():
    with pytest.raises(ParameterError, match="'size'"):
        Shingling.from_dict({"kind": "word", "size": 3})
    with pytest.raises(ParameterError, match="shingle size n"):
        Shingling.from_dict({"kind": "word", "n": 0})
    with pytest.raises(ParameterTypeError, match="shingle size n"):
        Shingling.from_dict({"kind": "word", "n": "3"})
    with pytest.raises(ParameterTypeError):
        Shingling.from_dict([["kind", "word"]])


minhash_schemes = st.builds(
    MinHashScheme,
    num_perm=st.integers(1, MAX_NUM_PERM),
    seed=seeds,
    shingling=st.none() | shinglings,
    hash_family=st.sampled_from([HASH_FAMILY, OPH_FAMILY]),
)

simhash_feature_schemes = st.builds(
    lambda bits, seed, shingling, digest: SimHashScheme(
        bits=bits, seed=seed, shingling=shingling, weighting="count" if digest is False else "idf",
        idf_digest=None if digest in (False, None) else digest,
    ),
    st.sampled_from([64, 128]),
    seeds,
    st.none() | shinglings,
    st.just(False) | st.none() | seeds,  # count weighting; idf without, or with, a table digest
)  # fmt: skip

simhash_vector_schemes = st.builds(
    lambda bits, seed, dim: SimHashScheme(bits=bits, seed=seed, shingling=None, dim=dim, hash_family=VECTOR_FAMILY),
    st.sampled_from([64, 128]),
    seeds,
    st.integers(1, 2**32 - 1),
)

# single word tokens, some not yet normalized (upper case, compatibility characters)
WORDS = ["the", "The", "A", "of", "to", "off", "café", "Straße", "ﬁle", "über", "is", "x"]
word_lists = st.lists(st.sampled_from(WORDS), max_size=8)

spotsigs_schemes = st.builds(
    SpotSigsScheme,
    antecedents=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    stopwords=word_lists,
    spot_distance=st.integers(1, MAX_CHAIN),
    chain=st.integers(1, MAX_CHAIN),
    key=st.sampled_from(["antecedent", "chain"]),
    nfkc=st.booleans(),
    casefold=st.booleans(),
)

unit = st.floats(0, 1)
imatch_schemes = st.builds(
    lambda band, lexicons, fraction, min_terms, seed, digest: IMatchScheme(
        tuple(sorted(band)), lexicons, fraction, min_terms, seed, digest
    ),
    st.tuples(unit, unit),
    st.integers(1, MAX_LEXICONS),
    st.floats(0, 1, exclude_min=True),
    st.integers(1, 10**6),
    seeds,
    st.none() | seeds,
)

exact_schemes = st.builds(ExactScheme, raw=st.booleans())

all_schemes = st.one_of(
    minhash_schemes, simhash_feature_schemes, simhash_vector_schemes, spotsigs_schemes, imatch_schemes, exact_schemes
)


@settings(max_examples=300)
@given(all_schemes)
def test_every_scheme_round_trips(scheme):
    """Any setting of any field of any scheme comes back equal from to_dict and from to_json."""
    assert_round_trip(scheme)


@pytest.mark.parametrize(
    "scheme",
    [
        MinHashScheme(num_perm=2048, seed=MASK64, shingling=Shingling("char", 256, True, False, False)),
        MinHashScheme(num_perm=1, seed=0, shingling=None, hash_family=OPH_FAMILY),
        SimHashScheme(bits=128, seed=0, shingling=None, weighting="idf", idf_digest=MASK64),
        SimHashScheme(bits=64, seed=7, shingling=None, dim=3, hash_family=VECTOR_FAMILY),
        SimHashScheme(shingling=Shingling("char", 7, strip_punctuation=True), hash_family=SIMHASH_FAMILY),
        SpotSigsScheme(
            antecedents=["The", "ﬁle"], stopwords=[], spot_distance=3, chain=32, key="chain", nfkc=False, casefold=False
        ),
        IMatchScheme((0.0, 1.0), MAX_LEXICONS, 1.0, 5, 0, 12345),
        ExactScheme(raw=True),
    ],
)
def test_non_default_schemes_round_trip(scheme):
    assert_round_trip(scheme)


def test_spotsigs_word_lists_are_stored_canonical():
    """Words are normalized, sorted and deduplicated before they are stored, so the dict of
    differently written equal lists is the same, and reads back equal."""
    a = SpotSigsScheme(antecedents=["The", "a", "the"], stopwords=["Of", "to"])
    b = SpotSigsScheme(antecedents=("a", "the"), stopwords={"to", "of"})
    assert a == b and a.to_dict() == b.to_dict()
    assert a.to_dict()["antecedents"] == ["a", "the"]
    assert SpotSigsScheme.from_dict({"antecedents": ["THE", "A"], "stopwords": ["of", "to"]}) == a
    assert isinstance(SpotSigsScheme.from_dict(a.to_dict()).antecedents, tuple)


def test_simhash_idf_scheme_keeps_its_digest():
    scheme = SimHashScheme(weighting="idf", idf_digest=2**63 + 5)
    back = scheme_from_dict(json.loads(scheme.to_json()))
    assert back.idf_digest == 2**63 + 5 and back == scheme
    assert back != SimHashScheme(weighting="idf")


# ---------------------------------------------------------------------------------------------
# versions and refusals


@pytest.mark.parametrize("kind", sorted(SCHEME_CLASSES))
def test_newer_format_version_is_refused_naming_both(kind):
    cls = SCHEME_CLASSES[kind]
    current = cls().format_version
    data = cls().to_dict()
    data["format_version"] = current + 1
    for read in (cls.from_dict, scheme_from_dict):
        with pytest.raises(IncompatibleSketchError) as err:
            read(data)
        message = str(err.value)
        assert f"format version {current + 1}" in message and f"format version {current}" in message
        assert "upgrade" in message


@pytest.mark.parametrize("kind", sorted(SCHEME_CLASSES))
def test_older_or_bad_format_version_is_refused(kind):
    cls = SCHEME_CLASSES[kind]
    data = cls().to_dict()
    data["format_version"] = 0
    with pytest.raises(ParameterError, match="format_version"):
        cls.from_dict(data)
    data["format_version"] = "1"
    with pytest.raises(ParameterTypeError, match=r"format_version must be an integer in \[1, \d\], got '1' \(str\)"):
        cls.from_dict(data)


@pytest.mark.parametrize("kind", sorted(SCHEME_CLASSES))
def test_unknown_keys_are_refused(kind):
    cls = SCHEME_CLASSES[kind]
    data = {**cls().to_dict(), "num_perms": 64}
    with pytest.raises(ParameterError, match=r"no field.*'num_perms'") as err:
        cls.from_dict(data)
    assert cls.__name__ in str(err.value)
    with pytest.raises(ParameterError, match="'num_perms'"):
        scheme_from_dict(data)


def test_nested_unknown_keys_are_refused():
    data = MinHashScheme().to_dict()
    data["shingling"] = {**data["shingling"], "lowercase": True}
    with pytest.raises(ParameterError, match=r"Shingling has no field.*'lowercase'"):
        MinHashScheme.from_dict(data)


def test_wrong_scheme_kind_is_refused():
    with pytest.raises(IncompatibleSketchError, match="expected a 'minhash' scheme, got a 'simhash' one"):
        MinHashScheme.from_dict(SimHashScheme().to_dict())
    with pytest.raises(IncompatibleSketchError, match=r"unknown scheme 'bloom'.*known: .*minhash"):
        scheme_from_dict({"scheme": "bloom", "format_version": 1})
    with pytest.raises(ParameterError, match="'scheme' key"):
        scheme_from_dict({"format_version": 1, "num_perm": 128})
    with pytest.raises(ParameterError, match="'scheme' key"):
        scheme_from_dict(["minhash"])
    with pytest.raises(ParameterTypeError):
        MinHashScheme.from_dict("minhash")


def test_from_dict_runs_the_validation():
    """What is read goes through the constructor: out-of-range and mistyped values are refused."""
    data = MinHashScheme().to_dict()
    with pytest.raises(ParameterError, match=r"num_perm must be an integer in \[1, 2048\], got 100000"):
        MinHashScheme.from_dict({**data, "num_perm": 100000})
    with pytest.raises(ParameterTypeError, match="num_perm"):
        MinHashScheme.from_dict({**data, "num_perm": "128"})
    with pytest.raises(ParameterError, match="shingle size n"):
        MinHashScheme.from_dict({**data, "shingling": {**WORD5, "n": 0}})
    with pytest.raises(ParameterTypeError, match="mapping of the fields of Shingling"):
        MinHashScheme.from_dict({**data, "shingling": "word"})
    with pytest.raises(ParameterError, match="hash_family"):
        scheme_from_dict({**data, "hash_family": "md5"})
    simhash = SimHashScheme().to_dict()
    with pytest.raises(ParameterError, match="only meaningful"):
        scheme_from_dict({**simhash, "idf_digest": 5})
    with pytest.raises(ParameterError, match="single word tokens"):
        scheme_from_dict({**SpotSigsScheme().to_dict(), "stopwords": ["don't"]})
    with pytest.raises(ParameterTypeError, match="load_words"):
        scheme_from_dict({**SpotSigsScheme().to_dict(), "antecedents": "the"})


def test_missing_keys_take_the_defaults():
    assert scheme_from_dict({"scheme": "minhash", "num_perm": 64}) == MinHashScheme(num_perm=64)
    assert MinHashScheme.from_dict({"shingling": None}) == MinHashScheme(shingling=None)


def test_incompatible_schemes_name_both():
    with pytest.raises(IncompatibleSketchError) as err:
        MinHashScheme().check_compatible(MinHashScheme(seed=2))
    assert "seed=1" in str(err.value) and "seed=2" in str(err.value)
    with pytest.raises(IncompatibleSketchError) as err:
        SimHashScheme().check_compatible(SimHashScheme(bits=128))
    assert "bits=64" in str(err.value) and "bits=128" in str(err.value)
    a, b = SpotSigsScheme(), SpotSigsScheme(chain=3)
    with pytest.raises(IncompatibleSketchError) as err:
        a.check_compatible(b)
    assert str(a) in str(err.value) and str(b) in str(err.value) and "c=2" in str(err.value)
    assert len(str(err.value)) < 400  # the word lists by count and digest, not word by word


# ---------------------------------------------------------------------------------------------
# method configs

NON_DEFAULT_CONFIGS = {
    "minhash": [
        dict(
            threshold=0.5,
            shingling=Shingling("char", 7, strip_punctuation=True),
            num_perm=256,
            seed=MASK64,
            bands=32,
            rows=8,
            verify="exact",
            exact_prepass=False,
            sketch="oph",
        ),
        dict(threshold=1.0, num_perm=64, rows=4),
        dict(bands=10),
        dict(verify="edit", edit_level="char", threshold=0.9, candidate_threshold=0.6),
    ],
    "simhash": [
        dict(
            max_distance=3,
            bits=64,
            shingling=Shingling("word", 3, nfkc=False, casefold=False),
            seed=0,
            weighting="idf",
            min_df=5,
            blocks=6,
            exact_prepass=False,
        ),
        dict(verify="edit", edit_level="char", threshold=0.9),
    ],
    "spotsigs": [
        dict(
            threshold=0.9,
            spot_distance=2,
            chain=3,
            antecedents=("the", "a"),
            stopwords=("of", "to", "in"),
            idf_band=(0.2, 0.85),
            key="chain",
            exact_prepass=False,
        ),
        dict(verify="edit", edit_level="char", candidate_threshold=0.3),
    ],
    "exact": [dict(raw=True)],
    "imatch": [dict(idf_band=(0.1, 0.9), lexicons=5, lexicon_fraction=0.5, min_terms=3, seed=MASK64)],
}


def assert_config_round_trip(config) -> None:
    data = config_to_dict(config)
    assert data["method"] == config.name
    assert config_from_dict(data) == config
    assert config_from_dict(json.loads(json.dumps(data))) == config
    assert type(config).from_dict(config.to_dict()) == config


@pytest.mark.parametrize("name", method_names())
def test_default_configs_round_trip(name):
    assert_config_round_trip(get_method(name)())


@pytest.mark.parametrize("name", method_names())
def test_non_default_configs_round_trip(name):
    """Every field of every registered method, set to something else than its default."""
    cls = get_method(name)
    assert name in NON_DEFAULT_CONFIGS, f"add non-default settings of method {name!r} to NON_DEFAULT_CONFIGS"
    changed = set()
    for kwargs in NON_DEFAULT_CONFIGS[name]:
        config = cls(**kwargs)
        assert_config_round_trip(config)
        changed |= {f.name for f, _ in cls.params() if getattr(config, f.name) != cls.default_of(f)}
    assert changed == {f.name for f, _ in cls.params()}


def test_config_from_dict_refuses_unknown_fields_and_methods():
    with pytest.raises(ParameterError, match="'num_perms'"):
        config_from_dict({"method": "minhash", "num_perms": 64})
    with pytest.raises(ParameterError, match="method must be one of"):
        config_from_dict({"method": "bloom"})
    with pytest.raises(ParameterError, match=r"num_perm must be an integer in \[1, 2048\]"):
        config_from_dict({"method": "minhash", "num_perm": 100000})
    assert config_from_dict({}) == MinHashConfig()


def test_config_dicts_nest_records():
    data = config_to_dict(MinHashConfig())
    assert data["shingling"] == WORD5
    assert config_to_dict(SpotSigsConfig(antecedents=["b", "a"]))["antecedents"] == ["b", "a"]
    assert config_to_dict(IMatchConfig())["idf_band"] == [0.4, 0.75]
    for name in method_names():  # JSON-ready: nothing but dicts, lists, strings, numbers, booleans, None
        json.dumps(config_to_dict(get_method(name)()))


def test_records_are_frozen_dataclasses():
    for cls in [*SCHEME_CLASSES.values(), Shingling]:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
