"""The perplexity ratio's interval keeps its coverage on the second generator
(:mod:`evalpipe.scoring.simulate_skew`), where the plain and the guarded bootstrap-t did not;
the generator's truths are what large studies estimate."""

from __future__ import annotations

import numpy as np
import pytest

from evalpipe.scoring.intervals import paired_score
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.simulate_skew import (
    flips_study,
    flips_truth,
    perplexity_study,
    perplexity_truth,
)
from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval, tail_augmented_mean_interval
from evalpipe.seeding import hashed_seed


def test_the_guarded_interval_holds_the_cr2_t_interval_and_the_plain_one() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        s = perplexity_study(rng, examples=20, draws=1, words="heavy", skew="strong")
        d, cl = s.values["d"], s.clusters
        cr2 = clustered_mean_interval(d, cl, level=0.95)
        plain = bootstrap_t_mean_interval(d, cl, level=0.95, seed=3, samples=199, guard=False)
        guarded = bootstrap_t_mean_interval(d, cl, level=0.95, seed=3, samples=199)
        assert guarded.low == pytest.approx(min(cr2.low, plain.low), rel=1e-12, abs=1e-15)
        assert guarded.high == pytest.approx(max(cr2.high, plain.high), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("words, skew", [("realistic", "strong"), ("heavy", "realistic")])
def test_the_perplexity_truth_is_what_a_large_study_estimates(words: str, skew: str) -> None:
    rng = np.random.default_rng(2)
    s = perplexity_study(rng, examples=200_000, draws=1, words=words, skew=skew)
    r = clustered_mean_interval(s.values["d"], s.clusters, level=0.999)
    assert r.low <= perplexity_truth(words) <= r.high


@pytest.mark.parametrize("kind", ["rare", "common"])
def test_the_flips_truth_is_what_a_large_study_estimates(kind: str) -> None:
    rng = np.random.default_rng(4)
    s = flips_study(rng, examples=200_000, draws=1, words="realistic", kind=kind)
    r = paired_score(s.values["clean"], s.values["typo"], clusters=s.clusters, level=0.999)
    assert r.low <= flips_truth(kind) <= r.high


def _coverage(words: str, examples: int, studies: int) -> dict[str, float]:
    rng = np.random.default_rng(20)
    hits: dict[str, list[bool]] = {"cr2_t": [], "plain": [], "guarded": []}
    for r in range(studies):
        s = perplexity_study(rng, examples=examples, draws=1, words=words, skew="realistic")
        d, cl = s.values["d"], s.clusters
        for name, res in (
            ("cr2_t", clustered_mean_interval(d, cl, level=0.95)),
            ("plain", bootstrap_t_mean_interval(d, cl, level=0.95, seed=r, samples=199, guard=False)),
            ("guarded", bootstrap_t_mean_interval(d, cl, level=0.95, seed=r, samples=199)),
        ):  # fmt: skip
            hits[name].append(res.low <= s.truth <= res.high)
    return {k: float(np.mean(v)) for k, v in hits.items()}


def test_coverage_where_the_plain_bootstrap_t_and_the_cr2_t_interval_fell_short() -> None:
    # 300 studies: a coverage's Monte Carlo standard error is about 0.013. Heavy-tailed words
    # per example (long texts hold many pairs with small log-ratios): the plain bootstrap-t
    # under-covers; realistic words and a skewed cost: the CR2 t interval does.
    heavy = _coverage("heavy", 20, 300)
    assert heavy["plain"] < 0.93 <= heavy["guarded"]
    realistic = _coverage("realistic", 40, 300)
    assert realistic["cr2_t"] < 0.90 < realistic["guarded"]


def test_the_tail_augmented_interval_holds_the_guarded_one_and_widens_on_the_side_of_the_tail() -> (
    None
):
    rng = np.random.default_rng(12)
    upper, lower = [], []
    for _ in range(10):
        s = perplexity_study(rng, examples=20, draws=4, words="realistic", skew="strong")
        d, cl = s.values["d"], s.clusters
        guarded = bootstrap_t_mean_interval(d, cl, level=0.95, seed=hashed_seed(5, "sample"), samples=199)  # fmt: skip
        r = tail_augmented_mean_interval(d, cl, level=0.95, seed=5, samples=199)
        assert r.low <= guarded.low and r.high >= guarded.high and r.high - r.low > 0
        upper.append((r.high - guarded.high) / (guarded.high - guarded.low))
        lower.append((guarded.low - r.low) / (guarded.high - guarded.low))
        assert tail_augmented_mean_interval(d, cl, level=0.95, seed=5, samples=199) == r
    # right-skewed: the example counted twice moves the upper side (in most samples), the lower
    # one barely (a sample whose largest example dominates is already wide above)
    assert sum(u > 0.05 for u in upper) >= 7 and max(lower) < 0.05


def test_a_left_skewed_sample_is_widened_below() -> None:
    # the lower side is the upper side's construction with the smallest example counted twice
    rng = np.random.default_rng(13)
    s = perplexity_study(rng, examples=30, draws=1, words="realistic", skew="strong")
    d, cl = s.values["d"], s.clusters
    r = tail_augmented_mean_interval(d, cl, level=0.95, seed=1, samples=199)
    m = tail_augmented_mean_interval(-d, cl, level=0.95, seed=1, samples=199)
    assert m.mean == pytest.approx(-r.mean)
    assert r.high - r.mean > 1.2 * (r.mean - r.low)
    assert m.mean - m.low > 1.2 * (m.high - m.mean)


def test_coverage_where_the_guarded_bootstrap_t_fell_short() -> None:
    # Strongly skewed typo costs (log-sd 1.2 per word), 40 examples: the guarded bootstrap-t
    # misses above when a sample holds too few of the costly typos. 300 studies: a coverage's
    # Monte Carlo standard error is about 0.013; the two are computed on the same studies.
    rng = np.random.default_rng(20)
    hits: dict[str, list[bool]] = {"guarded": [], "tail_augmented": []}
    for r in range(300):
        s = perplexity_study(rng, examples=40, draws=1, words="realistic", skew="strong")
        d, cl = s.values["d"], s.clusters
        for name, res in (
            ("guarded", bootstrap_t_mean_interval(d, cl, level=0.95, seed=r, samples=199)),
            ("tail_augmented", tail_augmented_mean_interval(d, cl, level=0.95, seed=r, samples=199)),
        ):  # fmt: skip
            hits[name].append(res.low <= s.truth <= res.high)
    guarded, augmented = float(np.mean(hits["guarded"])), float(np.mean(hits["tail_augmented"]))
    assert guarded < 0.92 and 0.93 <= augmented <= 0.97
    assert augmented - guarded >= 0.03
