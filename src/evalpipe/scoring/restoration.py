"""Restoration rates: the share of eligible pairs a continuation cell restores, and its interval.

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
import pandas as pd

from evalpipe.answers.continuation_cells import UNSPLIT, Cell
from evalpipe.scoring.intervals import cluster_correction, wilson_interval

COLUMNS = ["design", "cell", "budget", "n", "restored", "unextractable", "unsplit", "rate"]
COLUMNS += ["ci_low", "ci_high", "design_effect"]
POOLED = "pooled"  # the scope of a language's benchmarks together


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


def restoration_table(
    pairs: pd.DataFrame,
    cells_: Sequence[Cell],
    answers: Sequence[object],
    unsplit: np.ndarray,
    *,
    level: float,
) -> pd.DataFrame:
    """One row per (design, cell, budget): eligible pairs ``n``, ``restored``, the
    unextractable answers among them, the eligible pairs not split, the rate and its interval.

    The interval is :func:`restoration_interval` (clustered on the example: typo draws of one
    example are not independent).
    """
    frame = pd.DataFrame(
        {
            "design": [c.design for c in cells_],
            "cell": [c.cell for c in cells_],
            "budget": [c.budget for c in cells_],
            "pair": [c.pair for c in cells_],
            "answer": list(answers),
        }
    )
    clean = pairs["clean_answer"].astype(object).to_numpy()
    frame["restored"] = [
        a is not None and a == clean[p] for a, p in zip(frame["answer"], frame["pair"], strict=True)
    ]
    frame["unextractable"] = frame["answer"].isna()
    frame["cluster"] = pairs["example_id"].to_numpy()[frame["pair"].to_numpy()]
    return summarise(frame, unsplit=int(unsplit.sum()), level=level)


def summarise(frame: pd.DataFrame, *, unsplit: int, level: float) -> pd.DataFrame:
    """:data:`COLUMNS` per (design, cell, budget) of eligible cells (``restored``,
    ``unextractable``, ``cluster`` per cell); ``unsplit``: eligible pairs the rule could not cut."""
    rows = []
    for (design, cell, budget), group in frame.groupby(["design", "cell", "budget"], sort=True):
        hits = group["restored"].to_numpy(dtype=float)
        low, high, deff = restoration_interval(hits, group["cluster"].to_numpy(), level=level)
        rows.append(
            {
                "design": design,
                "cell": cell,
                "budget": budget,
                "n": len(hits),
                "restored": int(hits.sum()),
                "unextractable": int(group["unextractable"].sum()),
                "unsplit": unsplit,
                "rate": float(hits.mean()),
                "ci_low": low,
                "ci_high": high,
                "design_effect": deff,
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["design", "cell", "budget"], kind="stable").reset_index(drop=True)


def restoration(cells: pd.DataFrame, *, level: float) -> pd.DataFrame:
    """Restoration rates per benchmark and pooled per language (:func:`summarise`) of a model's
    eligible cells (``benchmark``, ``language``, ``design``, ``cell``, ``budget``, ``cluster``,
    ``restored``, ``unextractable``; the :data:`UNSPLIT` rows counted, not scored)."""
    out = []
    scopes = [("benchmark", b, g) for b, g in cells.groupby("benchmark", sort=True)]
    scopes += [(POOLED, lang, g) for lang, g in cells.groupby("language", sort=True)]
    for scope, name, group in scopes:
        unsplit = group.loc[group["cell"] == UNSPLIT]
        sent = group.loc[group["cell"] != UNSPLIT]
        table = summarise(sent, unsplit=len(unsplit), level=level)
        language = str(group["language"].iloc[0])
        benchmark = name if scope == "benchmark" else POOLED
        out.append(table.assign(scope=scope, benchmark=benchmark, language=language))
    columns = ["scope", "benchmark", "language", *COLUMNS]
    return pd.concat(out, ignore_index=True)[columns] if out else pd.DataFrame(columns=columns)
