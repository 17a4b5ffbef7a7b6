"""The arms' intervals: the score interval of a discrete mean (Tango's on -1, 0, 1, never of zero
width), the skewness-corrected and bootstrap-t intervals of a skewed mean, Fieller's interval of
the share a defence wins back, and the planted truths of their simulator."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalpipe.report.defences import defences_section
from evalpipe.scoring.defences import LOSS_NOT_SHOWN, SHARE, recovered_figures
from evalpipe.scoring.intervals import paired_score, tango_interval
from evalpipe.scoring.ladder import ladder_table
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.perplexity import perplexity_summary
from evalpipe.scoring.ratio_interval import fieller_interval
from evalpipe.scoring.score_mean import score_mean_interval
from evalpipe.scoring.simulate_arms import (
    HEAVY,
    MODERATE,
    ladder_study,
    mean_study,
    mean_truth,
    recovered_study,
)
from evalpipe.scoring.skewed_mean import (
    bootstrap_t_mean_interval,
    hall_mean_interval,
    tail_augmented_mean_interval,
)
from evalpipe.seeding import hashed_seed

Z = stats.norm.ppf(0.975)


@pytest.mark.parametrize("b, c, n", [(6, 16, 161), (0, 4, 18), (0, 0, 50), (3, 3, 30), (10, 0, 20)])
def test_on_minus_one_zero_one_the_score_interval_is_tangos(b: int, c: int, n: int) -> None:
    values = [1.0] * b + [-1.0] * c + [0.0] * (n - b - c)
    r = score_mean_interval(values, None, support=(-1, 0, 1), level=0.95)
    low, high = tango_interval(c2i=c, i2c=b, n=n, level=0.95)
    assert r.low == pytest.approx(float(low), abs=1e-9)
    assert r.high == pytest.approx(float(high), abs=1e-9)


def test_clustered_score_interval_matches_the_headlines_on_paired_answers() -> None:
    rng = np.random.default_rng(1)
    o = rng.random(60) < 0.7
    p = o & (rng.random(60) < 0.8)
    clusters = np.repeat(np.arange(20), 3)
    headline = paired_score(o, p, clusters=clusters, level=0.95)
    r = score_mean_interval(p.astype(float) - o, clusters, support=(-1, 0, 1), level=0.95)
    assert (r.low, r.high) == pytest.approx((headline.low, headline.high), abs=1e-9)


def test_every_difference_zero_gives_a_known_non_zero_interval() -> None:
    # independent pairs on -2..2: the ML distribution puts mass delta / 2 on 2, so the limits
    # solve n delta = z^2 (2 - delta): +-2 z^2 / (n + z^2)
    r = score_mean_interval([0.0] * 40, None, level=0.95)
    assert r.high == pytest.approx(2 * Z * Z / (40 + Z * Z), abs=1e-9)
    assert r.low == pytest.approx(-r.high, abs=1e-12)
    clustered = score_mean_interval([0.0] * 40, np.repeat(np.arange(20), 2), level=0.95)
    assert clustered.high > r.high > 0  # 20 examples hold less than 40 independent prompts


def test_a_value_outside_the_support_is_an_error() -> None:
    with pytest.raises(ValueError, match="support"):
        score_mean_interval([0.0, 3.0], None, level=0.95)


def test_hall_interval_is_the_t_interval_without_skew_and_leans_with_it() -> None:
    symmetric = [-2.0, -1.0, 0.0, 1.0, 2.0]
    hall = hall_mean_interval(symmetric, None, level=0.95)
    t = clustered_mean_interval(symmetric, None, level=0.95)
    assert (hall.low, hall.high) == pytest.approx((t.low, t.high), abs=1e-12)
    skewed = np.array([0.1, 0.2, 0.1, 0.3, 0.2, 2.5, 0.15, 0.05])
    r = hall_mean_interval(skewed, None, level=0.95)
    # by hand: Hall (1992) on n independent values, se = s / sqrt(n), t on n - 1
    n, mean, s = skewed.size, skewed.mean(), skewed.std(ddof=1)
    gamma = np.mean((skewed - mean) ** 3) / np.mean((skewed - mean) ** 2) ** 1.5
    q = stats.t.ppf(0.975, n - 1)

    def inverse(y: float) -> float:
        return 3 / gamma * (np.cbrt(1 + gamma * (y - gamma / (6 * n))) - 1)

    assert r.low == pytest.approx(mean - s * inverse(q / math.sqrt(n)), rel=1e-9)
    assert r.high == pytest.approx(mean - s * inverse(-q / math.sqrt(n)), rel=1e-9)
    assert r.high - r.mean > r.mean - r.low


def test_bootstrap_t_is_reproducible_from_its_seed() -> None:
    rng = np.random.default_rng(3)
    values = rng.lognormal(0, 1, 50)
    clusters = np.repeat(np.arange(25), 2)
    a = bootstrap_t_mean_interval(values, clusters, level=0.95, seed=7)
    b = bootstrap_t_mean_interval(values, clusters, level=0.95, seed=7)
    assert a == b and a.low < a.mean < a.high
    assert a.high - a.mean > a.mean - a.low  # right skew: a longer upper arm


def test_fieller_limits_are_where_the_clustered_test_just_rejects() -> None:
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(30), 2)
    den = (rng.random(60) < 0.4).astype(float)
    num = den * (rng.random(60) < 0.5)
    r = fieller_interval(num, den, clusters, level=0.95)
    assert r.bounded and r.low < r.estimate < r.high
    sizes = np.full(30, 2.0)
    t = stats.t.ppf(0.975, 29)
    for bound in (r.low, r.high):
        u = num - bound * den
        sums = np.bincount(clusters, weights=u - u.mean())
        variance = float((sums**2 / (1 - sizes / 60) ** 2).sum()) / 60**2
        assert abs(u.mean()) == pytest.approx(t * math.sqrt(variance), rel=1e-6)


def test_fieller_is_unbounded_when_the_loss_is_not_told_from_zero() -> None:
    den = [1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0]
    num = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    r = fieller_interval(num, den, None, level=0.95)
    assert r.estimate is None and not r.bounded and r.low is None


def test_the_share_is_reported_only_where_the_loss_excludes_zero() -> None:
    clusters = np.arange(40)
    clean = np.array([True] * 30 + [False] * 10)
    typo = clean.copy()
    typo[:10] = False  # 10 of 30 right answers lost
    defended = typo.copy()
    defended[:4] = True  # 4 of them won back
    shown = recovered_figures(clean, typo, defended, clusters, loss_high=-0.05, level=0.95)
    assert shown["recovered_basis"] == SHARE
    assert shown["recovered"] == pytest.approx(0.4)
    low, high = shown["recovered_ci"]
    assert low < 0.4 < high
    assert shown["recovered_points"] == pytest.approx(0.1)
    hidden = recovered_figures(clean, typo, defended, clusters, loss_high=0.01, level=0.95)
    assert hidden["recovered"] is None and hidden["recovered_basis"] == LOSS_NOT_SHOWN
    assert hidden["recovered_points_ci"] == shown["recovered_points_ci"]


def test_the_report_says_whether_the_share_is_shown() -> None:
    arm = {"n": 40, "acc_clean": 0.75, "acc_typo": 0.7, "acc_defended": 0.72,
           "recovered_points": 0.02, "recovered_points_ci": [-0.03, 0.08], "recovered": None,
           "recovered_ci": [None, None], "recovered_basis": LOSS_NOT_SHOWN}  # fmt: skip
    html = defences_section({"m": {"arms": ["warned"], "pooled": {"english": {"warned": arm}}}})
    assert "points won back" in html and "share reported?" in html
    assert "the loss&#x27;s interval includes 0" in html or "the loss's interval includes 0" in html


@pytest.mark.parametrize("kind", ["surprisal", "informative", "symmetric", "skewed_null"])
def test_mean_designs_have_the_truth_they_state(kind: str) -> None:
    rng = np.random.default_rng(11)
    study = mean_study(kind, rng, examples=20_000, clusters=HEAVY, draws=2)
    r = clustered_mean_interval(study.values["d"], study.clusters, level=0.9999)
    assert r.low <= mean_truth(kind, HEAVY) <= r.high
    assert r.high - r.low < 0.05  # narrow enough to tell a wrong truth


def test_ladder_and_recovered_designs_have_the_truths_they_state() -> None:
    rng = np.random.default_rng(12)
    s = ladder_study("rare", rng, examples=40_000, clusters=MODERATE, draws=1)
    v = {k: a.astype(float) for k, a in s.values.items()}
    diff = (v["p_var"] - v["o_var"]) - (v["p_ref"] - v["o_ref"])
    assert diff.mean() == pytest.approx(s.truth["delta_vs_reference"], abs=3e-3)
    r = recovered_study("rare", rng, examples=40_000, clusters=MODERATE, draws=1)
    c, t, d = (r.values[k].astype(float) for k in ("clean", "typo", "defended"))
    assert (c - t).mean() == pytest.approx(r.truth["loss"], abs=4e-3)
    assert (d - t).mean() == pytest.approx(r.truth["points"], abs=3e-3)
    assert pd.notna(r.truth["share"])


def test_the_simulated_ladder_and_perplexity_run_through_the_tables_own_intervals() -> None:
    """The simulator's figures describe the real estimators: the tables print what
    perf/arm_coverage.py computes on the same study."""
    rng = np.random.default_rng(21)
    s = ladder_study("rare", rng, examples=30, clusters=HEAVY, draws=2)
    v = s.values
    common = {"benchmark": "b", "language": "english", "example_id": s.clusters.astype(str),
              "variant": [f"w{i}" for i in range(s.clusters.size)], "word_rank": 1, "draw": 0}  # fmt: skip
    pairs = pd.concat(
        [
            pd.DataFrame({"model": "ref", **common, "correct_original": v["o_ref"],
                          "correct_perturbed": v["p_ref"]}),
            pd.DataFrame({"model": "var", **common, "correct_original": v["o_var"],
                          "correct_perturbed": v["p_var"]}),
        ],
        ignore_index=True,
    )  # fmt: skip
    labels = {"ref": {"family": "f"}, "var": {"family": "f", "quantisation": "awq"}}
    table = ladder_table(pairs, labels, models=["ref", "var"], level=0.95)
    row = table.loc[(table["model"] == "var") & (table["scope"] == "benchmark")].iloc[0]
    diff = (v["p_var"].astype(float) - v["o_var"]) - (v["p_ref"].astype(float) - v["o_ref"])
    expected = score_mean_interval(diff, s.clusters, level=0.95)
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx((expected.low, expected.high))

    m = mean_study("surprisal", rng, examples=30, clusters=HEAVY, draws=1)
    frame = pd.DataFrame({**common, "example_id": m.clusters.astype(str), "cluster": m.clusters,
                          "variant": [f"w{i}" for i in range(m.clusters.size)],
                          "logprob_original": 0.0, "tokens_original": 1,
                          "logprob_perturbed": -m.values["d"], "tokens_perturbed": 1})  # fmt: skip
    figures = perplexity_summary(frame, level=0.95)["benchmarks"]["b"]
    r = tail_augmented_mean_interval(
        m.values["d"], m.clusters, level=0.95, seed=hashed_seed("perplexity", "benchmark", "b")
    )
    assert (figures["ci_low"], figures["ci_high"]) == pytest.approx(
        (math.exp(r.low), math.exp(r.high))
    )
