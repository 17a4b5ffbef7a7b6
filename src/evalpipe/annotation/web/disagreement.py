"""Which items to adjudicate first: disagreement per item from the long ratings frame.

Two measures per item and axis:

- ``range``: highest minus lowest score among the item's raters (0 = all agree, 4 = 1 vs 5);
- ``kappa_effect``: how much the axis's quadratic weighted kappa (mean over annotator pairs, as in
  ``agreement.agreement_report``) would rise if the item were left out. Positive means the item
  pulls agreement down; a range-2 disagreement on a rarely used level costs more kappa than one
  on common levels, which the range alone does not show.

Leave-one-out uses the item-additive features of ``agreement``: the statistics of "all items but
i" are those of the column sums minus item i's row, so every item's effect is one vectorised call.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.annotation.agreement import item_features, rating_matrix, stats_from_sums
from evalpipe.annotation.schema import AXES


def item_disagreement(long: pd.DataFrame) -> list[dict[str, Any]]:
    """Items rated by two or more annotators, most disputed first.

    Parameters
    ----------
    long:
        Columns ``id, annotator_id, axis, score`` (independent human ratings).

    Returns
    -------
    list[dict]
        One entry per item: ``id``, ``n_ratings``, ``range`` and ``kappa_effect`` (per axis,
        the latter None where kappa is undefined with or without the item), ``max_range``,
        ``kappa_effect_total`` (sum over axes of the defined effects). Sorted by max_range, then
        kappa_effect_total (both descending), then id.

    >>> rows = [("a", r, ax, s) for r, s in (("x", 1), ("y", 5)) for ax in AXES]
    >>> rows += [("b", r, ax, 2) for r in ("x", "y") for ax in AXES]
    >>> long = pd.DataFrame(rows, columns=["id", "annotator_id", "axis", "score"])
    >>> [(d["id"], d["max_range"]) for d in item_disagreement(long)]
    [('a', 4), ('b', 0)]
    """
    if long.empty:
        return []
    counts = long.groupby("id")["annotator_id"].nunique()
    items = sorted(counts[counts >= 2].index)
    if not items:
        return []
    sub = long[long["id"].isin(items)]
    ranges: dict[str, dict[str, int]] = {i: {} for i in items}
    effects: dict[str, dict[str, float | None]] = {i: {} for i in items}
    for axis in AXES:
        mat = rating_matrix(sub, axis, items=items)
        vals = mat.values.astype(np.int64)
        rated = vals > 0
        hi = np.where(rated, vals, 0).max(axis=1)
        lo = np.where(rated, vals, 9).min(axis=1)
        feats, layout = item_features(mat.values)
        total = feats.sum(axis=0, keepdims=True)
        with_all = stats_from_sums(total, layout)["kappa"][0]
        without = stats_from_sums(total - feats, layout)["kappa"]
        for k, item in enumerate(items):
            ranges[item][axis] = int(hi[k] - lo[k]) if rated[k].any() else 0
            effect = float(without[k] - with_all)
            effects[item][axis] = None if math.isnan(effect) else round(effect, 4)
    out = []
    for item in items:
        defined = [e for e in effects[item].values() if e is not None]
        out.append(
            {
                "id": item,
                "n_ratings": int(counts[item]),
                "range": ranges[item],
                "kappa_effect": effects[item],
                "max_range": max(ranges[item].values()),
                "kappa_effect_total": round(sum(defined), 4) if defined else 0.0,
            }
        )
    out.sort(key=lambda d: (-d["max_range"], -d["kappa_effect_total"], d["id"]))
    return out
