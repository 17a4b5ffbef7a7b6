"""A score interval for the mean of a discrete per-pair value with a known support, clustered as
the headline's: the paired difference of two arms (the ladder's ``delta_vs_reference``, values
-2..2), where flips are rare and a Wald-type t interval collapses or under-covers.

Tango's interval for a paired difference of proportions is the score test of the multinomial of
the values -1, 0, 1 under the constraint ``mean = delta``: the variance is the one of the
constrained maximum-likelihood distribution, which may put mass on a value no pair took (with no
discordant pair, mass ``delta`` on 1). :func:`score_mean_interval` is the same test for any finite
support ``v_1 < ... < v_K``:

- the constrained ML distribution is ``pi_k = n_k / (N + lambda (v_k - delta))`` on the values
  observed, with ``lambda`` the root of ``sum_k n_k (v_k - delta) / (N + lambda (v_k - delta)) =
  0``; when no root keeps every ``N + lambda (v - delta)`` of the support positive, ``lambda``
  stops at the bound and the remaining mass goes to the support's end value nobody took (the
  Karush-Kuhn-Tucker conditions of the problem);
- ``T(delta) = (sum v - N delta) / sqrt(N sum_k pi_k (v_k - delta)^2)``, inverted at ``+-z``;
- on the support -1, 0, 1 this is Tango's interval exactly (``tests/test_score_mean.py``), and
  like it the interval never has zero width: with every value 0 on a support ``-a..a`` it is
  ``+-a z^2 / (N + z^2)``, not ``[0, 0]``;
- clusters: the counts are divided by the inflation of
  :func:`evalpipe.scoring.intervals.cluster_correction` (CR3 over the independent-pairs variance,
  hulled with the independent-pairs interval, Student t on Bell-McCaffrey degrees of freedom), as
  :func:`evalpipe.scoring.intervals.paired_score` does for the headline.

Coverage with a known truth: ``perf/arm_coverage.py`` (docs/scoring.md, "Arms' means and ratios").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from evalpipe.scoring.intervals import cluster_correction, critical_value
from evalpipe.scoring.mean_interval import MeanInterval

_BISECTIONS = 60
# Values -2..2: the per-prompt difference of two arms' paired changes (c_pert - c_orig).
DOUBLE_DIFFERENCE = (-2.0, -1.0, 0.0, 1.0, 2.0)


def _constrained_variance(delta: float, support: Sequence[float], counts: Sequence[float]) -> float:
    """``sum_k pi_k (v_k - delta)^2`` under the ML distribution on ``support`` with mean delta."""
    total = math.fsum(counts)
    lo_v, hi_v = support[0] - delta, support[-1] - delta
    if hi_v <= 0.0 or lo_v >= 0.0:
        return 0.0
    seen = [(n, x - delta) for n, x in zip(counts, support, strict=True) if n > 0]
    # N + lambda (v - delta) > 0 on the whole support
    lam_low, lam_high = -total / hi_v, -total / lo_v

    def h(lam: float) -> float:
        return sum(n * v / (total + lam * v) for n, v in seen)

    def edge(lam: float) -> float:
        # h at a bound, unless an observed end value's denominator vanishes there (h infinite)
        return h(lam) if all(total + lam * v > 0 for _, v in seen) else math.nan

    upper, lower = edge(lam_high), edge(lam_low)
    if not math.isnan(upper) and upper >= 0.0:
        lam, rest_v = lam_high, lo_v  # mass on the lowest value, which no pair took
    elif not math.isnan(lower) and lower <= 0.0:
        lam, rest_v = lam_low, hi_v  # mass on the highest value
    else:
        span = lam_high - lam_low
        from scipy.optimize import brentq  # lazily: the impact stage imports this module

        lam = brentq(h, lam_low + 1e-15 * span, lam_high - 1e-15 * span, xtol=1e-14, rtol=1e-14)
        rest_v = 0.0
    pi = [(n / (total + lam * v), v) for n, v in seen]
    rest = max(0.0, 1.0 - math.fsum(p for p, _ in pi))
    return math.fsum(p * v * v for p, v in pi) + rest * rest_v * rest_v


def score_mean_statistic(
    delta: float, support: Sequence[float] | np.ndarray, counts: Sequence[float] | np.ndarray
) -> float:
    """The score statistic ``T(delta)`` of the module docstring (counts may be fractional).

    Examples
    --------
    On the support -1, 0, 1 it is Tango's: at delta = 0, McNemar's ``(b - c) / sqrt(b + c)``.

    >>> round(score_mean_statistic(0.0, [-1, 0, 1], [4, 14, 0]), 4)
    -2.0
    """
    s = [float(x) for x in support]
    c = [float(x) for x in counts]
    total = math.fsum(c)
    numerator = math.fsum(n * x for n, x in zip(c, s, strict=True)) - total * delta
    variance = _constrained_variance(delta, s, c)
    if variance <= 0.0:
        return math.inf if numerator > 0 else -math.inf if numerator < 0 else 0.0
    return numerator / math.sqrt(total * variance)


def score_mean_interval(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    support: Sequence[float] = DOUBLE_DIFFERENCE,
    level: float,
) -> MeanInterval:
    """``mean(values)`` with the clustered score interval of the module docstring.

    Parameters
    ----------
    values : one value per pair, each one of ``support`` (NaN values are left out).
    clusters : example code per pair; None: each pair its own cluster.
    support : every value a pair can take (the default: a difference of two paired changes).
    level : confidence level.

    Returns
    -------
    MeanInterval
        ``mean, low, high`` (never of zero width with a pair or more; None without values),
        ``n``, ``clusters`` and ``df`` (Bell-McCaffrey degrees of freedom of the clustered
        variance; inf for independent pairs).

    Examples
    --------
    Every per-prompt difference 0 among 40 prompts of 20 examples: not [0, 0].

    >>> r = score_mean_interval([0.0] * 40, np.repeat(np.arange(20), 2), level=0.95)
    >>> r.mean, r.low < 0 < r.high
    (0.0, True)
    """
    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    codes = None if clusters is None else np.asarray(clusters)[keep]
    v = v[keep]
    s = np.asarray(sorted(float(x) for x in support))
    if v.size == 0:
        return MeanInterval(None, None, None, 0, 0, math.nan)
    index = np.searchsorted(s, v)
    index = np.minimum(index, s.size - 1)
    if not np.allclose(s[index], v):
        bad = v[~np.isclose(s[index], v)][0]
        raise ValueError(f"value {bad} is not in the support {s.tolist()}")
    correction = cluster_correction(v, codes)
    inflation = correction.inflation(level)
    counts = (np.bincount(index, minlength=s.size) / inflation).tolist()
    groups = v.size if codes is None else int(np.unique(codes).size)
    mean = float(v.mean())
    z = critical_value(level)
    grid = s.tolist()
    bounds = []
    for target, lo, hi in ((z, float(s[0]), mean), (-z, mean, float(s[-1]))):
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2.0
            # T decreases in delta: above the target below the lower limit.
            if score_mean_statistic(mid, grid, counts) > target:
                lo = mid
            else:
                hi = mid
        bounds.append((lo + hi) / 2.0)
    return MeanInterval(mean, bounds[0] + 0.0, bounds[1] + 0.0, int(v.size), groups, correction.df)
