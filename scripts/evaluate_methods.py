"""Every method's similarity, including edit similarity, on labelled pairs: best-threshold F1.

    python scripts/evaluate_methods.py [--clough DIR] [--sites 6] [--seed 1]

Two data sets (docs/evaluation.md shows the output):

1. **Clough & Stevenson**, "Corpus of Plagiarised Short Answers" (``--clough``, default
   ``../shared/data/clough-stevenson`` from the project root; skipped when absent, never copied): each of the 95
   answers against the Wikipedia source of its task. A pair counts as a near-duplicate when the
   answer is ``cut`` (copy-paste) or ``light`` (copy with light revision); ``heavy`` rewrites and
   ``non`` answers (written without the source) are negatives.
2. **Web-like pages** made up here: several sites, each with its own navigation, footer and
   sidebar; articles syndicated to other sites with small edits (a changed word or number, an
   update sentence, a dropped sentence) under the other site's boilerplate (positives); and
   template pages whose core content differs ("Hotels near X" with X, prices and a few facts
   varying; negatives, as are different articles). Every pair of pages is judged, after markup
   removal by ``html_to_text`` (whole text, and ``--main-content``).

For each measure it prints the best F1 over all thresholds, that threshold, and the F1 at the
threshold of each fixed recommendation (so the robustness of one setting across both sets shows).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import random
from collections import Counter
from pathlib import Path

import numpy as np

from neardup.core.measures import weighted_jaccard
from neardup.methods.simhash.config import SimHashConfig
from neardup.methods.simhash.scheme import popcount_array
from neardup.methods.simhash.sketch import SimHasher
from neardup.methods.spotsigs.signatures import extract
from neardup.text.edit import edit_similarities, edit_tokens, token_sequences
from neardup.text.html import html_to_text
from neardup.text.shingles import Shingling, shingle_batch

FIXED = {  # measure -> thresholds near the README's recommendations, to show how F1 holds up
    "edit word": (0.7, 0.8, 0.9),
    "jaccard word-5": (0.5, 0.6, 0.7, 0.8),
    "jaccard word-3": (0.6, 0.7),
}


def set_jaccard(texts, pairs, shingling):
    vals, off = shingle_batch(texts, shingling)
    sets = [set(vals[off[i] : off[i + 1]].tolist()) for i in range(len(texts))]
    return np.array([len(sets[a] & sets[b]) / max(1, len(sets[a] | sets[b])) for a, b in pairs])


def measures(texts: list[str], pairs: list[tuple[int, int]], char_edit: bool = True) -> dict[str, np.ndarray]:
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    out = {}
    levels = ("word", "char") if char_edit else ("word",)
    for level in levels:
        ids, off = edit_tokens(texts, level)
        seqs = token_sequences(ids, off, np.arange(len(texts)))
        out[f"edit {level}"] = edit_similarities([seqs[i] for i in a], [seqs[i] for i in b], 0.0, workers=2)
    for n in (3, 5, 8):
        out[f"jaccard word-{n}"] = set_jaccard(texts, pairs, Shingling("word", n))
    out["jaccard char-5"] = set_jaccard(texts, pairs, Shingling("char", 5))
    config = SimHashConfig()
    fp, _ = SimHasher(scheme=config.scheme).sign_texts_with_counts(texts)
    bits = fp.shape[1] * 64
    out["simhash (1 - d/f)"] = 1 - popcount_array(fp[a] ^ fp[b]).sum(axis=1) / bits
    sigs = extract(texts)
    docs = [sigs.doc(i) for i in range(len(texts))]
    out["spotsigs"] = np.array([weighted_jaccard(Counter(docs[x]), Counter(docs[y])) for x, y in pairs])
    return out


def best_f1(score: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    best = (0.0, 1.0)
    for t in np.unique(np.round(score, 3)):
        pred = score >= t
        tp = int((pred & gold).sum())
        if tp == 0:
            continue
        p, r = tp / pred.sum(), tp / gold.sum()
        f = 2 * p * r / (p + r)
        if f > best[0]:
            best = (f, float(t))
    return best


def f1_at(score, gold, t) -> float:
    pred = score >= t
    tp = int((pred & gold).sum())
    return 0.0 if tp == 0 else 2 * tp / (pred.sum() + gold.sum())


def report(title: str, scores: dict[str, np.ndarray], gold: np.ndarray) -> None:
    print(f"\n### {title}: {len(gold):,} pairs, {int(gold.sum())} near-duplicates\n")
    print("| measure | best F1 | at threshold | F1 at fixed thresholds |")
    print("|---|---:|---:|---:|")
    for name, s in sorted(scores.items(), key=lambda kv: -best_f1(kv[1], gold)[0]):
        f, t = best_f1(s, gold)
        fixed = ", ".join(f"{f1_at(s, gold, t):.3f} at {t}" for t in FIXED.get(name, ()))
        print(f"| {name} | {f:.3f} | {t:.3f} | {fixed} |")


def read_latin1(path: Path) -> str:
    return path.read_bytes().decode("latin-1").replace("\r\n", "\n")


def clough(root: Path) -> None:
    rows = list(csv.DictReader((root / "file_information.csv").open(encoding="latin-1")))
    texts, pairs, gold = [], [], []
    origs = {}
    for r in rows:
        if r["Category"] == "orig":
            origs[r["Task"]] = len(texts)
            texts.append(read_latin1(root / "files" / r["File"]))
    for r in rows:
        if r["Category"] != "orig":
            pairs.append((origs[r["Task"]], len(texts)))
            gold.append(r["Category"] in ("cut", "light"))
            texts.append(read_latin1(root / "files" / r["File"]))
    report(
        "Clough & Stevenson (answer vs. source; cut + light = near-duplicate)", measures(texts, pairs), np.array(gold)
    )


WORDS = [f"{c}{v}{e}{i}" for i, (c, v, e) in enumerate(itertools.product("bdfgklmnprstvz", "aeiou", "lmnrst"))]


STOP = ["the", "a", "of", "to", "is", "and", "in", "that", "was", "for", "on", "with"]


def sentence(rng: random.Random) -> str:
    words = (rng.choice(STOP) if rng.random() < 0.35 else rng.choice(WORDS) for _ in range(rng.randint(8, 22)))
    return " ".join(words).capitalize() + "."


def site_template(rng: random.Random, k: int) -> dict[str, str]:
    nav = "".join(f"<li><a href='/c{i}'>{rng.choice(WORDS).title()}</a></li>" for i in range(rng.randint(8, 20)))
    side = "".join(f"<li><a href='/p{i}'>{sentence(rng)}</a></li>" for i in range(rng.randint(4, 10)))
    foot = " ".join(sentence(rng) for _ in range(rng.randint(2, 5)))
    return {
        "head": f"<html><head><title>Site {k}</title><script>track({k})</script></head><body>"
        f"<header><div class=logo>Site {k} {rng.choice(WORDS)}</div><nav><ul>{nav}</ul></nav></header>",
        "tail": f"<aside><h3>Popular</h3><ul>{side}</ul></aside><footer><p>{foot}</p></footer></body></html>",
    }


def render(site: dict[str, str], title: str, paras: list[list[str]]) -> str:
    body = "".join("<p>" + " ".join(p) + "</p>" for p in paras)
    return f"{site['head']}<main><article><h1>{title}</h1>{body}</article></main>{site['tail']}"


def small_edits(rng: random.Random, paras: list[list[str]]) -> list[list[str]]:
    out = [list(p) for p in paras]
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(4)
        p = rng.choice(out)
        if k == 0:  # a changed word or number
            words = p[rng.randrange(len(p))].split()
            words[rng.randrange(len(words))] = str(rng.randint(2, 999))
            p[rng.randrange(len(p))] = " ".join(words)
        elif k == 1:  # an update sentence
            p.append("Update: " + sentence(rng))
        elif k == 2 and len(p) > 1:  # a dropped sentence
            del p[rng.randrange(len(p))]
        else:  # a credit line
            out.append([f"This article first appeared on Site {rng.randrange(9)}."])
    return out


def web_pages(sites_n: int, seed: int) -> tuple[list[str], list[int]]:
    """The web-like corpus: HTML pages and the story each carries (a negative number for a
    template page, unique to it); pages with the same story are the near-duplicates."""
    rng = random.Random(seed)
    sites = [site_template(rng, k) for k in range(sites_n)]
    pages, story = [], []  # story: id of the article a page carries (-1: template page, unique)
    hotel_text = [sentence(rng) for _ in range(6)]
    for s_idx, site in enumerate(sites):
        for _ in range(12):  # the site's own articles
            paras = [[sentence(rng) for _ in range(rng.randint(2, 5))] for _ in range(rng.randint(3, 7))]
            sid = len(story)
            pages.append(render(site, f"Story {sid}", paras))
            story.append(sid)
            for other in rng.sample(range(sites_n), rng.randint(0, 2)):  # syndicated copies
                if other != s_idx:
                    pages.append(render(sites[other], f"Story {sid}", small_edits(rng, paras)))
                    story.append(sid)
        for _ in range(6):  # template pages: "hotels near X", core content differs
            place = rng.choice(WORDS).title()
            facts = [
                [f"Hotels near {place}: {rng.randint(3, 90)} hotels from {rng.randint(30, 300)} dollars a night."],
                [f"{place} is {rng.randint(1, 40)} km from the centre. " + sentence(rng)],
                hotel_text,
                [f"Top rated near {place}: Hotel {rng.choice(WORDS).title()}, Hotel {rng.choice(WORDS).title()}."],
            ]
            pages.append(render(site, f"Hotels near {place}", facts))
            story.append(-len(pages))
    return pages, story


def web(sites_n: int, seed: int) -> None:
    pages, story = web_pages(sites_n, seed)
    pairs = list(itertools.combinations(range(len(pages)), 2))
    gold = np.array([story[a] == story[b] for a, b in pairs])
    for main in (False, True):
        texts = [html_to_text(p, main_content=main) for p in pages]
        title = f"web-like pages, {sites_n} sites ({'--main-content' if main else 'whole page text'})"
        report(title, measures(texts, pairs, char_edit=False), gold)


#: ``../shared`` from the project root: the shared data sit next to the clone, never inside it
CLOUGH = Path(__file__).resolve().parents[2] / "shared" / "data" / "clough-stevenson"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clough", type=Path, default=CLOUGH)
    ap.add_argument("--sites", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if (args.clough / "file_information.csv").exists():
        clough(args.clough)
    else:
        print(f"Clough & Stevenson corpus not found at {args.clough}: skipped")
    web(args.sites, args.seed)


if __name__ == "__main__":
    main()
