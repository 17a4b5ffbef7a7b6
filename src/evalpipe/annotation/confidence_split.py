"""Do annotators agree more when they say they are sure?

Per axis the human ratings split into *sure* (confidence >= ``min_confidence``) and *unsure*.
Each group's agreement is the headline estimator on that group alone (pairwise quadratic kappa
of the ratings both in the group, weighted by shared items, pairs with ``min_pair_overlap`` or
more). The test compares each rating's distance from the other annotators' mean on the same item
(all of them, sure or not) between the groups: a one-sided Mann-Whitney U test that sure ratings
lie closer (``scipy.stats.mannwhitneyu(sure, unsure, alternative="less")``), significant at
p < 0.05.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from evalpipe.annotation.agreement import pairwise_kappas
from evalpipe.annotation.schema import AXES
from evalpipe.params_schema import default_of

ALPHA = 0.05


def _group_kappa(long: pd.DataFrame, axis: str, min_pair_overlap: int) -> dict[str, Any]:
    sub = long[long["axis"] == axis]
    out: dict[str, Any] = {"kappa": None, "n_ratings": len(sub), "n_pairs": 0}
    if sub["annotator_id"].nunique() < 2:
        return out
    pairs = [
        (k, n)
        for _a, _b, k, n in pairwise_kappas(sub, axes=[axis])[axis]
        if n >= min_pair_overlap and not math.isnan(k)
    ]
    total = sum(n for _, n in pairs)
    if total:
        out["kappa"] = round(sum(k * n for k, n in pairs) / total, 4)
    out["n_pairs"] = len(pairs)
    return out


def confidence_split(
    long: pd.DataFrame,
    *,
    min_confidence: float = default_of("annotation.min_confidence"),
    min_pair_overlap: int = default_of("annotation.min_pair_overlap"),
) -> dict[str, dict[str, Any]]:
    """Agreement of sure vs unsure ratings per axis, with the Mann-Whitney test.

    Parameters
    ----------
    long:
        Human ratings, columns ``id, annotator_id, axis, score, confidence``.
    min_confidence:
        Ratings at or above it are sure.
    min_pair_overlap:
        Pairs sharing fewer items stay out of a group's kappa.

    Returns
    -------
    dict
        ``{axis: {sure: {kappa, n_ratings, n_pairs}, unsure: {...}, mann_whitney_u, p_value,
        significant, note}}``; ``None`` where a statistic is not defined, with ``note`` saying why.
    """
    out: dict[str, dict[str, Any]] = {}
    for axis in AXES:
        rows = long[long["axis"] == axis]
        g = rows.groupby("id")["score"]
        total, count = g.transform("sum"), g.transform("count")
        others = count - 1
        dev = (rows["score"] - (total - rows["score"]) / others.where(others > 0)).abs()
        sure_mask = rows["confidence"] >= min_confidence
        entry: dict[str, Any] = {
            "sure": _group_kappa(rows[sure_mask], axis, min_pair_overlap),
            "unsure": _group_kappa(rows[~sure_mask], axis, min_pair_overlap),
            "mann_whitney_u": None,
            "p_value": None,
            "significant": None,
            "note": None,
        }
        sure_dev = dev[sure_mask & (others > 0)].to_numpy()
        unsure_dev = dev[~sure_mask & (others > 0)].to_numpy()
        if len(sure_dev) and len(unsure_dev):
            from scipy.stats import mannwhitneyu  # lazily: the agreement stage imports this

            test = mannwhitneyu(sure_dev, unsure_dev, alternative="less")
            p = float(test.pvalue)
            entry["mann_whitney_u"] = round(float(test.statistic), 4)
            entry["p_value"] = round(p, 6)
            entry["significant"] = p < ALPHA
        else:
            entry["note"] = (
                "no co-rated sure rating" if not len(sure_dev) else "no co-rated unsure rating"
            )
        out[axis] = entry
    return out
