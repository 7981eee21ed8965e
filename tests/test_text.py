"""Tests of text normalization and tokenization (neardup.text).

Properties checked: NFKC + case folding as documented; word tokens are maximal runs of
letters/marks/digits in any script, ideographs and kana one token each, punctuation separates,
format characters vanish; the character stream collapses whitespace; and the shipped class
table does not depend on the running Python's ``unicodedata``.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.charclass import (
    CHAR_CLASS,
    IDEOGRAPH,
    IGNORE,
    OTHER,
    PUNCT,
    SPACE,
    SYLLABLE,
    UNICODE_VERSION,
    WORD,
)
from neardup.text.normalize import char_stream, normalize, tokenize

# ---------------------------------------------------------------------------------------------
# normalize


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("\ufb01sh \ufb02ow", "fish flow"),  # ligatures fi, fl
        ("\uff26\uff55\uff4c\uff4c\uff0d\uff57\uff49\uff44\uff54\uff48", "full-width"),  # full-width letters + hyphen
        ("a\u00a0b", "a b"),  # no-break space -> space
        ("Stra\u00dfe", "strasse"),  # casefold: sharp s -> ss
        ("STRASSE", "strasse"),
        ("\u1e9e", "ss"),  # capital sharp s
        ("x\u00b2", "x2"),  # superscript two
        ("\u2167", "viii"),  # Roman numeral eight
        ("e\u0301", "\u00e9"),  # NFKC composes e + combining acute
        ("\u212b", "\u00e5"),  # angstrom sign -> a with ring
    ],
)
def test_normalize_nfkc_and_casefold(raw, expected):
    """normalize applies NFKC (ligatures, full-width, nbsp, compatibility digits) then casefold."""
    assert normalize(raw) == expected


def test_normalize_switches():
    """nfkc=False / casefold=False turn each step off independently."""
    # without NFKC a full-width F only lower-cases to a full-width f
    assert normalize("\uff26 STRA\u00dfE", nfkc=False) == "\uff46 strasse"
    assert normalize("\uff26 STRA\u00dfE", casefold=False) == "F STRA\u00dfE"
    assert normalize("\uff26 X", nfkc=False, casefold=False) == "\uff26 X"


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_tokenize_is_stable_on_its_own_output(text):
    """Tokenizing already-tokenized, re-joined text gives the same tokens (normalization is stable)."""
    toks = tokenize(text)
    assert tokenize(" ".join(toks)) == toks


# ---------------------------------------------------------------------------------------------
# tokenize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Jack London traveled to Oakland!", ["jack", "london", "traveled", "to", "oakland"]),
        ("Caf\u00e9 na\u00efve r\u00e9sum\u00e9", ["caf\u00e9", "na\u00efve", "r\u00e9sum\u00e9"]),  # Latin accents
        ("cafe\u0301", ["caf\u00e9"]),  # combining accent kept (NFKC composes)
        (
            "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
            ["\u043f\u0440\u0438\u0432\u0435\u0442", "\u043c\u0438\u0440"],
        ),  # Cyrillic
        (
            "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u039a\u039f\u03a3\u039c\u0395",
            ["\u03ba\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1", "\u03ba\u03bf\u03c3\u03bc\u03b5"],
        ),  # Greek
        (
            "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
            ["\u0645\u0631\u062d\u0628\u0627", "\u0628\u0627\u0644\u0639\u0627\u0644\u0645"],
        ),  # Arabic
        (
            "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
            ["\u0928\u092e\u0938\u094d\u0924\u0947", "\u0926\u0941\u0928\u093f\u092f\u093e"],
        ),  # Devanagari, marks inside
        ("\u6771\u4eac\u306f2024\u5e74", ["\u6771", "\u4eac", "\u306f", "2024", "\u5e74"]),  # CJK + digits
        ("\u30c6\u30ad\u30b9\u30c8", ["\u30c6", "\u30ad", "\u30b9", "\u30c8"]),  # Katakana, one each
        ("\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8", ["\ud55c\uad6d\uc5b4", "\ud14d\uc2a4\ud2b8"]),  # Hangul uses spaces
        ("3.14 and 1,000", ["3", "14", "and", "1", "000"]),  # punctuation separates digits
        ("snake_case don't e-mail", ["snake", "case", "don", "t", "e", "mail"]),
        ("co\u00adoperate", ["cooperate"]),  # soft hyphen dropped inside a word
        ("foo\u200bbar", ["foobar"]),  # zero-width space dropped
        ("a\u00a0b\tc\nd\u3000e", ["a", "b", "c", "d", "e"]),  # every kind of space separates
        ("x\x00y", ["x", "y"]),  # control characters separate
        ("\U0001f600smile\U0001f600", ["smile"]),  # emoji are symbols: separate
        ("", []),
        ("  \t\n ", []),
        ("!!! ... ???", []),
    ],
)
def test_tokenize_examples(text, expected):
    """tokenize gives the documented word tokens for text in many scripts."""
    assert tokenize(text) == expected


def test_devanagari_marks_stay_inside_words():
    """Combining vowel signs and virama (Mn/Mc) never split a Devanagari word."""
    word = "\u0939\u093f\u0928\u094d\u0926\u0940"  # hindi: ha, vowel sign i, na, virama, da, vowel sign ii
    assert tokenize(word) == [word]
    assert tokenize(f"{word}, {word}") == [word, word]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_tokens_are_word_runs(text):
    """Every token is non-empty, made of WORD characters only, or is exactly one IDEOGRAPH character,
    or one SYLLABLE character followed by WORD characters only."""
    for tok in tokenize(text):
        assert tok
        classes = {int(CHAR_CLASS[ord(c)]) for c in tok}
        rest = {int(CHAR_CLASS[ord(c)]) for c in tok[1:]}
        assert (
            classes == {WORD}
            or (len(tok) == 1 and classes == {IDEOGRAPH})
            or (CHAR_CLASS[ord(tok[0])] == SYLLABLE and rest <= {WORD})
        )


# ---------------------------------------------------------------------------------------------
# char_stream


@pytest.mark.parametrize(
    "text, strip, expected",
    [
        ("  Hello,\n\n  World!  ", False, "hello, world!"),
        ("  Hello,\n\n  World!  ", True, "hello world"),
        ("a \t\n\u00a0\u3000 b", False, "a b"),  # any whitespace run -> one space
        ("a\x00b", False, "a b"),  # control characters act as separators
        ("a\u200bb c\u00add", False, "ab cd"),  # format characters dropped
        ("a , b", True, "a b"),  # dropped punctuation leaves one space
        ("a,b", True, "ab"),  # punctuation between letters just vanishes
        ("e-mail $5", True, "email 5"),
        ("e-mail $5", False, "e-mail $5"),
        ("", False, ""),
        ("   ", False, ""),
        ("!?", True, ""),
    ],
)
def test_char_stream(text, strip, expected):
    """char_stream collapses whitespace, trims the ends, drops format chars, and punctuation if asked."""
    assert char_stream(text, strip_punctuation=strip) == expected


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.booleans())
def test_char_stream_has_no_double_or_edge_spaces(text, strip):
    """The stream never starts/ends with a space and never has two spaces in a row."""
    s = char_stream(text, strip_punctuation=strip)
    assert not s.startswith(" ") and not s.endswith(" ")
    assert "  " not in s
    for c in s:
        cls = int(CHAR_CLASS[ord(c)])
        assert cls != IGNORE
        if strip:
            assert cls != PUNCT


# ---------------------------------------------------------------------------------------------
# the class table


def test_table_shape_and_version():
    """The table covers every code point and is generated from Unicode 14.0, not the runtime's."""
    assert CHAR_CLASS.shape == (0x110000,)
    assert CHAR_CLASS.dtype == np.uint8
    assert UNICODE_VERSION == "14.0.0"
    assert set(np.unique(CHAR_CLASS).tolist()) <= {OTHER, WORD, IDEOGRAPH, SPACE, PUNCT, IGNORE, SYLLABLE}


