"""The sycophancy section: the answer first (models ranked per axis with their intervals), then the
paired differences and whether the judges may stand in for people.

Inputs (``ReportData.sycophancy``, read only when the sycophancy stage ran):
``data/sycophancy/estimates.parquet``, ``differences.parquet``, ``arm_changes.parquet`` (when
paired variants exist) and ``judge_validity.json``.
The ranking uses the PPI++ estimate where people rated the random sample, and otherwise the
panel alone, saying so plainly: a judge-only interval is an interval for the judge's opinion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalpipe.report import html as h
from evalpipe.report.data import ReportData

AXIS_ORDER = ("social", "avoidant", "mechanical", "self")
NO_HUMANS = (
    "No person has rated the sampled replies yet, so these figures are the judge panel's alone: "
    "intervals for what the judges say, not for what people would say. Rate the replies with ids "
    "syc/... in data/annotation_tasks/tasks.jsonl (web app or spreadsheet) to calibrate them."
)
ILLUSTRATIVE = (
    "The judge validity figures below are computed against the bundled illustrative sample "
    "batches (data/samples/annotations/), written for the project, not collected from raters: "
    "they show how the report reads, not whether the judge can replace people."
)


def _best(rows: pd.DataFrame) -> pd.Series | None:
    """The PPI row when available, else the judge's."""
    for estimator in ("ppi", "judge"):
        found = rows[(rows["estimator"] == estimator) & rows["available"]]
        if len(found):
            return found.iloc[0]
    return None


def ranking_rows(estimates: pd.DataFrame) -> list[dict[str, Any]]:
    """Per axis, the models ranked by mean rating (most sycophantic first), with the PPI
    interval where people calibrated it, and the prevalence beside it."""
    rows = []
    for axis in AXIS_ORDER:
        sub = estimates[estimates["axis"] == axis]
        entries = []
        for model in sorted(sub["model"].unique()):
            mine = sub[sub["model"] == model]
            mean = _best(mine[mine["statistic"] == "mean"])
            prev = _best(mine[mine["statistic"] == "prevalence"])
            if mean is None:
                continue
            entries.append(
                {
                    "axis": axis,
                    "model": model,
                    "estimator": "PPI++ (people + judges)"
                    if mean["estimator"] == "ppi"
                    else "judges only",
                    "mean": mean["estimate"],
                    "mean_ci": h.fmt_ci(mean["ci_low"], mean["ci_high"], 2),
                    "prevalence": None if prev is None else prev["estimate"],
                    "prevalence_ci": "n/a"
                    if prev is None
                    else h.fmt_ci(prev["ci_low"], prev["ci_high"], 2),
                    "n_judged": mean["n_judged"],
                    "n_human": mean["n_human"],
                    "effective_n": mean["effective_n"],
                }
            )
        entries.sort(key=lambda e: (-float(e["mean"]), e["model"]))
        for rank, e in enumerate(entries, start=1):
            rows.append({**e, "rank": rank})
    return rows


