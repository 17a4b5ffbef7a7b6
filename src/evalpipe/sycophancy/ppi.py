"""Prediction-powered means (PPI++): a judge-rated population corrected by a random human sample.

Notation (Angelopoulos, Duchi & Zrnic 2023, "PPI++"): ``y`` are the human labels of the ``n``
randomly sampled replies, ``f`` the judge's ratings of the same replies, ``f_u`` the judge's
ratings of the ``N`` replies people did not rate. The estimate of the population mean is

    theta = mean(lam * f_u) + mean(y - lam * f),

unbiased for every fixed ``lam`` because the human sample is a uniform random draw: the second
term removes the judge's bias on average. Its standard error is
``sqrt(var(lam * f_u) / N + var(y - lam * f) / n)`` (population variances, as the reference
package computes them) and the interval is normal, ``theta +- z * se``. ``lam = 1`` is plain PPI,
``lam = 0`` the humans alone; the power-tuned ``lam`` (PPI++) is the plug-in minimiser of the
variance, ``cov(y, f) / ((1 + n / N) var(f, f_u))`` clipped to [0, 1], so a weak or
uninformative judge falls back to the humans-only interval instead of widening it.

The functions reproduce ``ppi_py.ppi_mean_ci`` / ``ppi_mean_pointestimate`` (package
``ppi-python``) to rounding, which ``tests/test_sycophancy_ppi.py`` checks; the one deliberate
difference is a constant judge (every rating equal, e.g. an axis piled up at 1): the tuned
``lam`` is 0/0 there, and it is taken as 0 (the humans-only estimate) instead of NaN.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import norm, t


@dataclass(frozen=True)
class MeanEstimate:
    """One mean with its normal interval.

    ``n_human`` human-labelled units and ``n_judged`` judge-rated ones (labelled or not);
    ``lam`` the weight of the judge (1 plain PPI, 0 humans only, None for judge-only and
    humans-only estimates); ``effective_n`` the number of human labels a humans-only estimate
    would need for the same standard error (``n * var_human / se^2``; ``n_human`` for the
    humans-only estimate itself, None where undefined).
    """

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    n_human: int
    n_judged: int
    lam: float | None = None
    effective_n: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _critical(confidence: float, df: int | None = None) -> float:
    """The two-sided critical value: normal, or Student's t with ``df`` degrees of freedom."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    upper = 1 - (1 - confidence) / 2
    return float(norm.ppf(upper) if df is None else t.ppf(upper, df))


def _vector(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).reshape(-1)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: every value must be a finite number")
    return arr


