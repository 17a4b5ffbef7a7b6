"""A ratio of two means over the same clustered pairs with Fieller's interval: the share of the
typo loss a defence wins back, ``(acc_defended - acc_typo) / (acc_clean - acc_typo)``.

Fieller's interval is the set of ratios ``r`` that a test of ``E[num - r den] = 0`` does not
reject: ``(N - r L)^2 <= t^2 V(r)`` with ``N, L`` the two means and ``V(r)`` the clustered
variance of the mean of ``num - r den``. ``V`` is the cluster jackknife (CR3, weights
``1 / (1 - n_g / n)^2`` on the examples' residual sums), the variance the headline's design
effect uses, and ``t`` is Student's on Bell-McCaffrey degrees of freedom. ``V(r)`` is quadratic in
``r``, so the set solves a quadratic: it is a bounded interval exactly when the same test rejects
``L = 0`` (the denominator is told apart from 0); otherwise it is unbounded and no share is
reported. A bounded Fieller interval always holds the estimate ``N / L``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalpipe.scoring.intervals import cr2_weights_df, critical_value


@dataclass(frozen=True)
class RatioInterval:
    """``estimate = mean(num) / mean(den)`` and Fieller's interval (None when unbounded)."""

    estimate: float | None
    low: float | None
    high: float | None
    bounded: bool
    df: float


def fieller_interval(
    numerator: Sequence[float] | np.ndarray,
    denominator: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    level: float,
) -> RatioInterval:
    """Fieller's interval of ``mean(numerator) / mean(denominator)`` over clustered pairs.

    Parameters
    ----------
    numerator, denominator : one value per pair each (the same pairs).
    clusters : example code per pair; None: each pair its own cluster.
    level : confidence level.

    Returns
    -------
    RatioInterval
        ``estimate`` None when the denominator's mean is 0; ``low, high`` None and ``bounded``
        False when the test cannot tell the denominator from 0, or when no pair differs from
        another (no spread to estimate: never a zero-width interval).

    Examples
    --------
    Recovered 3 of the 10 points lost, on 40 independent pairs:

    >>> num = [1.0] * 3 + [0.0] * 37
    >>> den = [1.0] * 10 + [0.0] * 30
    >>> r = fieller_interval(num, den, None, level=0.95)
    >>> round(r.estimate, 2), r.bounded, r.low < 0.3 < r.high
    (0.3, True, True)
    """
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"numerator and denominator differ in length: {a.size} vs {b.size}")
    n = a.size
    if n == 0:
        return RatioInterval(None, None, None, False, math.nan)
    mean_a, mean_b = float(a.mean()), float(b.mean())
    estimate = mean_a / mean_b if mean_b != 0.0 else None
    codes = (
        np.arange(n)
        if clusters is None
        else np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    )
    g = int(codes.max()) + 1
    if g < 2:
        return RatioInterval(estimate, None, None, False, math.nan)
    sizes = np.bincount(codes, minlength=g).astype(float)
    _, df = cr2_weights_df(sizes, n)
    weight = 1.0 / (1.0 - sizes / n) ** 2
    sa = np.bincount(codes, weights=a - mean_a, minlength=g)
    sb = np.bincount(codes, weights=b - mean_b, minlength=g)
    vaa = float((weight * sa * sa).sum()) / n**2
    vab = float((weight * sa * sb).sum()) / n**2
    vbb = float((weight * sb * sb).sum()) / n**2
    t2 = critical_value(level, df) ** 2
    # (N - r L)^2 - t^2 (vaa - 2 r vab + r^2 vbb) <= 0
    qa = mean_b * mean_b - t2 * vbb
    qb = -2.0 * (mean_a * mean_b - t2 * vab)
    qc = mean_a * mean_a - t2 * vaa
    disc = qb * qb - 4.0 * qa * qc
    # No spread in either mean (every pair alike): nothing to build an interval from.
    if qa <= 0.0 or disc < 0.0 or estimate is None or vaa + vbb <= 0.0:
        return RatioInterval(estimate, None, None, False, df)
    root = math.sqrt(disc)
    low, high = (-qb - root) / (2.0 * qa), (-qb + root) / (2.0 * qa)
    return RatioInterval(estimate, min(low, estimate) + 0.0, max(high, estimate) + 0.0, True, df)
