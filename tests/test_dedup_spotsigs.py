"""The SpotSigs dedup job (neardup.dedup_spotsigs) through neardup.pipeline.dedup.

Properties checked: the job's pairs are exactly brute-force weighted Jaccard over the
documents' spot signatures (with and without an IDF band, which makes the job read its input
twice); clusters are the components of that pair graph; documents without signatures are
counted as empty and never paired; results do not depend on threads or batch size; and on
articles wrapped in differing navigation, ads and footers SpotSigs pairs the copies of each
article while exact word 5-gram Jaccard at the same threshold misses every one of them.
"""

from __future__ import annotations

import importlib.util
import io as _io
import json
import random
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from neardup._kernels.measures import jaccard_sorted
from neardup.api import dedup
from neardup.core.components import components
from neardup.core.documents import DocBatch
from neardup.engine.local import LocalEngine
from neardup.methods.spotsigs.config import SpotSigsConfig
from neardup.methods.spotsigs.pairs import all_pairs_bruteforce, weighted_jaccard_rows
from neardup.methods.spotsigs.scheme import SpotSigsScheme, load_words
from neardup.methods.spotsigs.signatures import extract, idf_filter
from neardup.text.shingles import Shingling, shingle_batch

ROOT = Path(__file__).resolve().parents[1]


def _generator_module():
    spec = importlib.util.spec_from_file_location("_neardup_generate_corpus", ROOT / "examples" / "generate_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator_module()


def write_jsonl(path: Path, texts: list[str]) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8"
    )
    return path


@pytest.fixture(scope="module")
def news(tmp_path_factory) -> tuple[Path, list[str]]:
    """400 generated English-like documents with planted near-duplicates, plus a few without
    any signature (navigation only) and an empty one."""
    buf = _io.BytesIO()
    GEN.generate(400, 17, buf, None, dup_fraction=0.3, jobs=1)
    texts = [json.loads(line)["text"] for line in buf.getvalue().splitlines()]
    texts += ["Home | World | Sports | Login", "Home | World | Sports | Login", ""]
    return write_jsonl(tmp_path_factory.mktemp("news") / "news.jsonl", texts), texts


def pairs_of(result) -> set[tuple[int, int]]:
    a, b, _ = result.pairs
    return set(zip(a.tolist(), b.tolist()))


def test_config_validation():
    with pytest.raises(ValueError, match="threshold"):
        SpotSigsConfig(threshold=0)
    with pytest.raises(ValueError, match="threshold"):
        SpotSigsConfig(threshold=1.5)
    with pytest.raises(ValueError, match="idf_band"):
        SpotSigsConfig(idf_band=(0.9, 0.1))
    with pytest.raises(ValueError, match="idf_band"):
        SpotSigsConfig(idf_band=0.5)
    with pytest.raises(ValueError, match="spot_distance"):
        SpotSigsConfig(spot_distance=0)
    with pytest.raises(ValueError, match="chain"):
        SpotSigsConfig(chain=0)
    with pytest.raises(ValueError, match="key"):
        SpotSigsConfig(key="both")
    with pytest.raises(TypeError, match="load_words"):
        SpotSigsConfig(antecedents="words.txt")
    with pytest.raises(ValueError, match="single word token"):
        SpotSigsConfig(stopwords=["new york"])
    c = SpotSigsConfig(threshold=0.9, antecedents=["The", "a"], idf_band=[0.2, 0.85])
    assert c.idf_band == (0.2, 0.85) and c.antecedents == ("The", "a")
    assert c.scheme == SpotSigsScheme(antecedents=("a", "the"))
    assert c == SpotSigsConfig(threshold=0.9, antecedents=("The", "a"), idf_band=(0.2, 0.85))


@pytest.mark.parametrize("tau", [0.5, 0.8])
def test_pairs_are_bruteforce_weighted_jaccard(news, tau):
    path, texts = news
    config = SpotSigsConfig(threshold=tau)
    result = dedup([str(path)], config, want_pairs=True, workers=3, batch_size=64)
    sigs = extract(texts, config.scheme)
    brute = all_pairs_bruteforce(sigs, tau)
    a, b, sim = result.pairs
    assert np.array_equal(a, brute.a) and np.array_equal(b, brute.b)
    assert np.array_equal(sim, brute.similarity)
    assert len(a) > 20
    assert np.array_equal(result.root, components(len(texts), brute.a, brute.b))
    assert result.empty == int(np.count_nonzero(sigs.lengths == 0)) >= 3
    assert np.array_equal(result.similarity, weighted_jaccard_rows(sigs, np.arange(len(texts)), result.kept))
    assert "similarity computations" in result.summary and "pruned by length bound" in result.summary


def test_documents_without_signatures_are_never_paired(news):
    path, texts = news
    result = dedup([str(path)], SpotSigsConfig(threshold=0.5), want_pairs=True)
    nav = {len(texts) - 3, len(texts) - 2, len(texts) - 1}  # two identical nav pages, one empty
    assert not any(x in nav or y in nav for x, y in pairs_of(result))
    assert result.keep_mask[sorted(nav)].all()


