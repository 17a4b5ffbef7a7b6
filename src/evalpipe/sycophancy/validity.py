"""Can the judge stand in for people? Per judge and axis, on every item people and the judge rated.

- ``human_labels``: the people's label of an item on an axis is the **median** of the human
  raters' scores (an even count's midpoint, e.g. 2.5), computed here from the raw ratings of every
  rated item. The pipeline's consensus file leaves out items it rejects as contested; dropping
  them would make the human sample of the estimators non-random, so every rated item counts.
  Where an integer is needed (confusion matrix, kappa, "the judge was right") a midpoint is
  rounded **down** (the conservative reading: less sycophancy claimed).
- the alternative annotator test (:mod:`evalpipe.sycophancy.alt_test`) on the raw ratings;
- the confusion matrix (rows: people's rounded label 1-5, columns: the judge's score 1-5) and
  the quadratic-weighted kappa over the fixed labels 1-5;
- calibration of the judge's stated confidence: "the judge was right" is an exact match with
  the people's rounded label; **Brier** = mean (confidence - right)^2, **ECE** = sum over the ten
  equal-width confidence bins of (bin share) * |mean confidence - share right|;
- length bias: the gap judge - people regressed on the reply's length in hundreds of characters
  (ordinary least squares), the slope with its t interval (n - 2 degrees of freedom). A positive
  slope means the judge rates longer replies as more sycophantic than people do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from evalpipe.annotation.agreement import quadratic_weighted_kappa
from evalpipe.annotation.schema import AXES, LABELS
from evalpipe.sycophancy.alt_test import alt_test

ECE_BINS = 10
LENGTH_UNIT = 100


def human_labels(humans: pd.DataFrame) -> pd.DataFrame:
    """Median of the human raters per (id, axis): columns ``id, axis, label, n_raters``.

    >>> long = pd.DataFrame({"id": ["a", "a"], "annotator_id": ["x", "y"],
    ...                      "axis": ["social", "social"], "score": [2, 3]})
    >>> human_labels(long)[["id", "label", "n_raters"]].values.tolist()
    [['a', 2.5, 2]]
    """
    if humans.empty:
        return pd.DataFrame(
            {
                "id": pd.Series([], dtype=object),
                "axis": pd.Series([], dtype=object),
                "label": pd.Series([], dtype=float),
                "n_raters": pd.Series([], dtype="int64"),
            }
        )
    grouped = humans.groupby(["id", "axis"], sort=True)["score"]
    out = grouped.agg(label="median", n_raters="count").reset_index()
    out["label"] = out["label"].astype(float)
    return out


def round_down_half(values: Any) -> np.ndarray:
    """Midpoints (x.5) go down, everything else to the nearest integer; clipped to 1-5."""
    arr = np.asarray(values, dtype=float)
    return np.clip(np.ceil(arr - 0.5), LABELS[0], LABELS[-1]).astype(int)


def confusion(people: Any, judge: Any) -> list[list[int]]:
    """5 x 5 counts: row = people's label - 1, column = the judge's score - 1."""
    out = np.zeros((len(LABELS), len(LABELS)), dtype=int)
    for p, j in zip(round_down_half(people), round_down_half(judge), strict=True):
        out[p - 1, j - 1] += 1
    return out.tolist()


def calibration(confidence: Any, right: Any) -> dict[str, float | None]:
    """Brier score and expected calibration error of stated confidences.

    >>> calibration([0.9, 0.9, 0.5, 0.5], [1, 1, 1, 0])
    {'brier': 0.13, 'ece': 0.05, 'mean_confidence': 0.7, 'accuracy': 0.75}
    """
    c = np.asarray(confidence, dtype=float)
    r = np.asarray(right, dtype=float)
    if len(c) == 0:
        return {"brier": None, "ece": None, "mean_confidence": None, "accuracy": None}
    brier = float(np.mean((c - r) ** 2))
    bins = np.minimum((c * ECE_BINS).astype(int), ECE_BINS - 1)
    ece = 0.0
    for b in np.unique(bins):
        mask = bins == b
        ece += mask.mean() * abs(c[mask].mean() - r[mask].mean())
    return {
        "brier": round(brier, 6),
        "ece": round(float(ece), 6),
        "mean_confidence": round(float(c.mean()), 6),
        "accuracy": round(float(r.mean()), 6),
    }


def length_slope(gap: Any, length: Any, *, confidence: float) -> dict[str, Any]:
    """OLS slope of ``gap`` on ``length / 100`` with its t interval (None where undefined).

    >>> length_slope([0, 1, 2], [100, 200, 300], confidence=0.95)["length_slope"]
    1.0
    """
    g = np.asarray(gap, dtype=float)
    x = np.asarray(length, dtype=float) / LENGTH_UNIT
    n = len(g)
    empty = {"length_slope": None, "length_slope_low": None, "length_slope_high": None}
    if n < 3 or np.ptp(x) == 0:
        return {**empty, "length_slope_reason": "needs 3 items of different lengths"}
    xc = x - x.mean()
    slope = float(np.sum(xc * (g - g.mean())) / np.sum(xc**2))
    resid = g - g.mean() - slope * xc
    se = math.sqrt(float(np.sum(resid**2)) / (n - 2) / float(np.sum(xc**2)))
    half = float(student_t.ppf(1 - (1 - confidence) / 2, n - 2)) * se
    return {
        "length_slope": round(slope, 6),
        "length_slope_low": round(slope - half, 6),
        "length_slope_high": round(slope + half, 6),
    }


def axis_validity(
    judge: pd.DataFrame,
    humans: pd.DataFrame,
    lengths: Mapping[str, int],
    *,
    epsilon: float,
    confidence: float,
) -> dict[str, Any]:
    """Every figure of one judge on one axis.

    Parameters
    ----------
    judge:
        The judge's ratings of this axis: ``id, score, confidence``.
    humans:
        The human ratings of this axis: ``id, annotator_id, score``.
    lengths:
        Reply length in characters per item id.
    epsilon, confidence:
        The alternative annotator test's margin; the length slope's confidence level.
    """
    labels = human_labels(humans.assign(axis="axis"))
    both = labels.merge(judge, on="id", how="inner").sort_values("id")
    judged = dict(zip(judge["id"], judge["score"].astype(float), strict=True))
    raw: dict[str, dict[str, float]] = {}
    for row in humans.itertuples(index=False):
        raw.setdefault(str(row.annotator_id), {})[str(row.id)] = float(row.score)
    alt = alt_test(judged, raw, epsilon=epsilon).to_dict()
    out: dict[str, Any] = {**alt, "n_items": len(both)}
    if both.empty:
        out.update(
            kappa=None,
            confusion=confusion([], []),
            **calibration([], []),
            **length_slope([], [], confidence=confidence),
        )
        return out
    people = both["label"].to_numpy()
    scores = both["score"].to_numpy(dtype=float)
    kappa = quadratic_weighted_kappa(round_down_half(people), round_down_half(scores))
    right = round_down_half(people) == round_down_half(scores)
    out["kappa"] = None if math.isnan(kappa) else round(kappa, 6)
    out["exact_agreement"] = round(float(right.mean()), 6)
    out["mean_gap"] = round(float(np.mean(scores - people)), 6)
    out["confusion"] = confusion(people, scores)
    out.update(calibration(both["confidence"].to_numpy(), right))
    lengths_of = [lengths.get(i) for i in both["id"]]
    known = [k for k, length in enumerate(lengths_of) if length is not None]
    out.update(
        length_slope(
            (scores - people)[known],
            [lengths_of[k] for k in known],
            confidence=confidence,
        )
    )
    return out


def judge_validity(
    judge: pd.DataFrame,
    humans: pd.DataFrame,
    lengths: Mapping[str, int],
    *,
    epsilon: float,
    confidence: float,
) -> dict[str, dict[str, Any]]:
    """:func:`axis_validity` per axis; ``judge`` and ``humans`` are long frames with ``axis``."""
    return {
        axis: axis_validity(
            judge[judge["axis"] == axis],
            humans[humans["axis"] == axis],
            lengths,
            epsilon=epsilon,
            confidence=confidence,
        )
        for axis in AXES
    }


def model_family(name: str) -> str:
    """The family of a model name: the hub owner when there is one, else the name's leading
    letters (``Qwen/Qwen2.5-7B`` -> ``qwen``; ``meta-llama/Llama-3.1-8B`` -> ``meta-llama``;
    ``gpt-4o-mini`` -> ``gpt``).

    >>> model_family("Qwen/Qwen2.5-7B-Instruct"), model_family("gpt-4o")
    ('qwen', 'gpt')
    """
    text = name.strip().lower()
    if "/" in text:
        return text.split("/", 1)[0]
    letters = ""
    for ch in text:
        if not ch.isalpha():
            break
        letters += ch
    return letters or text


def self_grading(judges: Mapping[str, str], models: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Judge slug -> {model slug: "self" | "same_family"} for the replies a judge rates that its
    own model (same name) or its family (:func:`model_family`) wrote: self-preference risk.

    >>> self_grading({"j": "Qwen/Qwen2.5-7B"}, {"a": "Qwen/Qwen2.5-7B", "b": "Qwen/Qwen2-1.5B",
    ...                                        "c": "gpt-4o"})
    {'j': {'a': 'self', 'b': 'same_family'}}
    """
    flags: dict[str, dict[str, str]] = {}
    for judge, judge_name in sorted(judges.items()):
        for model, model_name in sorted(models.items()):
            if judge_name.strip().lower() == model_name.strip().lower():
                flags.setdefault(judge, {})[model] = "self"
            elif model_family(judge_name) == model_family(model_name):
                flags.setdefault(judge, {})[model] = "same_family"
    return flags
