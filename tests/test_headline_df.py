"""The headline interval's exchangeable working-model degrees of freedom
(``df_model="exchangeable"`` of cluster_correction / paired_score) and paired_score's default
``df_model="auto"`` (exchangeable from EXCHANGEABLE_FROM_EXAMPLES examples on)."""

from __future__ import annotations

import numpy as np
import pytest

from evalpipe.errors import InputError
from evalpipe.scoring.intervals import (
    DF_AUTO,
    DF_EXCHANGEABLE,
    DF_INDEPENDENT,
    EXCHANGEABLE_FROM_EXAMPLES,
    _satterthwaite_df,
    cluster_correction,
    exchangeable_df,
    intra_example_correlation,
    paired_score,
)
from evalpipe.scoring.simulate_skew import flips_study
from evalpipe.seeding import hashed_seed


def _brute_df(sizes: np.ndarray, variances: np.ndarray) -> float:
    # Q = T' M' W M T with M = I - a 1', W = diag(CR2 weights), Var(T) = diag(variances).
    n = sizes.sum()
    a = sizes / n
    m = np.eye(sizes.size) - np.outer(a, np.ones(sizes.size))
    w = np.diag(1.0 / (1.0 - a))
    root = np.diag(np.sqrt(variances))
    k = root @ m.T @ w @ m @ root
    return float(np.trace(k) ** 2 / np.trace(k @ k))


@pytest.mark.parametrize("rho", [0.0, 0.3, 1.0])
def test_the_rank_two_df_matches_the_full_matrix(rho):
    rng = np.random.default_rng(3)
    sizes = np.minimum(rng.zipf(2.2, 25), 50).astype(float) * 4
    variances = sizes * (1.0 + (sizes - 1.0) * rho)
    n = int(sizes.sum())
    got = _satterthwaite_df(sizes, n, 1.0 / (1.0 - sizes / n), variances)
    assert got == pytest.approx(_brute_df(sizes, variances), rel=1e-10)


def test_no_correlation_or_equal_sizes_give_the_independent_df():
    rng = np.random.default_rng(5)
    sizes = np.array([1.0, 2.0, 7.0, 3.0, 30.0])
    n = int(sizes.sum())
    weight = 1.0 / (1.0 - sizes / n)
    assert _satterthwaite_df(sizes, n, weight, sizes) == _satterthwaite_df(sizes, n, weight)
    # Equal sizes: G - 1 whatever the correlation.
    codes = np.repeat(np.arange(6), 5)
    d = np.repeat(rng.integers(-1, 1, 6), 5).astype(float)
    assert intra_example_correlation(d, codes, np.full(6, 5.0)) > 0.9
    assert exchangeable_df(d, codes, np.full(6, 5.0)) == pytest.approx(5.0)


def test_correlated_pairs_in_one_large_example_lower_the_df_and_widen_the_interval():
    # 30 single-pair examples and one of 60 pairs that all flipped.
    clean = np.ones(90, dtype=bool)
    typo = np.r_[np.arange(30) % 5 != 0, np.zeros(60, dtype=bool)]
    clusters = np.r_[np.arange(30), np.full(60, 30)]
    d = typo.astype(float) - clean.astype(float)
    default = cluster_correction(d, clusters)
    exchangeable = cluster_correction(d, clusters, df_model=DF_EXCHANGEABLE)
    assert exchangeable.variance_ratio == default.variance_ratio
    assert exchangeable.df < default.df
    a = paired_score(clean, typo, clusters=clusters, df_model=DF_INDEPENDENT)
    b = paired_score(clean, typo, clusters=clusters, df_model=DF_EXCHANGEABLE)
    assert b.low < a.low and b.high > a.high
    assert b.p_value >= a.p_value
    # 31 examples: below EXCHANGEABLE_FROM_EXAMPLES the default keeps the independent df.
    assert paired_score(clean, typo, clusters=clusters) == a


def _heavy_study(examples: int):
    rng = np.random.default_rng(hashed_seed(1, "auto", examples))
    return flips_study(rng, examples=examples, draws=4, words="heavy", kind="common")


@pytest.mark.parametrize(
    ("examples", "model"),
    [(20, DF_INDEPENDENT), (EXCHANGEABLE_FROM_EXAMPLES - 1, DF_INDEPENDENT),
     (EXCHANGEABLE_FROM_EXAMPLES, DF_EXCHANGEABLE), (300, DF_EXCHANGEABLE)],
)  # fmt: skip
def test_the_default_switches_to_the_exchangeable_df_from_enough_examples(examples, model):
    s = _heavy_study(examples)
    clean, typo = s.values["clean"], s.values["typo"]
    default = paired_score(clean, typo, clusters=s.clusters)
    assert default == paired_score(clean, typo, clusters=s.clusters, df_model=model)
    assert default == paired_score(clean, typo, clusters=s.clusters, df_model=DF_AUTO)
    d = typo.astype(float) - clean.astype(float)
    assert cluster_correction(d, s.clusters, df_model=DF_AUTO).df == default.df


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
def test_the_default_interval_excludes_0_exactly_when_its_p_is_below_1_minus_level(level):
    # Heavy-tailed words per example on both sides of the switch: one verdict per row.
    rng = np.random.default_rng(hashed_seed(2, "verdict", level))
    excluded = 0
    for examples in (30, 45, 80, 160):
        for _ in range(40):
            s = flips_study(rng, examples=examples, draws=4, words="heavy", kind="common")
            ps = paired_score(s.values["clean"], s.values["typo"], clusters=s.clusters, level=level)
            excludes = ps.low > 0 or ps.high < 0
            assert excludes == (ps.p_value < 1 - level), (examples, ps)
            excluded += excludes
    assert 0 < excluded < 160  # both verdicts occur


def test_an_unknown_working_model_is_a_clear_error():
    with pytest.raises(InputError, match="df_model"):
        cluster_correction([0.0, -1.0, 0.0], [0, 0, 1], df_model="ar1")


def test_the_default_keeps_the_headline_covering_with_heavy_tailed_words():
    # A small version of perf/skew_coverage.py --part flips: common flips, Zipf(2.2) words per
    # example, 4 draws, 80 examples, where the independent-pairs df cover about 0.92.
    rng = np.random.default_rng(hashed_seed(0, "test-headline-df"))
    hits = {DF_INDEPENDENT: 0, DF_AUTO: 0}
    studies = 300
    for _ in range(studies):
        s = flips_study(rng, examples=80, draws=4, words="heavy", kind="common")
        for model in hits:
            ps = paired_score(s.values["clean"], s.values["typo"], clusters=s.clusters,
                              df_model=model)  # fmt: skip
            hits[model] += ps.low - 1e-12 <= s.truth <= ps.high + 1e-12
    independent, default = hits[DF_INDEPENDENT] / studies, hits[DF_AUTO] / studies
    assert default >= 0.94, (independent, default)
    assert default >= independent + 0.02, (independent, default)