def test_idf_band_reads_twice_and_filters_by_collection_df(news):
    path, texts = news
    band = (0.3, 0.95)
    config = SpotSigsConfig(threshold=0.6, idf_band=band)
    calls = []

    def read():
        calls.append(1)
        return (
            DocBatch(i, [f"d{k}" for k in range(i, min(i + 50, len(texts)))], texts[i : i + 50])
            for i in range(0, len(texts), 50)
        )

    found = LocalEngine(workers=2).run(config.plan(), read, want_pairs=True)
    assert len(calls) == 2
    filtered = idf_filter(extract(texts, config.scheme), band)
    brute = all_pairs_bruteforce(filtered, 0.6)
    assert np.array_equal(found.pairs[0], brute.a) and np.array_equal(found.pairs[1], brute.b)
    assert np.array_equal(found.empty, filtered.lengths == 0)
    assert "IDF band" in config.describe(found.counters)
    # the band changes the measure: without it the pair set differs on this corpus
    plain = all_pairs_bruteforce(extract(texts, config.scheme), 0.6)
    assert set(zip(plain.a.tolist(), plain.b.tolist())) != set(zip(brute.a.tolist(), brute.b.tolist()))


def test_result_does_not_depend_on_threads_or_batches(news):
    path, _ = news
    config = SpotSigsConfig(threshold=0.7, chain=3, key="chain")
    r1 = dedup([str(path)], config, want_pairs=True, workers=1, batch_size=1000)
    r2 = dedup([str(path)], config, want_pairs=True, workers=4, batch_size=9)
    assert pairs_of(r1) == pairs_of(r2)
    assert np.array_equal(r1.root, r2.root) and np.array_equal(r1.kept, r2.kept)
    assert r1.summary == r2.summary and r1.stats["counters"] == r2.stats["counters"]


def test_antecedents_from_a_file(news, tmp_path):
    path, texts = news
    f = tmp_path / "ants.txt"
    f.write_text("# only articles\nthe\na\nan\n", encoding="utf-8")
    config = SpotSigsConfig(threshold=0.8, antecedents=load_words(f))
    result = dedup([str(path)], config, want_pairs=True)
    brute = all_pairs_bruteforce(extract(texts, SpotSigsScheme(antecedents=("a", "an", "the"))), 0.8)
    assert pairs_of(result) == set(zip(brute.a.tolist(), brute.b.tolist()))


# ---------------------------------------------------------------------------------------------
# boilerplate: what SpotSigs is for


def _site(rng: random.Random):
    """A made-up site: name, navigation bar, ad blocks, a trending box, a footer. Mostly names,
    numbers and link labels, with the few function words real boilerplate has."""
    syl = "ka lo mi ne ru ta vo zi pe sa do fu gri bel mon tex".split()

    def name():
        return "".join(rng.choice(syl) for _ in range(rng.randint(2, 3))).capitalize()

    brand = f"{name()} {rng.choice(['Herald', 'Post', 'Daily', 'Times', 'Wire', 'News'])}"
    sections = [name() for _ in range(14)] + [
        "World",
        "Business",
        "Sports",
        "Opinion",
        "Weather",
        "Video",
        "Podcasts",
        "Login",
        "Subscribe",
        "Search",
    ]
    rng.shuffle(sections)
    ads = "\n".join(
        f"Sponsored: {name()} {name()} {rng.randint(10, 99)} - now {rng.randint(10, 60)}% off! "
        f"Free shipping on orders over ${rng.randint(20, 99)}. Shop deals"
        for _ in range(4)
    )
    trending = "Trending: " + " · ".join(f"{name()} {name()} {name()}" for _ in range(8))
    footer = (
        f"© {rng.randint(2000, 2024)} {brand}. All rights reserved. Privacy Policy | Terms of Use | "
        f"Cookie Settings | Contact Us | Careers | Advertise with us | Get the app | Newsletters | "
        + " | ".join(name() for _ in range(10))
    )
    return f"{brand}\n{' | '.join(sections)}\n{ads}\n{trending}\n\n", f"\n\n{ads}\n{footer}"


def test_spotsigs_sees_through_boilerplate_that_5gram_jaccard_does_not(tmp_path):
    """12 generated news articles, each published on 3 different made-up sites (so 36 pages and
    36 true pairs): SpotSigs at tau = 0.8 finds exactly the 36 pairs; exact word 5-gram Jaccard
    at the same tau finds none of them (the boilerplate is about 40% of each page)."""
    g = GEN.Generator(7)
    g.start_block(0)
    articles = []
    while len(articles) < 12:
        doc = g.document()
        text = g.original(doc)["text"]
        if doc["genre"] == "news" and len(text.split()) >= 120:
            articles.append(text)
    rng = random.Random(3)
    pages, source = [], []
    for k, article in enumerate(articles):
        for _ in range(3):
            head, foot = _site(rng)
            pages.append(head + article + foot)
            source.append(k)
    truth = {(i, j) for i, j in combinations(range(len(pages)), 2) if source[i] == source[j]}
    tau = 0.8

    result = dedup([str(write_jsonl(tmp_path / "pages.jsonl", pages))], SpotSigsConfig(threshold=tau), want_pairs=True)
    assert pairs_of(result) == truth
    assert result.n_removed == 24

    values, offsets = shingle_batch(pages, Shingling("word", 5))
    shingles = [values[offsets[i] : offsets[i + 1]] for i in range(len(pages))]
    five = {(i, j): jaccard_sorted(shingles[i], shingles[j]) for i, j in combinations(range(len(pages)), 2)}
    assert max(five[p] for p in truth) < tau  # misses every true pair
    assert {p for p, s in five.items() if s >= tau} == set()
