"""Alternating projections compiled: what :func:`evalpipe.scoring.adjusted.absorb` computes, at
study scale.

A sweep subtracts, grouping after grouping, each level's mean from its rows. NumPy does it in
five passes over the rows per column and grouping (``bincount``, the division, ``take``, the
subtraction and the largest shift); the compiled loop makes one pass per grouping for all the
columns together: it subtracts one grouping's means from a row and adds the row to the next
grouping's sums in the same visit. Every value goes through the same floating-point operations
in the same order as in the NumPy loop (each level's sum added row by row as ``np.bincount``
adds it, one division per level, one subtraction per value, no fast-math reassociation), so the
results are the same bit for bit (tests/test_adjusted_effects.py compares the two paths).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Below this many values (rows x columns) NumPy's loop is fast enough and the compilation
# (about a second, once per process) would cost more than it saves.
COMPILED_FROM = 20_000

_compiled = None


def _kernel():
    """The compiled loop (numba imported and the function compiled on first use)."""
    global _compiled
    if _compiled is None:
        import numba

        @numba.njit(nogil=True, cache=True)
        def sweeps(matrix, codes, sizes, tolerance, max_sweeps):  # pragma: no cover - compiled
            n, m = matrix.shape
            k = codes.shape[0]
            levels = sizes.shape[1]
            sums = np.zeros((k, levels, m))
            means = np.zeros((levels, m))
            for i in range(n):
                for j in range(m):
                    sums[0, codes[0, i], j] += matrix[i, j]
            done = 0
            for _ in range(max_sweeps):
                change = 0.0
                for h in range(k):
                    for level in range(levels):
                        if sizes[h, level] > 0:
                            for j in range(m):
                                mean = sums[h, level, j] / sizes[h, level]
                                means[level, j] = mean
                                if abs(mean) > change:
                                    change = abs(mean)
                    after = (h + 1) % k  # the next grouping's sums, from the rows as they leave
                    sums[after, :, :] = 0.0
                    for i in range(n):
                        level, next_level = codes[h, i], codes[after, i]
                        for j in range(m):
                            value = matrix[i, j] - means[level, j]
                            matrix[i, j] = value
                            sums[after, next_level, j] += value
                done += 1
                if change < tolerance:
                    break
            return done

        _compiled = sweeps
    return _compiled


def absorb_compiled(
    matrix: np.ndarray, groups: Sequence[np.ndarray], *, tolerance: float, max_sweeps: int
) -> int:
    """Alternating projections on ``matrix`` in place, until no level's mean moves by
    ``tolerance`` in a sweep (or ``max_sweeps``); the number of sweeps made.

    Parameters
    ----------
    matrix : C-contiguous float64 array, rows x columns (changed in place).
    groups : integer codes 0..L-1 of each row, one array per grouping (at least one).
    tolerance, max_sweeps : the stopping rule.

    Examples
    --------
    >>> m = np.array([[1.0], [3.0], [2.0], [6.0]])
    >>> absorb_compiled(m, [np.array([0, 0, 1, 1])], tolerance=1e-10, max_sweeps=100)
    2
    >>> m[:, 0].tolist()
    [-1.0, 1.0, -2.0, 2.0]
    """
    codes = np.stack([np.asarray(g, dtype=np.intp) for g in groups])
    counts = [np.bincount(g) for g in codes]
    sizes = np.zeros((len(counts), max(c.size for c in counts)))
    for row, count in zip(sizes, counts, strict=True):
        row[: count.size] = count
    return int(_kernel()(matrix, codes, sizes, float(tolerance), int(max_sweeps)))
