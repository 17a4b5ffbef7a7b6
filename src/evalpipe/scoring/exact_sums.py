"""The correctly rounded sum of many doubles, compiled: what
:func:`evalpipe.scoring.adjusted.exact_sum` computes, in one pass over the values.

Each value is a 53-bit integer (its mantissa times 2**53) times a power of two. The integers are
added per power of two in 64-bit integers, in two halves of 26 and 27 bits so that no sum can
overflow below 2**26 values; the per-power sums are combined into one Python integer and divided
once, which rounds correctly. Any correctly rounded sum is the same double, so the result is the
NumPy path's bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

# Below this many values NumPy's path is fast enough and the compilation (once per process)
# would cost more than it saves.
COMPILED_FROM = 20_000
# Exponents math.frexp gives for finite doubles: -1073 (the smallest subnormal) to 1024.
_LOWEST = -1074
_BINS = 1024 - _LOWEST + 1

_compiled = None


def _kernel():
    """The compiled per-exponent sums (numba imported and compiled on first use)."""
    global _compiled
    if _compiled is None:
        import numba

        @numba.njit(nogil=True, cache=True)
        def per_exponent(values):  # pragma: no cover - compiled
            high = np.zeros(_BINS, dtype=np.int64)
            low = np.zeros(_BINS, dtype=np.int64)
            for value in values:
                mantissa, exponent = math.frexp(value)
                whole = np.int64(mantissa * 9007199254740992.0)  # times 2**53: an integer
                high[exponent - _LOWEST] += whole >> 26
                low[exponent - _LOWEST] += whole & 67108863  # the low 26 bits
            return high, low

        _compiled = per_exponent
    return _compiled


def exact_sum_compiled(values: np.ndarray) -> float:
    """Correctly rounded sum of a finite float64 array of fewer than 2**26 values.

    >>> exact_sum_compiled(np.array([1e16, 1.0, -1e16] + [0.1] * 40)) == math.fsum(
    ...     [1e16, 1.0, -1e16] + [0.1] * 40)
    True
    """
    high, low = _kernel()(np.ascontiguousarray(values, dtype=float).ravel())
    total = 0
    for k in np.flatnonzero((high != 0) | (low != 0)).tolist():
        total += ((int(high[k]) << 26) + int(low[k])) << k
    shift = _LOWEST - 53
    return float(total << shift) if shift >= 0 else total / (1 << -shift)
