"""The contract suite: every registered method, through every engine, under the same rules.

For each method (its default config and the variants below) on a generated corpus with planted
near-copies, exact copies and empty documents:

- the job agrees with a brute-force reference of the method's definition (pairs and clusters);
- the local engine gives identical output for 1, 2 and 3 workers, and the reference engine
  (candidates by their definition, group by group) gives the same output again;
- the exact pre-pass changes nothing;
- the plan pickles and names only module-level functions;
- the scheme and the config survive ``to_dict`` / ``from_dict`` through JSON;
- an index built from the same documents answers each document's query with exactly its pairs
  in the batch result (methods with an index).

A method registered without a brute-force reference here fails ``test_every_method_is_covered``.
"""

from __future__ import annotations

import json
import pickle
import random
from dataclasses import replace
from functools import cache, lru_cache

import numpy as np
import pytest

from neardup._kernels.hashing import hash_str
from neardup.core.components import components
from neardup.core.documents import InMemorySource
from neardup.core.plan import GroupBy, Scan, Step
from neardup.engine import LocalEngine, ReferenceEngine
from neardup.methods.base import MethodConfig
from neardup.methods.exact.config import ExactConfig
from neardup.methods.imatch.config import IMatchConfig
from neardup.methods.imatch.signatures import df_bounds
from neardup.methods.minhash.config import MinHashConfig
from neardup.methods.minhash.sketch import MinHasher
from neardup.methods.registry import config_from_dict, config_to_dict, get_method, method_names, scheme_from_dict
from neardup.methods.simhash.config import SimHashConfig
from neardup.methods.simhash.scheme import popcount_array
from neardup.methods.simhash.sketch import SimHasher, fit_idf
from neardup.methods.spotsigs.config import SpotSigsConfig
from neardup.methods.spotsigs.pairs import all_pairs_bruteforce
from neardup.methods.spotsigs.signatures import extract, idf_filter
from neardup.text.edit import edit_similarity
from neardup.text.normalize import char_stream, tokenize
from neardup.text.shingles import Shingling, shingle

# --------------------------------------------------------------------------------------------
# the corpus


