"""What the field reports of a typo study, as groupings of the pairs table.

A typo-robustness paper reports more than the accuracy change: the four-way transition table
(right -> right, right -> wrong, wrong -> right, wrong -> wrong), how often the answer changed at
all (right or wrong), accuracy by number of edits (a dose-response curve) and a non-inferiority
gate with three outcomes: pass ("typos cost less than 2 points" shown), fail (a loss of more than
2 points shown) and inconclusive (the interval holds both). Every function here takes pairs
(:mod:`evalpipe.scoring.pairs` columns) and returns plain values, so the score stage, the impact
stage and the report print the same figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.scoring.intervals import paired_interval

# What dose_response reads of the pairs table besides the impact tables' columns.
DOSE_PAIR_COLUMNS = ["n_typos", "prediction_original", "prediction_perturbed"]
TRANSITIONS = ("right_right", "right_wrong", "wrong_right", "wrong_wrong")
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
GATE_OUTCOMES = (PASS, FAIL, INCONCLUSIVE)
DOSE_COLUMNS = [
    "model", "scope", "language", "benchmark", "n_typos", "n", "n_examples", "accuracy_original",
    "accuracy_perturbed", "delta", "ci_low", "ci_high", "answer_change",
]  # fmt: skip


def _same_answer(original: pd.Series, perturbed: pd.Series) -> np.ndarray:
    """True where both answers are the same string, or both are missing (unparsed)."""
    o = original.to_numpy(dtype=object, copy=True)
    p = perturbed.to_numpy(dtype=object, copy=True)
    o_missing = original.isna().to_numpy(dtype=bool)
    p_missing = perturbed.isna().to_numpy(dtype=bool)
    o[o_missing] = None
    p[p_missing] = None
    equal = np.equal(o, p, dtype=object).astype(bool)
    return np.where(o_missing | p_missing, o_missing & p_missing, equal)


def transition_counts(pairs: pd.DataFrame) -> dict[str, Any]:
    """The four-way transition table and the answer-change rate of a set of pairs.

    Parameters
    ----------
    pairs : ``correct_original, correct_perturbed`` (bool) and, for ``answer_change``,
        ``prediction_original, prediction_perturbed`` (the parsed answers; null = unparsed).

    Returns
    -------
    dict
        ``right_right, right_wrong, wrong_right, wrong_wrong`` (pair counts), their shares
        ``*_rate`` (None without pairs), ``answer_change`` (share of pairs whose parsed answer
        changed, right or wrong; an answer that became unparsed, or parsed, counts as changed;
        None without the prediction columns or pairs) and ``n``.

    Examples
    --------
    >>> pairs = pd.DataFrame({"correct_original": [True, True, False, False],
    ...                       "correct_perturbed": [True, False, True, False],
    ...                       "prediction_original": ["A", "A", "B", "C"],
    ...                       "prediction_perturbed": ["A", "B", "A", "D"]})
    >>> counts = transition_counts(pairs)
    >>> [counts[k] for k in TRANSITIONS], counts["answer_change"]
    ([1, 1, 1, 1], 0.75)
    """
    o = pairs["correct_original"].to_numpy(dtype=bool)
    p = pairs["correct_perturbed"].to_numpy(dtype=bool)
    n = int(o.size)
    counts = {
        "right_right": int((o & p).sum()),
        "right_wrong": int((o & ~p).sum()),
        "wrong_right": int((~o & p).sum()),
        "wrong_wrong": int((~o & ~p).sum()),
    }
    out: dict[str, Any] = {"n": n, **counts}
    for key in TRANSITIONS:
        out[f"{key}_rate"] = counts[key] / n if n else None
    has_predictions = {"prediction_original", "prediction_perturbed"} <= set(pairs.columns)
    if has_predictions and n:
        same = _same_answer(pairs["prediction_original"], pairs["prediction_perturbed"])
        out["answer_change"] = float((~same).mean())
    else:
        out["answer_change"] = None
    return out


def noninferiority(
    pairs: pd.DataFrame, *, margin: float | None, level: float = 0.95
) -> dict[str, Any]:
    """Non-inferiority gate: is the accuracy change under typos above ``-margin``?

    The one-sided bounds at ``level`` are the ends of the two-sided interval at ``2 * level - 1``
    (the same paired score interval, clustered on the example, as every delta's). The test has
    three outcomes: ``pass`` when the lower bound lies above ``-margin`` (with ``level``
    confidence typos cost less than ``margin``: non-inferiority shown), ``fail`` when the upper
    bound lies below ``-margin`` (typos cost more than ``margin``: non-inferiority refuted) and
    ``inconclusive`` otherwise (the interval holds losses on both sides of the margin, e.g. a
    change of 0.0 on a few examples).

    Parameters
    ----------
    pairs : ``correct_original, correct_perturbed``; ``cluster`` when present.
    margin : the largest acceptable loss (e.g. 0.02 for two points); None: no gate.
    level : one-sided confidence level.

    Returns
    -------
    dict
        ``margin``, ``lower_bound`` and ``upper_bound`` (None without pairs), ``verdict``
        (pass | fail | inconclusive | None).

    Examples
    --------
    >>> pairs = pd.DataFrame({"correct_original": [True] * 400, "correct_perturbed": [True] * 400})
    >>> noninferiority(pairs, margin=0.02)["verdict"]
    'pass'
    >>> noninferiority(pairs.head(8), margin=0.02)["verdict"]
    'inconclusive'
    """
    if margin is None:
        return {"margin": None, "lower_bound": None, "upper_bound": None, "verdict": None}
    o = pairs["correct_original"].to_numpy(dtype=bool)
    p = pairs["correct_perturbed"].to_numpy(dtype=bool)
    clusters = pairs["cluster"].to_numpy() if "cluster" in pairs.columns else None
    low, high, _deff = paired_interval(o, p, clusters=clusters, level=2 * level - 1)
    if low is None or high is None:
        return {"margin": float(margin), "lower_bound": None, "upper_bound": None, "verdict": None}
    return {
        "margin": float(margin),
        "lower_bound": float(low),
        "upper_bound": float(high),
        "verdict": gate_verdict(float(low), float(high), margin=float(margin)),
    }


def gate_verdict(lower_bound: float, upper_bound: float, *, margin: float) -> str:
    """``pass`` (bound above ``-margin``), ``fail`` (upper bound below it) or ``inconclusive``.

    Examples
    --------
    >>> gate_verdict(-0.01, 0.01, margin=0.02), gate_verdict(-0.2, -0.05, margin=0.02)
    ('pass', 'fail')
    >>> gate_verdict(-0.3, 0.3, margin=0.02)
    'inconclusive'
    """
    if lower_bound > -margin:
        return PASS
    if upper_bound < -margin:
        return FAIL
    return INCONCLUSIVE


def dose_response(
    pairs: pd.DataFrame, *, level: float = 0.95, by: Sequence[str] = ("benchmark",)
) -> pd.DataFrame:
    """Accuracy change by number of edited words (``n_typos``), pooled per language and per ``by``.

    Each row compares the pairs with ``n_typos`` edits with their own originals (paired, clustered
    on the example), so the curve is free of differences between the examples that happen to have
    many eligible words and those that do not. With the count design (exactly k edits per example,
    nested draws) the same examples appear at every k.

    Parameters
    ----------
    pairs : pairs of one or more models (``model, language, benchmark, cluster, n_typos,
        correct_original, correct_perturbed``; ``prediction_*`` for ``answer_change``).
    level : confidence level of the intervals.
    by : the finer scopes besides the pooled one (``benchmark``).

    Returns
    -------
    DataFrame
        :data:`DOSE_COLUMNS`; ``scope`` "pooled" (over the language's benchmarks, ``benchmark``
        null) or the column named in ``by``; a first row per group with ``n_typos`` 0 anchors the
        curve at delta 0 (the originals' accuracy).
    """
    rows: list[dict[str, Any]] = []
    data = pairs.loc[pairs["n_typos"].fillna(0).astype("int64") > 0]
    scopes: list[tuple[str, list[str]]] = [("pooled", ["model", "language"])]
    scopes += [(column, ["model", "language", column]) for column in by]
    for scope, keys in scopes:
        for group_key, group in data.groupby(keys, sort=True, dropna=False):
            values = dict(zip(keys, group_key, strict=True))
            base = group.drop_duplicates("cluster")
            anchor_acc = float(base["correct_original"].mean())
            rows.append(
                {**values, "scope": scope, "n_typos": 0, "n": len(base),
                 "n_examples": len(base), "accuracy_original": anchor_acc,
                 "accuracy_perturbed": anchor_acc, "delta": 0.0, "ci_low": None,
                 "ci_high": None, "answer_change": 0.0}
            )  # fmt: skip
            for k, at_k in group.groupby(group["n_typos"].astype("int64"), sort=True):
                o = at_k["correct_original"].to_numpy(dtype=bool)
                p = at_k["correct_perturbed"].to_numpy(dtype=bool)
                low, high, _deff = paired_interval(
                    o, p, clusters=at_k["cluster"].to_numpy(), level=level
                )
                rows.append(
                    {**values, "scope": scope, "n_typos": int(k), "n": len(at_k),
                     "n_examples": int(at_k["cluster"].nunique()),
                     "accuracy_original": float(o.mean()), "accuracy_perturbed": float(p.mean()),
                     "delta": float(p.mean() - o.mean()), "ci_low": low, "ci_high": high,
                     "answer_change": transition_counts(at_k)["answer_change"]}
                )  # fmt: skip
    table = pd.DataFrame(rows, columns=DOSE_COLUMNS)
    if "benchmark" not in by:
        table["benchmark"] = None
    return table.reset_index(drop=True)
