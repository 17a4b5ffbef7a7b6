"""The perplexity ratio's interval keeps its coverage on the second generator
(:mod:`evalpipe.scoring.simulate_skew`), where the plain bootstrap-t did not; the generator's
truths are what large studies estimate."""

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
from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval


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
