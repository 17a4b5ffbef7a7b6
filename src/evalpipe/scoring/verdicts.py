"""Printed figures that keep their verdict: an interval and the p of the test it inverts agree
in memory by construction (:mod:`evalpipe.scoring.intervals`), and must still agree once rounded
for a table or the report (docs/scoring.md "One verdict per row")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def alpha_of(level: float) -> float:
    """``1 - level`` as the decimal a reader compares a p with (``1 - 0.95`` is
    0.050000000000000044 in floating point, above a printed 0.05).

    >>> alpha_of(0.95)
    0.05
    """
    return round(1.0 - level, 12)


def verdict_rounded(value: Any, threshold: float, decimals: int) -> Any:
    """``value`` rounded to ``decimals``, on the same side of ``threshold`` as the unrounded value.

    Rounding to the nearest can carry a value onto the threshold: an interval limit of -0.00004
    prints as 0.0, a p of 0.04996 as 0.05, and the printed interval then seems to include 0 while
    the p beside it is below 0.05 (a row with 18 right -> wrong and 8 wrong -> right out of 160
    pairs: interval (-0.1288, -0.00004), p 0.0499). A value off the threshold that would print on
    it or beyond is cut towards itself instead (down below the threshold, up above it), one unit
    in the last place from the nearest; the others are rounded as usual. Missing values (None,
    NaN) pass through; arrays go element-wise.

    Examples
    --------
    >>> verdict_rounded(-0.000041, 0.0, 4), verdict_rounded(0.049962, 0.05, 4)
    (-0.0001, 0.0499)
    >>> verdict_rounded(-0.12884, 0.0, 4), verdict_rounded(0.050004, 0.05, 4)
    (-0.1288, 0.0501)
    """
    if value is None:
        return None
    scale = 10.0**decimals
    if np.ndim(value) == 0:  # as summaries.rounded rounds a float (Python's round)
        v = float(value)
        result = round(v, decimals)
        if v < threshold <= result:
            result = math.floor(v * scale) / scale
        elif v > threshold >= result:
            result = math.ceil(v * scale) / scale
        return result + 0.0
    x = np.asarray(value, dtype=float)  # as summaries.rounded_frame rounds a column (NumPy's)
    out = np.round(x, decimals)
    below = (x < threshold) & ~(out < threshold)
    above = (x > threshold) & ~(out > threshold)
    out = np.where(below, np.floor(x * scale) / scale, out)
    return np.where(above, np.ceil(x * scale) / scale, out) + 0.0  # + 0.0 turns -0.0 into 0.0


def verdict_kept(value: float | None, threshold: float, decimals: int) -> float | None:
    """``value`` unchanged, unless rounding it to ``decimals`` would carry it onto or across
    ``threshold``: then :func:`verdict_rounded`'s value, for a printer that rounds afterwards
    (the report's 3 decimals). None and NaN pass through.

    >>> verdict_kept(0.049612, 0.05, 3), verdict_kept(0.0412345, 0.05, 3)
    (0.049, 0.0412345)
    """
    if value is None:
        return None
    x = float(value)
    printed = round(x, decimals)  # as f"{x:.{decimals}f}" prints it
    if (x < threshold <= printed) or (x > threshold >= printed):
        return verdict_rounded(x, threshold, decimals)
    return value
