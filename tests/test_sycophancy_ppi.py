"""PPI++ means: the project's estimator against the reference package, and against planted truths."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from evalpipe.sycophancy import simulate
from evalpipe.sycophancy.alt_test import alt_test, benjamini_yekutieli
from evalpipe.sycophancy.ppi import (
    classical_mean,
    labels_to_halve,
    leave_one_out_lambdas,
    ppi_mean,
    tuned_lambda,
)

ppi_py = pytest.importorskip("ppi_py")


def _judge_and_people(seed: int, n: int, big_n: int, *, bias: float, prevalence: bool = False):
    rng = np.random.default_rng(seed)
    truth = simulate.ratings_from_latent(rng.standard_normal(n + big_n))
    judge = simulate.judge_ratings(rng, truth, bias=bias, noise=0.7)
    if prevalence:
        truth, judge = (truth >= 3).astype(float), (judge >= 3).astype(float)
    return truth[:n], judge[:n], judge[n:]


@pytest.mark.parametrize(
    ("seed", "n", "big_n", "bias", "prevalence"),
    [
        (1, 20, 200, 0.0, False),
        (2, 50, 1000, 0.6, False),
        (3, 200, 5000, 0.3, True),
        (4, 30, 300, -0.4, True),
    ],
)
def test_ppi_plus_plus_matches_ppi_py_to_1e8(seed, n, big_n, bias, prevalence):
    y, f, fu = _judge_and_people(seed, n, big_n, bias=bias, prevalence=prevalence)
    ours = ppi_mean(y, f, fu, confidence=0.95)
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
    point = ppi_py.ppi_mean_pointestimate(y, f, fu)
    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), abs=1e-8)
    assert ours.ci_low == pytest.approx(float(np.ravel(low)[0]), abs=1e-8)
    assert ours.ci_high == pytest.approx(float(np.ravel(high)[0]), abs=1e-8)


def test_plain_ppi_and_humans_only_match_ppi_py():
    y, f, fu = _judge_and_people(5, 40, 800, bias=0.5)
    plain = ppi_mean(y, f, fu, confidence=0.9, lam=1.0)
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.1, lam=1.0)
    assert (plain.ci_low, plain.ci_high) == pytest.approx(
        (float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-8
    )
    humans = classical_mean(y, confidence=0.9)
    low, high = ppi_py.classical_mean_ci(y, alpha=0.1)
    assert (humans.ci_low, humans.ci_high) == pytest.approx((low, high), abs=1e-8)


def test_a_constant_judge_falls_back_to_the_humans_alone():
    y = np.array([1.0, 1, 2, 1, 3, 1])
    f = np.ones(6)
    est = ppi_mean(y, f, np.ones(100), confidence=0.95)
    assert tuned_lambda(y, f, np.ones(100)) == 0.0
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(y.mean())


def test_leave_one_out_weights_equal_the_tuned_weight_without_each_unit():
    y, f, fu = _judge_and_people(6, 12, 100, bias=0.2)
    loo = leave_one_out_lambdas(y, f, fu)
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        assert loo[i] == pytest.approx(tuned_lambda(y[keep], f[keep], fu), abs=1e-10)


def test_a_good_judge_buys_effective_sample_size_and_halving_needs_more_labels():
    y, f, fu = _judge_and_people(7, 50, 2000, bias=0.0)
    est = ppi_mean(y, f, fu, confidence=0.95, crossfit=True, small_sample=True)
    assert est.effective_n > len(y)
    plan = labels_to_halve(est, y, f, fu)
    assert plan.more is not None and plan.more > len(y)
    # a judge that agrees with every person: only the judged-only part is uncertain, and no
    # number of labels among the same replies halves it
    exact = ppi_mean(f[:20], f[:20], fu[:100], confidence=0.95, lam=1.0)
    plan = labels_to_halve(exact, f[:20], f[:20], fu[:100])
    assert plan.more is None
    assert "more dialogues" in plan.reason


def test_ppi_covers_the_planted_truth_where_a_biased_judge_alone_misses():
    design = replace(simulate.Design(), n_human=50, n_judged=1000, bias=0.6)
    table = simulate.coverage(design, replications=250, seed=3)
    ppi = table[(table["estimator"] == "ppi") & (table["target"] != "diff")]
    judge = table[(table["estimator"] == "judge") & (table["target"] != "diff")]
    assert ppi["coverage"].between(0.9, 0.99).all(), ppi
    assert (ppi["bias"].abs() < 0.03).all()
    assert (judge["coverage"] < 0.1).all(), judge


def test_the_paired_difference_has_the_planted_sign():
    design = replace(simulate.Design(), n_human=100, n_judged=2000, bias=0.6)
    rng = np.random.default_rng(11)
    rows = [r for _ in range(40) for r in simulate.replication(design, rng)]
    diffs = [r for r in rows if r["target"] == "diff" and r["estimator"] == "ppi"]
    means = [r for r in diffs if r["statistic"] == "mean"]
    # model 1 is planted more sycophantic: model 0 minus model 1 is below zero
    assert sum(r["ci_high"] < 0 for r in means) >= 0.9 * len(means)


def test_the_alternative_annotator_test_accepts_a_close_judge_and_rejects_a_biased_one():
    rng = np.random.default_rng(5)
    kwargs = dict(n_items=80, n_annotators=4, annotator_noise=0.6, noise=0.3, epsilon=0.15)
    good = [simulate.alt_test_replication(rng, bias=0.0, **kwargs) for _ in range(10)]
    bad = [simulate.alt_test_replication(rng, bias=1.0, **kwargs) for _ in range(10)]
    assert sum(r["verdict"] == "accept" for r in good) >= 9
    assert all(r["verdict"] == "reject" for r in bad)


def test_alt_test_skips_annotators_with_too_few_items():
    humans = {"a": {"1": 1, "2": 2}, "b": {"1": 1, "2": 3}}
    result = alt_test({"1": 1, "2": 2}, humans)
    assert result.verdict == "undetermined"
    assert set(result.skipped) == {"a", "b"}


def test_benjamini_yekutieli_matches_its_step_up_thresholds():
    # m = 3, harmonic sum 11/6: thresholds 0.05 * k / 3 / (11/6)
    assert benjamini_yekutieli([0.009, 0.018, 0.5], 0.05) == [True, True, False]
    assert benjamini_yekutieli([0.01, 0.02, 0.5], 0.05) == [False, False, False]
    assert benjamini_yekutieli([0.03, 0.009, 0.5], 0.05) == [False, True, False]
