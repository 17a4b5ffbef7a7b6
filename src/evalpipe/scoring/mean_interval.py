"""A mean over clustered pairs with the CR2 t interval: the clustered standard error and degrees
of freedom the skewness-aware intervals build on (:mod:`evalpipe.scoring.skewed_mean`), and the
"before" of the arms' coverage tables (``perf/arm_coverage.py``, docs/scoring.md "Arms' means
and ratios"): calibrated for symmetric per-pair values, too narrow on the side of the skew for
skewed ones, and of zero width for discrete values that do not vary."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalpipe.scoring.intervals import cr2_weights_df, critical_value


@dataclass(frozen=True)
class MeanInterval:
    """A mean over pairs with its cluster-robust interval (:func:`clustered_mean_interval`)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    clusters: int
    df: float


def clustered_mean_interval(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    level: float,
) -> MeanInterval:
    """``mean(values)`` with a cluster-robust (CR2) t interval, clustered on the example.

    For continuous per-pair quantities (a log-ratio of perplexities, a difference of two
    models' paired deltas), where no score interval exists: the variance of the mean is Bell &
    McCaffrey's CR2 ``sum_g w_g S_g^2 / n^2`` (``S_g`` the cluster's sum of residuals, ``w_g =
    1 / (1 - n_g / n)``; with one pair per cluster it is the HC2 variance ``s^2 / n``), and the
    interval is ``mean -+ t_df * se`` on the Satterthwaite degrees of freedom of
    :func:`cluster_correction` (``G - 1`` for clusters of equal size).

    Parameters
    ----------
    values : one value per pair (NaN values are left out).
    clusters : example code per pair; None: each pair its own cluster.
    level : confidence level.

    Returns
    -------
    MeanInterval
        ``mean, low, high`` None without values; the interval None with one cluster (nothing
        to estimate the spread between examples from).

    Examples
    --------
    >>> r = clustered_mean_interval([0.1, 0.3, 0.2, 0.4], [0, 0, 1, 1], level=0.95)
    >>> round(r.mean, 3), r.clusters, round(r.df, 1)
    (0.25, 2, 1.0)
    >>> r = clustered_mean_interval([1.0, 2.0, 3.0], None, level=0.95)
    >>> round(r.low, 3), round(r.high, 3)
    (-0.484, 4.484)
    """
    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    codes_in = np.arange(v.size) if clusters is None else np.asarray(clusters)
    v, codes_in = v[keep], codes_in[keep]
    n = int(v.size)
    if n == 0:
        return MeanInterval(None, None, None, 0, 0, math.nan)
    mean = float(v.mean())
    codes = np.unique(codes_in, return_inverse=True)[1].ravel()
    g = int(codes.max()) + 1
    if g < 2:
        return MeanInterval(mean, None, None, n, g, math.nan)
    sizes = np.bincount(codes, minlength=g).astype(float)
    weight, df = cr2_weights_df(sizes, n)
    sums = np.bincount(codes, weights=v - mean, minlength=g)
    se = math.sqrt(float((weight * sums**2).sum())) / n
    half = critical_value(level, df) * se
    return MeanInterval(mean, mean - half + 0.0, mean + half + 0.0, n, g, df)
