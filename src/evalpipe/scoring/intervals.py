"""Confidence intervals for a paired difference of proportions that keep their coverage.

Every delta evalpipe prints is ``accuracy_perturbed - accuracy_original`` on pairs: the same
examples answered without and with typos. Its interval comes from :func:`paired_interval`:

- **Tango's score interval** (Tango 1998, Stat Med 17:891; :func:`tango_interval`): the deltas
  that a score test of the paired 2x2 table does not reject at the given level. The variance is
  the one under the tested delta (constrained maximum likelihood), so the interval never has zero
  width: with no discordant pair among n it is ``[-z^2/(n+z^2), z^2/(n+z^2)]``. It depends on the
  discordant counts and n only.
- **Newcombe's hybrid score interval for paired data** (Newcombe 1998, Stat Med 17:2635, method 10,
  with the continuity-corrected phi; :func:`newcombe_interval`): Wilson intervals of the two
  marginal accuracies combined by square-and-add with their estimated correlation. Also never of
  zero width; kept for comparison (the simulator reports both; docs/scoring.md says why Tango is
  the default).
- **Clusters** (an example paired once per word that hit it in the operation and script tables and
  the headline deltas, or once per typo draw): the pairs of one example share its original answer
  and are not independent. :func:`cluster_correction` estimates the ratio of the cluster-robust to
  the independent-pairs variance of delta (Rao & Scott 1992's approach for clustered binary data)
  with the cluster jackknife (CR3; MacKinnon, Nielsen & Webb 2023), and Bell & McCaffrey's (2002)
  Satterthwaite degrees of freedom (Imbens & Kolesar 2016): under a working model of
  independent pairs below :data:`EXCHANGEABLE_FROM_EXAMPLES` examples, and of correlated pairs
  within an example (:func:`exchangeable_df`) from there on, where a few large examples holding
  correlated pairs otherwise leave the interval short (``df_model`` of :func:`paired_score`).
  The interval is the hull of two score intervals: the independent-pairs one (normal quantile) and
  the clustered one (counts divided by the ratio, Student t quantile on those degrees of freedom);
  in practice the 2x2 counts are divided by ``max(1, ratio * (t / z)^2)`` and the interval is
  inverted at the normal quantile. So it widens to the information the clusters really hold and to
  the uncertainty of a variance estimated from few examples, and is never narrower than the
  independent-pairs interval. Differences that do not vary give no variance to estimate: the
  ratio is then n / G (every example counts once); one example gives a ratio of n and 1 degree of
  freedom (it says nothing about other examples).
- **One verdict per row**: :func:`paired_score` also returns the p-value of the test the interval
  inverts: a delta is rejected when both score tests reject it, so the p is the larger of the
  two tests' p at delta = 0 (:func:`clustered_score_p`; Tango's statistic at 0 is McNemar's
  asymptotic statistic ``(b - c) / sqrt(b + c)``). "The interval excludes 0" and "p < 1 - level"
  are the same event at every level.
- **Strata** (pooled rows over benchmarks): pooled deltas are example-weighted, i.e. the mean of
  all pairs, so the interval is computed on the pooled counts. The pairs are a mixture of the
  benchmarks' pair distributions, whose variance is at least the stratified one (the
  between-benchmark spread of deltas adds to it): the interval is valid, slightly conservative
  when benchmarks differ, and a stratum holding one or two pairs changes nothing (the stratified
  bootstrap it replaces resampled such a stratum into a single value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from evalpipe.errors import InputError

TANGO = "tango_score"
NEWCOMBE = "newcombe_hybrid_score"
METHODS = (TANGO, NEWCOMBE)
# Printed beside every interval (column ``ci_method``), with "+deff" when a design effect > 1
# widened it.
DEFAULT_METHOD = TANGO
_BISECTIONS = 60  # 2**-60 of the [-1, 1] range: far below the 4 printed decimals


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise InputError(f"scoring.confidence_level: expected a value in (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def critical_value(level: float, df: float = math.inf) -> float:
    """Two-sided critical value: normal for ``df`` = inf, else Student t on ``df``."""
    if math.isinf(df):
        return _z(level)
    _z(level)  # validates the level
    from scipy.special import stdtrit  # the t quantile, without scipy.stats' import time

    return float(stdtrit(df, 0.5 + level / 2.0))


def wilson_interval(
    successes: np.ndarray | float, n: np.ndarray | float, *, level: float, df: float = math.inf
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (vectorised; counts may be fractional).

    Examples
    --------
    >>> low, high = wilson_interval(0.0, 10.0, level=0.95)
    >>> round(float(low), 4), round(float(high), 4)
    (0.0, 0.2775)
    """
    z = critical_value(level, df)
    x = np.asarray(successes, dtype=float)
    m = np.asarray(n, dtype=float)
    p = x / m
    centre = (x + z * z / 2.0) / (m + z * z)
    half = z * np.sqrt(m * p * (1.0 - p) + z * z / 4.0) / (m + z * z)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def newcombe_interval(
    *,
    both: np.ndarray | float,
    c2i: np.ndarray | float,
    i2c: np.ndarray | float,
    neither: np.ndarray | float,
    level: float,
    df: float = math.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval (1998, method 10) for ``acc_perturbed - acc_original``.

    Parameters
    ----------
    both, c2i, i2c, neither : counts of pairs correct in both, correct -> incorrect, incorrect ->
        correct, incorrect in both (arrays of equal shape; fractional counts allowed).
    level : confidence level.
    df : degrees of freedom of the reference distribution (inf: normal).

    Returns
    -------
    (low, high) arrays.

    Examples
    --------
    Cavo et al. 2012 as in Fagerland, Lydersen & Laake (2017), Table 8.x: -0.0621 (-0.1186 to
    -0.0046), with their table's first row as the perturbed answers.

    >>> low, high = newcombe_interval(both=59, c2i=16, i2c=6, neither=80, level=0.95)
    >>> round(float(low), 4), round(float(high), 4)
    (-0.1186, -0.0046)
    """
    a, b, c, d = (np.asarray(v, dtype=float) for v in (both, i2c, c2i, neither))
    n = a + b + c + d
    p1 = (a + b) / n  # perturbed accuracy
    p2 = (a + c) / n  # original accuracy
    l1, u1 = wilson_interval(a + b, n, level=level, df=df)
    l2, u2 = wilson_interval(a + c, n, level=level, df=df)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    with np.errstate(divide="ignore", invalid="ignore"):
        # Newcombe's continuity-corrected phi: shrink a positive correlation by n/2, as the paper
        # does (0 when that crosses zero), keep a negative one.
        phi = np.where(
            cross > n / 2.0,
            (cross - n / 2.0) / np.sqrt(margins),
            np.where(cross >= 0, 0.0, cross / np.sqrt(margins)),
        )
    phi = np.where(margins > 0, phi, 0.0)
    delta = p1 - p2
    low = delta - np.sqrt(
        np.maximum(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    )
    high = delta + np.sqrt(
        np.maximum(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    )
    return low, high


def _tango_statistic(delta: np.ndarray, b: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
    # b: pairs incorrect -> correct (they raise the perturbed accuracy), c: correct -> incorrect.
    # q is the constrained ML estimate of P(correct -> incorrect) under the tested delta.
    w = -b - c + (2.0 * n - b + c) * delta
    q = (np.sqrt(np.maximum(0.0, w * w + 8.0 * n * c * delta * (1.0 - delta))) - w) / (4.0 * n)
    variance = n * (2.0 * q + delta * (1.0 - delta))
    numerator = b - c - n * delta
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = numerator / np.sqrt(variance)
    degenerate = np.where(numerator > 0, np.inf, np.where(numerator < 0, -np.inf, 0.0))
    return np.where(variance > 0, stat, degenerate)


def _tango_scalar(b: float, c: float, n: float, z: float) -> tuple[float, float]:
    """:func:`tango_interval` of one table, on floats (same statistic, same bisection)."""

    def stat(delta: float) -> float:
        w = -b - c + (2.0 * n - b + c) * delta
        q = (math.sqrt(max(0.0, w * w + 8.0 * n * c * delta * (1.0 - delta))) - w) / (4.0 * n)
        variance = n * (2.0 * q + delta * (1.0 - delta))
        numerator = b - c - n * delta
        if variance > 0:
            return numerator / math.sqrt(variance)
        return math.inf if numerator > 0 else -math.inf if numerator < 0 else 0.0

    estimate = (b - c) / n
    bounds = []
    for target, lo, hi in ((z, -1.0, estimate), (-z, estimate, 1.0)):
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2.0
            if stat(mid) > target:
                lo = mid
            else:
                hi = mid
        bounds.append((lo + hi) / 2.0)
    return bounds[0], bounds[1]


def tango_interval(
    *,
    c2i: np.ndarray | float,
    i2c: np.ndarray | float,
    n: np.ndarray | float,
    level: float,
    df: float = math.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """Tango's (1998) asymptotic score interval for ``acc_perturbed - acc_original``.

    The limits solve ``T(delta) = +-z`` by bisection (T decreases in delta), vectorised; with
    ``df`` finite, ``z`` is the Student t quantile (a variance estimated from few clusters).

    Parameters
    ----------
    c2i, i2c : discordant counts (correct -> incorrect, incorrect -> correct).
    n : pairs.
    level : confidence level.
    df : degrees of freedom of the reference distribution (inf: normal).

    Returns
    -------
    (low, high) arrays.

    Examples
    --------
    Cavo et al. 2012 as in Fagerland, Lydersen & Laake (2017) and the R package contingencytables:
    -0.0621 (-0.1240 to -0.0054).

    >>> low, high = tango_interval(c2i=16, i2c=6, n=161, level=0.95)
    >>> round(float(low), 4), round(float(high), 4)
    (-0.124, -0.0054)
    """
    z = critical_value(level, df)
    if all(np.ndim(v) == 0 for v in (c2i, i2c, n)):
        # One table (a row of an impact table): plain floats are ~20x faster than 0-d arrays.
        low, high = _tango_scalar(float(i2c), float(c2i), float(n), z)
        return np.asarray(low), np.asarray(high)
    b = np.asarray(i2c, dtype=float)
    c = np.asarray(c2i, dtype=float)
    m = np.asarray(n, dtype=float)
    b, c, m = np.broadcast_arrays(b, c, m)
    estimate = (b - c) / m
    bounds = []
    for target, lo, hi in ((z, -np.ones_like(m), estimate), (-z, estimate, np.ones_like(m))):
        lo, hi = lo.copy(), hi.copy()
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2.0
            # Below the lower limit T > z; above the upper one T < -z.
            above = _tango_statistic(mid, b, c, m) > target
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        bounds.append((lo + hi) / 2.0)
    return bounds[0], bounds[1]


@dataclass(frozen=True)
class ClusterCorrection:
    """How much the example clusters inflate the variance of delta, and how well that is known.

    ``variance_ratio``: the jackknife (CR3) over the independent-pairs variance of delta (may be
    below 1: a noisy estimate of "no clustering"). ``design_effect``: that ratio floored at 1,
    the factor printed beside an interval. ``df``: Bell-McCaffrey (Satterthwaite) degrees of
    freedom of the bias-reduced CR2 variance; ``inf`` when every cluster holds one pair (the
    score interval's own variance then needs no estimate).
    """

    design_effect: float
    df: float
    variance_ratio: float = 1.0

    def inflation(self, level: float) -> float:
        """The factor the 2x2 counts are divided by before the score interval is inverted at
        the normal quantile: ``max(1, ratio * (t_df / z)^2)``, so the interval is the hull of the
        independent-pairs score interval and the clustered one at the t quantile."""
        if math.isinf(self.df):
            return max(1.0, self.variance_ratio)
        scale = critical_value(level, self.df) / _z(level)
        return max(1.0, self.variance_ratio * scale * scale)


# Working models of the pairs of one example for the degrees of freedom of cluster_correction:
# independent pairs, pairs that share an intra-example correlation estimated from the data, or
# (``auto``, paired_score's default) the exchangeable model from EXCHANGEABLE_FROM_EXAMPLES
# examples on and independent pairs below. With heavy-tailed words per example the
# independent-pairs df cover down to 0.91 from 50 examples on; up to 40 examples they cover and
# the exchangeable df would widen the interval by up to 1.55x without need
# (docs/scoring-studies.md, "Headline delta with heavy-tailed words per example").
DF_INDEPENDENT = "independent"
DF_EXCHANGEABLE = "exchangeable"
DF_AUTO = "auto"
DF_MODELS = (DF_INDEPENDENT, DF_EXCHANGEABLE, DF_AUTO)
EXCHANGEABLE_FROM_EXAMPLES = 41


def cluster_correction(
    diff: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    df_model: str = DF_INDEPENDENT,
) -> ClusterCorrection:
    """Variance ratio, design effect and degrees of freedom of ``mean(diff)`` over clustered pairs.

    The variance of a mean over G clusters of sizes n_g is estimated by the cluster jackknife
    (CR3), ``sum_g S_g^2 / (1 - n_g / n)^2 / n^2`` (``S_g`` the cluster's sum of residuals; for
    the mean, ``(G - 1) / G`` times the delete-one-cluster jackknife is this), and compared with
    the independent-pairs (HC2) variance ``sum e^2 / (1 - 1 / n) / n^2``. CR3 is the cluster
    variance MacKinnon, Nielsen & Webb (2023) recommend when clusters are few and of unequal
    size: Bell & McCaffrey's CR2 (weights ``1 / (1 - n_g / n)``) is unbiased only when the pairs
    of an example are independent, and under-covers when a few examples hold many pairs that
    flip together. The degrees of freedom are Bell & McCaffrey's for CR2 (Satterthwaite, under a
    working model of independent pairs; Imbens & Kolesar 2016): ``G - 1`` for equal sizes, fewer
    when a few examples hold most pairs. CR3's own Satterthwaite df are fewer still and, with
    its larger variance, over-cover at 20 examples; the simulation that chose this pairing is in
    docs/scoring.md ("Headline intervals at the sizes users run").

    Parameters
    ----------
    diff : ``correct_perturbed - correct_original`` per pair (-1, 0, 1).
    clusters : cluster (example) code per pair; None or all-distinct: independent pairs.
    df_model : :data:`DF_INDEPENDENT` (the default here), :data:`DF_EXCHANGEABLE`: the
        Satterthwaite df under a working model whose pairs of one example share the
        intra-example correlation estimated from ``diff`` (:func:`exchangeable_df`; Imbens &
        Kolesar 2016's recommendation), or :data:`DF_AUTO`: the exchangeable df when there are
        at least :data:`EXCHANGEABLE_FROM_EXAMPLES` examples, else the independent ones (the
        default of :func:`paired_score`). Fewer df when a few large examples hold correlated
        pairs: the exchangeable df keep the headline's coverage when words per example are
        heavy-tailed (docs/scoring-studies.md, "Headline delta with heavy-tailed words per example").

    Returns
    -------
    ClusterCorrection
        ``(1, inf)`` for independent pairs. When the differences do not vary there is no
        correlation to estimate and the ratio is ``n / G`` (each example counts once); a single
        example gives ``(n, 1)``.

    Examples
    --------
    Four examples, each paired with three words that all went the same way: three pairs per
    independent example, 3 degrees of freedom.

    >>> diff = [-1, -1, -1, 0, 0, 0, -1, -1, -1, 0, 0, 0]
    >>> c = cluster_correction(diff, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    >>> round(c.design_effect, 4), round(c.df, 4)
    (4.8889, 3.0)
    """
    d = np.asarray(diff, dtype=float)
    n = d.size
    if clusters is None or n < 2:
        return ClusterCorrection(1.0, math.inf)
    codes = np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    g = int(codes.max()) + 1
    if g == n:
        return ClusterCorrection(1.0, math.inf)
    if g == 1:
        return ClusterCorrection(float(n), 1.0, float(n))
    if df_model not in DF_MODELS:
        raise InputError(f"df_model: expected one of {', '.join(DF_MODELS)}, got {df_model!r}")
    sizes = np.bincount(codes, minlength=g).astype(float)
    leverage = sizes / n
    if df_model == DF_EXCHANGEABLE or (df_model == DF_AUTO and g >= EXCHANGEABLE_FROM_EXAMPLES):
        df = exchangeable_df(d, codes, sizes)
    else:
        df = _satterthwaite_df(sizes, n, 1.0 / (1.0 - leverage))
    resid = d - d.mean()
    naive = float((resid**2).sum()) / (1.0 - 1.0 / n)
    if naive <= 1e-12:
        return ClusterCorrection(max(1.0, n / g), df, n / g)
    sums = np.bincount(codes, weights=resid, minlength=g)
    ratio = float((sums**2 / (1.0 - leverage) ** 2).sum()) / naive
    return ClusterCorrection(max(1.0, ratio), df, ratio)


def _satterthwaite_df(
    sizes: np.ndarray, n: int, weight: np.ndarray, variances: np.ndarray | None = None
) -> float:
    """Satterthwaite degrees of freedom of ``sum_g w_g S_g^2`` (S_g the cluster sums of the
    residuals from the mean) under a working model of independent, equal-variance pairs, or,
    with ``variances``, of clusters whose sums of errors have those variances.

    With ``S = (I - a 1') T``, ``a_g = n_g / n`` and T the clusters' sums of errors
    (independent, variance ``v_g``: ``n_g`` for independent pairs), the quadratic form's matrix
    in T-standardised terms is ``K = diag(w_g v_g) - r q' - q r' + c r r'`` (``r_g =
    sqrt(v_g)``, ``q_g = r_g w_g a_g``, ``c = sum_g w_g a_g^2``): a diagonal plus a rank-two
    term, so ``df = tr(K)^2 / tr(K^2)`` takes O(G).
    """
    v = sizes if variances is None else variances
    a = sizes / n
    r = np.sqrt(v)
    q = r * weight * a
    c = float((weight * a * a).sum())
    diag = weight * v
    # Sums, not dot products: BLAS kernels round dot products differently across machines.
    rr, rq, qq = float((r * r).sum()), float((r * q).sum()), float((q * q).sum())
    trace = float(diag.sum()) - 2.0 * rq + c * rr
    # tr(L^2) of the rank-two part L = [r q] C [r q]', C = [[c, -1], [-1, 0]]: tr((C M)^2), M
    # the Gram matrix of r and q.
    m00, m01, m10, m11 = c * rr - rq, c * rq - qq, -rr, -rq
    low_rank_sq = m00 * m00 + 2.0 * m01 * m10 + m11 * m11
    trace_sq = (
        float((diag * diag).sum())
        + 2.0 * float((diag * (c * r * r - 2.0 * r * q)).sum())
        + low_rank_sq
    )
    return trace**2 / trace_sq if trace_sq > 0 else float(sizes.size - 1)


def intra_example_correlation(d: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> float:
    """Moment estimate of the correlation of two pairs of one example, clipped to [0, 1]:
    ``(sum_g S_g^2 - sum e^2) / sum_g n_g (n_g - 1)`` over ``sum e^2 / (n - 1)`` (``e`` the
    residuals from the mean, ``S_g`` their sum per example); 0 when nothing varies or no example
    holds two pairs.

    >>> d = np.array([-1.0, -1.0, 0.0, 0.0, -1.0, 0.0])
    >>> round(intra_example_correlation(d, np.array([0, 0, 1, 1, 2, 2]), np.full(3, 2.0)), 4)
    0.2778
    """
    e = d - d.mean()
    ss = float((e * e).sum())
    pairs = float((sizes * (sizes - 1.0)).sum())
    if ss <= 1e-12 or pairs <= 0.0:
        return 0.0
    sums = np.bincount(codes, weights=e, minlength=sizes.size)
    rho = (float((sums * sums).sum()) - ss) / pairs / (ss / (d.size - 1))
    return min(1.0, max(0.0, rho))


def exchangeable_df(d: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> float:
    """Bell-McCaffrey degrees of freedom of the CR2 variance under an exchangeable working
    model: an example's sum of errors has variance ``n_g (1 + (n_g - 1) rho)``, ``rho`` the
    :func:`intra_example_correlation` of ``d`` (Imbens & Kolesar 2016). ``rho`` 0 gives the
    independent-pairs df; equal sizes give ``G - 1`` whatever ``rho``.

    Four single-pair examples, one of nine pairs that all flipped, two of three that held: the
    pairs of an example go together (rho 0.78) and the nine-pair example carries most of the
    variance, so fewer df than under independent pairs.

    >>> sizes = np.array([1.0, 1.0, 1.0, 1.0, 9.0, 3.0, 3.0])
    >>> d = np.r_[[0.0, -1.0, 0.0, -1.0], [-1.0] * 9, [0.0] * 6]
    >>> codes = np.repeat(np.arange(7), sizes.astype(int))
    >>> round(exchangeable_df(d, codes, sizes), 3), round(cr2_weights_df(sizes, 19)[1], 3)
    (1.652, 2.865)
    """
    n = int(d.size)
    rho = intra_example_correlation(d, codes, sizes)
    variances = sizes * (1.0 + (sizes - 1.0) * rho)
    return _satterthwaite_df(sizes, n, 1.0 / (1.0 - sizes / n), variances)


def cr2_weights_df(sizes: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    """CR2 weights ``1 / (1 - n_g / n)`` of a mean's cluster sums and their Satterthwaite df
    (:func:`clustered_mean_interval`)."""
    weight = 1.0 / (1.0 - sizes / n)
    return weight, _satterthwaite_df(sizes, n, weight)


def design_effect(
    diff: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray | None
) -> float:
    """The design effect of :func:`cluster_correction` (CR2 over independent-pairs variance, >= 1).

    Examples
    --------
    >>> design_effect([-1, 0, -1, 0], [0, 1, 2, 3])
    1.0
    >>> design_effect([-1, -1, -1, -1], [0, 0, 1, 1])  # no variation: each example counts once
    2.0
    """
    return cluster_correction(diff, clusters).design_effect


def score_test_p(
    *,
    c2i: np.ndarray | float,
    i2c: np.ndarray | float,
    design_effect: float = 1.0,
    df: float = math.inf,
) -> np.ndarray:
    """Two-sided p of the score test that Tango's interval inverts, at delta = 0.

    Tango's statistic at 0 is McNemar's asymptotic statistic ``(b - c) / sqrt(b + c)``; on the
    counts divided by the design effect it is ``(b - c) / sqrt(deff (b + c))``, referred to the
    normal distribution (``df`` inf) or Student t. 1 without discordant pairs. The interval of
    :func:`paired_score` at level L excludes 0 exactly when this p is below 1 - L.

    Examples
    --------
    4 right -> wrong and none wrong -> right: p = 0.0455 (the exact McNemar p,
    0.125, came from a different test).

    >>> round(float(score_test_p(c2i=4, i2c=0)), 4)
    0.0455
    """
    b = np.asarray(i2c, dtype=float) / design_effect
    c = np.asarray(c2i, dtype=float) / design_effect
    total = b + c
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(total > 0, np.abs(b - c) / np.sqrt(total), 0.0)
    from scipy.special import ndtr, stdtr

    if math.isinf(df):
        return np.asarray(2.0 * ndtr(-stat))
    return np.asarray(2.0 * stdtr(df, -stat))


def minimum_attainable_p(
    n_discordant: np.ndarray | float, design_effect: np.ndarray | float = 1.0
) -> np.ndarray:
    """The smallest p the score test can give with this many discordant pairs (all one way).

    ``2 (1 - Phi(sqrt(m / deff)))`` on the normal reference: a lower bound of the t version, so
    screening tests that cannot reach significance with it (Tarone, :mod:`multiple_testing`)
    never drops a test that could. 1 without discordant pairs.

    >>> minimum_attainable_p([0, 4, 9]).round(4).tolist()
    [1.0, 0.0455, 0.0027]
    """
    from scipy.special import ndtr

    m = np.asarray(n_discordant, dtype=float) / np.asarray(design_effect, dtype=float)
    return np.asarray(2.0 * ndtr(-np.sqrt(np.maximum(m, 0.0))))


@dataclass(frozen=True)
class PairedScore:
    """The interval of delta and the p-value of the test it inverts, for one set of pairs."""

    low: float | None
    high: float | None
    p_value: float
    design_effect: float
    df: float


def paired_score(
    original: Sequence[bool] | np.ndarray,
    perturbed: Sequence[bool] | np.ndarray,
    *,
    clusters: Sequence[Any] | np.ndarray | None = None,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
    df_model: str = DF_AUTO,
) -> PairedScore:
    """Interval for ``mean(perturbed) - mean(original)`` and the p of the test it inverts.

    Parameters
    ----------
    original, perturbed : paired correctness.
    clusters : example code per pair (pairs sharing an original answer); None: independent pairs.
    level : confidence level.
    method : :data:`TANGO` or :data:`NEWCOMBE` (the p is Tango's score test either way; only
        Tango's interval inverts it).
    df_model : working model of the degrees of freedom (:func:`cluster_correction`); the default
        :data:`DF_AUTO` takes the exchangeable model's from
        :data:`EXCHANGEABLE_FROM_EXAMPLES` examples on.

    Returns
    -------
    PairedScore
        ``(None, None, 1.0, 1.0, inf)`` without pairs.

    Examples
    --------
    >>> s = paired_score([True] * 18, [False] * 4 + [True] * 14)
    >>> round(s.low, 3), round(s.high, 3), round(s.p_value, 4)
    (-0.452, -0.007, 0.0455)
    """
    o = np.asarray(original, dtype=bool)
    p = np.asarray(perturbed, dtype=bool)
    if o.shape != p.shape:
        raise ValueError(f"paired inputs differ in length: {o.size} vs {p.size}")
    if o.size == 0:
        return PairedScore(None, None, 1.0, 1.0, math.inf)
    correction = cluster_correction(p.astype(float) - o.astype(float), clusters, df_model=df_model)
    inflation = correction.inflation(level)
    c2i, i2c = float((o & ~p).sum()), float((~o & p).sum())
    low, high = interval_from_counts(
        both=float((o & p).sum()) / inflation,
        c2i=c2i / inflation,
        i2c=i2c / inflation,
        neither=float((~o & ~p).sum()) / inflation,
        level=level,
        method=method,
    )
    p_value = clustered_score_p(c2i=c2i, i2c=i2c, correction=correction)
    return PairedScore(
        float(low) + 0.0, float(high) + 0.0, p_value, correction.design_effect, correction.df
    )


def clustered_score_p(*, c2i: float, i2c: float, correction: ClusterCorrection) -> float:
    """The p of the test :func:`paired_score`'s interval inverts, at delta = 0.

    The interval rejects a delta when both the independent-pairs score test (normal) and the
    clustered one (statistic divided by ``sqrt(ratio)``, Student t on ``df``) reject it, so its
    p is the larger of the two: "the interval excludes 0" and "p < 1 - level" are the same event
    at every level.

    >>> round(clustered_score_p(c2i=4, i2c=0, correction=ClusterCorrection(1.0, math.inf)), 4)
    0.0455
    """
    independent = float(score_test_p(c2i=c2i, i2c=i2c))
    if math.isinf(correction.df):
        return min(1.0, independent)
    ratio = max(correction.variance_ratio, 1e-300)
    clustered = float(score_test_p(c2i=c2i, i2c=i2c, design_effect=ratio, df=correction.df))
    return min(1.0, max(independent, clustered))


def distinct_per_group(groups: Sequence[np.ndarray], values: np.ndarray | None) -> np.ndarray:
    """How many distinct ``values`` (non-negative integers) each group of positions holds.

    ``values`` None: every position is its own value (the group's size).

    >>> distinct_per_group([np.array([0, 1, 2]), np.array([3])], np.array([5, 5, 7, 7])).tolist()
    [2, 1]
    """
    sizes = np.fromiter((g.size for g in groups), dtype=np.int64, count=len(groups))
    if values is None or not len(groups):
        return sizes
    values = np.asarray(values)
    segment = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
    picked = values[np.concatenate(groups)].astype(np.int64) if sizes.sum() else segment
    span = int(picked.max(initial=0)) + 1
    keys = np.sort(segment * span + picked)
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return np.bincount(keys[first] // span, minlength=len(groups))


def paired_scores(
    original: np.ndarray,
    perturbed: np.ndarray,
    groups: Sequence[np.ndarray],
    *,
    clusters: np.ndarray | None = None,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
) -> list[PairedScore]:
    """:func:`paired_score` of many groups of pairs at once (the same numbers, bit for bit).

    Groups whose pairs all belong to different clusters (one pair per example: every word row
    with one typo draw) need no design effect; their intervals and p-values are computed for all
    of them together, with the same floating-point operations as one table's. The others go
    through :func:`paired_score` one by one.

    Parameters
    ----------
    original, perturbed : paired correctness of every pair (bool arrays).
    groups : positions of each group's pairs (in the order the sums run in).
    clusters : non-negative integer example code per pair; None: independent pairs.
    level, method : as for :func:`paired_score`.

    Returns
    -------
    list of PairedScore, one per group.

    Examples
    --------
    >>> o = np.array([True, True, False, True]); p = np.array([False, True, True, True])
    >>> scores = paired_scores(o, p, [np.array([0, 1]), np.array([2, 3])])
    >>> scores[0] == paired_score(o[:2], p[:2]), round(scores[1].p_value, 4)
    (True, 0.3173)
    """
    o = np.asarray(original, dtype=bool)
    p = np.asarray(perturbed, dtype=bool)
    sizes = np.fromiter((g.size for g in groups), dtype=np.int64, count=len(groups))
    out: list[PairedScore | None] = [None] * len(groups)
    if not len(groups):
        return []
    distinct = distinct_per_group(groups, clusters)
    fast = (sizes > 0) & ((distinct == sizes) | (sizes < 2))
    for i in np.flatnonzero(~fast):
        index = groups[i]
        out[i] = paired_score(
            o[index],
            p[index],
            clusters=None if clusters is None else clusters[index],
            level=level,
            method=method,
        )
    chosen = np.flatnonzero(fast)
    if chosen.size:
        index = np.concatenate([groups[i] for i in chosen])
        segment = np.repeat(np.arange(chosen.size), sizes[chosen])

        def count(mask: np.ndarray) -> np.ndarray:
            return np.bincount(segment, weights=mask[index], minlength=chosen.size)

        both, c2i = count(o & p), count(o & ~p)
        i2c, neither = count(~o & p), count(~o & ~p)
        # The design effect is 1: the counts divided by it are the counts.
        low, high = interval_from_counts(
            both=both, c2i=c2i, i2c=i2c, neither=neither, level=level, method=method
        )
        p_values = score_test_p(c2i=c2i, i2c=i2c, design_effect=1.0)
        for j, i in enumerate(chosen.tolist()):
            out[i] = PairedScore(
                float(low[j]) + 0.0,
                float(high[j]) + 0.0,
                min(1.0, float(p_values[j])),
                1.0,
                math.inf,
            )
    return out  # type: ignore[return-value]


def paired_interval(
    original: Sequence[bool] | np.ndarray,
    perturbed: Sequence[bool] | np.ndarray,
    *,
    clusters: Sequence[Any] | np.ndarray | None = None,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
) -> tuple[float | None, float | None, float]:
    """Interval for ``mean(perturbed) - mean(original)`` over pairs, clusters accounted for.

    :func:`paired_score` without the p-value.

    Returns
    -------
    (low, high, design_effect); (None, None, 1.0) without pairs.

    Examples
    --------
    No pair flipped among 50: not [0, 0] but about +-0.071.

    >>> low, high, deff = paired_interval([True] * 50, [True] * 50)
    >>> round(low, 4), round(high, 4), deff
    (-0.0713, 0.0713, 1.0)
    """
    score = paired_score(original, perturbed, clusters=clusters, level=level, method=method)
    return score.low, score.high, score.design_effect


def interval_from_counts(
    *,
    both: np.ndarray | float,
    c2i: np.ndarray | float,
    i2c: np.ndarray | float,
    neither: np.ndarray | float,
    level: float,
    method: str = DEFAULT_METHOD,
    df: float = math.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """The chosen score interval from the 2x2 counts of pairs (vectorised).

    Parameters
    ----------
    both, c2i, i2c, neither : pair counts (see :func:`newcombe_interval`).
    level : confidence level.
    method : :data:`TANGO` or :data:`NEWCOMBE`.
    df : degrees of freedom of the reference distribution (inf: normal).

    Returns
    -------
    (low, high) arrays.
    """
    if method == TANGO:
        n = np.asarray(both, dtype=float) + c2i + i2c + neither
        return tango_interval(c2i=c2i, i2c=i2c, n=n, level=level, df=df)
    if method == NEWCOMBE:
        return newcombe_interval(both=both, c2i=c2i, i2c=i2c, neither=neither, level=level, df=df)
    raise InputError(f"interval method: expected one of {', '.join(METHODS)}, got {method!r}")


def method_label(method: str, deff: float) -> str:
    """The ``ci_method`` value: the method, with ``+deff`` when clustering widened the interval.

    >>> method_label(TANGO, 1.0), method_label(TANGO, 1.7)
    ('tango_score', 'tango_score+deff')
    """
    return method if deff <= 1.0 else f"{method}+deff"
