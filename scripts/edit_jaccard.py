"""Measure how word-5-gram Jaccard relates to word edit similarity for near-duplicate edits.

Generates documents (30 to 1,000 words, sentences of 8 to 25 words) and edited copies with a
random mix of the edits near-duplicates carry: scattered word substitutions (typos, updated
numbers), sentence substitutions, insertions and deletions, a moved paragraph, and template text
(a header or footer) added. For every edit threshold t it prints the q-quantile (default 2 %) of
the Jaccard of the pairs whose edit similarity is in [t, t + 0.05): the LSH candidate threshold below
which only that share of the accepted pairs lies. ``methods/minhash/edit.py`` holds the table.

    python scripts/edit_jaccard.py [--pairs 4000] [--quantile 0.02]
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from neardup.text.edit import edit_similarities, edit_tokens, token_sequences
from neardup.text.shingles import Shingling, shingle


def make_doc(rng: random.Random, vocab: list[str], args_min: int) -> list[list[str]]:
    words = rng.randint(args_min, 1000)
    sents, total = [], 0
    while total < words:
        s = [rng.choice(vocab) for _ in range(rng.randint(8, 25))]
        sents.append(s)
        total += len(s)
    return sents


def edit(rng: random.Random, sents: list[list[str]], vocab: list[str]) -> list[list[str]]:
    out = [list(s) for s in sents]
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["words", "sub", "ins", "del", "move", "template"])
        if kind == "words":
            for _ in range(rng.randint(1, 8)):
                s = rng.choice(out)
                s[rng.randrange(len(s))] = rng.choice(vocab)
        elif kind == "sub":
            out[rng.randrange(len(out))] = [rng.choice(vocab) for _ in range(rng.randint(8, 25))]
        elif kind == "ins":
            out.insert(rng.randrange(len(out) + 1), [rng.choice(vocab) for _ in range(rng.randint(8, 25))])
        elif kind == "del" and len(out) > 1:
            del out[rng.randrange(len(out))]
        elif kind == "move" and len(out) > 3:
            i = rng.randrange(len(out) - 2)
            block = out[i : i + rng.randint(1, 3)]
            del out[i : i + len(block)]
            j = rng.randrange(len(out) + 1)
            out[j:j] = block
        elif kind == "template":
            tpl = ["home", "news", "sport", "contact", "about", "login", "subscribe", "share"]
            out.insert(0 if rng.random() < 0.5 else len(out), rng.sample(tpl, rng.randint(3, 8)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4000)
    ap.add_argument("--quantile", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--min-words", type=int, default=30)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    vocab = [f"w{i}" for i in range(20000)]
    a_texts, b_texts = [], []
    for _ in range(args.pairs):
        d = make_doc(rng, vocab, args.min_words)
        a_texts.append(" ".join(" ".join(s) for s in d))
        b_texts.append(" ".join(" ".join(s) for s in edit(rng, d, vocab)))
    ids, off = edit_tokens(a_texts + b_texts)
    seqs = token_sequences(ids, off, np.arange(2 * args.pairs))
    sim = edit_similarities(seqs[: args.pairs], seqs[args.pairs :], 0.0, workers=2)
    sh = Shingling("word", 5)
    jac = np.empty(args.pairs)
    for i, (a, b) in enumerate(zip(a_texts, b_texts)):
        x, y = set(shingle(a, sh).tolist()), set(shingle(b, sh).tolist())
        jac[i] = len(x & y) / len(x | y)
    print(
        f"{args.pairs} pairs; edit similarity in [t, t + 0.05) -> {args.quantile:.0%} quantile of word-5-gram Jaccard"
    )
    for t in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95):
        sel = jac[(sim >= t) & (sim < t + 0.05)]
        q = np.quantile(sel, args.quantile) if len(sel) else float("nan")
        print(f"  {t:.2f}  {q:.3f}  ({len(sel)} pairs)")


if __name__ == "__main__":
    main()
