"""Model ladders: which variant of a model family loses most under typos.

A ladder is several ``models`` entries with labels (``family``, ``size``, ``quantisation``; params
``models.<slug>``, recorded in each model's ``generation.json``). For every model, per benchmark
and pooled per language, :func:`ladder_table` gives the accuracy on the clean and the typo'd
prompts of its typo pairs and the paired delta with the score stage's interval (Tango's score
interval, clustered on the example). Within a family it compares each variant with the family's
reference model (:func:`reference_model`: the unquantised one, the largest when several, or the
largest when none is): ``delta_vs_reference`` is the difference of the two paired deltas,
``delta_model - delta_reference``, over the typo'd prompts both models answered (the same
perturbed prompts: one pair per (benchmark, example, word, draw) in each model's table), with the
headline's score interval generalised to the per-prompt difference ``(c_pert - c_orig)_model -
(c_pert - c_orig)_reference`` (values -2..2; :func:`evalpipe.scoring.score_mean.
score_mean_interval`, clustered on the example): it keeps its coverage when the variant's extra
loss comes as rare flips and never has zero width. ``loss_rank`` 1 marks the variant whose delta falls furthest below its reference's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.scoring.intervals import DEFAULT_METHOD, method_label, paired_score
from evalpipe.scoring.names import POOLED
from evalpipe.scoring.score_mean import score_mean_interval

LADDER_COLUMNS = [
    "model", "family", "size", "quantisation", "reference", "scope", "language", "benchmark",
    "n", "n_examples", "accuracy_original", "accuracy_perturbed", "delta", "ci_low", "ci_high",
    "ci_method", "delta_vs_reference", "diff_ci_low", "diff_ci_high", "diff_n", "diff_ci_method",
    "loss_rank",
]  # fmt: skip
DIFF_METHOD = "score_paired_difference"
SCOPE_BENCHMARK = "benchmark"
KEYS = ["benchmark", "example_id", "variant", "word_rank", "draw"]
# What the ladder reads of the pairs table.
LADDER_PAIR_COLUMNS = [
    "model", "benchmark", "language", *KEYS[1:], "correct_original", "correct_perturbed",
]  # fmt: skip
UNQUANTISED = {"", "none", "fp32", "float32", "fp16", "float16", "bf16", "bfloat16"}
_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmbt]?)", re.IGNORECASE)


def size_value(size: Any) -> float:
    """A size label as a number of parameters (``"7B"`` -> 7e9, ``"500M"``, ``1.5``); NaN if
    it does not read as one.

    >>> size_value("7B"), size_value("500m"), size_value(3), math.isnan(size_value("xl"))
    (7000000000.0, 500000000.0, 3.0, True)
    """
    if isinstance(size, int | float) and not isinstance(size, bool):
        return float(size)
    match = _SIZE.match(str(size or ""))
    if not match:
        return math.nan
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


def is_unquantised(quantisation: Any) -> bool:
    """Whether a ``quantisation`` label means full-precision weights (absent, none, fp16, ...).

    >>> is_unquantised(None), is_unquantised("none"), is_unquantised("awq-int4")
    (True, True, False)
    """
    return quantisation is None or str(quantisation).strip().lower() in UNQUANTISED


def reference_model(members: Sequence[str], labels: Mapping[str, Mapping[str, Any]]) -> str:
    """The family's reference: the unquantised model, the largest of several, or the largest
    model when every one is quantised; ties go to the first in ``members`` (params order).

    >>> labels = {"a": {"size": "7B", "quantisation": "awq"}, "b": {"size": "7B"},
    ...           "c": {"size": "3B", "quantisation": "none"}}
    >>> reference_model(["a", "b", "c"], labels), reference_model(["a"], labels)
    ('b', 'a')
    """
    plain = [m for m in members if is_unquantised(labels.get(m, {}).get("quantisation"))]
    pool = plain or list(members)

    def key(m: str) -> float:
        value = size_value(labels.get(m, {}).get("size"))
        return -math.inf if math.isnan(value) else value

    best = max(key(m) for m in pool)
    return next(m for m in pool if key(m) == best)


def _codes(rows: pd.DataFrame) -> np.ndarray:
    examples = rows["benchmark"].astype(str) + "\x00" + rows["example_id"].astype(str)
    return pd.factorize(examples, sort=True)[0]


def _accuracy(rows: pd.DataFrame, *, level: float) -> dict[str, Any]:
    o = rows["correct_original"].to_numpy(bool)
    p = rows["correct_perturbed"].to_numpy(bool)
    codes = _codes(rows)
    score = paired_score(o, p, clusters=codes, level=level)
    return {
        "n": int(o.size),
        "n_examples": int(np.unique(codes).size),
        "accuracy_original": float(o.mean()) if o.size else math.nan,
        "accuracy_perturbed": float(p.mean()) if o.size else math.nan,
        "delta": float(p.mean() - o.mean()) if o.size else math.nan,
        "ci_low": math.nan if score.low is None else score.low,
        "ci_high": math.nan if score.high is None else score.high,
        "ci_method": method_label(DEFAULT_METHOD, score.design_effect),
    }


def _difference(rows: pd.DataFrame, ref: pd.DataFrame, *, level: float) -> dict[str, Any]:
    joined = rows.merge(ref, on=KEYS, suffixes=("", "_ref"), validate="one_to_one")
    diff = (
        joined["correct_perturbed"].astype(float)
        - joined["correct_original"].astype(float)
        - (
            joined["correct_perturbed_ref"].astype(float)
            - joined["correct_original_ref"].astype(float)
        )
    )
    result = score_mean_interval(diff.to_numpy(float), _codes(joined), level=level)
    return {
        "delta_vs_reference": math.nan if result.mean is None else result.mean,
        "diff_ci_low": math.nan if result.low is None else result.low,
        "diff_ci_high": math.nan if result.high is None else result.high,
        "diff_n": int(result.n),
        "diff_ci_method": DIFF_METHOD,
    }


def ladder_table(
    pairs: pd.DataFrame,
    labels: Mapping[str, Mapping[str, Any]],
    *,
    models: Sequence[str],
    level: float,
) -> pd.DataFrame:
    """Accuracy clean vs typo'd per model, and each variant's loss against its family's reference.

    Parameters
    ----------
    pairs : the typo pairs of every model, one view per benchmark (the impact stage's
        ``select_pairs``): :data:`LADDER_PAIR_COLUMNS`.
    labels : ``{model: {family, size, quantisation}}`` (the labels each entry gives).
    models : the models in params order (ties of :func:`reference_model` go to the first).
    level : confidence level.

    Returns
    -------
    DataFrame
        :data:`LADDER_COLUMNS`: per model one row per benchmark (``scope`` "benchmark") and one
        per language (``scope`` "pooled", ``benchmark`` "pooled"); a model without a family, and
        a family's reference, have no ``delta_vs_reference`` (NaN) and no ``loss_rank``.
        Sorted by scope, language, benchmark, family, loss rank, model.

    Examples
    --------
    >>> p = pd.DataFrame({"model": ["a", "a", "b", "b"], "benchmark": "x", "language": "english",
    ...     "example_id": ["1", "2", "1", "2"], "variant": "w", "word_rank": 1, "draw": 0,
    ...     "correct_original": True, "correct_perturbed": [True, True, False, True]})
    >>> t = ladder_table(p, {"a": {"family": "f"}, "b": {"family": "f", "quantisation": "awq"}},
    ...                  models=["a", "b"], level=0.95)
    >>> t.loc[t["scope"] == "benchmark", ["model", "reference", "delta", "delta_vs_reference",
    ...                                   "loss_rank"]].values.tolist()
    [['a', 'a', 0.0, nan, nan], ['b', 'a', -0.5, -0.5, 1.0]]
    """
    families: dict[str, list[str]] = {}
    for model in models:
        family = labels.get(model, {}).get("family")
        if family is not None:
            families.setdefault(str(family), []).append(model)
    reference = {m: reference_model(ms, labels) for ms in families.values() for m in ms}
    rows = []
    groups: list[tuple[str, str, str, pd.Series]] = []
    for (language, benchmark), _ in pairs.groupby(["language", "benchmark"], sort=True):
        mask = (pairs["language"] == language) & (pairs["benchmark"] == benchmark)
        groups.append((SCOPE_BENCHMARK, str(language), str(benchmark), mask))
    for language, _ in pairs.groupby("language", sort=True):
        groups.append((POOLED, str(language), POOLED, pairs["language"] == language))
    for scope, language, benchmark, mask in groups:
        scoped = pairs.loc[mask]
        by_model = {str(m): g for m, g in scoped.groupby("model", sort=False)}
        for model in models:
            if model not in by_model:
                continue
            own = labels.get(model, {})
            row: dict[str, Any] = {
                "model": model,
                "family": own.get("family"),
                "size": None if own.get("size") is None else str(own.get("size")),
                "quantisation": own.get("quantisation"),
                "reference": reference.get(model),
                "scope": scope,
                "language": language,
                "benchmark": benchmark,
                **_accuracy(by_model[model], level=level),
            }
            ref = reference.get(model)
            if ref is not None and ref != model and ref in by_model:
                row.update(_difference(by_model[model], by_model[ref], level=level))
            rows.append(row)
    if not rows:
        return pd.DataFrame(columns=LADDER_COLUMNS)
    table = pd.DataFrame(rows).reindex(columns=LADDER_COLUMNS)
    table["loss_rank"] = table.groupby(["scope", "language", "benchmark", "family"], dropna=True)[
        "delta_vs_reference"
    ].rank(method="min")
    for column in ("n", "n_examples", "diff_n"):
        table[column] = table[column].astype("Int64")
    table["_order"] = table["model"].map({m: i for i, m in enumerate(models)})
    table = table.sort_values(
        ["scope", "language", "benchmark", "family", "loss_rank", "_order"],
        kind="stable",
        na_position="first",
    )
    return table.drop(columns="_order").reset_index(drop=True)


def has_ladder(models: Sequence[str], labels: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether there is a ladder to compare: two models or more, and at least one labelled.

    >>> has_ladder(["a"], {"a": {"family": "f"}}), has_ladder(["a", "b"], {})
    (False, False)
    """
    return len(models) >= 2 and any(labels.get(m) for m in models)
