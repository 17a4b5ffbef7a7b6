"""Planted-effect simulator: do the intervals and adjusted p-values keep their promise?

A replication draws a study whose truth is known and runs the estimators the impact stage runs on
it: :func:`evalpipe.scoring.intervals.interval_from_counts` with the clusters' design effect (what
:func:`evalpipe.scoring.intervals.paired_interval` does for a row of ``data/impact/words.parquet``),
:func:`evalpipe.scoring.robustness.clustered_mcnemar`, and Holm / Benjamini-Hochberg over the
words. ``tests/test_simulate.py`` checks that one replication's rows equal the impact stage's own
table for the same pairs, so the figures describe the real estimator.

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
from evalpipe.scoring.intervals import DEFAULT_METHOD, design_effect, interval_from_counts
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
from evalpipe.scoring.robustness import clustered_mcnemar

N_BANDS: tuple[tuple[int, int], ...] = ((2, 9), (10, 29), (30, 99), (100, 299), (300, 100_000))
# The interval estimators the simulator can run: the score intervals of evalpipe.scoring.intervals
# and, as "before", the clustered stratified percentile bootstrap the tables used until now.
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
    resamples into a single value. The simulator's "before" (:data:`BOOTSTRAP`), which
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

    def __post_init__(self) -> None:
        if len(self.benchmark_sizes) != len(self.benchmark_accuracy):
            raise ValueError("benchmark_sizes and benchmark_accuracy differ in length")
        if sum(self.benchmark_sizes) < self.pairs_range[1]:
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
    lo, hi = design.pairs_range
    target = np.exp(rng.uniform(math.log(lo), math.log(hi), design.n_words))
    hit = rng.random((design.n_words, p.size)) < (target / p.size)[:, None]
    words, examples = np.nonzero(hit)
    harm = np.full(design.n_words, design.background_harm)
    planted = rng.permutation(design.n_words)[: round(design.planted_share * design.n_words)]
    harm[planted] = design.planted_harm
    words = np.repeat(words, design.draws)
    examples = np.repeat(examples, design.draws)
    redraw = rng.random(words.size) < design.noise
    answer = np.where(redraw, rng.random(words.size) < p[examples], original[examples])
    answer &= ~(rng.random(words.size) < harm[words])
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
        design_effect, mcnemar_p, p_holm, p_bh, harm, truth``.
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
        both, neither = int((ow & pw).sum()), int((~ow & ~pw).sum())
        diff = pw.astype(float) - ow.astype(float)
        deff = design_effect(diff, example[a:b])
        if method == BOOTSTRAP:
            low, high = cluster_bootstrap_ci(
                diff,
                clusters=example[a:b],
                strata=bench[a:b],
                samples=bootstrap_samples,
                level=level,
                seed=seed * 1_000_003 + w,
            )
        else:
            lows, highs = interval_from_counts(
                both=both / deff, c2i=c2i / deff, i2c=i2c / deff, neither=neither / deff,
                level=level, method=method,
            )  # fmt: skip
            low, high = float(lows) + 0.0, float(highs) + 0.0
        rows.append(
            {
                "word": w,
                # examples, as in the impact table: the draws of one example count once
                "n": int(np.unique(example[a:b]).size),
                "delta": float(diff.mean()),
                "ci_low": low,
                "ci_high": high,
                "design_effect": deff,
                "mcnemar_p": clustered_mcnemar(c2i, i2c, deff),
                "harm": float(rep.harm[w]),
                "truth": float(rep.truth[w]),
            }
        )
    table = pd.DataFrame(rows)
    table["p_holm"] = holm(table["mcnemar_p"].to_numpy(dtype=float))
    table["p_bh"] = benjamini_hochberg(table["mcnemar_p"].to_numpy(dtype=float))
    return table


def headline_rows(
    rep: Replication, *, n_benchmarks: int, level: float = 0.95, method: str = DEFAULT_METHOD
) -> pd.DataFrame:
    """Each benchmark's headline delta over all its (word, example) pairs, as the score stage
    prints it: one example is paired once per word that hit it, so the interval clusters on the
    example. Also the interval that ignores the clusters, to show what the design effect buys.

    Parameters
    ----------
    rep : a simulated study.
    n_benchmarks : benchmarks in the design.
    level : confidence level.
    method : a score-interval method.

    Returns
    -------
    DataFrame
        One row per benchmark with pairs: ``benchmark, n, delta, ci_low, ci_high, naive_low,
        naive_high, design_effect, truth``.
    """
    rows = []
    for b in range(n_benchmarks):
        mask = rep.benchmark == b
        if not mask.any():
            continue
        o, p = rep.original[mask], rep.perturbed[mask]
        deff = design_effect(p.astype(float) - o.astype(float), rep.example[mask])
        counts = {"both": float((o & p).sum()), "c2i": float((o & ~p).sum()),
                  "i2c": float((~o & p).sum()), "neither": float((~o & ~p).sum())}  # fmt: skip
        low, high = interval_from_counts(
            **{k: v / deff for k, v in counts.items()}, level=level, method=method
        )
        naive_low, naive_high = interval_from_counts(**counts, level=level, method=method)
        # A pair's expected difference is -harm * mu_b (its example's accuracy is random around
        # the benchmark's mean mu_b); the headline truth is the mean over the benchmark's pairs.
        truth = float(np.mean(rep.pair_truth[mask]))
        rows.append({"benchmark": b, "n": int(mask.sum()),
                     "delta": float((p.astype(float) - o).mean()),
                     "ci_low": float(low), "ci_high": float(high), "naive_low": float(naive_low),
                     "naive_high": float(naive_high), "design_effect": deff,
                     "truth": truth})  # fmt: skip
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
        rejections, false_rejections`` (BH at ``alpha``); ``fdr``: one row per method:
        ``bh_fdr`` (mean false discovery proportion over replications), ``holm_fwer`` (share of
        replications with a false Holm rejection), ``replications``.
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
        rows["false"] = rows["reject"] & (rows["harm"] == 0)
        for band, group in rows.groupby("band", sort=False):
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
                }
            )
        per_rep = rows.groupby("replication").agg(
            rejected=("reject", "sum"), false=("false", "sum")
        )
        holm_false = (
            rows.assign(hf=(rows["p_holm"] <= alpha) & (rows["harm"] == 0))
            .groupby("replication")["hf"]
            .any()
        )
        fdp = per_rep["false"] / per_rep["rejected"].clip(lower=1)
        fdr_rows.append(
            {
                "method": method,
                "bh_fdr": float(fdp.mean()),
                "holm_fwer": float(holm_false.mean()),
                "replications": replications,
            }
        )
    order = {f">={lo}" if hi >= 100_000 else f"{lo}-{hi}": i for i, (lo, hi) in enumerate(N_BANDS)}
    bands = pd.DataFrame(band_rows)
    bands["_o"] = bands["band"].map(order).fillna(-1)
    bands = bands.sort_values(["method", "_o"], kind="stable").drop(columns="_o")
    return bands.reset_index(drop=True), pd.DataFrame(fdr_rows)


def run_headline(
    design: Design, *, replications: int, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Coverage of the headline (per-benchmark, all words pooled) intervals, with and without the
    example clusters' design effect.

    Parameters
    ----------
    design : the study.
    replications : how many.
    seed : RNG seed.
    level : confidence level.

    Returns
    -------
    DataFrame
        One row per benchmark: ``benchmark, examples, mean_pairs, mean_design_effect, coverage``
        (clustered, as printed), ``coverage_ignoring_clusters``, ``mean_width``.
    """
    rng = np.random.default_rng(seed)
    tables = [
        headline_rows(simulate(design, rng), n_benchmarks=len(design.benchmark_sizes), level=level)
        for _ in range(replications)
    ]
    rows = pd.concat(tables, ignore_index=True)
    rows["covered"] = (rows["ci_low"] <= rows["truth"]) & (rows["truth"] <= rows["ci_high"])
    rows["naive_covered"] = (rows["naive_low"] <= rows["truth"]) & (
        rows["truth"] <= rows["naive_high"]
    )
    rows["width"] = rows["ci_high"] - rows["ci_low"]
    table = rows.groupby("benchmark", sort=True).agg(
        mean_pairs=("n", "mean"),
        mean_design_effect=("design_effect", "mean"),
        coverage=("covered", "mean"),
        coverage_ignoring_clusters=("naive_covered", "mean"),
        mean_width=("width", "mean"),
    )
    table.insert(0, "examples", [design.benchmark_sizes[b] for b in table.index])
    return table.reset_index()