def tuned_lambda(y: Any, f: Any, f_unlabelled: Any) -> float:
    """The power-tuned weight of the judge (PPI++), clipped to [0, 1].

    ``cov(y, f)`` is the population covariance on the labelled units (centred at each mean, as
    the reference package's gradient form), ``var`` the sample variance of every judge rating
    (labelled and not). A judge with no variance gets 0.

    >>> round(tuned_lambda([1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4] * 5), 4)
    0.7986
    """
    y, f, fu = _vector(y, "y"), _vector(f, "f"), _vector(f_unlabelled, "f_unlabelled")
    n, big_n = len(y), len(fu)
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    everything = np.concatenate([f, fu])
    var = float(np.var(everything, ddof=1)) if len(everything) > 1 else 0.0
    if var <= 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def leave_one_out_lambdas(y: Any, f: Any, f_unlabelled: Any) -> np.ndarray:
    """:func:`tuned_lambda` once per labelled unit, computed without that unit (closed form).

    Their mean weights the judged-only part; by symmetry its expectation equals each unit's
    own weight's, so the PPI estimate stays unbiased.

    >>> [round(float(v), 3) for v in leave_one_out_lambdas([1, 2, 3], [1, 2, 2], [1, 2, 3] * 3)]
    [0.0, 0.592, 0.296]
    """
    y, f, fu = _vector(y, "y"), _vector(f, "f"), _vector(f_unlabelled, "f_unlabelled")
    n, big_n = len(y), len(fu)
    if n < 3:
        return np.full(n, tuned_lambda(y, f, fu))
    k = n - 1
    mean_y = (y.sum() - y) / k
    mean_f = (f.sum() - f) / k
    cov = ((y * f).sum() - y * f) / k - mean_y * mean_f
    m = n + big_n - 1
    s1 = f.sum() + fu.sum() - f
    s2 = (f**2).sum() + (fu**2).sum() - f**2
    var = (s2 - s1**2 / m) / (m - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var > 1e-12, cov / ((1 + k / big_n) * var), 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi_mean(
    y: Any,
    f: Any,
    f_unlabelled: Any,
    *,
    confidence: float,
    lam: float | None = None,
    crossfit: bool = False,
    small_sample: bool = False,
) -> MeanEstimate:
    """Prediction-powered mean and interval (PPI++ when ``lam`` is None).

    Parameters
    ----------
    y:
        Human labels of the randomly sampled units (n >= 2).
    f:
        The judge's ratings of the same units, in the same order.
    f_unlabelled:
        The judge's ratings of the units without a human label (N >= 1).
    confidence:
        Two-sided confidence level, e.g. 0.95.
    lam:
        The judge's weight; None tunes it (PPI++), 1 is plain PPI.
    crossfit:
        With ``lam`` None: tune the weight of each labelled unit without that unit
        (:func:`leave_one_out_lambdas`), and weight the judged-only part by their mean. The
        plug-in weight is estimated from the same labels it multiplies, which biases the
        estimate towards the judge on a skewed scale (about -0.04 on the 1-5 mean at n = 20, a
        third of the standard error); the leave-one-out weights make it exactly unbiased.
    small_sample:
        False: the reference package's interval (population variances, normal quantile).
        True: sample variances (ddof 1) and Student's t with n - 1 degrees of freedom, the
        rectifier's (the human sample's) size; what the pipeline uses, because at the 20-50
        human labels of a pilot the normal interval covers 0.87-0.90 instead of 0.95
        (``perf/sycophancy_coverage.py``).

    Returns
    -------
    MeanEstimate
        With ``lam`` and ``effective_n``.

    >>> est = ppi_mean([1, 2, 2, 3], [1, 2, 3, 3], [1, 2, 3] * 10, confidence=0.9, lam=1)
    >>> round(est.estimate, 4)
    1.75
    """
    y, f, fu = _vector(y, "y"), _vector(f, "f"), _vector(f_unlabelled, "f_unlabelled")
    if len(y) != len(f):
        raise ValueError(f"y and f differ in length ({len(y)} vs {len(f)})")
    if len(y) < 2 or len(fu) < 1:
        raise ValueError(
            f"need n >= 2 labelled and N >= 1 unlabelled units, got {len(y)}, {len(fu)}"
        )
    n, big_n = len(y), len(fu)
    if lam is None and crossfit:
        weights = leave_one_out_lambdas(y, f, fu)
        weight = float(weights.mean())
    else:
        weight = tuned_lambda(y, f, fu) if lam is None else float(lam)
        weights = np.full(n, weight)
    rectifier = y - weights * f
    estimate = float(np.mean(weight * fu) + np.mean(rectifier))
    ddof = 1 if small_sample else 0
    var_judge = float(np.var(weight * fu, ddof=ddof if big_n > 1 else 0)) / big_n
    var_rectifier = float(np.var(rectifier, ddof=ddof)) / n
    se = math.sqrt(var_judge + var_rectifier)
    half = _critical(confidence, n - 1 if small_sample else None) * se
    # The humans-only estimate's variance over the PPI one's, times n: how many human labels
    # alone would give the same standard error.
    var_y = float(np.var(y, ddof=ddof))
    effective = var_y / se**2 if se > 0 else None
    return MeanEstimate(
        estimate=estimate,
        ci_low=estimate - half,
        ci_high=estimate + half,
        se=se,
        n_human=n,
        n_judged=n + big_n,
        lam=weight,
        effective_n=effective,
    )


def classical_mean(
    values: Any, *, confidence: float, n_judged: int = 0, small_sample: bool = False
) -> MeanEstimate:
    """The sample mean with its normal interval (population variance, as ``ppi_py``'s
    ``classical_mean_ci``): the humans-only estimate, or the judge-only one (then the interval is
    about the judge's own mean, not the people's). ``small_sample``: the t interval (sample
    standard deviation, n - 1 degrees of freedom).

    >>> round(classical_mean([0, 1, 1, 0], confidence=0.95).ci_high, 4)
    0.99
    """
    v = _vector(values, "values")
    if len(v) < 1:
        raise ValueError("need at least one value")
    mean = float(v.mean())
    small = small_sample and len(v) > 1
    se = float(np.std(v, ddof=1 if small else 0)) / math.sqrt(len(v))
    half = _critical(confidence, len(v) - 1 if small else None) * se
    return MeanEstimate(
        estimate=mean,
        ci_low=mean - half,
        ci_high=mean + half,
        se=se,
        n_human=0 if n_judged else len(v),
        n_judged=n_judged,
        effective_n=None if n_judged else float(len(v)),
    )


@dataclass(frozen=True)
class HalvingPlan:
    """How many more human labels would halve the interval's width (the judge's weight and the
    variances held at their current estimates): ``more`` labels, or None with ``reason``."""

    more: int | None
    reason: str


def labels_to_halve(estimate: MeanEstimate, y: Any, f: Any, f_unlabelled: Any) -> HalvingPlan:
    """More human labels, among the replies already judged, that would halve the PPI width.

    Every reply is judge-rated, so labelling more of them shrinks only the rectifier's share of
    the variance: with ``a = var(lam f)`` over all ``T = n + N`` judged replies and ``b =
    var(y - lam f)`` over the labelled ones, the variance is about ``a / T + b / n``, and
    halving the width needs ``n' = b / ((a / T + b / n) / 4 - a / T)`` labels. When ``a / T``
    alone is already more than a quarter of it, or ``n'`` exceeds ``T``, no number of labels
    among these replies halves it (None): more dialogues are what narrows it.

    >>> est = ppi_mean([1, 2, 1, 3], [1, 2, 2, 3], [1, 2, 1] * 100, confidence=0.95, lam=1)
    >>> labels_to_halve(est, [1, 2, 1, 3], [1, 2, 2, 3], [1, 2, 1] * 100).more
    13
    """
    y, f, fu = _vector(y, "y"), _vector(f, "f"), _vector(f_unlabelled, "f_unlabelled")
    lam = 0.0 if estimate.lam is None else estimate.lam
    n = len(y)
    total = n + len(fu)
    a = float(np.var(lam * np.concatenate([f, fu]))) / total
    b = float(np.var(y - lam * f))
    target = (a + b / n) / 4
    if target <= 0:
        return HalvingPlan(None, "the interval has zero width")
    room = target - a
    needed = math.ceil(b / room) if room > 0 else None
    if needed is None or needed > total:
        return HalvingPlan(
            None,
            f"labelling every one of the {total} judged replies would not halve it: "
            "more dialogues are needed",
        )
    return HalvingPlan(max(needed - n, 0), "")
