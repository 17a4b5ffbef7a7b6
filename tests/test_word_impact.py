"""Per-word / per-operation / per-script impact tables and adjusted p-values, on small frames with
known answers (statsmodels is not in the venv: the adjustments are checked against hand-computed
values and against the step-down / step-up rejection procedures run directly)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalpipe.errors import InputError
from evalpipe.scoring.intervals import minimum_attainable_p
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
from evalpipe.scoring.names import POOLED
from evalpipe.scoring.robustness import originals_of, word_table
from evalpipe.scoring.simulate import cluster_bootstrap_ci
from evalpipe.scoring.word_impact import ImpactSettings, build_impact, top_words
from tests.scoring_fixtures import impact_of, pairs_of

WORDS = {
    "english": pd.DataFrame({
        "rank": [1, 2, 3], "word": ["the", "of", "and"], "lemma": [None] * 3, "pos": [None] * 3,
        "score": [9.0, 8.0, 7.0], "source": ["wordfreq"] * 3,
    }),
    "japanese": pd.DataFrame({
        "rank": [1, 2], "word": ["の", "ある"], "lemma": ["の", "有る"], "pos": ["助詞", "動詞"],
        "score": [50000.0, 9000.0], "source": ["bccwj"] * 2,
    }),
}  # fmt: skip
RANKS = {"the": 1, "of": 2, "and": 3, "の": 1, "ある": 2}


def _rows(benchmark, examples, *, model="m"):
    """examples: list of (example_id, correct_original, {word: (correct_perturbed, fired, ops)})
    where ops is a list of (op, original_char, new_char)."""
    scored, perturbed = [], []
    for example_id, correct, hits in examples:
        scored.append({
            "benchmark": benchmark, "example_id": example_id, "variant": "original",
            "word_rank": 0, "correct": correct, "model": model, "parse_status": "strict",
            "occurrences": 0, "perturbed_occurrences": 0,
        })  # fmt: skip
        for word, (right, fired, ops) in hits.items():
            scored.append({
                "benchmark": benchmark, "example_id": example_id, "variant": word,
                "word_rank": RANKS[word], "correct": right, "model": model,
                "parse_status": "strict", "occurrences": fired + 1, "perturbed_occurrences": fired,
            })  # fmt: skip
            perturbed.append({
                "benchmark": benchmark, "example_id": example_id, "word_rank": RANKS[word],
                "perturbations": [
                    {"op": op, "original_char": o, "new_char": n} for op, o, n in ops
                ],
            })  # fmt: skip
    return pd.DataFrame(scored), pd.DataFrame(perturbed)


def _build(benchmarks, *, small_n=0, languages=None):
    scored, perturbed = {}, {}
    for name, examples in benchmarks.items():
        scored[name], perturbed[name] = _rows(name, examples)
    languages = languages or dict.fromkeys(benchmarks, "english")
    return impact_of(
        scored,
        perturbed,
        WORDS,
        languages=languages,
        settings=ImpactSettings(level=0.95, small_n=small_n),
    )


REPLACE = [("replace", "e", "x")]


def _no_effect_examples(prefix, n=40):
    # Half the examples flip one way, half the other: symmetric noise, no effect on average.
    examples = []
    for i in range(n):
        correct = i % 2 == 0
        flipped = i % 8 in (0, 1)  # 5 c2i and 5 i2c out of 40
        examples.append((f"{prefix}{i}", correct, {"the": (correct ^ flipped, 1, REPLACE)}))
    return examples


# ----------------------------------------------------------------------------- adjusted p-values


def test_holm_and_bh_match_hand_computed_values():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max.
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: sorted times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04 -> running min from the top.
    assert benjamini_hochberg(p).tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]  # capped at 1
    assert benjamini_hochberg([1.0, 1.0]).tolist() == [1.0, 1.0]


def test_missing_p_values_stay_missing_and_leave_the_family():
    out = holm([0.01, None, float("nan"), 0.02])
    assert np.isnan(out[1]) and np.isnan(out[2])
    assert out[[0, 3]].tolist() == pytest.approx([0.02, 0.02])  # m = 2, not 4
    assert holm([]).size == 0 and benjamini_hochberg([]).size == 0


def _holm_rejects(p, alpha):
    order = np.argsort(p, kind="stable")
    rejected = np.zeros(len(p), dtype=bool)
    for step, index in enumerate(order):
        if p[index] > alpha / (len(p) - step):
            break
        rejected[index] = True
    return rejected


def _bh_rejects(p, alpha):
    sorted_p = np.sort(p)
    passing = np.nonzero(sorted_p <= alpha * np.arange(1, len(p) + 1) / len(p))[0]
    if passing.size == 0:
        return np.zeros(len(p), dtype=bool)
    return np.asarray(p) <= sorted_p[passing.max()]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30),
    st.sampled_from([0.01, 0.05, 0.1, 0.25]),
)
def test_adjusted_p_values_reject_exactly_what_the_procedures_reject(p, alpha):
    p = np.asarray(p)
    assert np.array_equal(holm(p) <= alpha, _holm_rejects(p, alpha))
    assert np.array_equal(benjamini_hochberg(p) <= alpha, _bh_rejects(p, alpha))
    assert np.all(benjamini_hochberg(p) <= holm(p) + 1e-12)  # FDR is the less strict guarantee
    assert np.all(holm(p) >= p - 1e-12)


def test_p_values_outside_the_unit_interval_are_rejected():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])


# ----------------------------------------------------------------------------- bootstrap


def test_clustered_bootstrap_is_wider_than_naive_when_occurrences_cluster():
    # 30 examples, each carrying 8 occurrences that share the example's outcome: the occurrences
    # are not 30 * 8 independent observations.
    rng = np.random.default_rng(3)
    per_example = rng.choice([-1.0, 0.0, 0.0, 1.0], size=30)
    diff = np.repeat(per_example, 8)
    clusters = np.repeat(np.arange(30), 8)
    naive = cluster_bootstrap_ci(diff, samples=2000, level=0.95, seed=1)
    clustered = cluster_bootstrap_ci(diff, clusters=clusters, samples=2000, level=0.95, seed=1)
    naive_width = naive[1] - naive[0]
    clustered_width = clustered[1] - clustered[0]
    # sqrt(8) = 2.8 in theory.
    assert clustered_width > 2.2 * naive_width
    # With one row per cluster both are the same bootstrap.
    assert cluster_bootstrap_ci(
        per_example, clusters=np.arange(30), samples=500, level=0.9, seed=4
    ) == cluster_bootstrap_ci(per_example, samples=500, level=0.9, seed=4)


def test_unclustered_bootstrap_agrees_with_scipy_percentile_bootstrap():
    from scipy.stats import bootstrap

    rng = np.random.default_rng(8)
    diff = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], size=150, p=[0.3, 0.2, 0.2, 0.2, 0.1])
    ours = cluster_bootstrap_ci(diff, samples=20000, level=0.95, seed=3)
    ref = bootstrap(
        (diff,), np.mean, n_resamples=20000, confidence_level=0.95, method="percentile",
        random_state=np.random.default_rng(4),
    ).confidence_interval  # fmt: skip
    assert ours == pytest.approx((ref.low, ref.high), abs=0.012)


def test_clustered_bootstrap_width_matches_the_cluster_robust_standard_error():
    # Clusters of unequal size with a shared outcome: the bootstrap SD of the row mean should match
    # the cluster-robust (CR0 / sandwich) standard error sqrt(sum_c (T_c - m n_c)^2) / N.
    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 12, size=60)
    outcome = rng.choice([-1.0, 0.0, 1.0], size=60, p=[0.35, 0.45, 0.2])
    diff = np.repeat(outcome, sizes)
    clusters = np.repeat(np.arange(60), sizes)
    mean = diff.mean()
    totals = outcome * sizes
    se = np.sqrt(np.sum((totals - mean * sizes) ** 2)) / diff.size
    low, high = cluster_bootstrap_ci(diff, clusters=clusters, samples=20000, level=0.95, seed=5)
    assert (high - low) == pytest.approx(2 * 1.96 * se, rel=0.12)
    naive_low, naive_high = cluster_bootstrap_ci(diff, samples=20000, level=0.95, seed=5)
    assert (naive_high - naive_low) < 0.6 * (high - low)


def test_stratified_bootstrap_keeps_each_benchmark_weight_fixed():
    # Benchmark a: 10 pairs, all correct -> incorrect; b: 30 pairs, no change. Stratified by
    # benchmark, every resample has 10 a-pairs and 30 b-pairs: delta is exactly -0.25 each time.
    diff = np.r_[np.full(10, -1.0), np.zeros(30)]
    strata = np.r_[np.full(10, "a"), np.full(30, "b")]
    assert cluster_bootstrap_ci(diff, strata=strata, samples=300, level=0.95, seed=2) == (
        -0.25,
        -0.25,
    )
    low, high = cluster_bootstrap_ci(diff, samples=300, level=0.95, seed=2)
    assert low < -0.25 < high  # unstratified, the mix varies


# ----------------------------------------------------------------------------- word table


def test_word_without_effect_has_a_ci_covering_zero_and_p_one():
    words, _, _ = _build({"gsm8k": _no_effect_examples("g")})
    row = words.loc[(words["scope"] == "gsm8k") & (words["word"] == "the")].iloc[0]
    assert row["delta"] == 0.0
    assert (row["n_c2i"], row["n_i2c"]) == (5, 5)
    assert row["ci_low"] < 0 < row["ci_high"]
    assert row["mcnemar_p"] == pytest.approx(1.0)
    assert row["p_holm"] == pytest.approx(1.0) and row["p_bh"] == pytest.approx(1.0)


def test_undefined_cases_pdr_null_and_p_one_without_discordant_pairs():
    examples = [(f"e{i}", False, {"the": (False, 1, REPLACE)}) for i in range(5)]
    words, _, _ = _build({"gsm8k": examples})
    row = words.iloc[0]
    assert row["accuracy_original"] == 0.0
    assert pd.isna(row["pdr"])
    assert (row["n_c2i"], row["n_i2c"]) == (0, 0)
    assert row["mcnemar_p"] == 1.0 and row["p_holm"] == 1.0 and row["p_bh"] == 1.0
    # Five concordant pairs do not prove "no effect": Tango's interval is +-z^2 / (n + z^2).
    half = 1.959964**2 / (5 + 1.959964**2)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((-half, half), abs=1e-6)
    assert row["ci_method"] == "tango_score"


def test_pooled_delta_is_example_weighted_over_benchmarks():
    # a: 10 examples, "the" flips every one right -> wrong (delta -1); b: 30 examples, no change.
    a = [(f"a{i}", True, {"the": (False, 1, REPLACE)}) for i in range(10)]
    b = [(f"b{i}", True, {"the": (True, 2, REPLACE)}) for i in range(30)]
    words, _, _ = _build({"gsm8k": a, "mmlu": b})
    pooled = words.loc[words["scope"] == POOLED].iloc[0]
    assert pooled["n"] == 40 and pooled["n_benchmarks"] == 2
    assert pooled["delta"] == pytest.approx(-0.25)  # 10/40 * -1 + 30/40 * 0
    # The stratified bootstrap gave [-0.25, -0.25] here (no variation within either benchmark);
    # the score interval on the pooled counts (10 of 40 pairs went wrong) keeps its width.
    assert pooled["ci_low"] < -0.25 < pooled["ci_high"] < 0
    assert pooled["pdr"] == pytest.approx(0.25)
    assert pooled["occurrences"] == 10 * 2 + 30 * 3
    assert pooled["perturbed_occurrences"] == 10 + 60
    # Upstream impact over the 40 examples of both benchmarks: (10 - 0) / 40 / 70.
    assert pooled["per_occurrence_impact"] == pytest.approx(10 / 40 / 70)
    scopes = words.set_index("scope")
    assert scopes.loc["gsm8k", "delta"] == -1.0 and scopes.loc["mmlu", "delta"] == 0.0


def test_per_benchmark_impact_matches_the_upstream_definition_in_robustness():
    rng = np.random.default_rng(11)
    examples = []
    for i in range(25):
        hits = {}
        for word in ("the", "of", "and"):
            if rng.random() < 0.7:
                hits[word] = (bool(rng.random() < 0.5), int(rng.integers(1, 4)), REPLACE)
        examples.append((f"e{i:02d}", bool(rng.random() < 0.6), hits))
    scored, _ = _rows("gsm8k", examples)
    words, _, _ = _build({"gsm8k": examples})
    ours = words.loc[words["scope"] == "gsm8k"].set_index("variant")
    upstream = word_table(
        pairs_of({"gsm8k": scored}), originals=originals_of(scored), level=0.95
    ).set_index("word")
    for word in upstream.index:
        assert ours.loc[word, "per_occurrence_impact"] == pytest.approx(
            upstream.loc[word, "per_occurrence_impact"]
        )
        assert ours.loc[word, "delta"] == pytest.approx(upstream.loc[word, "delta"])
        assert ours.loc[word, "mcnemar_p"] == pytest.approx(upstream.loc[word, "mcnemar_p"])


def test_words_carry_list_metadata_and_are_sorted_by_impact():
    examples = []
    for i in range(40):
        examples.append((
            f"e{i}", True,
            {
                "the": (i % 4 != 0, 1, REPLACE),        # delta -0.25
                "of": (i % 2 != 0, 1, REPLACE),         # delta -0.5
                **({"and": (False, 1, REPLACE)} if i < 3 else {}),  # n = 3, delta -1
            },
        ))  # fmt: skip
    words, _, _ = _build({"gsm8k": examples}, small_n=10)
    pooled = words.loc[words["scope"] == POOLED]
    assert pooled["word"].tolist() == ["of", "the", "and"]  # small n last despite delta -1
    assert pooled["impact_rank"].tolist() == [1, 2, 3]
    assert pooled["small_n"].tolist() == [False, False, True]
    the = pooled.set_index("word").loc["the"]
    assert (the["rank"], the["frequency_score"], the["source"], the["language"]) == (
        1, 9.0, "wordfreq", "english",
    )  # fmt: skip
    assert the["model"] == "m"
    # Holm over the three words of the table: p of "of" (20 discordant, all c2i) times 3.
    indexed = pooled.set_index("word")
    floor = minimum_attainable_p(indexed["n_c2i"] + indexed["n_i2c"], indexed["design_effect"])
    adjusted = holm(indexed["mcnemar_p"].to_numpy(), min_p=floor)
    assert pooled.set_index("word")["p_holm"].tolist() == pytest.approx(adjusted.tolist())
    assert pooled["scope"].tolist() == [POOLED] * 3
    assert words["scope"].tolist() == [POOLED] * 3 + ["gsm8k"] * 3


def test_japanese_rows_get_lemma_pos_and_their_language():
    examples = [(f"j{i}", True, {"の": (i % 2 == 0, 1, [("replace", "の", "は")])})
                for i in range(6)]  # fmt: skip
    words, _, scripts = _build({"jnli": examples}, languages={"jnli": "japanese"})
    row = words.iloc[0]
    assert (row["word"], row["lemma"], row["pos"], row["source"], row["language"]) == (
        "の", "の", "助詞", "bccwj", "japanese",
    )  # fmt: skip
    assert scripts["script"].unique().tolist() == ["hiragana"]


def test_top_words_csv_lists_reliable_words_first_and_marks_small_n():
    examples = [(f"e{i}", True, {"the": (i % 2 == 1, 1, REPLACE), "of": (True, 1, REPLACE),
                 **({"and": (False, 1, REPLACE)} if i < 2 else {})}) for i in range(20)]  # fmt: skip
    words, _, _ = _build({"gsm8k": examples}, small_n=5)
    top = top_words(words, language="english", top_n=1, level=0.95)
    assert top["label"].tolist() == ["the (#1, n=20)"]
    assert top["delta"].tolist() == [-0.5]
    # "and" (n = 2, delta -1) only fills the list after the reliable words, and says so.
    top = top_words(words, language="english", top_n=3, level=0.95)
    assert top["label"].tolist() == ["the (#1, n=20)", "of (#2, n=20)", "and (#3, n=2, small n)"]
    assert top["small_n"].tolist() == [False, False, True]
    assert top_words(words, language="japanese", top_n=5, level=0.95).empty


# ----------------------------------------------------------------------------- ops and scripts


def test_each_pair_is_attributed_to_one_operation_or_to_mixed():
    examples = [
        ("e0", True, {"the": (False, 1, [("replace", "t", "q")])}),
        ("e1", True, {"the": (False, 2, [("delete", "h", None), ("delete", "e", None)])}),
        ("e2", True, {"the": (True, 2, [("insert", None, "z"), ("delete", "e", None)])}),
        ("e3", True, {"the": (True, 1, [("insert", None, "z")])}),
    ]
    _, operations, _ = _build({"gsm8k": examples})
    pooled = operations.loc[operations["scope"] == POOLED].set_index("op")
    assert sorted(pooled.index) == ["delete", "insert", "mixed", "replace"]
    assert pooled["n"].sum() == 4  # a partition: no pair counted twice
    assert pooled.loc["replace", "delta"] == -1.0
    assert pooled.loc["delete", "perturbed_occurrences"] == 2
    assert pooled.loc["mixed", "delta"] == 0.0
    assert pooled.index[0] in ("replace", "delete")  # the harmful ones sort first


def test_script_of_an_edit_is_the_class_of_the_character_it_acts_on():
    examples = [
        ("e0", True, {"の": (False, 1, [("replace", "漢", "字")])}),
        ("e1", True, {"の": (False, 1, [("insert", None, "カ")])}),
        ("e2", True, {"の": (True, 1, [("delete", "ひ", None)])}),
        ("e3", True, {"の": (True, 1, [("replace", "a", "b")])}),
        ("e4", True, {"の": (True, 2, [("replace", "a", "b"), ("delete", "ひ", None)])}),
        ("e5", True, {"の": (True, 1, [("delete", "。", None)])}),
    ]
    _, _, scripts = _build({"jnli": examples}, languages={"jnli": "japanese"})
    pooled = scripts.loc[scripts["scope"] == POOLED].set_index("script")
    assert sorted(pooled.index) == ["hiragana", "kanji", "katakana", "latin", "mixed", "other"]
    assert pooled.loc["kanji", "delta"] == -1.0
    assert pooled.loc["katakana", "delta"] == -1.0
    assert pooled.loc["hiragana", "delta"] == 0.0


def test_operation_ci_resamples_examples_hit_by_several_words():
    # Every example is hit by three words with the same outcome: in the operation table the
    # example appears three times, and its CI must be the example-level one.
    rng = np.random.default_rng(5)
    examples = []
    for i in range(30):
        flip = bool(rng.random() < 0.4)
        hits = {w: (not flip, 1, REPLACE) for w in ("the", "of", "and")}
        examples.append((f"e{i}", True, hits))
    _, operations, _ = _build({"gsm8k": examples})
    row = operations.loc[operations["scope"] == POOLED].iloc[0]
    assert row["n"] == 90 and row["n_words"] == 3
    diff = np.array([-1.0 if not e[2]["the"][0] else 0.0 for e in examples])
    per_example = cluster_bootstrap_ci(
        diff, strata=["gsm8k"] * 30, samples=2000, level=0.95, seed=0
    )
    naive = cluster_bootstrap_ci(np.repeat(diff, 3), samples=2000, level=0.95, seed=0)
    width = row["ci_high"] - row["ci_low"]
    assert width == pytest.approx(per_example[1] - per_example[0], abs=0.07)
    assert width > 1.4 * (naive[1] - naive[0])


# ----------------------------------------------------------------------------- contract


def test_tables_are_deterministic_and_carry_the_contract_columns():
    examples = _no_effect_examples("g", n=16)
    first = _build({"gsm8k": examples, "bbh": _no_effect_examples("b", n=12)})
    again = _build({"bbh": _no_effect_examples("b", n=12), "gsm8k": examples})
    for a, b in zip(first, again, strict=True):
        pd.testing.assert_frame_equal(a, b)
    words, operations, scripts = first
    contract = {
        "model", "language", "source", "scope", "word", "lemma", "pos", "rank", "frequency_score",
        "occurrences", "perturbed_occurrences", "n", "accuracy_original", "accuracy_perturbed",
        "delta", "ci_low", "ci_high", "pdr", "flip_c2i", "flip_i2c", "n_c2i", "n_i2c",
        "mcnemar_p", "p_holm", "p_bh", "per_occurrence_impact", "small_n",
    }  # fmt: skip
    assert contract <= set(words.columns)
    assert contract - {"word", "lemma", "pos", "rank", "frequency_score"} | {"op"} <= set(
        operations.columns
    )
    assert "script" in scripts.columns
    assert words["model"].notna().all()


def test_several_models_get_their_own_rows_and_pairs():
    a_scored, perturbed = _rows("gsm8k", _no_effect_examples("g", n=8), model="model-a")
    b_examples = [(f"g{i}", True, {"the": (False, 1, REPLACE)}) for i in range(8)]
    b_scored, _ = _rows("gsm8k", b_examples, model="model-b")
    words, operations, _ = impact_of(
        {"gsm8k": pd.concat([a_scored, b_scored], ignore_index=True)},
        {"gsm8k": perturbed},
        WORDS,
        languages={"gsm8k": "english"},
        settings=ImpactSettings(level=0.95, small_n=0),
    )
    pooled = words.loc[words["scope"] == POOLED].set_index("model")
    assert pooled.loc["model-a", "delta"] == 0.0 and pooled.loc["model-b", "delta"] == -1.0
    assert pooled["n"].tolist() == [8, 8]
    assert sorted(operations["model"].unique()) == ["model-a", "model-b"]
    top = top_words(words, language="english", top_n=5, level=0.95)
    assert top["label"].tolist() == ["model-a: the (#1, n=8)", "model-b: the (#1, n=8)"]


def test_missing_columns_orphans_and_missing_word_lists_are_input_errors():
    scored, _ = _rows("gsm8k", _no_effect_examples("g", n=4))
    settings_ = ImpactSettings(level=0.95, small_n=30)
    pairs = pairs_of({"gsm8k": scored})
    n_base = pd.DataFrame({"model": ["m"], "view": ["gsm8k"], "n_base": [4]})
    with pytest.raises(InputError, match=r"pairs: missing column\(s\) cluster"):
        build_impact(pairs.drop(columns="cluster"), WORDS, n_base=n_base, settings=settings_)
    orphan = scored.loc[~((scored["example_id"] == "g1") & (scored["variant"] == "original"))]
    with pytest.raises(InputError, match=r"data/scored/gsm8k.parquet.*'g1'.*no 'original' row"):
        pairs_of({"gsm8k": orphan})
    with pytest.raises(InputError, match=r"data/words/japanese\.parquet"):
        impact_of(
            {"jnli": scored.assign(benchmark="jnli")}, {}, {"english": WORDS["english"]},
            languages={"jnli": "japanese"}, settings=settings_,
        )  # fmt: skip


@pytest.mark.parametrize("module", ["multiple_testing", "pairs", "robustness", "simulate"])
def test_docstring_examples_hold(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"evalpipe.scoring.{module}"))
    assert result.attempted > 0
    assert result.failed == 0