@pytest.mark.parametrize(
    "ch, cls",
    [
        ("a", WORD),
        ("Z", WORD),
        ("0", WORD),
        ("9", WORD),
        (" ", SPACE),
        ("\t", SPACE),
        ("\n", SPACE),
        ("\r", SPACE),
        ("\x0b", SPACE),
        ("\x0c", SPACE),
        ("\x1c", SPACE),
        ("\x1f", SPACE),
        ("\x85", SPACE),
        ("\xa0", SPACE),
        ("\x00", OTHER),
        ("\x08", OTHER),
        ("\x7f", OTHER),
        ("\x9f", OTHER),
        ("!", PUNCT),
        ("-", PUNCT),
        ("_", PUNCT),
        ("$", PUNCT),
        ("+", PUNCT),
        ("~", PUNCT),
        ("@", PUNCT),
        ("\xa9", PUNCT),
        ("\xab", PUNCT),
        ("\xbf", PUNCT),
        ("\xd7", PUNCT),
        ("\xf7", PUNCT),
        ("\xb4", PUNCT),
        ("\xad", IGNORE),
        ("\xaa", WORD),
        ("\xb5", WORD),
        ("\xba", WORD),
        ("\xb2", WORD),
        ("\xbd", WORD),
        ("\xc0", WORD),
        ("\xdf", WORD),
        ("\xe9", WORD),
        ("\xff", WORD),
        # beyond Latin-1
        ("\u200b", IGNORE),
        ("\u200d", IGNORE),
        ("\ufeff", IGNORE),
        ("\u2028", SPACE),
        ("\u3000", SPACE),
        ("\u0301", WORD),
        ("\u093f", WORD),
        ("\u4e00", IDEOGRAPH),
        ("\u3042", IDEOGRAPH),
        ("\u30a2", IDEOGRAPH),
        ("\uff71", IDEOGRAPH),
        ("\U00020000", IDEOGRAPH),
        ("\uac00", WORD),
        ("\u0e01", SYLLABLE),  # Thai ko kai
        ("\u0e48", WORD),  # Thai mai ek, a mark
        ("\u0e81", SYLLABLE),  # Lao ko
        ("\u1780", SYLLABLE),  # Khmer ka
        ("\u1000", SYLLABLE),  # Myanmar ka
        ("\u103b", WORD),  # Myanmar medial ya, a mark
        ("\U0001f600", PUNCT),
        ("\u0378", OTHER),
        ("\ue000", OTHER),
    ],
)
def test_class_spot_checks(ch, cls):
    """Pinned classes for chosen code points (literals, not derived from unicodedata)."""
    assert int(CHAR_CLASS[ord(ch)]) == cls