@lru_cache(maxsize=1)
def corpus() -> tuple[list[str], list[str]]:
    """~260 documents: originals, copies with a few substituted words, exact copies that differ
    only in case and spacing, sentence drops, and empty or feature-less documents."""
    rng = random.Random(2026)
    vocab = [f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lmnrst')}{i}" for i in range(900)]
    stop = ["the", "a", "of", "to", "is", "and", "in", "at", "there", "was"]
    texts: list[str] = []
    for _ in range(200):
        if texts and rng.random() < 0.4:
            src = texts[rng.randrange(len(texts))].split()
            kind = rng.random()
            if kind < 0.2 and src:  # an exact copy after normalization
                texts.append("  ".join(w.upper() if rng.random() < 0.3 else w for w in src))
                continue
            if kind < 0.35 and len(src) > 20:  # a dropped stretch
                cut = rng.randrange(len(src) - 10)
                src = src[:cut] + src[cut + rng.randint(1, 6) :]
            for _ in range(rng.randint(0, 5)):
                src[rng.randrange(len(src))] = rng.choice(vocab)
            texts.append(" ".join(src))
        else:
            words = [rng.choice(stop) if rng.random() < 0.3 else rng.choice(vocab) for _ in range(rng.randint(30, 90))]
            texts.append(" ".join(words))
    texts += ["", "   ", "!!! ...", "", "one two"]
    order = list(range(len(texts)))
    rng.shuffle(order)
    texts = [texts[i] for i in order]
    return [f"doc-{i:04d}" for i in range(len(texts))], texts


# --------------------------------------------------------------------------------------------
# brute-force references: the pairs (a < b) each method's definition makes near-duplicates


def _pairs_where(mask: np.ndarray) -> set[tuple[int, int]]:
    a, b = np.nonzero(np.triu(mask, k=1))
    return set(zip(a.tolist(), b.tolist()))


def brute_minhash(config: MinHashConfig, texts: list[str]) -> tuple[set, bool]:
    """Pairs of non-empty documents whose similarity (signature estimate, or exact Jaccard with
    ``verify="exact"``) reaches the threshold. LSH may miss a few: (pairs, exact=False)."""
    if config.verify == "edit":
        _, counts = MinHasher(scheme=config.scheme).sign_texts_with_counts(texts)
        n = len(texts)
        mask = np.zeros((n, n), dtype=bool)
        for i in range(n):
            for j in range(i + 1, n):
                if counts[i] and counts[j]:
                    mask[i, j] = edit_similarity(texts[i], texts[j], config.edit_level) >= config.threshold
        return _pairs_where(mask), False
    if config.verify == "exact":
        sets = [set(shingle(t, config.shingling).tolist()) for t in texts]
        n = len(sets)
        mask = np.zeros((n, n), dtype=bool)
        for i in range(n):
            for j in range(i + 1, n):
                if sets[i] and sets[j]:
                    mask[i, j] = len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= config.threshold
        return _pairs_where(mask), False
    values, counts = MinHasher(scheme=config.scheme).sign_texts_with_counts(texts)
    k = config.num_perm
    equal = (values[:, None, :] == values[None, :, :]).sum(axis=2)
    nonempty = counts > 0
    return _pairs_where((equal / k >= config.threshold) & nonempty[:, None] & nonempty[None, :]), False


def brute_simhash(config: SimHashConfig, texts: list[str]) -> tuple[set, bool]:
    idf = fit_idf(texts, config.shingling, min_df=config.min_df) if config.weighting == "idf" else None
    hasher = SimHasher(scheme=config.scheme, idf=idf)
    values, counts = hasher.sign_texts_with_counts(texts)
    d = popcount_array(values[:, None, :] ^ values[None, :, :]).sum(axis=2)
    nonempty = counts > 0
    within = _pairs_where((d <= config.max_distance) & nonempty[:, None] & nonempty[None, :])
    return _edit_verified(config, texts, within), True


def brute_spotsigs(config: SpotSigsConfig, texts: list[str]) -> tuple[set, bool]:
    sigs = extract(texts, config.scheme)
    if config.idf_band is not None:
        sigs = idf_filter(sigs, config.idf_band)
    res = all_pairs_bruteforce(sigs, config.pair_threshold)
    return _edit_verified(config, texts, set(zip(res.a.tolist(), res.b.tolist()))), True


def _edit_verified(config, texts: list[str], candidates: set) -> set:
    """With ``verify="edit"``: the candidate pairs whose edit similarity reaches the threshold."""
    if getattr(config, "verify", None) != "edit":
        return candidates
    return {
        (i, j) for i, j in candidates if edit_similarity(texts[i], texts[j], config.edit_level) >= config.edit_threshold
    }


def brute_exact(config: ExactConfig, texts: list[str]) -> tuple[set, bool]:
    keys = [t if config.raw else char_stream(t) for t in texts]
    n = len(keys)
    mask = np.array([[keys[i] == keys[j] and keys[i] != "" for j in range(n)] for i in range(n)])
    return _pairs_where(mask), True


M64 = (1 << 64) - 1


def _fmix64(h: int) -> int:
    """MurmurHash3's 64-bit finaliser, in Python integers."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def _splitmix64(state: int) -> int:
    z = (state + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def brute_imatch(config: IMatchConfig, texts: list[str]) -> tuple[set, bool]:
    """I-Match by its definition: a document's signature under lexicon j is its set of lexicon
    terms (for j >= 1 the terms t with fmix64(t ^ salt_j) < fraction * 2**64), when it has at least
    ``min_terms``; documents with an equal signature under any lexicon are near-duplicates."""
    terms = [{hash_str(t) for t in tokenize(text)} for text in texts]
    df: dict[int, int] = {}
    for s in terms:
        for t in s:
            df[t] = df.get(t, 0) + 1
    lo, hi = df_bounds(len(texts), config.idf_band)
    limit = min(int(config.lexicon_fraction * 2.0**64), M64)
    salts = [_splitmix64((config.seed + j * 0x9E3779B97F4A7C15) & M64) for j in range(config.lexicons)]
    n = len(texts)
    mask = np.zeros((n, n), dtype=bool)
    for j, salt in enumerate(salts):
        sigs = []
        for s in terms:
            kept = {t for t in s if lo <= df[t] <= hi}
            if j > 0 and config.lexicon_fraction < 1:
                kept = {t for t in kept if _fmix64(t ^ salt) < limit}
            sigs.append(frozenset(kept) if kept and len(kept) >= config.min_terms else None)
        mask |= np.array([[sigs[i] is not None and sigs[i] == sigs[k] for k in range(n)] for i in range(n)])
    return _pairs_where(mask), True


BRUTE_FORCE = {
    "minhash": brute_minhash,
    "simhash": brute_simhash,
    "spotsigs": brute_spotsigs,
    "exact": brute_exact,
    "imatch": brute_imatch,
}

VARIANTS: dict[str, list[MethodConfig]] = {
    "minhash": [
        MinHashConfig(verify="exact", threshold=0.7, sketch="oph"),
        MinHashConfig(verify="edit", threshold=0.8, shingling=Shingling("word", 2)),
        MinHashConfig(verify="edit", edit_level="char", threshold=0.85, num_perm=64),
        MinHashConfig(shingling=Shingling("char", 5), num_perm=64, threshold=0.75),
    ],
    "simhash": [
        SimHashConfig(bits=64, max_distance=3),
        SimHashConfig(weighting="idf", max_distance=10),
        SimHashConfig(verify="edit", threshold=0.85, max_distance=24),
    ],
    "spotsigs": [
        SpotSigsConfig(threshold=0.6, idf_band=(0.1, 0.95)),
        SpotSigsConfig(verify="edit", threshold=0.85, edit_level="char"),
    ],
    "exact": [ExactConfig(raw=True)],
    "imatch": [IMatchConfig(lexicons=3, min_terms=3)],
}


def configs() -> tuple[list[MethodConfig], list[str]]:
    """Every registered method's default config and its variants, with test ids."""
    out, names = [], []
    for name in method_names():
        for i, config in enumerate([get_method(name)(), *VARIANTS.get(name, [])]):
            out.append(config)
            names.append(f"{name}-{'default' if i == 0 else i}")
    return out, names


CONFIGS, IDS = configs()


@cache
def run(config: MethodConfig, engine_key: str, want_pairs: bool = True):
    ids, texts = corpus()
    engine = ReferenceEngine() if engine_key == "reference" else LocalEngine(int(engine_key))
    return engine.run(config.plan(), InMemorySource(texts, ids, batch_size=37), want_pairs=want_pairs)


def pair_set(result) -> set[tuple[int, int]]:
    a, b, _ = result.pairs
    return set(zip(a.tolist(), b.tolist()))


def test_every_method_is_covered():
    for name in method_names():
        assert name in BRUTE_FORCE, f"method {name!r} has no brute-force reference in the contract suite"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_agrees_with_brute_force(config):
    ids, texts = corpus()
    expected, exact = BRUTE_FORCE[config.name](config, texts)
    result = run(config, "1")
    found = pair_set(result)
    assert len(expected) >= 5, "the corpus must give the method something to find"
    assert found <= expected, f"pairs the definition does not accept: {sorted(found - expected)[:5]}"
    if exact:
        assert found == expected
    else:
        assert len(found) >= 0.98 * len(expected), f"recall {len(found) / len(expected):.3f}"
    a, b, _ = result.pairs
    assert np.array_equal(result.root, components(len(texts), a, b)), "clusters = components of the pairs"
    assert result.empty[[i for i, t in enumerate(texts) if t == ""]].all(), "empty texts have no features"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_same_output_for_every_engine_and_worker_count(config):
    base = run(config, "1")
    for key in ("2", "3", "reference"):
        other = run(config, key)
        assert other.ids == base.ids
        for name in ("root", "kept", "similarity", "empty", "lengths"):
            assert np.array_equal(getattr(other, name), getattr(base, name)), f"{name} differs with engine {key}"
        for x, y in zip(other.pairs, base.pairs):
            assert np.array_equal(x, y), f"pairs differ with engine {key}"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_dask_engine_gives_the_same_output(config, dask_client):
    """The Dask engine on a LocalCluster of 2 worker processes: the local engine's answer."""
    from neardup.engine.dask_engine import DaskEngine

    base = run(config, "1")
    ids, texts = corpus()
    for want_pairs in (True, False):
        other = DaskEngine(dask_client, partitions=3).run(
            config.plan(), InMemorySource(texts, ids, batch_size=37), want_pairs=want_pairs
        )
        assert other.ids == base.ids
        for name in ("root", "kept", "similarity", "empty", "lengths"):
            assert np.array_equal(getattr(other, name), getattr(base, name)), f"{name} differs on dask"
        if want_pairs:
            for x, y in zip(other.pairs, base.pairs):
                assert np.array_equal(x, y), "pairs differ on dask"
        else:
            assert other.pairs is None


@pytest.mark.parametrize(
    "config",
    [c for c in CONFIGS if hasattr(c, "exact_prepass")],
    ids=[i for c, i in zip(CONFIGS, IDS) if hasattr(c, "exact_prepass")],
)
def test_exact_prepass_changes_nothing(config):
    on, off = run(replace(config, exact_prepass=True), "2"), run(replace(config, exact_prepass=False), "2")
    for name in ("root", "kept", "similarity", "empty"):
        assert np.array_equal(getattr(on, name), getattr(off, name)), name
    for x, y in zip(on.pairs, off.pairs):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_clusters_only_equals_clusters_with_pairs(config):
    with_pairs, without = run(config, "2", True), run(config, "2", False)
    assert without.pairs is None
    for name in ("root", "kept", "similarity"):
        assert np.array_equal(getattr(with_pairs, name), getattr(without, name)), name


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_plan_is_picklable_and_made_of_module_functions(config):
    plan = config.plan()
    again = pickle.loads(pickle.dumps(plan))
    assert again.config == config and len(again.stages) == len(plan.stages)
    functions = [plan.similarity]
    for stage in plan.stages:
        assert isinstance(stage, (Scan, Step, GroupBy))
        if isinstance(stage, Scan):
            functions += [stage.map, stage.reduce] + ([stage.prepare] if stage.prepare else [])
        elif isinstance(stage, Step):
            functions.append(stage.fn)
        else:
            functions += [stage.keys, stage.verify, stage.local]
    sharded = plan.sharded
    assert sharded is not None, "every plan has a sharded form: an engine can leave its state where it was made"
    functions += [sharded.keys, sharded.verify, sharded.similarity, sharded.empty]
    functions += [sharded.connect] if sharded.connect is not None else []
    if sharded.recheck is not None:  # its scan is one of the plan's, run in its place
        assert sharded.recheck.scan in plan.stages
        functions.append(sharded.recheck.verify)
    for fn in functions:
        assert "<locals>" not in fn.__qualname__ and "<lambda>" not in fn.__qualname__, fn


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_scheme_and_config_round_trip(config):
    scheme = config.scheme
    assert scheme_from_dict(json.loads(scheme.to_json())) == scheme
    assert type(scheme).from_dict(scheme.to_dict()) == scheme
    data = json.loads(json.dumps(config_to_dict(config)))
    assert config_from_dict(data) == config


def _has_index(config: MethodConfig) -> bool:
    from neardup.index import index_for

    try:
        index_for(config)
    except (NotImplementedError, ValueError):
        return False
    return True


INDEXED = [c for c in CONFIGS if _has_index(c) and getattr(c, "verify", "signature") == "signature"]


@pytest.mark.parametrize("config", INDEXED, ids=[f"{c.name}-{i}" for i, c in enumerate(INDEXED)])
def test_index_query_equals_batch_pairs(config):
    from neardup.index import index_for

    ids, texts = corpus()
    batch = run(config, "1")
    neighbours: dict[int, dict[int, float]] = {i: {} for i in range(len(texts))}
    for a, b, s in zip(*(x.tolist() for x in batch.pairs)):
        neighbours[a][b] = s
        neighbours[b][a] = s
    sketched = config.sketch_texts(texts)
    index = index_for(config)
    index.add(list(range(len(texts))), sketched.values, empty=sketched.empty)
    answers = index.query_batch(sketched.values)
    for i, matches in enumerate(answers):
        got = {key: s for key, s in matches if key != i}
        assert got == pytest.approx(neighbours[i]), f"document {i}"


def _external_stage(config: MethodConfig) -> str | None:
    """The candidate stage that must take its external form (sorted on disk) under a tiny budget."""
    if getattr(config, "verify", None) == "edit" and config.name in ("simhash",):
        return None  # its candidates are the pairs to verify: as large as the output
    return {
        "minhash": "minhash bands",
        "simhash": "simhash tables",
        "exact": "exact groups",
        "imatch": "imatch groups",
    }.get(config.name)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_a_tiny_memory_budget_gives_the_same_output(config):
    """A budget of 16 KB: every array that grows with the collection goes to a spill file, and
    the candidate stage sorts its keys on disk in parts (MinHash's bands, SimHash's permuted
    tables, the equal-key groups of exact and I-Match), with the in-memory job's answer.
    SpotSigs' search, which holds its inverted lists in memory, is refused at 16 KB with one
    line, and gives the same answer at 256 KB with everything else spilled."""
    from neardup.core.budget import BudgetError

    ids, texts = corpus()
    memory = "16KB"
    if config.name == "spotsigs":
        engine = LocalEngine(2, memory=memory)
        with pytest.raises(BudgetError, match=r"^SpotSigs' all-pairs search of \d+ documents .* --memory") as caught:
            engine.run(config.plan(), InMemorySource(texts, ids, batch_size=37))
        assert "\n" not in str(caught.value)
        memory = "256KB"
    for want_pairs in (True, False):
        for keep in ("first", "longest"):
            base = LocalEngine(2).run(
                config.plan(), InMemorySource(texts, ids, batch_size=37), keep=keep, want_pairs=want_pairs
            )
            engine = LocalEngine(2, memory=memory)
            other = engine.run(
                config.plan(), InMemorySource(texts, ids, batch_size=37), keep=keep, want_pairs=want_pairs
            )
            assert engine.last_spill.spilled, "nothing went to disk"
            stage = _external_stage(config)
            if stage is not None:
                assert stage in engine.last_spill.external, f"{stage} did not run on disk"
            assert not isinstance(other.ids, list) and other.ids == base.ids
            for name in ("root", "kept", "similarity", "empty", "lengths"):
                assert np.array_equal(getattr(other, name), getattr(base, name)), f"{name} differs under the budget"
            assert other.counters == base.counters
            if want_pairs:
                for x, y in zip(other.pairs, base.pairs):
                    assert np.array_equal(x, y), "pairs differ under the budget"