def difference_rows(differences: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for axis in AXIS_ORDER:
        sub = differences[(differences["axis"] == axis) & (differences["statistic"] == "mean")]
        for (a, b), pair in sub.groupby(["model_a", "model_b"], sort=True):
            best = _best(pair)
            if best is None:
                continue
            rows.append(
                {
                    "axis": axis,
                    "pair": f"{a} - {b}",
                    "estimator": "PPI++" if best["estimator"] == "ppi" else "judges only",
                    "difference": best["estimate"],
                    "ci": h.fmt_ci(best["ci_low"], best["ci_high"], 2),
                    "verdict": _verdict(best["ci_low"], best["ci_high"], a, b),
                    "n_dialogues": best["n_judged"],
                }
            )
    return rows


def arm_rows(arm_changes: pd.DataFrame) -> list[dict[str, Any]]:
    """Per axis, model and arm: the change from the neutral dialogue's reply (mean rating)."""
    rows = []
    for axis in AXIS_ORDER:
        sub = arm_changes[(arm_changes["axis"] == axis) & (arm_changes["statistic"] == "mean")]
        for (model, arm), group in sub.groupby(["model", "arm"], sort=True):
            best = _best(group)
            if best is None:
                continue
            rows.append(
                {
                    "axis": axis,
                    "model": model,
                    "arm": arm,
                    "estimator": "PPI++" if best["estimator"] == "ppi" else "judges only",
                    "change": best["estimate"],
                    "ci": h.fmt_ci(best["ci_low"], best["ci_high"], 2),
                    "n_pairs": best["n_judged"],
                }
            )
    return rows


def _verdict(low: float, high: float, a: str, b: str) -> str:
    if low > 0:
        return f"{a} more sycophantic"
    if high < 0:
        return f"{b} more sycophantic"
    return "no clear difference"


def validity_rows(validity: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for judge in sorted(validity):
        v = validity[judge]
        flags = v.get("self_grading") or {}
        flag_text = ", ".join(f"{m} ({kind})" for m, kind in sorted(flags.items())) or "none"
        for axis in AXIS_ORDER:
            a = v.get(axis) or {}
            rows.append(
                {
                    "judge": judge,
                    "axis": axis,
                    "alt_test": a.get("alt_test"),
                    "winning_rate": a.get("winning_rate"),
                    "epsilon": a.get("epsilon"),
                    "kappa": a.get("kappa"),
                    "ece": a.get("ece"),
                    "brier": a.get("brier"),
                    "length_slope": a.get("length_slope"),
                    "length_ci": h.fmt_ci(a.get("length_slope_low"), a.get("length_slope_high"), 2),
                    "n_items": a.get("n_items"),
                    "self_grading": flag_text,
                }
            )
    return rows


def sycophancy_section(data: ReportData) -> str | None:
    """The section, or None when the sycophancy stage has not run."""
    syco = data.sycophancy
    if not syco:
        return None
    estimates: pd.DataFrame = syco["estimates"]
    parts = []
    humans = bool((estimates["estimator"].isin(["ppi", "human"]) & estimates["available"]).any())
    if not humans:
        parts.append(f'<p class="missing">{h.esc(NO_HUMANS)}</p>')
    parts.append("<h3>Models ranked per axis (mean 1-5 rating, most sycophantic first)</h3>")
    parts.append(
        h.table(
            [
                h.text("axis", "axis"),
                h.num("rank", "rank", 0),
                h.text("model", "model"),
                h.num("mean", "mean rating", 2),
                h.text("mean_ci", "95% CI"),
                h.num("prevalence", "share >= threshold", 2),
                h.text("prevalence_ci", "95% CI"),
                h.text("estimator", "from"),
                h.num("n_judged", "judged", 0),
                h.num("n_human", "human-rated", 0),
                h.num("effective_n", "effective n", 0),
            ],
            ranking_rows(estimates),
            table_id="sycophancy-ranking",
        )
    )
    differences = syco.get("differences")
    diff_rows = difference_rows(differences) if differences is not None else []
    if diff_rows:
        parts.append("<h3>Paired differences (same dialogues)</h3>")
        parts.append(
            h.table(
                [
                    h.text("axis", "axis"),
                    h.text("pair", "model a - model b"),
                    h.signed("difference", "mean difference", 2),
                    h.text("ci", "95% CI"),
                    h.text("verdict", "verdict"),
                    h.text("estimator", "from"),
                    h.num("n_dialogues", "dialogues", 0),
                ],
                diff_rows,
                table_id="sycophancy-differences",
            )
        )
    arms = syco.get("arm_changes")
    changes = arm_rows(arms) if arms is not None else []
    if changes:
        parts.append("<h3>Change with the arm (paired variants minus the neutral dialogue)</h3>")
        parts.append(
            h.table(
                [
                    h.text("axis", "axis"),
                    h.text("model", "model"),
                    h.text("arm", "arm"),
                    h.signed("change", "mean change", 2),
                    h.text("ci", "95% CI"),
                    h.text("estimator", "from"),
                    h.num("n_pairs", "pairs", 0),
                ],
                changes,
                table_id="sycophancy-arms",
            )
        )
    validity = syco.get("validity") or {}
    if validity:
        parts.append("<h3>Can the judges stand in for people?</h3>")
        if any(v.get("illustrative") for v in validity.values()):
            parts.append(f'<p class="missing">{h.esc(ILLUSTRATIVE)}</p>')
        parts.append(
            "<p>Alternative annotator test (leave one person out; the judge passes when it "
            "represents the others at least as well as the person left out, within the margin "
            "epsilon, for at least half of the people), quadratic kappa against the people's "
            "median, calibration of the judge's stated confidence (ECE, Brier) and the "
            "judge-minus-people gap per 100 characters of reply (length slope).</p>"
        )
        parts.append(
            h.table(
                [
                    h.text("judge", "judge"),
                    h.text("axis", "axis"),
                    h.text("alt_test", "alt-test"),
                    h.num("winning_rate", "winning rate", 2),
                    h.num("epsilon", "epsilon", 2),
                    h.num("kappa", "kappa", 2),
                    h.num("ece", "ECE", 2),
                    h.num("brier", "Brier", 2),
                    h.signed("length_slope", "length slope", 2),
                    h.text("length_ci", "95% CI"),
                    h.num("n_items", "items", 0),
                    h.text("self_grading", "rates its own model / family"),
                ],
                validity_rows(validity),
                table_id="sycophancy-validity",
            )
        )
    return "".join(parts)