def _latin1_rule(cp: int) -> int:
    """The documented classes for U+0000..U+00FF, whose general categories are fixed forever."""
    c = chr(cp)
    cat = unicodedata.category(c)
    if cat[0] in "LNM":
        return WORD
    if cat[0] == "Z" or c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85":
        return SPACE
    if cat[0] in "PS":
        return PUNCT
    if cat == "Cf":
        return IGNORE
    return OTHER


def test_ascii_latin1_classes_follow_categories():
    """For assigned ASCII/Latin-1 (stable general categories) the table follows the documented rule."""
    for cp in range(256):
        assert int(CHAR_CLASS[cp]) == _latin1_rule(cp), hex(cp)


@pytest.mark.parametrize("cp", [0x11F04, 0x1E030, 0x31350, 0x1F6DC, 0x1B132])
def test_code_points_new_after_unicode14_are_other(cp):
    """Code points first assigned in Unicode 15+ stay OTHER whatever the running Python knows:
    the table is shipped, not computed from unicodedata at import time."""
    assert int(CHAR_CLASS[cp]) == OTHER


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\u3007\u3007", ["\u3007", "\u3007"]),  # ideographic number zero, twice
        ("\U0001b000\U0001b001", ["\U0001b000", "\U0001b001"]),  # archaic katakana e, archaic hiragana ye
    ],
)
def test_all_ideographs_and_kana_are_single_tokens(text, expected):
    """Every Han ideograph and kana letter is its own token (also outside the main blocks)."""
    assert tokenize(text) == expected
