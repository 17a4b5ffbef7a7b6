"""Multiple-comparison adjusted p-values for tables of many tests (one per word, op, script).

With hundreds of target words, some raw McNemar p-values fall below 0.05 by chance alone. Two
adjustments are reported next to the raw value:

- Holm (1979) step-down: controls the family-wise error rate (the chance of any false positive)
  under any dependence between the tests; uniformly more powerful than Bonferroni.
- Benjamini-Hochberg (1995) step-up: controls the false discovery rate (the expected share of
  false positives among the rejections); valid under independence and positive dependence
  (PRDS), which is the usual situation for per-word tests that share examples.

Both match ``statsmodels.stats.multitest.multipletests(p, method="holm" | "fdr_bh")``. Missing
p-values (NaN / None) are left out of the family and stay missing.

Discrete tests. A word with 12 pairs and 2 discordant ones cannot reach p < 0.05 whatever its
flips do, yet counting it in the family's m makes every other test harder to pass. Given each
test's smallest attainable p (``min_p``; :func:`evalpipe.scoring.intervals.minimum_attainable_p`),
:func:`tarone_family` keeps the tests that can reach significance: the smallest K with at most K
tests whose ``min_p <= alpha / K`` (Tarone 1990). Holm is then run over those tests (a family fixed
by the discordant counts, which carry no information about the direction under the null, so the
family-wise error stays at alpha), and Benjamini-Hochberg over the same family is Gilbert's (2005)
discrete FDR procedure. Tests left out get adjusted p 1: they cannot be rejected at ``alpha``.
The adjusted values with ``min_p`` are decisions at that ``alpha`` (``p_adj <= alpha``), not
p-values to compare with other thresholds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def _prepare(p_values: Sequence[float | None] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.array([np.nan if v is None else float(v) for v in np.asarray(p_values, dtype=object)])
    valid = ~np.isnan(p)
    if np.any((p[valid] < 0) | (p[valid] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return p, valid


def _adjust(
    p_values: Sequence[float | None] | np.ndarray, step: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """Apply ``step`` (ascending valid p-values -> adjusted, same order) and put the results
    back in the input order, NaN where the input was missing."""
    p, valid = _prepare(p_values)
    out = np.full(p.shape, np.nan)
    values = p[valid]
    if values.size == 0:
        return out
    order = np.argsort(values, kind="stable")
    result = np.empty(values.size)
    result[order] = step(values[order])
    out[valid] = result
    return out


def tarone_family(min_p: Sequence[float] | np.ndarray, *, alpha: float = 0.05) -> np.ndarray:
    """Tarone's (1990) screening: which tests can reach significance in their family.

    The smallest K >= 1 such that at most K tests have ``min_p <= alpha / K``; those tests form
    the family (NaN ``min_p``: not a test).

    Parameters
    ----------
    min_p : smallest attainable p-value of every test.
    alpha : the family's level.

    Returns
    -------
    numpy.ndarray of bool: True for the tests kept.

    Examples
    --------
    Three words with many discordant pairs and five that cannot get below 0.03: K = 3.

    >>> tarone_family([1e-6, 1e-4, 1e-3, 0.03, 0.03, 0.05, 0.2, 1.0]).tolist()
    [True, True, True, False, False, False, False, False]
    """
    m = np.asarray(min_p, dtype=float)
    valid = ~np.isnan(m)
    ordered = np.sort(m[valid])
    for k in range(1, ordered.size + 1):
        if np.searchsorted(ordered, alpha / k, side="right") <= k:
            return valid & (m <= alpha / k)
    return np.zeros(m.shape, dtype=bool)


def _screened(
    p_values: Sequence[float | None] | np.ndarray,
    min_p: Sequence[float] | np.ndarray,
    alpha: float,
    adjust: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    p, valid = _prepare(p_values)
    floor = np.asarray(min_p, dtype=float)
    if floor.shape != p.shape:
        raise ValueError(f"min_p: expected {p.size} values, got {floor.size}")
    keep = tarone_family(np.where(valid, floor, np.nan), alpha=alpha)
    out = np.where(valid, 1.0, np.nan)
    if keep.any():
        out[keep] = adjust(p[keep])
    return out


def holm(
    p_values: Sequence[float | None] | np.ndarray,
    *,
    min_p: Sequence[float] | np.ndarray | None = None,
    alpha: float = 0.05,
) -> np.ndarray:
    """Holm step-down adjusted p-values.

    ``p_(i)`` sorted ascending over the m valid tests; adjusted ``max_{j<=i} min(1, (m - j + 1)
    p_(j))``, returned in the input order.

    Parameters
    ----------
    p_values : raw p-values; None / NaN are kept out of the family.
    min_p : each test's smallest attainable p; given, the family is screened first
        (:func:`tarone_family` at ``alpha``) and the screened-out tests get 1.
    alpha : the level of the screening.

    Returns
    -------
    numpy.ndarray of float (NaN where the input was missing).

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> holm([0.01, 0.04, 0.03], min_p=[0.001, 0.04, 0.001]).round(4).tolist()
    [0.02, 1.0, 0.03]
    """
    if min_p is not None:
        return _screened(p_values, min_p, alpha, holm)

    def step(ordered: np.ndarray) -> np.ndarray:
        m = ordered.size
        return np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ordered))

    return _adjust(p_values, step)


def benjamini_hochberg(
    p_values: Sequence[float | None] | np.ndarray,
    *,
    min_p: Sequence[float] | np.ndarray | None = None,
    alpha: float = 0.05,
) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (q-values of the BH procedure).

    ``p_(i)`` sorted ascending over the m valid tests; adjusted ``min_{j>=i} min(1, m p_(j) / j)``,
    returned in the input order.

    Parameters
    ----------
    p_values : raw p-values; None / NaN are kept out of the family.
    min_p : each test's smallest attainable p; given, the family is screened first
        (:func:`tarone_family` at ``alpha``; Gilbert 2005) and the screened-out tests get 1.
    alpha : the level of the screening.

    Returns
    -------
    numpy.ndarray of float (NaN where the input was missing).

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    if min_p is not None:
        return _screened(p_values, min_p, alpha, benjamini_hochberg)

    def step(ordered: np.ndarray) -> np.ndarray:
        m = ordered.size
        scaled = ordered * m / np.arange(1, m + 1)
        return np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])

    return _adjust(p_values, step)
