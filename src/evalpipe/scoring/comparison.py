"""The table that compares models: one row per (model, benchmark, scoring method)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalpipe.scoring.views import parse_view

COMPARISON_COLUMNS = [
    "label", "model", "benchmark", "method", "n", "accuracy_original", "accuracy_perturbed",
    "delta", "ci_low", "ci_high", "pdr", "mcnemar_p", "unparsed_rate", "truncated_rate",
    "ci_method",
]  # fmt: skip
# Every column after the identity columns is a number, except the interval's method name.
NUMERIC_COLUMNS = COMPARISON_COLUMNS[4:-1]


def model_comparison(details: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """Rows of the model comparison from each model's robustness details.

    Parameters
    ----------
    details : ``{model: {view: stats}}``, the score stages' ``robustness_details.json`` files
        (a view is ``<benchmark>`` or ``<benchmark>.ll`` / ``.ll_norm``).

    Returns
    -------
    DataFrame
        :data:`COMPARISON_COLUMNS`, sorted by benchmark, method, model; ``label`` is
        "benchmark (method): model" for the plot. Absent figures are NaN. ``ci_low, ci_high``
        are the score stage's interval of delta (Tango's score interval, clustered on the
        example; ``ci_method`` names it, :mod:`evalpipe.scoring.intervals`).

    Examples
    --------
    >>> t = model_comparison({"a": {"jnli": {"n": 4, "delta": -0.25}},
    ...                       "b": {"jnli": {"n": 4, "delta": 0.0}}})
    >>> t[["model", "benchmark", "method", "delta"]].values.tolist()
    [['a', 'jnli', 'generate', -0.25], ['b', 'jnli', 'generate', 0.0]]
    """
    rows = []
    for model, views in details.items():
        for view, stats in views.items():
            benchmark, method = parse_view(view)
            row: dict[str, Any] = {"model": model, "benchmark": benchmark, "method": method}
            for column in COMPARISON_COLUMNS[4:]:
                row[column] = stats.get(column)
            rows.append(row)
    if not rows:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    table = pd.DataFrame(rows)
    table["label"] = table["benchmark"] + " (" + table["method"] + "): " + table["model"]
    table = table.sort_values(["benchmark", "method", "model"], kind="stable")
    table[NUMERIC_COLUMNS] = table[NUMERIC_COLUMNS].apply(pd.to_numeric, errors="coerce")
    return table[COMPARISON_COLUMNS].reset_index(drop=True)
