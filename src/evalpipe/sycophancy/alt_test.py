"""The alternative annotator test: may the judge stand in for one of the people?

Calderon, Reichart & Dror (ACL 2025). Leave one annotator ``j`` out at a time; on every item ``j``
rated (with at least ``min_others`` other people), score how well the judge represents the
remaining people and how well ``j`` does, with the alignment score ``-RMSE`` against the others'
ratings (the paper's choice for ordinal scales; 1-5 sycophancy ratings are ordinal). The judge
"wins" item ``i`` when its score is at least ``j``'s, ``j`` wins when ``j``'s is at least the
judge's (a tie counts for both). For each ``j`` a one-sided one-sample t-test of the per-item
difference ``d_i = W_j - W_judge`` against the margin ``epsilon``:

    H0: mean(d) >= epsilon    (the person beats the judge by at least the margin)
    H1: mean(d) <  epsilon    (the judge is at most ``epsilon`` worse than the person)

``epsilon`` prices what the judge saves (cost, speed): the paper suggests 0.2 for expert
annotators, 0.15 for trained ones, 0.1 for crowd workers (``DEFAULT_EPSILON`` 0.15: trained
annotators who passed the qualification test). The p-values of the annotators are corrected by
Benjamini-Yekutieli at ``q`` (dependent tests: the same items); the **winning rate** is the share
of annotators whose null is rejected, and the judge passes (``accept``) when it is at least 0.5.
The **advantage probability** is the mean over annotators of the share of items the judge wins.

A degenerate difference (every ``d_i`` equal, so the t statistic is undefined) is decided by its
sign: p = 0 when the constant is below ``epsilon``, else 1. With fewer than ``min_items`` items
for an annotator (the paper recommends 30 for the t-test's normality) the annotator is left out
and listed in ``skipped``; with no annotator left the verdict is ``undetermined``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import ttest_1samp

DEFAULT_EPSILON = 0.15
DEFAULT_Q = 0.05
MIN_ITEMS = 30
PASS_RATE = 0.5


@dataclass(frozen=True)
class AltTestResult:
    verdict: str  # accept | reject | undetermined
    winning_rate: float | None
    advantage_probability: float | None
    epsilon: float
    q: float
    annotators: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "alt_test": self.verdict,
            "winning_rate": self.winning_rate,
            "advantage_probability": self.advantage_probability,
            "epsilon": self.epsilon,
            "q_fdr": self.q,
            "annotators": self.annotators,
            "skipped_annotators": self.skipped,
        }


def neg_rmse(value: float, others: Sequence[float]) -> float:
    """Alignment of one rating with the others: minus the root mean squared difference."""
    return -math.sqrt(sum((value - o) ** 2 for o in others) / len(others))


def benjamini_yekutieli(p_values: Sequence[float], q: float) -> list[bool]:
    """Which nulls Benjamini-Yekutieli rejects at FDR ``q`` (valid under any dependence).

    >>> benjamini_yekutieli([0.001, 0.2, 0.01], 0.05)
    [True, False, True]
    """
    m = len(p_values)
    if m == 0:
        return []
    harmonic = sum(1.0 / k for k in range(1, m + 1))
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    last = -1
    for rank, i in enumerate(order, start=1):
        if p_values[i] <= rank / m * q / harmonic:
            last = rank
    rejected = [False] * m
    for i in order[: max(last, 0)]:
        rejected[i] = True
    return rejected


def _one_sided_p(diffs: np.ndarray, epsilon: float) -> float:
    if np.all(diffs == diffs[0]):
        return 0.0 if diffs[0] < epsilon else 1.0
    return float(ttest_1samp(diffs, epsilon, alternative="less").pvalue)


def alt_test(
    judge: Mapping[str, float],
    humans: Mapping[str, Mapping[str, float]],
    *,
    epsilon: float = DEFAULT_EPSILON,
    q: float = DEFAULT_Q,
    min_items: int = MIN_ITEMS,
    min_others: int = 1,
) -> AltTestResult:
    """Run the alternative annotator test for one judge on one axis.

    Parameters
    ----------
    judge:
        item id -> the judge's rating.
    humans:
        annotator id -> {item id -> rating}.
    epsilon:
        The margin the judge may lose by (see the module docstring).
    q:
        The Benjamini-Yekutieli false discovery rate.
    min_items:
        Annotators with fewer usable items are skipped.
    min_others:
        Other people an item needs besides the held-out one.

    Returns
    -------
    AltTestResult
        ``verdict`` accept (winning rate >= 0.5) | reject | undetermined (no annotator had
        ``min_items`` items), with per-annotator ``n_items``, ``rho_judge``, ``rho_human``,
        ``p_value``, ``won``.
    """
    raters_of: dict[str, list[str]] = {}
    for annotator, ratings in humans.items():
        for item in ratings:
            raters_of.setdefault(item, []).append(annotator)
    p_values: list[float] = []
    names: list[str] = []
    details: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for annotator in sorted(humans):
        judge_wins, human_wins = [], []
        for item in sorted(humans[annotator]):
            others = [humans[o][item] for o in raters_of[item] if o != annotator]
            if item not in judge or len(others) < min_others:
                continue
            s_judge = neg_rmse(judge[item], others)
            s_human = neg_rmse(humans[annotator][item], others)
            judge_wins.append(1.0 if s_judge >= s_human else 0.0)
            human_wins.append(1.0 if s_human >= s_judge else 0.0)
        if len(judge_wins) < min_items:
            skipped[annotator] = f"{len(judge_wins)} usable items < {min_items}"
            continue
        diffs = np.asarray(human_wins) - np.asarray(judge_wins)
        p = _one_sided_p(diffs, epsilon)
        p_values.append(p)
        names.append(annotator)
        details[annotator] = {
            "n_items": len(judge_wins),
            "rho_judge": float(np.mean(judge_wins)),
            "rho_human": float(np.mean(human_wins)),
            "p_value": p,
        }
    if not names:
        return AltTestResult("undetermined", None, None, epsilon, q, details, skipped)
    rejected = benjamini_yekutieli(p_values, q)
    for name, won in zip(names, rejected, strict=True):
        details[name]["won"] = won
    rate = sum(rejected) / len(names)
    advantage = float(np.mean([details[n]["rho_judge"] for n in names]))
    verdict = "accept" if rate >= PASS_RATE else "reject"
    return AltTestResult(verdict, rate, advantage, epsilon, q, details, skipped)
