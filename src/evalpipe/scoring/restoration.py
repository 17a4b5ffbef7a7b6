"""The interval of a restoration rate: the share of eligible pairs a continuation cell restores.

A pair is one typo draw of one example; draws of one example share the example's clean
reasoning and tend to be restored together. The interval is the Wilson score interval on the
counts divided by the example-cluster inflation of
:func:`evalpipe.scoring.intervals.cluster_correction` (the variance ratio of the cluster jackknife
to independent pairs, with Bell-McCaffrey degrees of freedom): the headline interval's rule for
clustered binary pairs, applied to one proportion. Its coverage with a known truth is
``perf/continuation_coverage.py``'s (:mod:`evalpipe.scoring.simulate_restoration`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evalpipe.scoring.intervals import cluster_correction, wilson_interval


def restoration_interval(
    restored: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray, *, level: float
) -> tuple[float, float, float]:
    """``(ci_low, ci_high, design_effect)`` of the share of pairs restored (0/1 per pair).

    Examples
    --------
    Two examples, each restored in both its pairs or in neither: barely two observations.

    >>> low, high, deff = restoration_interval([1, 1, 0, 0], [0, 0, 1, 1], level=0.95)
    >>> round(low, 3), round(high, 3), deff
    (0.001, 0.999, 6.0)
    """
    hits = np.asarray(restored, dtype=float)
    if hits.size == 0:
        return float("nan"), float("nan"), float("nan")
    correction = cluster_correction(hits, np.asarray(clusters))
    inflation = correction.inflation(level)
    low, high = wilson_interval(hits.sum() / inflation, hits.size / inflation, level=level)
    return float(low), float(high), float(correction.design_effect)
