"""The formats section: how much a choice benchmark's accuracy moves under other option orders,
label sets and "choose the incorrect option", beside the typo effect of the same view."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalpipe.report import html as h
from evalpipe.report.answer import records

TITLE = "Option order, labels and the incorrect option"
SPREAD_TITLE = (
    "1 - (max - min) of the variants' accuracies (the reference prompt and the family's "
    "variants, the same examples); 1 = the format moves nothing"
)
FAMILY_ORDER = {"order": 0, "labels": 1, "incorrect": 2}


def format_rows(table: pd.DataFrame, robustness: Mapping[str, Any] | None) -> list[dict]:
    """One row per (model, view, family): spread, consistency, worst case, the variants'
    accuracy range, and the view's typo effect (accuracy change with its interval)."""
    out = []
    for (model, view, family), part in table.groupby(["model", "benchmark", "family"], sort=True):
        stat = {r.statistic: r for r in part.itertuples(index=False) if r.variant == "all"}
        acc = part.loc[part["statistic"] == "accuracy"]
        typo = ((robustness or {}).get(model) or {}).get(view) or {}
        spread = stat.get("spread")
        out.append(
            {
                "model": model,
                "benchmark": view,
                "family": family,
                "_order": FAMILY_ORDER.get(family, 9),
                "variants": len(acc),
                "n": int(part["n"].max()),
                "accuracy_min": float(acc["estimate"].min()),
                "accuracy_max": float(acc["estimate"].max()),
                "spread": spread.estimate if spread else None,
                "spread_ci": h.fmt_ci(spread.ci_low, spread.ci_high) if spread else "",
                "consistency": stat["consistency"].estimate if "consistency" in stat else None,
                "worst_case": stat["worst_case"].estimate if "worst_case" in stat else None,
                "typo_delta": typo.get("delta"),
                "typo_ci": h.fmt_ci(typo.get("ci_low"), typo.get("ci_high")) if typo else "",
            }
        )
    out.sort(key=lambda r: (r["model"], r["benchmark"], r["_order"]))
    return out


def formats_section(table: pd.DataFrame | None, robustness: Mapping[str, Any] | None) -> str | None:
    """The section, or None without format arms."""
    if table is None or table.empty:
        return None
    rows = records(pd.DataFrame(format_rows(table, robustness)).drop(columns="_order"))
    columns = [
        h.text("model", "model"),
        h.text("benchmark", "view"),
        h.text("family", "family"),
        h.num("variants", "variants", 0),
        h.num("n", "examples", 0),
        h.num("accuracy_min", "acc. min"),
        h.num("accuracy_max", "acc. max"),
        h.num("spread", "1 - (max - min)", title=SPREAD_TITLE),
        h.text("spread_ci", "95% CI"),
        h.num("consistency", "consistency"),
        h.num("worst_case", "worst case"),
        h.signed("typo_delta", "typo effect"),
        h.text("typo_ci", "typo 95% CI"),
    ]
    return (
        '<p class="note">Each family is the plain clean prompt and its variants on the same '
        "examples: <b>order</b> moves the options (cyclic shifts put the gold at every "
        "position), <b>labels</b> shows another label set, <b>incorrect</b> asks for an option "
        "that is not correct. Consistency: every variant chose the same option (incorrect: not "
        "the option the model chose on the plain prompt); worst case: correct under every "
        "variant. Beside it, the typo effect of the view (perturbed - original). A format "
        "spread below 1 by more than the typo effect means the format moves the score more than "
        "the typos do.</p>" + h.table(columns, rows, sortable=True, table_id="formats-rows")
    )
