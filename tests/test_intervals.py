"""Paired score intervals: reference values, no zero width, exact coverage, clusters, strata."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multinomial

from evalpipe.scoring.intervals import (
    NEWCOMBE,
    TANGO,
    cluster_correction,
    design_effect,
    interval_from_counts,
    minimum_attainable_p,
    newcombe_interval,
    paired_interval,
    paired_score,
    score_test_p,
    tango_interval,
)
from evalpipe.scoring.names import POOLED
from evalpipe.scoring.word_impact import ImpactSettings
from tests.scoring_fixtures import impact_of, pairs_of

Z = 1.959963984540054


def test_tango_matches_the_published_example():
    # Cavo et al. (2012) in Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency
    # Tables" (2017), ch. 8, and R contingencytables::Tango_asymptotic_score_CI_paired_2x2:
    # n = [[59, 6], [16, 80]], delta = (6 - 16) / 161 = -0.0621, 95% CI -0.1240 to -0.0054.
    # Our delta is perturbed - original: the table's first row is the perturbed answer, so the
    # 6 pairs are incorrect -> correct and the 16 correct -> incorrect.
    low, high = tango_interval(c2i=16, i2c=6, n=161, level=0.95)
    assert (round(float(low), 4), round(float(high), 4)) == (-0.1240, -0.0054)


def test_newcombe_matches_the_published_example():
    # Same table, contingencytables::Newcombe_square_and_add_CI_paired_2x2 (Newcombe 1998 method
    # 10 with the continuity-corrected phi): -0.1186 to -0.0046.
    low, high = newcombe_interval(both=59, c2i=16, i2c=6, neither=80, level=0.95)
    assert (round(float(low), 4), round(float(high), 4)) == (-0.1186, -0.0046)


def test_no_discordant_pair_gives_tangos_closed_form_not_zero_width():
    for n in (2, 10, 50, 500):
        low, high = tango_interval(c2i=0, i2c=0, n=n, level=0.95)
        half = Z**2 / (n + Z**2)
        assert float(low) == pytest.approx(-half, abs=1e-9)
        assert float(high) == pytest.approx(half, abs=1e-9)


@pytest.mark.parametrize("method", [TANGO, NEWCOMBE])
def test_every_table_up_to_n_12_has_a_proper_interval_around_its_estimate(method):
    tables = np.array([
        (a, b, c, n - a - b - c) for n in range(2, 13) for a in range(n + 1)
        for b in range(n + 1 - a) for c in range(n + 1 - a - b)
    ])  # fmt: skip
    both, c2i, i2c, neither = tables.T
    n = tables.sum(axis=1)
    low, high = interval_from_counts(
        both=both, c2i=c2i, i2c=i2c, neither=neither, level=0.95, method=method
    )
    estimate = (i2c - c2i) / n
    assert (high - low > 1e-6).all(), "an interval collapsed"
    assert (low <= estimate + 1e-9).all() and (estimate <= high + 1e-9).all()
    assert (low >= -1 - 1e-9).all() and (high <= 1 + 1e-9).all()


def test_swapping_the_direction_mirrors_the_interval():
    low, high = tango_interval(c2i=7, i2c=2, n=40, level=0.9)
    mlow, mhigh = tango_interval(c2i=2, i2c=7, n=40, level=0.9)
    assert (float(mlow), float(mhigh)) == pytest.approx((-float(high), -float(low)))


def _exact_coverage(n: int, p_c2i: float, p_i2c: float, method: str) -> float:
    """Coverage summed over every outcome of n pairs (multinomial over both/c2i/i2c/neither)."""
    p_both = (1 - p_c2i - p_i2c) * 0.6
    probs = [p_both, p_c2i, p_i2c, 1 - p_both - p_c2i - p_i2c]
    outcomes = np.array(
        [(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a)
         for c in range(n + 1 - a - b)]
    )  # fmt: skip
    weight = multinomial.pmf(outcomes, n, probs)
    low, high = interval_from_counts(
        both=outcomes[:, 0], c2i=outcomes[:, 1], i2c=outcomes[:, 2], neither=outcomes[:, 3],
        level=0.95, method=method,
    )  # fmt: skip
    truth = p_i2c - p_c2i
    return float(weight[(low <= truth + 1e-12) & (truth <= high + 1e-12)].sum())


@pytest.mark.parametrize(
    ("n", "p_c2i", "p_i2c"), [(30, 0.1, 0.1), (30, 0.2, 0.05), (60, 0.08, 0.04), (60, 0.25, 0.15)]
)
def test_exact_coverage_of_tango_is_near_nominal(n, p_c2i, p_i2c):
    # Not a simulation: the probability of every possible table, summed where the interval covers.
    coverage = _exact_coverage(n, p_c2i, p_i2c, TANGO)
    assert 0.93 <= coverage <= 0.985, coverage


def test_singletons_have_no_design_effect_and_copies_add_no_information():
    rng = np.random.default_rng(3)
    o = rng.random(80) < 0.6
    p = np.where(rng.random(80) < 0.25, ~o, o)
    assert design_effect(p.astype(float) - o.astype(float), np.arange(80)) == 1.0
    base_low, base_high, deff1 = paired_interval(o, p)
    # Every example paired three times with the same outcome (three words, same answers): the
    # clustered interval is the single-copy one (up to the k / (k - 1) small-sample factor).
    low, high, deff = paired_interval(
        np.repeat(o, 3), np.repeat(p, 3), clusters=np.repeat(np.arange(80), 3)
    )
    assert deff1 == 1.0
    # CR3: k n (n - 1) / (n - k)^2 for k exact copies; t on 79 degrees of freedom.
    assert deff == pytest.approx(3 * 240 * 239 / 237**2)
    assert high - low == pytest.approx((base_high - base_low), rel=0.04)
    naive_low, naive_high, _ = paired_interval(np.repeat(o, 3), np.repeat(p, 3))
    assert naive_high - naive_low < 0.7 * (high - low)


def _scored(benchmark: str, outcomes: list[tuple[str, bool, bool]]) -> pd.DataFrame:
    rows = []
    for example, original, perturbed in outcomes:
        rows.append((benchmark, example, "original", 0, original))
        rows.append((benchmark, example, "the", 1, perturbed))
    frame = pd.DataFrame(rows, columns=["benchmark", "example_id", "variant", "word_rank",
                                        "correct"])  # fmt: skip
    return frame.assign(model="m", parse_status="strict", occurrences=1, perturbed_occurrences=1)


def test_a_stratum_with_one_pair_does_not_collapse_the_pooled_interval():
    # One flip, in a benchmark where the word hit one example; 35 concordant pairs elsewhere.
    # A stratified bootstrap gives [-0.028, -0.028].
    scored = {
        "tiny": _scored("tiny", [("t0", True, False)]),
        "big": _scored("big", [(f"b{i}", i % 2 == 0, i % 2 == 0) for i in range(35)]),
    }
    words = {"english": pd.DataFrame({"rank": [1], "word": ["the"], "source": ["wordfreq"]})}
    table, _, _ = impact_of(scored, {}, words, languages={"tiny": "english",
                               "big": "english"}, settings=ImpactSettings(level=0.95, small_n=30))  # fmt: skip
    pooled = table.loc[table["scope"] == POOLED].iloc[0]
    assert pooled["delta"] == pytest.approx(-1 / 36)
    assert pooled["ci_low"] < pooled["delta"] < 0 < pooled["ci_high"]
    assert pooled["ci_high"] - pooled["ci_low"] > 0.1
    assert pooled["ci_method"] == TANGO
    tiny = table.loc[table["scope"] == "tiny"].iloc[0]
    assert tiny["n"] == 1 and tiny["ci_high"] - tiny["ci_low"] > 0.5


def test_operation_rows_cluster_on_the_example():
    # Ten examples hit by four words each, all four flipping together: the operation row holds
    # 40 pairs but only 10 independent examples.
    rows = []
    for i in range(10):
        rows.append(("b", f"e{i}", "original", 0, True))
        for w in range(4):
            rows.append(("b", f"e{i}", f"w{w}", w + 1, not (i < 5)))
    scored = pd.DataFrame(rows, columns=["benchmark", "example_id", "variant", "word_rank",
                                         "correct"]).assign(model="m")  # fmt: skip
    pairs = pairs_of({"b": scored})
    assert pairs["cluster"].nunique() == 10 and len(pairs) == 40
    _, _, deff = paired_interval(
        pairs["correct_original"], pairs["correct_perturbed"], clusters=pairs["cluster"]
    )
    assert deff == pytest.approx(4 * 40 * 39 / 36**2)  # CR3 of k = 4 copies of n / k pairs
    low, high, _ = paired_interval(pairs["correct_original"].iloc[::4],
                                   pairs["correct_perturbed"].iloc[::4])  # fmt: skip
    clow, chigh, _ = paired_interval(
        pairs["correct_original"], pairs["correct_perturbed"], clusters=pairs["cluster"]
    )
    # The ten examples' interval, widened by t on 9 degrees of freedom (2.26 instead of 1.96)
    # and CR3's small-sample factor ((n - 1) n / (n - k)^2 = 1.2 for ten examples).
    assert high - low < chigh - clow < 1.35 * (high - low)


@pytest.mark.parametrize("module", ["intervals", "pairs", "robustness", "simulate"])
def test_docstring_examples_hold(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"evalpipe.scoring.{module}"))
    assert result.failed == 0


def test_one_table_and_many_tables_give_the_same_tango_limits():
    rng = np.random.default_rng(8)
    n = rng.integers(2, 300, 40)
    c2i = rng.integers(0, n // 2 + 1)
    i2c = rng.integers(0, n - c2i + 1)
    low, high = tango_interval(c2i=c2i, i2c=i2c, n=n, level=0.9)
    for k in range(n.size):
        one = tango_interval(c2i=int(c2i[k]), i2c=int(i2c[k]), n=int(n[k]), level=0.9)
        assert (float(one[0]), float(one[1])) == pytest.approx((low[k], high[k]), abs=1e-12)


# ------------------------------------------------------------------ small samples, one verdict


def _cr2_by_matrices(diff: np.ndarray, clusters: np.ndarray) -> tuple[float, float]:
    """CR2 variance of the mean and its Bell-McCaffrey df, straight from the matrix formulas
    (A_g = (I - H_gg)^(-1/2); df = tr(M)^2 / tr(M^2) with M the quadratic form of the estimator
    in the errors under a working model of independent pairs), for comparison."""
    n = diff.size
    x = np.ones((n, 1))
    hat = x @ np.linalg.inv(x.T @ x) @ x.T
    resid = diff - diff.mean()
    columns, variance = [], 0.0
    for g in np.unique(clusters):
        idx = np.flatnonzero(clusters == g)
        vals, vecs = np.linalg.eigh(np.eye(idx.size) - hat[np.ix_(idx, idx)])
        adjust = vecs @ np.diag(vals**-0.5) @ vecs.T
        c = (adjust @ x[idx] / n).ravel()  # (X'X)^-1 X_g' A_g, X'X = n
        variance += float(c @ resid[idx]) ** 2
        row = np.zeros(n)
        row[idx] = c
        columns.append(row @ (np.eye(n) - hat))  # the cluster's term as a linear form in errors
    m = np.array(columns)
    gram = m @ m.T
    return variance, float(np.trace(gram) ** 2 / np.trace(gram @ gram))


def test_design_effect_is_the_cluster_jackknife_and_df_match_the_cr2_matrix_formulas():
    rng = np.random.default_rng(12)
    sizes = np.array([1, 1, 2, 3, 5, 8, 13, 2, 1, 4])  # uneven clusters, a few large
    clusters = np.repeat(np.arange(sizes.size), sizes)
    diff = rng.choice([-1.0, 0.0, 1.0], size=clusters.size, p=[0.3, 0.6, 0.1])
    _, df = _cr2_by_matrices(diff, clusters)
    n = diff.size
    hc2 = float(((diff - diff.mean()) ** 2).sum()) / (1 - 1 / n) / n**2
    # CR3 of a mean: the squared changes of the mean when one example is left out, summed.
    left_out = np.array([diff[clusters != g].mean() for g in range(sizes.size)])
    cr3 = float(((left_out - diff.mean()) ** 2).sum())
    correction = cluster_correction(diff, clusters)
    assert correction.variance_ratio == pytest.approx(cr3 / hc2, rel=1e-10)
    assert correction.design_effect == pytest.approx(max(1.0, cr3 / hc2), rel=1e-10)
    assert correction.df == pytest.approx(df, rel=1e-10)
    assert correction.df < sizes.size - 1  # a few large examples: fewer df than G - 1


def test_interval_is_the_hull_of_the_independent_and_the_clustered_score_intervals():
    rng = np.random.default_rng(5)
    for _ in range(60):
        g = int(rng.integers(3, 25))
        clusters = np.repeat(np.arange(g), 1 + rng.integers(0, 6, g))
        o = rng.random(clusters.size) < 0.6
        p = np.where(rng.random(clusters.size) < rng.uniform(0.05, 0.4), ~o, o)
        score = paired_score(o, p, clusters=clusters)
        c = cluster_correction(p.astype(float) - o.astype(float), clusters)
        counts = {"both": float((o & p).sum()), "c2i": float((o & ~p).sum()),
                  "i2c": float((~o & p).sum()), "neither": float((~o & ~p).sum())}  # fmt: skip
        ind = interval_from_counts(**counts, level=0.95)
        clu = interval_from_counts(**{k: v / max(c.variance_ratio, 1e-9) for k, v in counts.items()},
                                   level=0.95, df=c.df)  # fmt: skip
        assert score.low == pytest.approx(min(float(ind[0]), float(clu[0])), abs=1e-9)
        assert score.high == pytest.approx(max(float(ind[1]), float(clu[1])), abs=1e-9)
        # Its p: the larger of the two tests' p, so it rejects when both do.
        p_ind = float(score_test_p(c2i=counts["c2i"], i2c=counts["i2c"]))
        p_clu = float(score_test_p(c2i=counts["c2i"], i2c=counts["i2c"],
                                   design_effect=max(c.variance_ratio, 1e-300), df=c.df))  # fmt: skip
        assert score.p_value == pytest.approx(min(1.0, max(p_ind, p_clu)), rel=1e-12)


def test_equal_clusters_have_g_minus_one_degrees_of_freedom():
    diff = np.tile([-1.0, 0.0, 0.0, 1.0], 6)
    assert cluster_correction(diff, np.repeat(np.arange(6), 4)).df == pytest.approx(5.0)


def test_differences_that_do_not_vary_count_each_example_once():
    # 2 examples x 4 draws, all flipped: two examples, 1 degree of freedom (as 8 independent
    # pairs the interval would be (-1, -0.35)).
    original, perturbed = [True] * 8, [False] * 8
    clusters = np.repeat([0, 1], 4)
    correction = cluster_correction(np.full(8, -1.0), clusters)
    assert (correction.design_effect, correction.df) == (4.0, 1.0)
    score = paired_score(original, perturbed, clusters=clusters)
    assert score.low == pytest.approx(-1.0, abs=1e-6) and score.high > 0
    assert score.p_value > 0.05
    # Twenty examples of four flipped draws each: twenty examples' worth, not eighty pairs.
    many = paired_score([True] * 80, [False] * 80, clusters=np.repeat(np.arange(20), 4))
    twenty = paired_score([True] * 20, [False] * 20)
    assert many.design_effect == 4.0 and many.high > twenty.high


def test_a_single_example_says_nothing_about_other_examples():
    score = paired_score([True] * 6, [False, False, True, True, True, True], clusters=[7] * 6)
    assert (score.design_effect, score.df) == (6.0, 1.0)
    assert score.low < -0.9 and score.high > 0.9 and score.p_value > 0.5


def test_interval_and_p_value_never_disagree():
    rng = np.random.default_rng(21)
    disagreements = 0
    for trial in range(400):
        n_examples = int(rng.integers(2, 40))
        sizes = 1 + np.floor(2 * rng.pareto(1.5, n_examples)).astype(int)
        clusters = np.repeat(np.arange(n_examples), np.minimum(sizes, 30))
        if trial % 4 == 0:
            clusters = np.arange(clusters.size)  # independent pairs
        o = rng.random(clusters.size) < 0.6
        flip = rng.random(clusters.size) < rng.uniform(0.0, 0.5)
        p = np.where(flip, rng.random(clusters.size) < 0.4, o)
        score = paired_score(o, p, clusters=clusters, level=0.95)
        excludes = score.low > 0 or score.high < 0
        disagreements += excludes != (score.p_value < 0.05)
    assert disagreements == 0
    # 4 right -> wrong of 18: Interval (-0.452, -0.007), so p < 0.05.
    row = paired_score([True] * 18, [False] * 4 + [True] * 14)
    assert (round(row.low, 3), round(row.high, 3)) == (-0.452, -0.007)
    assert row.p_value == pytest.approx(0.0455, abs=1e-4)


def test_score_p_is_the_asymptotic_mcnemar_test():
    # McNemar's chi-square without continuity correction: (b - c)^2 / (b + c) on 1 df.
    from scipy.stats import chi2

    for b, c in ((5, 1), (12, 20), (0, 3), (40, 41)):
        expected = chi2.sf((b - c) ** 2 / (b + c), 1)
        assert float(score_test_p(c2i=c, i2c=b)) == pytest.approx(expected, rel=1e-12)
    assert float(score_test_p(c2i=0, i2c=0)) == 1.0


def test_minimum_attainable_p_is_all_discordant_pairs_one_way():
    for m in (1, 4, 9, 30):
        assert float(minimum_attainable_p(m)) == pytest.approx(float(score_test_p(c2i=m, i2c=0)))
    assert float(minimum_attainable_p(8, 2.0)) == pytest.approx(float(minimum_attainable_p(4)))


def test_tarone_screening_leaves_tests_that_cannot_reach_significance_out_of_the_family():
    from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm, tarone_family

    # One word with 30 discordant pairs, twenty small words with 3 each (min p 0.083 > 0.05).
    p = np.array([0.004] + [0.2] * 20)
    discordant = np.array([30] + [3] * 20)
    floor = minimum_attainable_p(discordant)
    assert tarone_family(floor).tolist() == [True] + [False] * 20
    assert holm(p, min_p=floor)[0] == pytest.approx(0.004)  # m = 1, not 21
    assert benjamini_hochberg(p, min_p=floor)[0] == pytest.approx(0.004)
    assert (holm(p, min_p=floor)[1:] == 1.0).all()
    assert holm(p)[0] == pytest.approx(21 * 0.004)  # without screening
    # Missing p-values stay missing and out of the family.
    out = benjamini_hochberg([0.01, None, 0.02], min_p=[1e-4, 1e-4, 1e-4])
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.02)


def test_screened_procedures_keep_their_error_rates_under_the_null():
    from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm

    rng = np.random.default_rng(5)
    any_holm = any_bh = 0
    for _ in range(300):
        m = rng.integers(0, 40, size=50)  # discordant pairs per word, many small
        b = rng.binomial(m, 0.5)
        p = score_test_p(c2i=m - b, i2c=b)
        floor = minimum_attainable_p(m)
        any_holm += bool((holm(p, min_p=floor) <= 0.05).any())
        any_bh += bool((benjamini_hochberg(p, min_p=floor) <= 0.05).any())
    # Under the global null FWER = FDR = P(any rejection).
    assert any_holm / 300 <= 0.08 and any_bh / 300 <= 0.08
