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


def holm(p_values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values.

    ``p_(i)`` sorted ascending over the m valid tests; adjusted ``max_{j<=i} min(1, (m - j + 1)
    p_(j))``, returned in the input order.

    Parameters
    ----------
    p_values : raw p-values; None / NaN are kept out of the family.

    Returns
    -------
    numpy.ndarray of float (NaN where the input was missing).

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.06, 0.06]
    """

    def step(ordered: np.ndarray) -> np.ndarray:
        m = ordered.size
        return np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ordered))

    return _adjust(p_values, step)


def benjamini_hochberg(p_values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (q-values of the BH procedure).

    ``p_(i)`` sorted ascending over the m valid tests; adjusted ``min_{j>=i} min(1, m p_(j) / j)``,
    returned in the input order.

    Parameters
    ----------
    p_values : raw p-values; None / NaN are kept out of the family.

    Returns
    -------
    numpy.ndarray of float (NaN where the input was missing).

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.04, 0.04]
    """

    def step(ordered: np.ndarray) -> np.ndarray:
        m = ordered.size
        scaled = ordered * m / np.arange(1, m + 1)
        return np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])

    return _adjust(p_values, step)
