"""One validation idiom: every setting of every method, scheme and helper is checked by a
:mod:`neardup.core.validation` constraint, with one message template.

A wrong type is a :class:`ParameterTypeError` (a ``ValueError`` and a ``TypeError``) whose message
names the setting, never a raw comparison error; a value out of range is a
:class:`ParameterError`; settings that make no sense or would run for hours are refused at once.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.core.errors import NeardupError
from neardup.core.validation import (
    Boolean,
    Choice,
    Instance,
    Integer,
    Optional,
    ParameterConflictError,
    ParameterError,
    ParameterTypeError,
    Range,
    Real,
    Words,
    check,
    check_int,
    check_real,
    conflict,
)
from neardup.methods.minhash import lsh as minhash_lsh
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.estimate import acceptance_probability, confidence_interval, estimate_from_rows
from neardup.methods.minhash.lsh import (
    LSHParams,
    band_keys,
    candidate_probability,
    effective_threshold,
    false_negative_area,
    false_positive_area,
    optimal_params,
    params_for,
)
from neardup.methods.minhash.scheme import MAX_NUM_PERM, MinHashScheme
from neardup.methods.minhash.sketch import MinHasher
from neardup.methods.registry import get_method, method_names
from neardup.methods.simhash.scheme import VECTOR_FAMILY, SimHashScheme, estimated_cosine
from neardup.methods.simhash.search import band_plan, block_plan, brute_force_pairs, check_distance, choose_blocks
from neardup.methods.simhash.sketch import DocumentFrequencies, IdfTable, SimHasher
from neardup.methods.spotsigs.pairs import all_pairs as spot_all_pairs
from neardup.methods.spotsigs.pairs import partition_bounds
from neardup.methods.spotsigs.scheme import SpotSigsScheme
from neardup.methods.spotsigs.signatures import SpotSignatures, extract, idf_filter
from neardup.text.shingles import MAX_SHINGLE_SIZE, Shingling

# ---------------------------------------------------------------------------------------------
# core.validation itself


def test_exception_hierarchy():
    assert issubclass(ParameterError, ValueError) and issubclass(ParameterError, NeardupError)
    assert issubclass(ParameterTypeError, ParameterError) and issubclass(ParameterTypeError, TypeError)
    assert issubclass(ParameterConflictError, ParameterError)
    assert not issubclass(ParameterConflictError, TypeError)
    err = conflict("bands * rows must be <= num_perm")
    assert isinstance(err, ParameterConflictError) and str(err) == "bands * rows must be <= num_perm"


def test_message_template():
    with pytest.raises(ParameterTypeError) as err:
        check("threshold", "0.8", Real(0, 1, low_open=True))
    assert str(err.value) == "threshold must be a number in (0, 1], got '0.8' (str)"
    with pytest.raises(ParameterError) as err:
        check("num_perm", 100000, Integer(1, 2048))
    assert type(err.value) is ParameterError
    assert str(err.value) == "num_perm must be an integer in [1, 2048], got 100000"


@pytest.mark.parametrize(
    "constraint, text",
    [
        (Integer(1, 2048), "an integer in [1, 2048]"),
        (Integer(1), "an integer >= 1"),
        (Integer(None, 5), "an integer <= 5"),
        (Integer(), "an integer"),
        (Integer(0, 2**64 - 1), "an integer in [0, 2**64)"),
        (Integer(1, 2**62), "an integer in [1, 2**62]"),
        (Real(0, 1, low_open=True), "a number in (0, 1]"),
        (Real(0, 1, low_open=True, high_open=True), "a number in (0, 1)"),
        (Real(0, 1), "a number in [0, 1]"),
        (Real(0), "a number >= 0"),
        (Real(0, low_open=True), "a number > 0"),
        (Real(None, 2.5, high_open=True), "a number < 2.5"),
        (Real(), "a number"),
        (Real(0, None, finite=True), "a finite number >= 0"),
        (Choice(("word", "char")), "one of 'word' or 'char'"),
        (Choice(("a", "b", "c")), "one of 'a', 'b' or 'c'"),
        (Choice((64, 128)), "one of 64 or 128"),
        (Choice(("nd64",)), "'nd64'"),
        (Boolean(), "True or False"),
        (Optional(Integer(1)), "None or an integer >= 1"),
        (Range(Real(0, 1)), "a pair (lo, hi) with lo <= hi, each a number in [0, 1]"),
        (Words(), "a sequence of words (strings), not a single string"),
        (Instance(Shingling), "a Shingling"),
    ],
)
def test_describe(constraint, text):
    assert constraint.describe() == text


@pytest.mark.parametrize("value", [5, np.int8(5), np.int64(5), np.uint64(5), np.uint32(5)])
def test_integer_accepts_every_integer_type_as_int(value):
    got = Integer(1, 10).check("k", value)
    assert got == 5 and type(got) is int


@pytest.mark.parametrize("value", [5.0, np.float64(5.0), "5", None, True, False, np.bool_(True), [5], 5 + 0j])
def test_integer_refuses_other_types(value):
    with pytest.raises(ParameterTypeError, match=r"^k must be an integer in \[1, 10\], got .* \(\w+\)$"):
        Integer(1, 10).check("k", value)


@given(st.integers(-50, 50), st.integers(-20, 20), st.integers(-20, 20))
def test_integer_bounds_are_inclusive(value, low, high):
    constraint = Integer(low, high)
    if low <= value <= high:
        assert constraint.check("k", value) == value
    else:
        with pytest.raises(ParameterError) as err:
            constraint.check("k", value)
        assert type(err.value) is ParameterError and str(err.value).endswith(f"got {value}")


def test_integer_handles_huge_bounds():
    assert Integer(0, 2**64 - 1).check("seed", 2**64 - 1) == 2**64 - 1
    assert Integer(0, 2**64 - 1).check("seed", np.uint64(2**64 - 1)) == 2**64 - 1
    with pytest.raises(ParameterError, match=r"seed must be an integer in \[0, 2\*\*64\), got 18446744073709551616"):
        Integer(0, 2**64 - 1).check("seed", 2**64)


@pytest.mark.parametrize("value", [0.5, 1, np.float32(0.5), np.float64(0.5), np.int64(1), np.uint8(1)])
def test_real_accepts_ints_and_floats_of_any_type_as_float(value):
    got = Real(0, 1).check("t", value)
    assert got == float(value) and type(got) is float


@pytest.mark.parametrize("value", ["0.5", None, True, np.bool_(False), [0.5], 0.5j])
def test_real_refuses_other_types(value):
    with pytest.raises(ParameterTypeError, match=r"^t must be a number in \[0, 1\], got "):
        Real(0, 1).check("t", value)


def test_real_refuses_nan_and_respects_open_ends_and_finiteness():
    for constraint in (Real(), Real(0, 1), Real(0, None, finite=True)):
        with pytest.raises(ParameterError, match="got nan") as err:
            constraint.check("x", float("nan"))
        assert not isinstance(err.value, TypeError)
    open_unit = Real(0, 1, low_open=True, high_open=True)
    for bad in (0, 0.0, 1, 1.0, -0.1, 1.1):
        with pytest.raises(ParameterError):
            open_unit.check("t", bad)
    assert open_unit.check("t", 0.5) == 0.5 and Real(0, 1).check("t", 0) == 0.0 and Real(0, 1).check("t", 1) == 1.0
    assert Real(0).check("w", math.inf) == math.inf
    with pytest.raises(ParameterError, match="w must be a finite number >= 0, got inf"):
        Real(0, None, finite=True).check("w", math.inf)
    with pytest.raises(ParameterError, match="got -inf"):
        Real(None, None, finite=True).check("w", -math.inf)


def test_choice():
    words = Choice(("word", "char"))
    assert words.check("kind", "char") == "char"
    with pytest.raises(ParameterError, match="kind must be one of 'word' or 'char', got 'line'") as err:
        words.check("kind", "line")
    assert not isinstance(err.value, TypeError)
    with pytest.raises(ParameterTypeError, match=r"kind must be one of 'word' or 'char', got 5 \(int\)"):
        words.check("kind", 5)
    bits = Choice((64, 128))
    got = bits.check("bits", np.int64(128))
    assert got == 128 and type(got) is int
    with pytest.raises(ParameterError, match="got 32"):
        bits.check("bits", 32)
    for bad in ("64", 64.0, True):
        with pytest.raises(ParameterTypeError):
            bits.check("bits", bad)


def test_boolean():
    assert Boolean().check("flag", True) is True
    got = Boolean().check("flag", np.bool_(False))
    assert got is False
    for bad in (0, 1, "True", None, 1.0):
        with pytest.raises(ParameterTypeError, match="flag must be True or False, got"):
            Boolean().check("flag", bad)


def test_optional():
    constraint = Optional(Integer(1))
    assert constraint.check("bands", None) is None
    assert constraint.check("bands", np.int32(3)) == 3
    with pytest.raises(ParameterError, match="bands must be an integer >= 1, got 0"):
        constraint.check("bands", 0)
    with pytest.raises(ParameterTypeError, match="bands must be an integer >= 1"):
        constraint.check("bands", "3")


def test_range():
    band = Range(Real(0, 1))
    assert band.check("idf_band", [0.2, 0.8]) == (0.2, 0.8)
    assert band.check("idf_band", np.array([0, 1])) == (0.0, 1.0)
    assert band.check("idf_band", (0.5, 0.5)) == (0.5, 0.5)
    with pytest.raises(ParameterError, match=r"idf_band must be a pair \(lo, hi\) with lo <= hi.*got \(0.8, 0.2\)"):
        band.check("idf_band", (0.8, 0.2))
    with pytest.raises(ParameterError, match="idf_band must be a pair"):
        band.check("idf_band", (0.1, 0.2, 0.3))
    with pytest.raises(ParameterError, match=r"idf_band\[1\] must be a number in \[0, 1\], got 1.5"):
        band.check("idf_band", (0.1, 1.5))
    with pytest.raises(ParameterTypeError, match=r"idf_band\[0\] must be a number"):
        band.check("idf_band", ("a", 0.5))
    for bad in ("0.2 0.8", 0.5, None):
        with pytest.raises(ParameterTypeError, match="idf_band must be a pair"):
            band.check("idf_band", bad)


def test_words():
    words = Words("use load_words(path)")
    assert words.check("stopwords", ["a", "b"]) == ("a", "b")
    assert words.check("stopwords", ()) == ()
    assert sorted(words.check("stopwords", {"b", "a"})) == ["a", "b"]
    with pytest.raises(
        ParameterTypeError, match=r"stopwords must be a sequence of words .*got 'the' \(str\); use load"
    ):
        words.check("stopwords", "the")
    with pytest.raises(ParameterTypeError, match=r"got an item 3 \(int\)"):
        words.check("stopwords", ["a", 3])
    with pytest.raises(ParameterTypeError):
        Words().check("stopwords", b"the")


def test_instance():
    sh = Shingling()
    assert Instance(Shingling).check("shingling", sh) is sh
    with pytest.raises(ParameterTypeError, match=r"shingling must be a Shingling, got 'word' \(str\)"):
        Instance(Shingling).check("shingling", "word")


def test_helpers():
    assert check_int("workers", np.int64(4), 1, 64) == 4
    with pytest.raises(ParameterError, match=r"workers must be an integer in \[1, 64\], got 65"):
        check_int("workers", 65, 1, 64)
    assert check_real("t", 1, 0, 1, low_open=True) == 1.0
    with pytest.raises(ParameterError, match=r"t must be a number in \(0, 1\], got 0.0"):
        check_real("t", 0, 0, 1, low_open=True)


# ---------------------------------------------------------------------------------------------
# every field of every method config


def _inner(constraint):
    return constraint.inner if isinstance(constraint, Optional) else constraint


def wrong_types(constraint) -> list:
    """Values of a type the constraint never accepts."""
    inner = _inner(constraint)
    if isinstance(inner, Choice) and all(isinstance(o, str) for o in inner.options):
        return [12345, ["signature"]]
    if isinstance(inner, Integer):
        return ["12", 12.0, True]
    if isinstance(inner, Real):
        return ["0.5", True]
    return ["0.5"]


def out_of_range(constraint) -> list:
    """Values of the right type that the constraint refuses."""
    inner = _inner(constraint)
    if isinstance(inner, Integer):
        return ([inner.low - 1] if inner.low is not None else []) + ([inner.high + 1] if inner.high is not None else [])
    if isinstance(inner, Real):
        values = [float("nan")]
        if inner.low is not None:
            values += [inner.low - 0.5] + ([inner.low] if inner.low_open else [])
        if inner.high is not None:
            values += [inner.high + 0.5] + ([inner.high] if inner.high_open else [])
        return values
    if isinstance(inner, Choice):
        if all(isinstance(o, str) for o in inner.options):
            return ["no-such-option"]
        return [max(inner.options) + 1]
    if isinstance(inner, Range):
        return [(0.9, 0.1), (-0.5, 0.5), (0.1, 0.2, 0.3)]
    return []


FIELDS = [(name, f.name, spec.constraint) for name in method_names() for f, spec in get_method(name).params()]
TYPE_CASES = [(name, field, value) for name, field, c in FIELDS for value in wrong_types(c)]
RANGE_CASES = [(name, field, value) for name, field, c in FIELDS for value in out_of_range(c)]


def test_every_method_field_is_covered():
    covered = {(name, field) for name, field, _ in TYPE_CASES}
    assert covered == {(name, field) for name, field, _ in FIELDS}
    assert {(name, field) for name, field, c in FIELDS if isinstance(_inner(c), (Integer, Real, Choice))} <= {
        (name, field) for name, field, _ in RANGE_CASES
    }


@pytest.mark.parametrize("name, field, value", TYPE_CASES, ids=[f"{n}.{f}={v!r}" for n, f, v in TYPE_CASES])
def test_wrong_type_is_a_parameter_type_error(name, field, value):
    with pytest.raises(ParameterTypeError) as err:
        get_method(name)(**{field: value})
    message = str(err.value)
    assert message.startswith(f"{field} must be ") and "got" in message, message
    assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)


@pytest.mark.parametrize("name, field, value", RANGE_CASES, ids=[f"{n}.{f}={v!r}" for n, f, v in RANGE_CASES])
def test_out_of_range_is_a_parameter_error(name, field, value):
    with pytest.raises(ParameterError) as err:
        get_method(name)(**{field: value})
    assert str(err.value).startswith(field) and "must be" in str(err.value)
    assert not isinstance(err.value, TypeError)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MinHashConfig(num_perm=100000),
        lambda: MinHasher(num_perm=100000),
        lambda: MinHasher.for_sets(100000),
        lambda: MinHashScheme(num_perm=100000),
        lambda: optimal_params(0.8, 100000),
        lambda: params_for(0.8, 100000, bands=20),
        lambda: LSHParams(100000, 1, 0.8),
        lambda: LSHParams(1000, 1000, 0.8),
        lambda: MinHashConfig(bands=100000),
    ],
)
def test_huge_num_perm_fails_at_once(make):
    """The check comes before any work that grows with num_perm (a search over 100,000 band
    widths, tables of 100,000 rows). Timed on the second call (the first may import or compile)
    in CPU time, which other processes' load does not inflate: the check takes microseconds, so
    1 s is a bound no loaded machine reaches while a sweep over num_perm would."""
    with pytest.raises(ParameterError, match=r"2048"):
        make()
    start = time.process_time()
    with pytest.raises(ParameterError, match=r"2048"):
        make()
    assert time.process_time() - start < 1.0


def test_max_num_perm_is_accepted():
    assert MAX_NUM_PERM == 2048
    assert MinHashScheme(num_perm=MAX_NUM_PERM).num_perm == 2048
    assert MinHashConfig(num_perm=MAX_NUM_PERM, bands=64, rows=32).lsh.bands == 64
    assert params_for(0.8, MAX_NUM_PERM, bands=256).rows == 8


# ---------------------------------------------------------------------------------------------
# schemes, shinglings, LSH parameters and the functions of the methods


def type_error(match: str):
    return pytest.raises(ParameterTypeError, match=match)


def value_error(match: str):
    return pytest.raises(ParameterError, match=match)


@pytest.mark.parametrize(
    "kwargs, raises, match",
    [
        (dict(kind=5), ParameterTypeError, "^shingle kind must be one of 'word' or 'char', got 5"),
        (dict(kind="line"), ParameterError, "^shingle kind must be one of"),
        (dict(n="5"), ParameterTypeError, r"^shingle size n must be an integer in \[1, 256\], got '5' \(str\)"),
        (dict(n=5.0), ParameterTypeError, "^shingle size n must be"),
        (dict(n=True), ParameterTypeError, "^shingle size n must be"),
        (dict(n=0), ParameterError, "got 0$"),
        (dict(n=MAX_SHINGLE_SIZE + 1), ParameterError, "got 257$"),
        (dict(strip_punctuation="yes"), ParameterTypeError, "^strip_punctuation must be True or False"),
        (dict(nfkc=1), ParameterTypeError, "^nfkc must be True or False, got 1 \\(int\\)"),
        (dict(casefold=None), ParameterTypeError, "^casefold must be True or False"),
    ],
)
def test_shingling_mistakes(kwargs, raises, match):
    with pytest.raises(raises, match=match) as err:
        Shingling(**kwargs)
    assert type(err.value) is raises


def test_shingling_accepts_numpy_and_canonicalizes():
    sh = Shingling("char", np.int64(4), strip_punctuation=np.bool_(True))
    assert type(sh.n) is int and sh.strip_punctuation is True and sh == Shingling("char", 4, True)
    assert Shingling("word", MAX_SHINGLE_SIZE).n == 256


@pytest.mark.parametrize(
    "kwargs, raises, match",
    [
        (dict(num_perm="128"), ParameterTypeError, r"^num_perm must be an integer in \[1, 2048\], got '128' \(str\)"),
        (dict(num_perm=128.0), ParameterTypeError, "^num_perm must be"),
        (dict(num_perm=True), ParameterTypeError, "^num_perm must be"),
        (dict(num_perm=0), ParameterError, "^num_perm must be"),
        (dict(num_perm=2049), ParameterError, "got 2049$"),
        (dict(seed=-1), ParameterError, r"^seed must be an integer in \[0, 2\*\*64\)"),
        (dict(seed=2**64), ParameterError, "^seed must be"),
        (dict(seed=1.0), ParameterTypeError, "^seed must be"),
        (dict(shingling="word"), ParameterTypeError, "^shingling must be a Shingling, got 'word'"),
        (dict(hash_family="md5"), ParameterError, "^hash_family must be one of"),
        (dict(hash_family=5), ParameterTypeError, "^hash_family must be one of"),
        (dict(format_version=3), ParameterError, r"^format_version must be an integer in \[1, 2\], got 3"),
    ],
)
def test_minhash_scheme_mistakes(kwargs, raises, match):
    with pytest.raises(raises, match=match) as err:
        MinHashScheme(**kwargs)
    assert type(err.value) is raises


def test_minhash_scheme_canonicalizes_numpy_values():
    s = MinHashScheme(num_perm=np.int64(64), seed=np.uint64(2**63))
    assert type(s.num_perm) is int and type(s.seed) is int
    assert s == MinHashScheme(num_perm=64, seed=2**63) and hash(s) == hash(MinHashScheme(num_perm=64, seed=2**63))


@pytest.mark.parametrize(
    "kwargs, raises, match",
    [
        (dict(bits="64"), ParameterTypeError, "^bits must be one of 64 or 128, got '64' \\(str\\)"),
        (dict(bits=True), ParameterTypeError, "^bits must be one of 64 or 128"),
        (dict(bits=32), ParameterError, "^bits must be one of 64 or 128, got 32"),
        (dict(seed="1"), ParameterTypeError, "^seed must be"),
        (dict(seed=2**64), ParameterError, "^seed must be"),
        (dict(shingling=Shingling), ParameterTypeError, "^shingling must be a Shingling"),
        (dict(weighting=1), ParameterTypeError, "^weighting must be one of 'count' or 'idf'"),
        (dict(weighting="tf"), ParameterError, "^weighting must be one of 'count' or 'idf', got 'tf'"),
        (dict(weighting="idf", idf_digest="abc"), ParameterTypeError, "^idf_digest must be an integer"),
        (dict(weighting="idf", idf_digest=-1), ParameterError, "^idf_digest must be"),
        (dict(idf_digest=5), ParameterConflictError, "only meaningful with weighting='idf'"),
        (dict(dim="3", shingling=None, hash_family=VECTOR_FAMILY), ParameterTypeError, "^dim must be"),
        (dict(dim=0, shingling=None, hash_family=VECTOR_FAMILY), ParameterError, "^dim must be"),
        (dict(dim=3), ParameterConflictError, "dim is only meaningful"),
        (dict(shingling=None, hash_family=VECTOR_FAMILY), ParameterConflictError, "needs dim"),
        (dict(dim=3, hash_family=VECTOR_FAMILY), ParameterConflictError, "no shingling or weighting"),
        (dict(hash_family="md5"), ParameterError, "^hash_family must be one of"),
        (dict(format_version=0), ParameterError, "^format_version must be"),
    ],
)
def test_simhash_scheme_mistakes(kwargs, raises, match):
    with pytest.raises(raises, match=match) as err:
        SimHashScheme(**kwargs)
    assert type(err.value) is raises


@pytest.mark.parametrize(
    "kwargs, raises, match",
    [
        (dict(spot_distance="1"), ParameterTypeError, "^spot_distance must be an integer in"),
        (dict(spot_distance=0), ParameterError, "^spot_distance must be"),
        (dict(chain=33), ParameterError, r"^chain must be an integer in \[1, 32\], got 33"),
        (dict(chain=2.0), ParameterTypeError, "^chain must be"),
        (dict(key=None), ParameterTypeError, "^key must be one of 'antecedent' or 'chain'"),
        (dict(key="prefix"), ParameterError, "^key must be"),
        (dict(nfkc="no"), ParameterTypeError, "^nfkc must be True or False"),
        (dict(antecedents="the"), ParameterTypeError, "^antecedents must be a sequence of words.*load_words"),
        (dict(stopwords=["to", 5]), ParameterTypeError, r"^stopwords must be .*got an item 5 \(int\)"),
        (dict(stopwords=["don't"]), ParameterError, '^stopwords must be single word tokens, got "don\'t"'),
        (dict(antecedents=[]), ParameterError, "^antecedents must be a non-empty sequence of words"),
        (dict(hash_family="nd128"), ParameterError, "^hash_family must be 'nd64', got 'nd128'"),
    ],
)
def test_spotsigs_scheme_mistakes(kwargs, raises, match):
    with pytest.raises(raises, match=match) as err:
        SpotSigsScheme(**kwargs)
    assert type(err.value) is raises


@pytest.mark.parametrize(
    "args, kwargs, raises, match",
    [
        (("20", 5, 0.8), {}, ParameterTypeError, r"^bands must be an integer in \[1, 2048\], got '20' \(str\)"),
        ((20.0, 5, 0.8), {}, ParameterTypeError, "^bands must be"),
        ((20, True, 0.8), {}, ParameterTypeError, "^rows must be"),
        ((0, 5, 0.8), {}, ParameterError, "^bands must be"),
        ((20, 5, "0.8"), {}, ParameterTypeError, r"^threshold must be a number in \(0, 1\), got '0.8' \(str\)"),
        ((20, 5, 1.0), {}, ParameterError, r"^threshold must be a number in \(0, 1\), got 1.0"),
        ((20, 5, float("nan")), {}, ParameterError, "^threshold must be"),
        ((20, 5, 0.8), dict(fp_weight=-1), ParameterError, "^fp_weight must be a finite number >= 0, got -1.0"),
        ((20, 5, 0.8), dict(fn_weight=math.inf), ParameterError, "^fn_weight must be a finite number >= 0"),
        ((20, 5, 0.8), dict(fn_weight="1"), ParameterTypeError, "^fn_weight must be"),
        ((20, 5, 0.8), dict(fp_weight=0, fn_weight=0), ParameterConflictError, "cannot both be 0"),
        ((100, 100, 0.8), {}, ParameterConflictError, r"bands \* rows must be <= 2048"),
    ],
)
def test_lsh_params_mistakes(args, kwargs, raises, match):
    with pytest.raises(raises, match=match) as err:
        LSHParams(*args, **kwargs)
    assert type(err.value) is raises


def test_lsh_params_canonicalizes():
    p = LSHParams(np.int64(20), np.int32(5), np.float32(0.5), 1, 1)
    assert (type(p.bands), type(p.rows), type(p.threshold), type(p.fp_weight)) == (int, int, float, float)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: optimal_params("0.8", 128), "^threshold must be"),
        (lambda: optimal_params(0.8, "128"), "^num_perm must be"),
        (lambda: optimal_params(0.8, 128, fp_weight="0.1"), "^fp_weight must be"),
        (lambda: params_for(0.8, 128, bands="20"), "^bands must be"),
        (lambda: params_for(0.8, 128, rows=5.0), "^rows must be"),
        (lambda: candidate_probability("0.5", 20, 5), "^s must be a number in"),
        (lambda: candidate_probability(np.array(["0.5"]), 20, 5), "^s must be a number in"),
        (lambda: candidate_probability(0.5, 20.0, 5), "^bands must be"),
        (lambda: effective_threshold(20, "5"), "^rows must be"),
        (lambda: false_positive_area(None, 20, 5), "^threshold must be"),
        (lambda: false_negative_area(0.8, 20, [5]), "^rows must be"),
        (lambda: band_keys(np.zeros((1, 8), dtype=np.uint32), 2.0, 4), "^bands must be"),
        (lambda: confidence_interval("90", 100), "^matches must be"),
        (lambda: confidence_interval(90, 100.0), "^num_perm must be"),
        (lambda: confidence_interval(90, 100, "0.95"), "^level must be"),
        (lambda: confidence_interval(90, 100, 0.95, 1), "^method must be one of 'wilson' or 'wald'"),
        (lambda: acceptance_probability("0.8", 100, 0.9), "^s must be"),
        (lambda: acceptance_probability(0.8, 100, "0.9"), "^threshold must be"),
        (lambda: estimate_from_rows(np.zeros(4, np.uint32), np.zeros(4, np.uint32), level="high"), "^level must be"),
        (lambda: MinHasher(sketch=5), "^sketch must be one of 'classic' or 'oph'"),
        (lambda: MinHasher(scheme="minhash"), "^scheme must be a MinHashScheme"),
        (lambda: MinHasher(seed="1"), "^seed must be"),
        (lambda: MinHasher(shingling="word"), "^shingling must be a Shingling"),
        (lambda: SimHasher(bits="64"), "^bits must be"),
        (lambda: SimHasher(scheme=MinHashScheme()), "^scheme must be a SimHashScheme"),
        (lambda: SimHasher(weighting="idf", idf={"a": 1}), "^idf must be an IdfTable"),
        (lambda: IdfTable(np.zeros(0, np.uint64), np.zeros(0, np.int64), "3"), "^n_docs must be"),
        (lambda: IdfTable(np.zeros(0, np.uint64), np.zeros(0, np.int64), 3, 2.0), "^min_df must be"),
        (lambda: DocumentFrequencies("word"), "^shingling must be a Shingling"),
        (lambda: SimHashScheme().hyperplanes("3"), "^dim must be"),
        (lambda: estimated_cosine(3, "64"), "^bits must be"),
        (lambda: check_distance(64, "3"), "^max_distance must be an integer in"),
        (lambda: check_distance("64", 3), "^bits must be"),
        (lambda: block_plan(64, 3, 5.0), "^blocks must be"),
        (lambda: band_plan(64, "8", 8), "^bands must be"),
        (lambda: choose_blocks(64, 3, "1000"), "^n must be"),
        (lambda: brute_force_pairs(np.zeros(3, np.uint64), 2.5), "^max_distance must be"),
        (lambda: partition_bounds("0.7", 60), "^threshold must be a number in"),
        (lambda: partition_bounds(0.7, 60.5), "^max_len must be"),
        (lambda: spot_all_pairs(SpotSignatures.from_multisets([{1: 1}]), "0.5"), "^threshold must be"),
        (lambda: spot_all_pairs(SpotSignatures.from_multisets([{1: 1}]), 0.5, pruning=1), "^pruning must be"),
        (lambda: idf_filter(SpotSignatures.from_multisets([{1: 1}]), "0.1 0.5"), "^idf_band must be a pair"),
        (lambda: extract(["a b"], scheme="spotsigs"), "^scheme must be a SpotSigsScheme"),
    ],
)
def test_function_type_mistakes_are_parameter_type_errors(call, match):
    """A wrong type is named, never a raw comparison TypeError from deep inside."""
    with pytest.raises(ParameterTypeError, match=match):
        call()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: optimal_params(1.0, 128), r"^threshold must be a number in \(0, 1\), got 1.0"),
        (lambda: optimal_params(0.8, 0), r"^num_perm must be an integer in \[1, 2048\], got 0"),
        (lambda: candidate_probability(1.5, 20, 5), r"^s must be a number in \[0, 1\], got 1.5"),
        (lambda: candidate_probability(np.array([0.5, np.nan]), 20, 5), r"^s must be a number in \[0, 1\], got nan"),
        (lambda: confidence_interval(11, 10), r"^matches must be an integer in \[0, 10\], got 11"),
        (lambda: confidence_interval(5, 10, 1.0), r"^level must be a number in \(0, 1\)"),
        (lambda: confidence_interval(5, 10, 0.95, "exact"), "^method must be one of"),
        (lambda: acceptance_probability(1.5, 100, 0.9), r"^s must be a number in \[0, 1\]"),
        (lambda: SimHasher(weighting="idf"), "needs an IdfTable"),
        (lambda: estimated_cosine(3, 32), "^bits must be one of 64 or 128, got 32"),
        (lambda: check_distance(64, 64), r"^max_distance must be an integer in \[0, 63\], got 64"),
        (lambda: block_plan(64, 3, 3), r"^blocks must be an integer in \[4, 64\], got 3"),
        (lambda: band_plan(64, 2, 65), r"^rows must be an integer in \[1, 64\]"),
        (lambda: band_plan(64, 5, 16), r"bands \* rows must be at most the fingerprint width 64"),
        (lambda: partition_bounds(0.0, 10), r"^threshold must be a number in \(0, 1\], got 0.0"),
        (lambda: idf_filter(SpotSignatures.from_multisets([{1: 1}]), (0.7, 0.2)), "^idf_band must be a pair"),
    ],
)
def test_function_range_mistakes_are_parameter_errors(call, match):
    with pytest.raises(ParameterError, match=match) as err:
        call()
    assert not isinstance(err.value, TypeError)


def test_index_facing_wrappers_keep_their_names():
    """neardup.index.lsh imports check_int and check_similarity from methods.minhash.lsh."""
    assert minhash_lsh.check_int("limit", np.int64(0), minimum=0) == 0
    assert minhash_lsh.check_int("num_perm", 4096) == 4096  # no upper bound here: params_for has it
    with pytest.raises(ParameterError, match=r"^limit must be an integer >= 0, got -1"):
        minhash_lsh.check_int("limit", -1, minimum=0)
    with pytest.raises(ParameterTypeError, match=r"^num_perm must be an integer >= 1"):
        minhash_lsh.check_int("num_perm", 128.0)
    assert minhash_lsh.check_similarity("min_similarity", 0) == 0.0
    with pytest.raises(ParameterError, match=r"^min_similarity must be a number in \[0, 1\], got 1.5"):
        minhash_lsh.check_similarity("min_similarity", 1.5)
    with pytest.raises(ParameterTypeError, match=r"^min_similarity must be"):
        minhash_lsh.check_similarity("min_similarity", True)
