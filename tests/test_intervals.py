"""Paired score intervals: reference values, no zero width, exact coverage, clusters, strata."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multinomial

from evalpipe.scoring.intervals import (
    NEWCOMBE,
    TANGO,
    design_effect,
    interval_from_counts,
    newcombe_interval,
    paired_interval,
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
    assert deff == pytest.approx(3 * 80 / 79)
    assert high - low == pytest.approx((base_high - base_low), rel=0.02)
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


def test_a_stratum_with_one_pair_no_longer_collapses_the_pooled_interval():
    # The case: one flip, in a benchmark where the word hit one example; 35 concordant
    # pairs elsewhere. The stratified bootstrap gave [-0.028, -0.028].
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
    assert deff == pytest.approx(4 * 10 / 9)
    low, high, _ = paired_interval(pairs["correct_original"].iloc[::4],
                                   pairs["correct_perturbed"].iloc[::4])  # fmt: skip
    clow, chigh, _ = paired_interval(
        pairs["correct_original"], pairs["correct_perturbed"], clusters=pairs["cluster"]
    )
    assert chigh - clow == pytest.approx(high - low, rel=0.1)


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
