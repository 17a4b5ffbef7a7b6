"""Intervals for a clustered mean of skewed per-pair values (the perplexity log-ratio): the CR2
t interval of :mod:`evalpipe.scoring.mean_interval` is symmetric, and when a few examples move
the log-likelihood a lot its misses fall on one side (the truth above the interval).

- :func:`hall_mean_interval`: Hall's (1992) transformation of the studentised mean, which
  removes the skewness term of its Edgeworth expansion (Johnson's 1978 correction plus a cubic
  term that keeps it monotone), computed on the examples' linearised contributions
  ``z_g = G (Y_g - n_g mean) / n`` so that a few large examples count as what they are, with the
  CR2 standard error and the t quantile on Bell-McCaffrey degrees of freedom.
- :func:`bootstrap_t_mean_interval`: the cluster bootstrap-t (examples resampled with
  replacement, each resample studentised with its own CR2 standard error; the interval takes the
  resampled t's quantiles), seeded by the caller (a hashed seed: the same data give the same
  interval on every run). With ``guard`` (the default) neither side comes closer to the mean
  than the CR2 t interval's: the bootstrap may only widen a side. A sample that holds none of
  the rare large values looks unskewed, its resampled t's are short-tailed, and the plain
  bootstrap-t is then narrower than the symmetric interval on the very side the truth lies.

``perf/arm_coverage.py`` compares them with the CR2 t interval on skewed, symmetric and
informative-cluster-size designs (docs/scoring.md, "Arms' means and ratios"); the perplexity
ratio uses the one that keeps 95% there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalpipe.scoring.intervals import cr2_weights_df, critical_value
from evalpipe.scoring.mean_interval import MeanInterval
from evalpipe.seeding import hashed_seed

BOOTSTRAP_SAMPLES = 999
_CELLS = 2_000_000  # resamples x examples held in memory at once


@dataclass(frozen=True)
class _Clustered:
    mean: float
    se: float
    df: float
    n: int
    groups: int
    sums: np.ndarray  # per cluster: sum of values
    sizes: np.ndarray  # per cluster: pairs


def _clustered(values: np.ndarray, clusters: Any) -> _Clustered | None:
    codes_in = np.arange(values.size) if clusters is None else np.asarray(clusters)
    keep = ~np.isnan(values)
    v, codes_in = values[keep], codes_in[keep]
    if v.size == 0:
        return None
    codes = np.unique(codes_in, return_inverse=True)[1].ravel()
    g = int(codes.max()) + 1
    sums = np.bincount(codes, weights=v, minlength=g)
    sizes = np.bincount(codes, minlength=g).astype(float)
    return _from_sums(sums, sizes, mean=float(v.mean()))


def _from_sums(sums: np.ndarray, sizes: np.ndarray, *, mean: float | None = None) -> _Clustered:
    """The clustered mean, CR2 standard error and Bell-McCaffrey df of per-cluster sums."""
    g = int(sums.size)
    n = round(float(sizes.sum()))
    if mean is None:
        mean = float(sums.sum() / sizes.sum())
    if g < 2:
        return _Clustered(mean, math.nan, math.nan, n, g, sums, sizes)
    weight, df = cr2_weights_df(sizes, n)
    resid = sums - sizes * mean
    se = math.sqrt(float((weight * resid**2).sum())) / n
    return _Clustered(mean, se, df, n, g, sums, sizes)


def _empty(c: _Clustered | None) -> MeanInterval | None:
    if c is None:
        return MeanInterval(None, None, None, 0, 0, math.nan)
    if c.groups < 2:
        return MeanInterval(c.mean, None, None, c.n, c.groups, math.nan)
    return None


def cluster_skewness(sums: np.ndarray, sizes: np.ndarray) -> float:
    """Skewness of the examples' linearised contributions ``z_g = G (Y_g - n_g mean) / n`` to the
    mean (``Y_g`` the example's sum, ``n_g`` its pairs): 0 when they do not vary.

    >>> round(cluster_skewness(np.array([1.0, 1.0, 1.0, 9.0]), np.ones(4)), 4)
    1.1547
    """
    mean = float(sums.sum() / sizes.sum())
    z = sums - sizes * mean
    m2 = float((z**2).mean())
    if m2 <= 0.0:
        return 0.0
    return float((z**3).mean()) / m2**1.5


def hall_mean_interval(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    level: float,
) -> MeanInterval:
    """``mean(values)`` with Hall's skewness-corrected clustered t interval.

    With ``Delta = (mean - mu) / (sqrt(G) se)`` and ``gamma`` the skewness of the examples'
    contributions (:func:`cluster_skewness`), ``sqrt(G) g(Delta)`` with ``g(x) = x + gamma x^2 / 3
    + gamma^2 x^3 / 27 + gamma / (6 G)`` is referred to Student t on the Bell-McCaffrey degrees of
    freedom; ``g`` increases, so the interval is ``mean - sqrt(G) se g^-1(+-t / sqrt(G))``, longer
    on the side of the skew. ``gamma`` 0 gives the CR2 t interval.

    Parameters
    ----------
    values : one value per pair (NaN values are left out).
    clusters : example code per pair; None: each pair its own cluster.
    level : confidence level.

    Returns
    -------
    MeanInterval
        As :func:`evalpipe.scoring.mean_interval.clustered_mean_interval`.

    Examples
    --------
    Right-skewed values: the interval reaches further above the mean than below.

    >>> r = hall_mean_interval([0.1, 0.2, 0.1, 0.3, 0.2, 2.5], None, level=0.95)
    >>> r.high - r.mean > r.mean - r.low
    True
    """
    c = _clustered(np.asarray(values, dtype=float), clusters)
    empty = _empty(c)
    if empty is not None:
        return empty
    assert c is not None
    g = float(c.groups)
    gamma = cluster_skewness(c.sums, c.sizes)
    t = critical_value(level, c.df)
    root_g = math.sqrt(g)

    def inverse(y: float) -> float:
        if abs(gamma) < 1e-12:
            return y
        return 3.0 / gamma * (float(np.cbrt(1.0 + gamma * (y - gamma / (6.0 * g)))) - 1.0)

    low = c.mean - root_g * c.se * inverse(t / root_g)
    high = c.mean - root_g * c.se * inverse(-t / root_g)
    return MeanInterval(c.mean, low + 0.0, high + 0.0, c.n, c.groups, c.df)


def _studentised(draws: np.ndarray, c: _Clustered) -> np.ndarray:
    """``(mean* - mean) / se*`` of each resample (rows of ``draws``: times each example is drawn);
    NaN or infinite when a resample has no spread."""
    n_star = draws @ c.sizes
    mean_star = (draws @ c.sums) / n_star
    resid = c.sums[None, :] - c.sizes[None, :] * mean_star[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = 1.0 / (1.0 - c.sizes[None, :] / n_star[:, None])
        se_star = np.sqrt((draws * weight * resid**2).sum(axis=1)) / n_star
        return (mean_star - c.mean) / se_star


def bootstrap_t_mean_interval(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    level: float,
    seed: int,
    samples: int = BOOTSTRAP_SAMPLES,
    guard: bool = True,
) -> MeanInterval:
    """``mean(values)`` with the cluster bootstrap-t interval.

    Each resample draws G examples with replacement (a drawn example counts as many times as it
    is drawn, each copy a cluster of the resample), and ``t* = (mean* - mean) / se*`` with the
    resample's CR2 standard error; the interval is ``[mean - t*_(1 - a/2) se, mean - t*_(a/2)
    se]``. Resamples with no spread (one example drawn G times) are left out. With ``guard``,
    ``t*_(1 - a/2)`` is at least and ``t*_(a/2)`` at most Student's ``+-t`` on the
    Bell-McCaffrey degrees of freedom: the interval holds the CR2 t interval
    (:func:`evalpipe.scoring.mean_interval.clustered_mean_interval`).

    Parameters
    ----------
    values : one value per pair (NaN values are left out).
    clusters : example code per pair; None: each pair its own cluster.
    level : confidence level.
    seed : of the resamples (:func:`evalpipe.seeding.hashed_seed` of the row's key).
    samples : resamples.
    guard : never narrower than the CR2 t interval on either side.

    Returns
    -------
    MeanInterval

    Examples
    --------
    >>> r = bootstrap_t_mean_interval([0.1, 0.2, 0.1, 0.3, 0.2, 2.5], None, level=0.95, seed=1)
    >>> r.low < r.mean < r.high
    True
    """
    c = _clustered(np.asarray(values, dtype=float), clusters)
    empty = _empty(c)
    if empty is not None:
        return empty
    assert c is not None
    low, high = _bootstrap_t_bounds(c, level=level, seed=seed, samples=samples, guard=guard)
    return MeanInterval(c.mean, low, high, c.n, c.groups, c.df)


def _bootstrap_t_bounds(
    c: _Clustered, *, level: float, seed: int, samples: int, guard: bool
) -> tuple[float, float]:
    """The (guarded) cluster bootstrap-t interval of :func:`bootstrap_t_mean_interval`."""
    g = c.groups
    rng = np.random.default_rng(seed)
    # Resamples in blocks, so memory stays bounded for tens of thousands of examples.
    block = max(1, min(samples, _CELLS // g))
    parts = []
    for start in range(0, samples, block):
        draws = rng.multinomial(g, np.full(g, 1.0 / g), size=min(block, samples - start))
        parts.append(_studentised(draws.astype(float), c))
    t_star = np.concatenate(parts)
    t_star = t_star[np.isfinite(t_star)]
    if t_star.size == 0 or not c.se > 0:
        return c.mean, c.mean
    alpha = (1.0 - level) / 2.0
    q_low, q_high = (float(q) for q in np.quantile(t_star, [alpha, 1.0 - alpha]))
    if guard:
        t = critical_value(level, c.df)
        q_low, q_high = min(q_low, -t), max(q_high, t)
    low = c.mean - q_high * c.se
    high = c.mean - q_low * c.se
    return low + 0.0, high + 0.0


def tail_augmented_mean_interval(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Any] | np.ndarray | None,
    *,
    level: float,
    seed: int,
    samples: int = BOOTSTRAP_SAMPLES,
) -> MeanInterval:
    """``mean(values)`` with the guarded cluster bootstrap-t interval, each side widened to where
    it would lie had the sample held one more example like its most extreme one on that side.

    The upper bound is the largest of the guarded bootstrap-t upper bound
    (:func:`bootstrap_t_mean_interval`) and the same bound computed on the sample with its
    example of largest linearised contribution ``z_g = Y_g - n_g mean`` counted twice (one more
    cluster with the same pairs); the lower bound likewise with the example of smallest
    contribution. When a few rare examples carry the mean, the sample that under-states it is
    one holding too few of them: each example is drawn with chance about 1 / G, and the
    example the sample has seen that pulls hardest on the mean is the evidence of how far one
    more would move it. A sample without a tail has no example far from the rest, so its
    interval barely moves; a symmetric sample is widened on both sides alike.

    Parameters
    ----------
    values : one value per pair (NaN values are left out).
    clusters : example code per pair; None: each pair its own cluster.
    level : confidence level.
    seed : of the resamples (:func:`evalpipe.seeding.hashed_seed` of the row's key); the three
        bootstraps draw from seeds hashed from it.
    samples : resamples of each bootstrap.

    Returns
    -------
    MeanInterval
        As :func:`evalpipe.scoring.mean_interval.clustered_mean_interval`; it holds the guarded
        bootstrap-t interval.

    Examples
    --------
    One large value: the interval reaches further above the mean than the guarded one does.

    >>> v = [0.1, 0.2, 0.1, 0.3, 0.2, 0.15, 0.25, 2.5]
    >>> r = tail_augmented_mean_interval(v, None, level=0.95, seed=1)
    >>> g = bootstrap_t_mean_interval(v, None, level=0.95, seed=hashed_seed(1, "sample"))
    >>> r.low <= g.low and r.high > g.high
    True
    """
    c = _clustered(np.asarray(values, dtype=float), clusters)
    empty = _empty(c)
    if empty is not None:
        return empty
    assert c is not None

    def bounds(part: str, c_part: _Clustered) -> tuple[float, float]:
        return _bootstrap_t_bounds(
            c_part, level=level, seed=hashed_seed(seed, part), samples=samples, guard=True
        )

    low, high = bounds("sample", c)
    z = c.sums - c.sizes * c.mean
    for part, j in (("smallest", int(np.argmin(z))), ("largest", int(np.argmax(z)))):
        twice = _from_sums(np.append(c.sums, c.sums[j]), np.append(c.sizes, c.sizes[j]))
        a_low, a_high = bounds(part, twice)
        if part == "smallest":
            low = min(low, a_low)
        else:
            high = max(high, a_high)
    return MeanInterval(c.mean, low + 0.0, high + 0.0, c.n, c.groups, c.df)
