"""Power of the paired test every table prints, the minimum detectable effect (MDE), and the
examples and typo draws a study needs to see a given effect.

The test is the one the intervals invert (:mod:`evalpipe.scoring.intervals`): McNemar's score
statistic ``Z = (b - c) / sqrt(b + c)`` on the pairs' discordant counts (``b`` incorrect ->
correct, ``c`` correct -> incorrect), rejected when ``|Z| > z sqrt(inflation)``, where the
inflation ``max(1, deff (t_df / z)^2)`` carries the example clusters' design effect and the
Student t quantile of a variance estimated from few examples.

Power at an effect ``d`` (a change of accuracy, either sign) with ``n`` pairs of discordance
``psi`` (the share of pairs whose correctness changed): per pair ``x = correct_perturbed -
correct_original`` has mean ``d`` and ``|x|`` mean ``psi``, so by the delta method ``Z`` is about
normal with mean ``sqrt(n) |d| / sqrt(psi)`` and variance ``deff sigma^2``, where

    sigma^2 = 1 - d^2 / psi - 3/4 d^2 (1 - psi) / psi^2

(the statistic's denominator is estimated too: with every flip one way ``Z = sqrt(c)``, whose
variance is ``(1 - d) / 4``, not ``1 - d``). Power is ``Phi((sqrt(n) |d| / sqrt(psi) - z
sqrt(inflation)) / (sqrt(deff) sigma))``; the far tail is negligible wherever power matters.

The discordance is the observed one, floored at ``|d|``: an effect of ``d`` flips at least
``|d|`` of the pairs, so a table whose pairs never flipped still gets an MDE (every flip one way).
The MDE is the smallest ``|d|`` with power at least ``power`` (80% by default), found by
bisection (power rises with ``|d|``); None when even ``|d| = 1`` is not detectable.

:mod:`evalpipe.scoring.simulate_power` checks these figures against a simulation of the design
that runs the tables' own test (docs/scoring.md, "Power and the minimum detectable effect").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from evalpipe.errors import InputError
from evalpipe.scoring.intervals import critical_value

POWER = 0.8
_BISECTIONS = 50


def _check(name: str, value: float, low: float, high: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and low < value < high):
        raise InputError(f"{name}: expected a value in ({low:g}, {high:g}), got {value!r}")


def inflation(design_effect: float, df: float, level: float) -> float:
    """The factor the test's counts are divided by: ``max(1, deff (t_df / z)^2)``, as
    :meth:`evalpipe.scoring.intervals.ClusterCorrection.inflation` (inf df: ``max(1, deff)``)."""
    if math.isinf(df):
        return max(1.0, design_effect)
    scale = critical_value(level, df) / critical_value(level)
    return max(1.0, design_effect * scale * scale)


def _sigma(d: float, psi: float) -> float:
    variance = 1.0 - d * d / psi - 0.75 * d * d * (1.0 - psi) / (psi * psi)
    return math.sqrt(max(variance, 0.0))


def _power(d: float, n: float, psi: float, deff: float, threshold: float) -> float:
    psi = min(1.0, max(psi, d))
    mean = math.sqrt(n) * d / math.sqrt(psi)
    spread = math.sqrt(deff) * _sigma(d, psi)
    if spread == 0:
        return 1.0 if mean > threshold else 0.0
    return NormalDist().cdf((mean - threshold) / spread)


def power(
    effect: float,
    *,
    n: float,
    discordance: float,
    design_effect: float = 1.0,
    df: float = math.inf,
    level: float = 0.95,
) -> float:
    """Probability that the paired score test rejects delta = 0 at ``level`` when the true
    change of accuracy is ``effect``.

    Parameters
    ----------
    effect : true ``accuracy_perturbed - accuracy_original`` (either sign).
    n : pairs.
    discordance : share of pairs whose correctness changes (floored at ``|effect|``).
    design_effect : variance ratio of the example clusters (1: independent pairs).
    df : degrees of freedom of the clustered test (inf: independent pairs).
    level : confidence level of the interval the test inverts.

    Examples
    --------
    >>> round(power(-0.1, n=200, discordance=0.2), 3)
    0.911
    """
    d = abs(float(effect))
    if n <= 0:
        return 0.0
    if d == 0:
        return 1.0 - level
    deff = max(1.0, float(design_effect))
    threshold = critical_value(level) * math.sqrt(inflation(deff, df, level))
    return _power(d, float(n), float(discordance), deff, threshold)


def mde(
    *,
    n: float,
    discordance: float | None,
    design_effect: float = 1.0,
    df: float = math.inf,
    level: float = 0.95,
    target_power: float = POWER,
) -> float | None:
    """The minimum detectable effect: the smallest ``|delta|`` the test finds with probability
    ``target_power``, at this many pairs, this discordance and design effect.

    Returns None without pairs or when no effect up to 1 reaches the power.

    Examples
    --------
    20 independent pairs that never flipped: only a change of about 27 points is seen 80% of
    the time; 2,000 pairs with 10% of them flipping: about 2 points.

    >>> round(mde(n=20, discordance=0.0), 3), round(mde(n=2000, discordance=0.1), 3)
    (0.269, 0.02)
    """
    _check("level", level, 0.0, 1.0)
    _check("power", target_power, 0.0, 1.0)
    if discordance is None or not n or n <= 0 or not math.isfinite(float(discordance)):
        return None
    # one row: plain floats (a bisection over 1-element arrays costs ~30x more)
    deff = max(1.0, float(design_effect))
    threshold = critical_value(level) * math.sqrt(inflation(deff, df, level))
    quantile = NormalDist().inv_cdf(target_power)
    root_n, root_deff, psi0 = math.sqrt(float(n)), math.sqrt(deff), float(discordance)

    def reaches(d: float) -> bool:
        psi = min(1.0, max(psi0, d))
        mean = root_n * d / math.sqrt(psi)
        spread = root_deff * _sigma(d, psi)
        return mean - threshold >= quantile * spread if spread > 0 else mean > threshold

    if not reaches(1.0):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2.0
        if reaches(mid):
            hi = mid
        else:
            lo = mid
    return hi


def mde_many(
    n: Sequence[float] | np.ndarray,
    discordance: Sequence[float] | np.ndarray,
    design_effect: Sequence[float] | np.ndarray,
    df: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    target_power: float = POWER,
) -> np.ndarray:
    """:func:`mde` of many rows at once (NaN where there is none): one bisection over arrays.

    Power reaches ``target_power`` exactly when ``(mean - threshold) / spread`` reaches its
    normal quantile, so the bisection compares that, without the normal distribution function.

    >>> mde_many([20, 0], [0.0, 0.1], [1.0, 1.0], [math.inf, math.inf]).round(3).tolist()
    [0.269, nan]
    """
    _check("level", level, 0.0, 1.0)
    _check("power", target_power, 0.0, 1.0)
    pairs = np.asarray(n, dtype=float)
    psi0 = np.nan_to_num(np.asarray(discordance, dtype=float), nan=-1.0)
    deff = np.maximum(1.0, np.asarray(design_effect, dtype=float))
    dof = np.asarray(df, dtype=float)
    z = critical_value(level)
    finite = np.isfinite(dof)
    scale = np.ones_like(dof)
    if finite.any():
        from scipy.special import stdtrit

        scale[finite] = stdtrit(np.maximum(dof[finite], 1e-9), 0.5 + level / 2.0) / z
    threshold = z * np.sqrt(np.maximum(1.0, deff * scale * scale))
    quantile = NormalDist().inv_cdf(target_power)
    valid = (pairs > 0) & (psi0 >= 0)
    root_n, root_deff = np.sqrt(np.where(valid, pairs, 1.0)), np.sqrt(deff)

    def reaches(d: np.ndarray) -> np.ndarray:
        psi = np.clip(np.maximum(psi0, d), 1e-300, 1.0)
        mean = root_n * d / np.sqrt(psi)
        variance = 1.0 - d * d / psi - 0.75 * d * d * (1.0 - psi) / (psi * psi)
        spread = root_deff * np.sqrt(np.maximum(variance, 0.0))
        # power >= target  <=>  mean - threshold >= quantile * spread (spread 0: mean > threshold)
        return np.where(spread > 0, mean - threshold >= quantile * spread, mean > threshold)

    ok = valid & reaches(np.ones_like(pairs))
    lo, hi = np.zeros_like(pairs), np.ones_like(pairs)
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2.0
        above = reaches(mid)
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return np.where(ok, hi, np.nan)


def clustered_design_effect(pairs_per_example: float, icc: float) -> float:
    """Design effect of ``m`` pairs per example whose flips correlate ``icc`` within an example:
    ``1 + (m - 1) icc`` (Kish)."""
    return 1.0 + (max(float(pairs_per_example), 1.0) - 1.0) * max(float(icc), 0.0)


def icc_from(design_effect: float, pairs_per_example: float) -> float:
    """The within-example correlation a measured design effect implies (inverse of
    :func:`clustered_design_effect`; 0 with one pair per example), clipped to [0, 1]."""
    if pairs_per_example <= 1:
        return 0.0
    return min(1.0, max(0.0, (float(design_effect) - 1.0) / (float(pairs_per_example) - 1.0)))


@dataclass(frozen=True)
class Plan:
    """The examples a design needs: ``draws`` pairs per example, ``examples`` examples, the
    power it reaches, and the generations it costs (one clean prompt and ``draws`` typo'd ones
    per example)."""

    draws: int
    examples: int | None
    power: float | None
    design_effect: float
    generations: int | None


def examples_needed(
    *,
    effect: float,
    discordance: float,
    draws: int,
    icc: float = 0.0,
    level: float = 0.95,
    target_power: float = POWER,
    max_examples: int = 10_000_000,
) -> Plan:
    """The fewest examples with which the test finds ``effect`` with probability
    ``target_power``, each example paired ``draws`` times (typo draws of one word) whose flips
    correlate ``icc``.

    The degrees of freedom are ``examples - 1`` whenever ``draws > 1`` (the clustered test), so
    the answer is searched by bisection on the exact power formula, not read off a closed form.

    Examples
    --------
    >>> plan = examples_needed(effect=-0.05, discordance=0.15, draws=1)
    >>> plan.examples, round(plan.power, 3)
    (459, 0.801)
    """
    _check("level", level, 0.0, 1.0)
    _check("power", target_power, 0.0, 1.0)
    d = abs(float(effect))
    _check("effect", d, 0.0, 1.0)
    if not 0.0 <= discordance <= 1.0:
        raise InputError(f"discordance: expected a share in [0, 1], got {discordance!r}")
    if draws < 1:
        raise InputError(f"draws: expected a whole number >= 1, got {draws!r}")
    deff = clustered_design_effect(draws, icc)

    def power_at(g: int) -> float:
        df = math.inf if draws == 1 else float(max(g - 1, 1))
        return power(
            d, n=g * draws, discordance=discordance, design_effect=deff, df=df, level=level
        )

    if power_at(max_examples) < target_power:
        return Plan(draws, None, None, deff, None)
    lo, hi = 1, 2
    while power_at(hi) < target_power:
        lo, hi = hi, min(hi * 2, max_examples)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power_at(mid) >= target_power:
            hi = mid
        else:
            lo = mid
    g = hi if power_at(lo) < target_power else lo
    return Plan(draws, g, power_at(g), deff, g * (1 + draws))
