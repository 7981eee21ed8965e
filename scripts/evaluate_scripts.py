#!/usr/bin/env python3
"""Word and character shingles on generated near-duplicates in scripts with and without spaces.

For each script, 200 documents of 120 words are made from a vocabulary of random words of that
script's letters (with its combining marks where it has them), written without spaces between
words for Thai, Lao, Khmer, Myanmar, Chinese and Japanese and with spaces for Korean, Arabic and
Hindi; each document gets a near-duplicate with one number changed and 3 of its words replaced.
This prints, as Markdown, the mean Jaccard similarity of the shingle sets of the near-duplicate
pairs and of unrelated pairs (document i against document i + 1), for word 5-grams (the default)
and character 5-grams, with today's tokenizer and with the previous one (format version 1, in
which a run of Thai, Lao, Khmer or Myanmar letters was one word), and the share of near-duplicate
pairs that a default MinHash job (threshold 0.8) finds.

Usage (from the repository root)::

    python scripts/evaluate_scripts.py
"""

from __future__ import annotations

import random
import sys

import numpy as np

from neardup._kernels.charclass import CHAR_CLASS, IDEOGRAPH, SYLLABLE, WORD
from neardup.api import dedup
from neardup.methods.minhash.config import MinHashConfig
from neardup.text.normalize import normalize
from neardup.text.shingles import Shingling, shingle_batch

# (name, letters, marks, spaces between words)
SCRIPTS = [
    ("Thai", (0x0E01, 0x0E2E), [0x0E48, 0x0E49, 0x0E34, 0x0E35], False),
    ("Lao", (0x0E81, 0x0EA3), [0x0EC8, 0x0EC9, 0x0EB4], False),
    ("Khmer", (0x1780, 0x17A2), [0x17B6, 0x17C1, 0x17D2], False),
    ("Myanmar", (0x1000, 0x1020), [0x103B, 0x102C, 0x1039], False),
    ("Chinese", (0x4E00, 0x4FFF), [], False),
    ("Japanese", (0x3042, 0x3093), [], False),
    ("Korean", (0xAC00, 0xB000), [], True),
    ("Arabic", (0x0628, 0x064A), [], True),
    ("Hindi", (0x0915, 0x0939), [0x093E, 0x093F, 0x0947], True),
]
DOCS, WORDS, EDITS = 200, 120, 3


def make_word(rng: random.Random, letters, marks) -> str:
    assigned = [cp for cp in range(letters[0], letters[1] + 1) if CHAR_CLASS[cp] in (WORD, IDEOGRAPH, SYLLABLE)]
    out = []
    for _ in range(rng.randint(2, 4)):
        out.append(chr(rng.choice(assigned)))
        if marks and rng.random() < 0.4:
            out.append(chr(rng.choice(marks)))
    return "".join(out)


def corpus(script, seed: int = 1) -> tuple[list[str], list[str]]:
    name, letters, marks, spaced = script
    rng = random.Random(f"{name}-{seed}")
    vocab = [make_word(rng, letters, marks) for _ in range(3000)]
    sep = " " if spaced else ""
    docs, copies = [], []
    for _ in range(DOCS):
        words = [rng.choice(vocab) for _ in range(WORDS)]
        at = rng.randrange(WORDS)
        words[at] = str(rng.randrange(1000, 9999))
        copy = list(words)
        copy[at] = str(int(words[at]) + 1)
        for _ in range(EDITS):
            copy[rng.randrange(WORDS)] = rng.choice(vocab)
        docs.append(sep.join(words))
        copies.append(sep.join(copy))
    return docs, copies


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def sets(texts: list[str], shingling: Shingling) -> list[set]:
    values, offsets = shingle_batch(texts, shingling)
    return [set(values[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(texts))]


def old_word_sets(texts: list[str], n: int = 5) -> list[set]:
    """Word n-grams as format version 1 tokenized: syllable letters were word characters."""
    out = []
    for text in texts:
        tokens, current = [], []
        for ch in normalize(text):
            cls = CHAR_CLASS[ord(ch)]
            if cls in (WORD, SYLLABLE):
                current.append(ch)
                continue
            if current:
                tokens.append("".join(current))
                current = []
            if cls == IDEOGRAPH:
                tokens.append(ch)
        if current:
            tokens.append("".join(current))
        grams = {" ".join(tokens[i : i + n]) for i in range(max(len(tokens) - n + 1, 1))} if tokens else set()
        out.append(grams)
    return out


def mean_pairs(left: list[set], right: list[set]) -> float:
    return float(np.mean([jaccard(a, b) for a, b in zip(left, right)]))


def main() -> int:
    print(
        "| script | word 5-grams, v1: copies / unrelated | word 5-grams now: copies / unrelated "
        "| char 5-grams: copies / unrelated | copies found (MinHash, t = 0.8) |"
    )
    print("|---|---:|---:|---:|---:|")
    for script in SCRIPTS:
        docs, copies = corpus(script)
        row = [script[0]]
        old_d, old_c = old_word_sets(docs), old_word_sets(copies)
        row.append(f"{mean_pairs(old_d, old_c):.2f} / {mean_pairs(old_d, old_d[1:]):.2f}")
        for sh in (Shingling("word", 5), Shingling("char", 5)):
            d, c = sets(docs, sh), sets(copies, sh)
            row.append(f"{mean_pairs(d, c):.2f} / {mean_pairs(d, d[1:]):.2f}")
        texts = [t for pair in zip(docs, copies) for t in pair]
        result = dedup(texts, MinHashConfig(), workers=1)
        kept = np.asarray(result.kept)
        found = int(np.count_nonzero(kept[1::2] == np.arange(0, len(texts), 2)))
        row.append(f"{found}/{DOCS}")
        print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
