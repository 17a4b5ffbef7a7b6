"""Planted-effect simulator: do the intervals and adjusted p-values keep their promise?

A replication draws a study whose truth is known and runs the estimators the impact stage runs on
it: :func:`evalpipe.scoring.intervals.paired_score` (the score interval with the clusters' CR2
design effect and degrees of freedom, and the p of the test it inverts), the exact McNemar p, and
Tarone-screened Holm / Benjamini-Hochberg over the words. ``tests/test_simulate.py`` checks that one
replication's rows equal the impact stage's own table for the same pairs, so the figures describe
the real estimator.

The study (:class:`Design`):

- benchmarks of unequal size, each with its own mean accuracy; every example gets its own base
  accuracy ``p_i ~ Beta`` around its benchmark's mean and one original answer ``o_i ~
  Bernoulli(p_i)``, shared by every word that hits the example (as in the pipeline);
- words with 5 to 500 expected pairs (log-uniform), each hitting examples of all benchmarks at
  random; ``draws`` typo draws per (example, word);
- a perturbed answer: with probability ``noise`` it is redrawn from the example's own accuracy
  (a symmetric flip: right -> wrong and wrong -> right equally often, no effect on accuracy),
  otherwise it is the original answer; then a correct answer turns wrong with the word's planted
  harm ``h_w``. The true delta of a pair is ``-h_w p_i``; the truth of a pooled word row is
  ``-h_w sum_b (n_wb / n_w) mu_b`` (its pairs per benchmark fixed, examples random).

With ``draws`` K > 1 every draw redraws the noise and the harm of the pair's perturbed answer
(the original answer stays the example's one), as K typo draws of one (example, word) do.

The heavy-tailed design (``words_per_example_tail`` set; :data:`HEAVY`) is example-centric instead:
each example holds ``1 + floor(s X)`` target words, X ~ Lomax(tail), s =
``words_per_example_scale`` (shape 1.5, s = 2: mean about 5, a few examples with 20-60 words,
infinite variance; :data:`MODERATE`: shape 3, s = 8, the same mean with lighter tails), chosen at
random; the words without a planted
harm get a small random one (exponential, mean ``background_harm``: most effects near zero, a
few large); and every example has a fragility ``f_i = 2 Beta(0.5, 0.5)`` (mean 1, independent of
its accuracy) that multiplies the harm of every word on it, so one example's pairs flip together.
The truths are unchanged (``E[f_i p_i] = mu_b``).

Outputs per n-band of the word's examples (its pairs with one draw): coverage of the truth, mean width, zero-width intervals,
and the false discovery proportion of BH rejections (p_bh <= alpha); plus the BH false discovery
rate over replications (the mean share of false rejections among rejections, 0 without any).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.errors import InputError
from evalpipe.scoring.intervals import (
    DEFAULT_METHOD,
    DF_AUTO,
    DF_EXCHANGEABLE,
    DF_INDEPENDENT,
    ClusterCorrection,
    clustered_score_p,
    cr2_weights_df,
    interval_from_counts,
    minimum_attainable_p,
    paired_score,
    score_test_p,
)
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
from evalpipe.scoring.robustness import clustered_mcnemar

N_BANDS: tuple[tuple[int, int], ...] = ((2, 9), (10, 29), (30, 99), (100, 299), (300, 100_000))
# The interval estimators the simulator can run: the score intervals of evalpipe.scoring.intervals
# and, for comparison, a clustered stratified percentile bootstrap.
BOOTSTRAP = "cluster_bootstrap"


def _codes(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    return np.unique(array.astype(str), return_inverse=True)[1].astype(np.int64)


def cluster_bootstrap_ci(
    diff: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Any] | np.ndarray | None = None,
    strata: Sequence[Any] | np.ndarray | None = None,
    samples: int,
    level: float,
    seed: int,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of ``mean(diff)`` resampling whole clusters within strata.

    Not used by the tables: with no discordant pair it gives [0, 0], and a stratum of one pair
    resamples into a single value. The simulator's comparison method (:data:`BOOTSTRAP`), which
    ``perf/interval_coverage.py`` compares the score intervals with.

    Each bootstrap sample draws, within every stratum, as many clusters as it has, with
    replacement, and takes the row mean of the drawn clusters' rows. Clusters with the same (sum,
    size) are interchangeable, so a draw is a multinomial over those types: exact, and cheap even
    for thousands of examples.

    Parameters
    ----------
    diff : one value per row (``correct_perturbed - correct_original``: -1, 0 or 1).
    clusters : cluster key per row (the example); None makes every row its own cluster (the naive
        bootstrap).
    strata : stratum per row (the benchmark); None for one stratum.
    samples : bootstrap resamples; 0 gives (None, None).
    level : confidence level in (0, 1).
    seed : RNG seed (hash the full key with :func:`~evalpipe.seeding.hashed_seed`).

    Returns
    -------
    (low, high), or (None, None) for no rows or no resamples.

    Examples
    --------
    >>> cluster_bootstrap_ci([0, 0, 0], samples=100, level=0.9, seed=1)
    (0.0, 0.0)
    """
    d = np.asarray(diff, dtype=float)
    n = d.size
    if n == 0 or samples <= 0:
        return None, None
    if not 0 < level < 1:
        raise InputError(f"scoring.confidence_level: expected a value in (0, 1), got {level}")
    # Sorted codes (np.unique), so the result does not depend on the order of the rows.
    cluster = np.arange(n) if clusters is None else _codes(clusters)
    stratum = np.zeros(n, dtype=np.int64) if strata is None else _codes(strata)
    width = int(cluster.max()) + 1
    keys, inverse = np.unique(stratum * width + cluster, return_inverse=True)
    totals = np.bincount(inverse, weights=d)
    lengths = np.bincount(inverse).astype(float)
    types, counts = np.unique(
        np.column_stack([keys // width, totals, lengths]), axis=0, return_counts=True
    )
    rng = np.random.default_rng(seed)
    sums = np.zeros(int(samples))
    sizes = np.zeros(int(samples))
    for code in np.unique(types[:, 0]):
        mask = types[:, 0] == code
        weights = counts[mask].astype(float)
        draws = rng.multinomial(int(weights.sum()), weights / weights.sum(), size=int(samples))
        sums += draws @ types[mask, 1]
        sizes += draws @ types[mask, 2]
    deltas = sums / sizes
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(deltas, [alpha, 1.0 - alpha])
    return float(low) + 0.0, float(high) + 0.0


@dataclass(frozen=True)
class Design:
    """A planted-effect study (module docstring)."""

    benchmark_sizes: tuple[int, ...] = (600, 300, 120, 40)
    benchmark_accuracy: tuple[float, ...] = (0.75, 0.55, 0.35, 0.6)
    concentration: float = 4.0  # Beta(mu c, (1 - mu) c) per example: a wide spread of difficulty
    n_words: int = 60
    pairs_range: tuple[int, int] = (5, 500)
    noise: float = 0.2
    planted_share: float = 0.1
    planted_harm: float = 0.3
    background_harm: float = 0.0
    draws: int = 1
    # The heavy-tailed, example-centric design (module docstring) when set: Lomax shape of the
    # number of target words per example.
    words_per_example_tail: float | None = None
    # ... and its scale: ``1 + floor(scale X)`` target words per example.
    words_per_example_scale: float = 2.0

    def __post_init__(self) -> None:
        if len(self.benchmark_sizes) != len(self.benchmark_accuracy):
            raise ValueError("benchmark_sizes and benchmark_accuracy differ in length")
        if self.words_per_example_tail is None and sum(self.benchmark_sizes) < self.pairs_range[1]:
            raise ValueError("pairs_range: a word cannot have more pairs than examples")


@dataclass
class Replication:
    """One simulated study's pairs and word truths."""

    word: np.ndarray  # per pair: word index
    benchmark: np.ndarray  # per pair: benchmark index
    example: np.ndarray  # per pair: example index (cluster)
    original: np.ndarray  # per pair: bool
    perturbed: np.ndarray  # per pair: bool
    harm: np.ndarray  # per word
    truth: np.ndarray = field(default_factory=lambda: np.empty(0))  # per word: true pooled delta
    pair_truth: np.ndarray = field(default_factory=lambda: np.empty(0))  # per pair: -harm * mu_b


def simulate(design: Design, rng: np.random.Generator) -> Replication:
    """Draw one study (module docstring).

    Parameters
    ----------
    design : the study.
    rng : random generator.

    Returns
    -------
    Replication
    """
    sizes = np.asarray(design.benchmark_sizes)
    mus = np.asarray(design.benchmark_accuracy, dtype=float)
    bench_of_example = np.repeat(np.arange(sizes.size), sizes)
    mu = mus[bench_of_example]
    p = rng.beta(mu * design.concentration, (1 - mu) * design.concentration)
    original = rng.random(p.size) < p
    tail = design.words_per_example_tail
    heavy = tail is not None
    if tail is not None:
        per_example = 1 + np.floor(design.words_per_example_scale * rng.pareto(tail, p.size))
        per_example = np.minimum(per_example, design.n_words)
        order = rng.random((p.size, design.n_words)).argsort(axis=1).argsort(axis=1)
        hit = (order < per_example[:, None]).T
    else:
        lo, hi = design.pairs_range
        target = np.exp(rng.uniform(math.log(lo), math.log(hi), design.n_words))
        hit = rng.random((design.n_words, p.size)) < (target / p.size)[:, None]
    words, examples = np.nonzero(hit)
    harm = np.full(design.n_words, design.background_harm)
    if heavy:
        harm = np.minimum(rng.exponential(design.background_harm, design.n_words), 0.3)
    planted = rng.permutation(design.n_words)[: round(design.planted_share * design.n_words)]
    harm[planted] = design.planted_harm
    fragility = 2.0 * rng.beta(0.5, 0.5, p.size) if heavy else np.ones(p.size)
    words = np.repeat(words, design.draws)
    examples = np.repeat(examples, design.draws)
    redraw = rng.random(words.size) < design.noise
    answer = np.where(redraw, rng.random(words.size) < p[examples], original[examples])
    answer &= ~(rng.random(words.size) < harm[words] * fragility[examples])
    bench = bench_of_example[examples]
    counts = np.bincount(words, minlength=design.n_words).astype(float)
    weighted_mu = np.bincount(words, weights=mus[bench], minlength=design.n_words)
    with np.errstate(invalid="ignore", divide="ignore"):
        truth = -harm * weighted_mu / counts
    return Replication(
        word=words,
        benchmark=bench,
        example=examples,
        original=original[examples],
        perturbed=answer,
        harm=harm,
        truth=truth,
        pair_truth=-harm[words] * mus[bench],
    )


def _cr1_design_effect(diff: np.ndarray, clusters: np.ndarray) -> float:
    """The CR1 design effect, a comparison method of the headline figures:
    (``G / (G - 1)``) over the independent-pairs variance, floored at 1, and 1 when the
    differences do not vary or there is one cluster."""
    codes = np.unique(clusters, return_inverse=True)[1].ravel()
    n, g = diff.size, int(codes.max()) + 1
    resid = diff - diff.mean()
    naive = float((resid**2).sum())
    if g < 2 or g == n or naive <= 0:
        return 1.0
    sums = np.bincount(codes, weights=resid, minlength=g)
    return max(1.0, float((sums**2).sum()) * g / (g - 1) / naive)


def word_rows(
    rep: Replication,
    *,
    n_words: int,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
    bootstrap_samples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The pooled word rows the impact stage would print for this study.

    Parameters
    ----------
    rep : a simulated study.
    n_words : words in the design (words without pairs get no row).
    level : confidence level.
    method : an interval method of :mod:`evalpipe.scoring.intervals`, or :data:`BOOTSTRAP` (the
        old clustered, stratified percentile bootstrap).
    bootstrap_samples, seed : for :data:`BOOTSTRAP`.

    Returns
    -------
    DataFrame
        One row per word with pairs: ``word, n`` (examples), ``delta, ci_low, ci_high,
        design_effect, mcnemar_p`` (the score test the interval inverts), ``mcnemar_exact_p``,
        ``p_holm, p_bh`` (Tarone-screened, as printed), ``p_holm_before, p_bh_before`` (plain
        Holm / BH of the exact McNemar p, for comparison), ``harm, truth``.
    """
    order = np.argsort(rep.word, kind="stable")
    word, o, p = rep.word[order], rep.original[order], rep.perturbed[order]
    example, bench = rep.example[order], rep.benchmark[order]
    starts = np.searchsorted(word, np.arange(n_words + 1))
    rows = []
    for w in range(n_words):
        a, b = starts[w], starts[w + 1]
        if a == b:
            continue
        ow, pw = o[a:b], p[a:b]
        c2i, i2c = int((ow & ~pw).sum()), int((~ow & pw).sum())
        diff = pw.astype(float) - ow.astype(float)
        score = paired_score(ow, pw, clusters=example[a:b], level=level,
                             method=DEFAULT_METHOD if method == BOOTSTRAP else method)  # fmt: skip
        low, high, deff = score.low, score.high, score.design_effect
        if method == BOOTSTRAP:
            low, high = cluster_bootstrap_ci(
                diff,
                clusters=example[a:b],
                strata=bench[a:b],
                samples=bootstrap_samples,
                level=level,
                seed=seed * 1_000_003 + w,
            )
        rows.append(
            {
                "word": w,
                # examples, as in the impact table: the draws of one example count once
                "n": int(np.unique(example[a:b]).size),
                "delta": float(diff.mean()),
                "ci_low": low,
                "ci_high": high,
                "design_effect": deff,
                "n_discordant": c2i + i2c,
                "mcnemar_p": score.p_value,
                "mcnemar_exact_p": clustered_mcnemar(c2i, i2c, deff),
                "harm": float(rep.harm[w]),
                "truth": float(rep.truth[w]),
            }
        )
    table = pd.DataFrame(rows)
    raw = table["mcnemar_p"].to_numpy(dtype=float)
    floor = minimum_attainable_p(table["n_discordant"].to_numpy(dtype=float),
                                 table["design_effect"].to_numpy(dtype=float))  # fmt: skip
    table["p_holm"] = holm(raw, min_p=floor, alpha=1.0 - level)
    table["p_bh"] = benjamini_hochberg(raw, min_p=floor, alpha=1.0 - level)
    exact = table["mcnemar_exact_p"].to_numpy(dtype=float)
    table["p_holm_before"] = holm(exact)
    table["p_bh_before"] = benjamini_hochberg(exact)
    return table.drop(columns="n_discordant")


# The headline interval estimators the simulator compares (run_headline):
HEADLINE_METHODS = (
    "independent",  # the clusters ignored
    "cr1_normal",  # CR1 design effect, normal quantile (p: exact McNemar beside it)
    "cr1_t",  # CR1 design effect, Student t on G - 1
    "bootstrap_floor",  # example (cluster) percentile bootstrap, hulled with the score interval
    "cr2_bm",  # CR2 design effect floored at 1, Bell-McCaffrey df
    "cr2_floor",  # CR2 at t on its df, hulled with the independent-pairs score interval
    "cr3_floor_independent",  # CR3 (jackknife) likewise, df of the independent-pairs model
    "cr3_floor_exchangeable",  # the same with the exchangeable working model's df
    "cr3_floor",  # the tables' method (paired_score): exchangeable df from 41 examples on
)


def _cr2_ratio_df(diff: np.ndarray, clusters: np.ndarray) -> tuple[float, float]:
    """CR2 over the independent-pairs variance of the mean (unfloored) and its Bell-McCaffrey
    df (``cr2_bm``, ``cr2_floor``: comparison methods of the headline figures)."""
    codes = np.unique(clusters, return_inverse=True)[1].ravel()
    n, g = diff.size, int(codes.max()) + 1
    if g == n:
        return 1.0, math.inf
    if g == 1:
        return float(n), 1.0
    sizes = np.bincount(codes, minlength=g).astype(float)
    weight, df = cr2_weights_df(sizes, n)
    resid = diff - diff.mean()
    naive = float((resid**2).sum()) / (1.0 - 1.0 / n)
    if naive <= 1e-12:
        return n / g, df
    sums = np.bincount(codes, weights=resid, minlength=g)
    return float((weight * sums**2).sum()) / naive, df


def headline_rows(
    rep: Replication,
    *,
    n_benchmarks: int,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
    bootstrap_samples: int = 400,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """Each benchmark's headline delta over all its (word, example) pairs, as the score stage
    prints it, by every estimator of :data:`HEADLINE_METHODS`.

    One example is paired once per word that hit it (and once per draw), so the pairs cluster on
    the example.

    Parameters
    ----------
    rep : a simulated study.
    n_benchmarks : benchmarks in the design.
    level : confidence level.
    method : the score-interval method.
    bootstrap_samples : resamples of ``bootstrap_floor``.
    rng : for the bootstrap (a fixed one when None).

    Returns
    -------
    DataFrame
        One row per (benchmark with pairs, estimator): ``benchmark, estimator, n, examples,
        delta, ci_low, ci_high, p`` (the p printed beside the interval; NaN where none is),
        ``design_effect, df, truth``.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    rows = []
    for b in range(n_benchmarks):
        mask = rep.benchmark == b
        if not mask.any():
            continue
        o, p, ex = rep.original[mask], rep.perturbed[mask], rep.example[mask]
        diff = p.astype(float) - o.astype(float)
        counts = {"both": float((o & p).sum()), "c2i": float((o & ~p).sum()),
                  "i2c": float((~o & p).sum()), "neither": float((~o & ~p).sum())}  # fmt: skip
        c2i, i2c = int(counts["c2i"]), int(counts["i2c"])
        codes = np.unique(ex, return_inverse=True)[1].ravel()
        g = int(codes.max()) + 1
        # A pair's expected difference is -harm * mu_b (its example's accuracy is random around
        # the benchmark's mean mu_b); the headline truth is the mean over the benchmark's pairs.
        common = {"benchmark": b, "n": int(mask.sum()), "examples": g,
                  "delta": float(diff.mean()), "truth": float(np.mean(rep.pair_truth[mask]))}  # fmt: skip

        def scaled(
            deff: float, df: float = math.inf, counts: dict[str, float] = counts
        ) -> tuple[float, float]:
            low, high = interval_from_counts(**{k: v / deff for k, v in counts.items()},
                                             level=level, method=method, df=df)  # fmt: skip
            return float(low), float(high)

        low, high = scaled(1.0)
        rows.append({**common, "estimator": "independent", "ci_low": low, "ci_high": high,
                     "p": float(score_test_p(c2i=c2i, i2c=i2c)), "design_effect": 1.0,
                     "df": math.inf})  # fmt: skip
        cr1 = _cr1_design_effect(diff, ex)
        low, high = scaled(cr1)
        rows.append({**common, "estimator": "cr1_normal", "ci_low": low, "ci_high": high,
                     "p": clustered_mcnemar(c2i, i2c, cr1), "design_effect": cr1,
                     "df": math.inf})  # fmt: skip
        t_df = float(max(g - 1, 1))
        low, high = scaled(cr1, t_df)
        rows.append({**common, "estimator": "cr1_t", "ci_low": low, "ci_high": high,
                     "p": float(score_test_p(c2i=c2i, i2c=i2c, design_effect=cr1, df=t_df)),
                     "design_effect": cr1, "df": t_df})  # fmt: skip
        sums = np.bincount(codes, weights=diff, minlength=g)
        sizes = np.bincount(codes, minlength=g).astype(float)
        weights = rng.multinomial(g, np.full(g, 1.0 / g), size=bootstrap_samples)
        boot = (weights @ sums) / (weights @ sizes)
        alpha = (1.0 - level) / 2.0
        b_low, b_high = np.quantile(boot, [alpha, 1.0 - alpha])
        floor_low, floor_high = scaled(1.0)
        rows.append({**common, "estimator": "bootstrap_floor",
                     "ci_low": min(float(b_low), floor_low),
                     "ci_high": max(float(b_high), floor_high), "p": math.nan,
                     "design_effect": math.nan, "df": math.nan})  # fmt: skip
        ratio, cr2_df = _cr2_ratio_df(diff, ex)
        deff = max(1.0, ratio)
        low, high = scaled(deff, cr2_df)
        rows.append({**common, "estimator": "cr2_bm", "ci_low": low, "ci_high": high,
                     "p": float(score_test_p(c2i=c2i, i2c=i2c, design_effect=deff, df=cr2_df)),
                     "design_effect": deff, "df": cr2_df})  # fmt: skip
        cr2 = ClusterCorrection(deff, cr2_df, ratio)
        low, high = scaled(cr2.inflation(level))
        rows.append({**common, "estimator": "cr2_floor", "ci_low": low, "ci_high": high,
                     "p": clustered_score_p(c2i=c2i, i2c=i2c, correction=cr2),
                     "design_effect": deff, "df": cr2_df})  # fmt: skip
        for name, model in (
            ("cr3_floor_independent", DF_INDEPENDENT),
            ("cr3_floor_exchangeable", DF_EXCHANGEABLE),
            ("cr3_floor", DF_AUTO),
        ):
            score = paired_score(o, p, clusters=ex, level=level, method=method, df_model=model)
            rows.append({**common, "estimator": name, "ci_low": score.low,
                         "ci_high": score.high, "p": score.p_value,
                         "design_effect": score.design_effect, "df": score.df})  # fmt: skip
    return pd.DataFrame(rows)


def n_band(n: int | np.ndarray, bands: Sequence[tuple[int, int]] = N_BANDS) -> np.ndarray:
    """Label of the n-band of each count ("10-29", ">=300")."""
    values = np.atleast_1d(np.asarray(n))
    labels = np.full(values.shape, "<2", dtype=object)
    for lo, hi in bands:
        name = f">={lo}" if hi >= 100_000 else f"{lo}-{hi}"
        labels[(values >= lo) & (values <= hi)] = name
    return labels


def run(
    design: Design,
    *,
    replications: int,
    seed: int = 0,
    level: float = 0.95,
    alpha: float = 0.05,
    methods: Sequence[str] = (DEFAULT_METHOD,),
    bootstrap_samples: int = 1000,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the estimators on ``replications`` simulated studies.

    Parameters
    ----------
    design : the study.
    replications : how many.
    seed : RNG seed (every method sees the same studies).
    level : confidence level.
    alpha : BH / Holm rejection threshold.
    methods : interval methods (:data:`evalpipe.scoring.intervals.METHODS`, :data:`BOOTSTRAP`).
    bootstrap_samples : for :data:`BOOTSTRAP`.

    Returns
    -------
    (bands, fdr)
        ``bands``: one row per (method, n-band): ``rows, coverage, mean_width, zero_width,
        rejections, false_rejections`` (Tarone-screened BH at ``alpha``), ``planted`` (rows of
        words with the planted harm), ``planted_ci_excludes_0, planted_bh, planted_bh_before``
        (of those: intervals excluding 0, screened BH rejections, plain BH of the exact McNemar p
        for comparison), ``disagree, disagree_before`` (rows whose "interval excludes 0" differs from
        "p < alpha" with the score p / with the exact McNemar p); ``fdr``: one row per method:
        ``bh_fdr`` (mean false discovery proportion over replications), ``holm_fwer`` (share of
        replications with a false Holm rejection), their ``_before`` values, ``disagree,
        disagree_before, rows, replications``.
    """
    rng = np.random.default_rng(seed)
    tables: dict[str, list[pd.DataFrame]] = {m: [] for m in methods}
    for r in range(replications):
        rep = simulate(design, rng)
        for method in methods:
            table = word_rows(rep, n_words=design.n_words, level=level, method=method,
                              bootstrap_samples=bootstrap_samples, seed=seed + r)  # fmt: skip
            tables[method].append(table.assign(replication=r))
    band_rows, fdr_rows = [], []
    for method in methods:
        rows = pd.concat(tables[method], ignore_index=True)
        rows["band"] = n_band(rows["n"].to_numpy())
        rows["covered"] = (rows["ci_low"] <= rows["truth"] + 1e-12) & (
            rows["truth"] - 1e-12 <= rows["ci_high"]
        )
        rows["width"] = rows["ci_high"] - rows["ci_low"]
        rows["reject"] = rows["p_bh"] <= alpha
        rows["reject_before"] = rows["p_bh_before"] <= alpha
        rows["false"] = rows["reject"] & (rows["harm"] == 0)
        rows["false_before"] = rows["reject_before"] & (rows["harm"] == 0)
        rows["planted"] = rows["harm"] >= design.planted_harm
        rows["excludes_0"] = (rows["ci_low"] > 0) | (rows["ci_high"] < 0)
        rows["disagree"] = rows["excludes_0"] != (rows["mcnemar_p"] < alpha)
        rows["disagree_before"] = rows["excludes_0"] != (rows["mcnemar_exact_p"] < alpha)
        for band, group in rows.groupby("band", sort=False):
            planted = group.loc[group["planted"]]
            band_rows.append(
                {
                    "method": method,
                    "band": band,
                    "rows": len(group),
                    "coverage": float(group["covered"].mean()),
                    "mean_width": float(group["width"].mean()),
                    "zero_width": int((group["width"] <= 1e-12).sum()),
                    "rejections": int(group["reject"].sum()),
                    "false_rejections": int(group["false"].sum()),
                    "planted": len(planted),
                    "planted_ci_excludes_0": int(planted["excludes_0"].sum()),
                    "planted_bh": int(planted["reject"].sum()),
                    "planted_bh_before": int(planted["reject_before"].sum()),
                    "disagree": int(group["disagree"].sum()),
                    "disagree_before": int(group["disagree_before"].sum()),
                }
            )
        per_rep = rows.groupby("replication").agg(
            rejected=("reject", "sum"), false=("false", "sum"),
            rejected_before=("reject_before", "sum"), false_before=("false_before", "sum"),
        )  # fmt: skip
        null = rows["harm"] == 0
        holm_false = (
            rows.assign(hf=(rows["p_holm"] <= alpha) & null).groupby("replication")["hf"].any()
        )
        holm_false_before = (
            rows.assign(hf=(rows["p_holm_before"] <= alpha) & null)
            .groupby("replication")["hf"]
            .any()
        )
        fdp = per_rep["false"] / per_rep["rejected"].clip(lower=1)
        fdp_before = per_rep["false_before"] / per_rep["rejected_before"].clip(lower=1)
        fdr_rows.append(
            {
                "method": method,
                "bh_fdr": float(fdp.mean()),
                "bh_fdr_before": float(fdp_before.mean()),
                "holm_fwer": float(holm_false.mean()),
                "holm_fwer_before": float(holm_false_before.mean()),
                "disagree": int(rows["disagree"].sum()),
                "disagree_before": int(rows["disagree_before"].sum()),
                "rows": len(rows),
                "replications": replications,
            }
        )
    order = {f">={lo}" if hi >= 100_000 else f"{lo}-{hi}": i for i, (lo, hi) in enumerate(N_BANDS)}
    bands = pd.DataFrame(band_rows)
    bands["_o"] = bands["band"].map(order).fillna(-1)
    bands = bands.sort_values(["method", "_o"], kind="stable").drop(columns="_o")
    return bands.reset_index(drop=True), pd.DataFrame(fdr_rows)


def run_headline(
    design: Design,
    *,
    replications: int,
    seed: int = 0,
    level: float = 0.95,
    bootstrap_samples: int = 400,
) -> pd.DataFrame:
    """Coverage of the headline (per-benchmark, all words pooled) intervals by estimator.

    Parameters
    ----------
    design : the study.
    replications : how many.
    seed : RNG seed.
    level : confidence level.
    bootstrap_samples : resamples of the ``bootstrap_floor`` estimator.

    Returns
    -------
    DataFrame
        One row per (estimator, benchmark): ``estimator, benchmark, examples, mean_pairs,
        max_pairs_per_example`` (mean over replications), ``mean_design_effect, median_df,
        coverage, mean_width, disagreements`` (rows where "interval excludes 0" and "p < 1 -
        level" differ; NaN where no p is printed).
    """
    rng = np.random.default_rng(seed)
    boot_rng = np.random.default_rng([seed, 7])
    tables = []
    for r in range(replications):
        rep = simulate(design, rng)
        table = headline_rows(rep, n_benchmarks=len(design.benchmark_sizes), level=level,
                              bootstrap_samples=bootstrap_samples, rng=boot_rng)  # fmt: skip
        sizes = pd.Series(rep.example).value_counts()
        bench_of = pd.Series(rep.benchmark, index=rep.example).groupby(level=0).first()
        largest = sizes.groupby(bench_of.loc[sizes.index].to_numpy()).max()
        table["max_pairs_per_example"] = table["benchmark"].map(largest).astype(float)
        tables.append(table.assign(replication=r))
    rows = pd.concat(tables, ignore_index=True)
    rows["covered"] = (rows["ci_low"] <= rows["truth"] + 1e-12) & (
        rows["truth"] - 1e-12 <= rows["ci_high"]
    )
    rows["width"] = rows["ci_high"] - rows["ci_low"]
    excludes = (rows["ci_low"] > 0) | (rows["ci_high"] < 0)
    rows["disagree"] = np.where(rows["p"].isna(), np.nan, excludes != (rows["p"] < 1.0 - level))
    table = rows.groupby(["estimator", "benchmark"], sort=False).agg(
        examples=("examples", "max"),
        mean_pairs=("n", "mean"),
        max_pairs_per_example=("max_pairs_per_example", "mean"),
        mean_design_effect=("design_effect", "mean"),
        median_df=("df", "median"),
        coverage=("covered", "mean"),
        mean_width=("width", "mean"),
        disagreements=("disagree", lambda s: s.sum() if s.notna().all() else np.nan),
    )
    order = {name: i for i, name in enumerate(HEADLINE_METHODS)}
    table = table.reset_index()
    table["_o"] = table["estimator"].map(order)
    table = table.sort_values(["_o", "benchmark"], kind="stable").drop(columns="_o")
    return table.reset_index(drop=True)


# The designs for the headline: benchmarks of the sizes users run (20 examples is the
# default max_samples), several target words per example with heavy-tailed (Lomax 1.5: a few
# examples hold 20-60 words) or moderate-tailed (Lomax 3) counts, both about 4.5 words per example,
# K = 1, 2 or 4 typo draws; SPARSE has moderate tails and 1.5 words per example (about 3
# discordant pairs in a benchmark of 20 examples).
HEADLINE_SIZES = (20, 40, 80, 300)
HEAVY = Design(benchmark_sizes=HEADLINE_SIZES, benchmark_accuracy=(0.6, 0.5, 0.7, 0.45),
               words_per_example_tail=1.5, background_harm=0.02, noise=0.2)  # fmt: skip
MODERATE = Design(benchmark_sizes=HEADLINE_SIZES, benchmark_accuracy=(0.6, 0.5, 0.7, 0.45),
                  words_per_example_tail=3.0, words_per_example_scale=8.0,
                  background_harm=0.02, noise=0.2)  # fmt: skip
SPARSE = Design(benchmark_sizes=HEADLINE_SIZES, benchmark_accuracy=(0.6, 0.5, 0.7, 0.45),
                words_per_example_tail=3.0, background_harm=0.02, noise=0.2)  # fmt: skip
