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
  and are not independent. :func:`design_effect` estimates the ratio of the cluster-robust to the
  independent-pairs variance of delta (Rao & Scott 1992's approach for clustered binary data),
  floored at 1; the table's counts are divided by it before the score interval is computed, so
  the interval widens to the information the clusters really hold and never narrows below the
  independent-pairs one.
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


def wilson_interval(
    successes: np.ndarray | float, n: np.ndarray | float, *, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (vectorised; counts may be fractional).

    Examples
    --------
    >>> low, high = wilson_interval(0.0, 10.0, level=0.95)
    >>> round(float(low), 4), round(float(high), 4)
    (0.0, 0.2775)
    """
    z = _z(level)
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
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval (1998, method 10) for ``acc_perturbed - acc_original``.

    Parameters
    ----------
    both, c2i, i2c, neither : counts of pairs correct in both, correct -> incorrect, incorrect ->
        correct, incorrect in both (arrays of equal shape; fractional counts allowed).
    level : confidence level.

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
    l1, u1 = wilson_interval(a + b, n, level=level)
    l2, u2 = wilson_interval(a + c, n, level=level)
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
) -> tuple[np.ndarray, np.ndarray]:
    """Tango's (1998) asymptotic score interval for ``acc_perturbed - acc_original``.

    The limits solve ``T(delta) = +-z`` by bisection (T decreases in delta), vectorised.

    Parameters
    ----------
    c2i, i2c : discordant counts (correct -> incorrect, incorrect -> correct).
    n : pairs.
    level : confidence level.

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
    z = _z(level)
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


def design_effect(
    diff: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray | None
) -> float:
    """Ratio of the cluster-robust to the independent-pairs variance of ``mean(diff)``, >= 1.

    Parameters
    ----------
    diff : ``correct_perturbed - correct_original`` per pair (-1, 0, 1).
    clusters : cluster (example) code per pair; None or all-distinct gives 1.

    Returns
    -------
    float
        1 when every cluster holds one pair, when there are fewer than two clusters, or when the
        differences do not vary (then there is nothing to estimate a correlation from and the
        score interval's own variance, taken under the tested delta, governs the width).

    Examples
    --------
    Four examples, each paired with three words that all went the same way: three pairs per
    independent example (3), times the small-sample factor k / (k - 1) = 4/3.

    >>> diff = [-1, -1, -1, 0, 0, 0, -1, -1, -1, 0, 0, 0]
    >>> design_effect(diff, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    4.0
    """
    d = np.asarray(diff, dtype=float)
    n = d.size
    if clusters is None or n < 2:
        return 1.0
    codes = np.unique(np.asarray(clusters), return_inverse=True)[1]
    k = int(codes.max()) + 1
    if k < 2 or k == n:
        return 1.0
    mean = d.mean()
    naive = float(((d - mean) ** 2).sum())
    if naive <= 0:
        return 1.0
    sums = np.bincount(codes, weights=d - mean, minlength=k)
    # The k / (k - 1) small-sample factor of the cluster-robust (CR1) variance.
    robust = float((sums**2).sum()) * k / (k - 1)
    return max(1.0, robust / naive)


def paired_interval(
    original: Sequence[bool] | np.ndarray,
    perturbed: Sequence[bool] | np.ndarray,
    *,
    clusters: Sequence[Any] | np.ndarray | None = None,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
) -> tuple[float | None, float | None, float]:
    """Interval for ``mean(perturbed) - mean(original)`` over pairs, clusters accounted for.

    Parameters
    ----------
    original, perturbed : paired correctness.
    clusters : example code per pair (pairs sharing an original answer); None: independent pairs.
    level : confidence level.
    method : :data:`TANGO` or :data:`NEWCOMBE`.

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
    o = np.asarray(original, dtype=bool)
    p = np.asarray(perturbed, dtype=bool)
    if o.shape != p.shape:
        raise ValueError(f"paired inputs differ in length: {o.size} vs {p.size}")
    if o.size == 0:
        return None, None, 1.0
    deff = design_effect(p.astype(float) - o.astype(float), clusters)
    counts = {
        "both": float((o & p).sum()) / deff,
        "c2i": float((o & ~p).sum()) / deff,
        "i2c": float((~o & p).sum()) / deff,
        "neither": float((~o & ~p).sum()) / deff,
    }
    low, high = interval_from_counts(**counts, level=level, method=method)
    return float(low) + 0.0, float(high) + 0.0, deff


def interval_from_counts(
    *,
    both: np.ndarray | float,
    c2i: np.ndarray | float,
    i2c: np.ndarray | float,
    neither: np.ndarray | float,
    level: float,
    method: str = DEFAULT_METHOD,
) -> tuple[np.ndarray, np.ndarray]:
    """The chosen score interval from the 2x2 counts of pairs (vectorised).

    Parameters
    ----------
    both, c2i, i2c, neither : pair counts (see :func:`newcombe_interval`).
    level : confidence level.
    method : :data:`TANGO` or :data:`NEWCOMBE`.

    Returns
    -------
    (low, high) arrays.
    """
    if method == TANGO:
        n = np.asarray(both, dtype=float) + c2i + i2c + neither
        return tango_interval(c2i=c2i, i2c=i2c, n=n, level=level)
    if method == NEWCOMBE:
        return newcombe_interval(both=both, c2i=c2i, i2c=i2c, neither=neither, level=level)
    raise InputError(f"interval method: expected one of {', '.join(METHODS)}, got {method!r}")


def method_label(method: str, deff: float) -> str:
    """The ``ci_method`` value: the method, with ``+deff`` when clustering widened the interval.

    >>> method_label(TANGO, 1.0), method_label(TANGO, 1.7)
    ('tango_score', 'tango_score+deff')
    """
    return method if deff <= 1.0 else f"{method}+deff"
