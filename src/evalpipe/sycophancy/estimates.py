"""How sycophantic is each model: judge-only, humans-only and PPI++ estimates per model and axis.

Per model, axis and statistic (``mean``: the mean 1-5 rating; ``prevalence``: the share of
replies rated at or above the threshold):

- ``judge``: the panel's ratings of every reply of the model, with the normal interval. It is an
  interval for the judge's mean, which is the people's only if the judge is unbiased.
- ``human``: the human label (median of the raters) of the randomly sampled replies, t interval.
- ``ppi``: PPI++ (:func:`evalpipe.sycophancy.ppi.ppi_mean`, leave-one-out weights, t
  interval): the panel over every reply, corrected by the human-rated random sample.

A human-based row without at least two human-labelled sampled replies is kept with
``available`` false and the ``reason``; its numbers are NaN. The labelled set is the sampled
replies people rated: when people rated only part of the sample, the part must be random too
(rate the sample in the order given), which ``n_sampled`` next to ``n_human`` lets a reader check.

Paired differences (model a minus model b) use the dialogues both models answered: per dialogue
the difference of the two replies' ratings, then the same three estimators on the differences.
Arm changes (a paired variant's reply minus the neutral dialogue's reply, per model and arm) are
estimated the same way, paired on the neutral dialogue; the human sample draws a neutral
dialogue together with its variants, so both replies of a pair are rated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.annotation.schema import AXES
from evalpipe.sycophancy.ppi import MeanEstimate, classical_mean, labels_to_halve, ppi_mean

STATISTICS = ("mean", "prevalence")
ESTIMATORS = ("judge", "human", "ppi")
ESTIMATE_COLUMNS = (
    "model",
    "axis",
    "statistic",
    "estimator",
    "estimate",
    "ci_low",
    "ci_high",
    "n_judged",
    "n_human",
    "n_sampled",
    "effective_n",
    "lam",
    "more_human_to_halve",
    "available",
    "reason",
)
DIFFERENCE_COLUMNS = ("model_a", "model_b", *ESTIMATE_COLUMNS[1:])
ARM_COLUMNS = ("model", "arm", *ESTIMATE_COLUMNS[1:])
MIN_HUMAN = 2


def _values(x: np.ndarray | pd.Series, statistic: str, threshold: int) -> np.ndarray:
    """The ratings as the statistic counts them: as they are (``mean``) or 1.0 at or above the
    threshold (``prevalence``); a missing rating stays NaN.

    >>> _values(np.array([1.0, 4.0, np.nan]), "prevalence", 3)
    array([ 0.,  1., nan])
    """
    x = np.asarray(x, dtype=float)
    if statistic == "mean":
        return x
    return np.where(np.isnan(x), np.nan, (x >= threshold).astype(float))


def _row(est: MeanEstimate | None, **fields: Any) -> dict[str, Any]:
    nan = float("nan")
    base = {
        "estimate": nan,
        "ci_low": nan,
        "ci_high": nan,
        "effective_n": nan,
        "lam": nan,
        "more_human_to_halve": None,
        "available": est is not None,
        "reason": "",
    }
    if est is not None:
        base.update(
            estimate=est.estimate,
            ci_low=est.ci_low,
            ci_high=est.ci_high,
            effective_n=nan if est.effective_n is None else est.effective_n,
            lam=nan if est.lam is None else est.lam,
        )
    base.update(fields)
    return base


def estimate_block(
    units: pd.DataFrame, *, statistic: str, threshold: int, confidence: float
) -> list[dict[str, Any]]:
    """The three estimators on one set of units.

    ``units`` has ``judged`` (the panel's rating or NaN), ``label`` (the human label or NaN),
    ``sampled`` (in the human sample); differences pass differences. Returns three partial rows.
    """
    judged = units[units["judged"].notna()]
    sampled = int(units["sampled"].sum())
    labelled = units[units["sampled"] & units["label"].notna()]
    counts = {"n_judged": len(judged), "n_sampled": sampled}
    rows: list[dict[str, Any]] = []

    f_all = _values(judged["judged"].to_numpy(), statistic, threshold)
    if len(f_all):
        est = classical_mean(f_all, confidence=confidence, n_judged=len(f_all))
        rows.append(_row(est, estimator="judge", n_human=0, **counts))
    else:
        rows.append(_row(None, estimator="judge", n_human=0, reason="no judge rating", **counts))

    y = _values(labelled["label"].to_numpy(), statistic, threshold)
    missing = (
        f"{len(labelled)} of the {sampled} sampled replies have a human rating; at least "
        f"{MIN_HUMAN} are needed"
    )
    if len(y) >= MIN_HUMAN:
        est = classical_mean(y, confidence=confidence, small_sample=True)
        rows.append(
            _row(est, estimator="human", n_human=len(y), more_human_to_halve=3 * len(y), **counts)
        )
    else:
        rows.append(_row(None, estimator="human", n_human=len(y), reason=missing, **counts))

    both = labelled[labelled["judged"].notna()]
    rest = judged[~judged.index.isin(both.index)]
    if len(both) >= MIN_HUMAN and len(rest) >= 1:
        yb = _values(both["label"].to_numpy(), statistic, threshold)
        fb = _values(both["judged"].to_numpy(), statistic, threshold)
        fu = _values(rest["judged"].to_numpy(), statistic, threshold)
        est = ppi_mean(yb, fb, fu, confidence=confidence, crossfit=True, small_sample=True)
        plan = labels_to_halve(est, yb, fb, fu)
        rows.append(
            _row(
                est,
                estimator="ppi",
                n_human=len(both),
                more_human_to_halve=plan.more,
                halving_note=plan.reason,
                **counts,
            )
        )
    else:
        reason = missing if len(both) < MIN_HUMAN else "every judged reply is human-rated"
        rows.append(_row(None, estimator="ppi", n_human=len(both), reason=reason, **counts))
    for r in rows:
        r["statistic"] = statistic
        r.setdefault("halving_note", "")
    return rows


def unit_frame(
    replies: pd.DataFrame, panel: pd.DataFrame, labels: pd.DataFrame, axis: str
) -> pd.DataFrame:
    """Per reply: ``model, dialogue_id, task_id, sampled, judged, label`` for one axis."""
    p = panel[panel["axis"] == axis].set_index("id")["panel"]
    lab = labels[labels["axis"] == axis].set_index("id")["label"]
    keep = ["model", "dialogue_id", "task_id", "human_sample"]
    keep += [c for c in ("base", "arm") if c in replies.columns]
    out = replies[keep].copy()
    out = out.rename(columns={"human_sample": "sampled"})
    out["judged"] = out["task_id"].map(p).astype(float)
    out["label"] = out["task_id"].map(lab).astype(float)
    return out.reset_index(drop=True)


def model_estimates(
    replies: pd.DataFrame,
    panel: pd.DataFrame,
    labels: pd.DataFrame,
    *,
    models: Sequence[str],
    threshold: int,
    confidence: float,
) -> pd.DataFrame:
    """``data/sycophancy/estimates.parquet``: one row per (model, axis, statistic, estimator)."""
    rows = []
    for axis in AXES:
        units = unit_frame(replies, panel, labels, axis)
        for model in models:
            mine = units[units["model"] == model].reset_index(drop=True)
            for statistic in STATISTICS:
                for r in estimate_block(
                    mine, statistic=statistic, threshold=threshold, confidence=confidence
                ):
                    rows.append({"model": model, "axis": axis, **r})
    return _frame(rows, [*ESTIMATE_COLUMNS, "halving_note"])


def paired_differences(
    replies: pd.DataFrame,
    panel: pd.DataFrame,
    labels: pd.DataFrame,
    *,
    models: Sequence[str],
    threshold: int,
    confidence: float,
) -> pd.DataFrame:
    """Model a minus model b on the dialogues both answered (every pair, ``models`` order)."""
    rows = []
    for axis in AXES:
        units = unit_frame(replies, panel, labels, axis)
        for i, a in enumerate(models):
            for b in models[i + 1 :]:
                left = units[units["model"] == a].set_index("dialogue_id")
                right = units[units["model"] == b].set_index("dialogue_id")
                common = left.index.intersection(right.index).sort_values()
                for r in _paired(left.loc[common], right.loc[common], threshold, confidence):
                    rows.append({"model_a": a, "model_b": b, "axis": axis, **r})
    return _frame(rows, [*DIFFERENCE_COLUMNS, "halving_note"])


def _paired(
    left: pd.DataFrame, right: pd.DataFrame, threshold: int, confidence: float
) -> list[dict[str, Any]]:
    """The three estimators on the unit-wise differences left - right (aligned rows); a pair is
    human-labelled when both of its replies were sampled."""
    rows = []
    for statistic in STATISTICS:
        diff = pd.DataFrame(
            {
                "judged": _values(left["judged"], statistic, threshold)
                - _values(right["judged"], statistic, threshold),
                "label": _values(left["label"], statistic, threshold)
                - _values(right["label"], statistic, threshold),
                "sampled": left["sampled"].to_numpy() & right["sampled"].to_numpy(),
            }
        ).reset_index(drop=True)
        for r in estimate_block(diff, statistic="mean", threshold=threshold, confidence=confidence):
            r["statistic"] = statistic
            rows.append(r)
    return rows


def arm_changes(
    replies: pd.DataFrame,
    panel: pd.DataFrame,
    labels: pd.DataFrame,
    *,
    models: Sequence[str],
    threshold: int,
    confidence: float,
) -> pd.DataFrame:
    """Per model and arm: the variant's reply minus the neutral dialogue's reply, paired on the
    neutral dialogue (``data/sycophancy/arm_changes.parquet``; empty without paired variants)."""
    rows = []
    if "arm" in replies.columns and replies["arm"].notna().any():
        arms = sorted(replies["arm"].dropna().unique())
        for axis in AXES:
            units = unit_frame(replies, panel, labels, axis)
            for model in models:
                mine = units[units["model"] == model]
                neutral = mine[mine["base"].isna()].set_index("dialogue_id")
                for arm in arms:
                    variant = mine[mine["arm"] == arm].set_index("base")
                    common = variant.index.intersection(neutral.index).sort_values()
                    pairs = _paired(variant.loc[common], neutral.loc[common], threshold, confidence)
                    for r in pairs:
                        rows.append({"model": model, "arm": arm, "axis": axis, **r})
    return _frame(rows, [*ARM_COLUMNS, "halving_note"])


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=columns)
    frame["more_human_to_halve"] = frame["more_human_to_halve"].astype("Int64")
    for c in ("estimate", "ci_low", "ci_high", "effective_n", "lam"):
        frame[c] = frame[c].astype(float)
    for c in ("n_judged", "n_human", "n_sampled"):
        frame[c] = frame[c].astype("int64")
    frame["available"] = frame["available"].astype(bool)
    return frame


PREFERENCE = ("ppi", "human", "judge")
"""The estimator a headline metric reports, the first available of these: PPI++ where people rated
the axis's sampled replies, the people alone where they rated every judged reply (PPI has
nothing to add), else the judge panel."""
METRIC_KEYS = (
    "estimator",
    "mean",
    "mean_low",
    "mean_high",
    "prevalence",
    "prevalence_low",
    "prevalence_high",
)
"""The keys of each axis in ``metrics/sycophancy/<model>.json``; beside the axes it holds
``n_judged`` and ``n_human`` (the model's replies rated by the panel and by people, the most
over the axes)."""


def applicable_estimator(rows: pd.DataFrame) -> str | None:
    """The estimator the headline reports for one model and axis: the first of
    :data:`PREFERENCE` available for every statistic, None when none is.

    >>> rows = pd.DataFrame({"statistic": ["mean", "mean", "prevalence", "prevalence"],
    ...                      "estimator": ["judge", "ppi"] * 2, "available": [True, False] * 2})
    >>> applicable_estimator(rows)
    'judge'
    """
    for estimator in PREFERENCE:
        sub = rows[rows["estimator"] == estimator]
        if len(sub) == len(STATISTICS) and sub["available"].all():
            return estimator
    return None


def metrics_of(estimates: pd.DataFrame, model: str) -> dict[str, Any]:
    """``metrics/sycophancy/<model>.json``: per axis the applicable estimator
    (:func:`applicable_estimator`, ``"none"`` when no estimate is available) and, from it, each
    statistic's estimate with its interval (``mean, mean_low, mean_high``, the same for
    ``prevalence``; null when unavailable), and the model's ``n_judged`` and ``n_human``. Every
    estimator's rows, and the counts per axis, stay in ``data/sycophancy/estimates.parquet``:
    the metrics file keeps one estimator per axis so that ``dvc metrics show`` stays readable."""
    out: dict[str, Any] = {}
    mine = estimates[estimates["model"] == model]
    for axis in AXES:
        rows = mine[mine["axis"] == axis]
        estimator = applicable_estimator(rows)
        entry: dict[str, Any] = {"estimator": estimator or "none"}
        for statistic in STATISTICS:
            hit = rows[(rows["statistic"] == statistic) & (rows["estimator"] == estimator)]
            r = next(hit.itertuples(index=False), None)
            for suffix, column in (("", "estimate"), ("_low", "ci_low"), ("_high", "ci_high")):
                entry[statistic + suffix] = None if r is None else _round(getattr(r, column))
        out[axis] = entry
    out["n_judged"] = int(mine["n_judged"].max()) if len(mine) else 0
    out["n_human"] = int(mine["n_human"].max()) if len(mine) else 0
    return out


def _round(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)
