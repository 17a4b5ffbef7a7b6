"""The annotation quality gate: one pass/fail verdict over six checks, listing every failure.

1. ``format``: input records have the required fields (and parse, and are not duplicates);
2. ``range``: every score is an integer 1-5 and every confidence a number 0-1;
3. ``kappa``: the weighted kappa of each axis is at least ``min_kappa`` (an undefined kappa
   fails: the gate cannot confirm agreement it cannot measure);
4. ``completeness``: every task has at least ``overlap`` human ratings;
5. ``consistency``: at most ``max_consistency_rate`` of the human annotations break a
   consistency rule (:data:`evalpipe.annotation.quality.RULES`);
6. ``outliers``: no annotator is flagged for bias, low agreement or straight-lining.

The gate is a pure function of what the quality run already computed, so the agreement stage
records (under ``gate`` in ``data/annotations/quality_reports/agreement.json``) the same verdict
that ``evalpipe quality check`` prints and exits on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from evalpipe.annotation.schema import AXES, Annotation, DialoguePair

CHECKS = ("format", "range", "kappa", "completeness", "consistency", "outliers")
_LISTED_IDS = 20


def _is_range_problem(message: str) -> bool:
    """A validation message about a value (score/confidence), not about the record's shape."""
    about_value = 'field "annotations.' in message or 'field "confidence.' in message
    return about_value and "unknown axis" not in message


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def quality_gate(
    *,
    validation_problems: Sequence[str],
    humans: Sequence[Annotation],
    tasks: Sequence[DialoguePair],
    kappa_report: dict[str, Any],
    outlier_report: dict[str, Any],
    min_kappa: float,
    overlap: int,
    max_consistency_rate: float,
) -> dict[str, Any]:
    """Run the six gate checks.

    Parameters
    ----------
    validation_problems:
        Messages from reading the batches (``file:line: field ...``); empty when all were valid.
    humans:
        The valid human annotations (no judge, markers or adjudications).
    tasks:
        The task set every item of which needs ratings.
    kappa_report, outlier_report:
        As built by :func:`evalpipe.annotation.quality_run.run_quality` from ``humans``.
    min_kappa:
        Per-axis threshold of the weighted kappa (0.60 by default).
    overlap:
        Human ratings each task needs.
    max_consistency_rate:
        Largest acceptable share of human annotations with a consistency flag.

    Returns
    -------
    dict
        ``status`` (``"pass"``/``"fail"``), ``n_failures``, ``checks`` (per check ``{passed,
        n_failures}``, in check order) and ``failures`` (``{check, message}`` each, in check order).
    """
    failures: list[dict[str, Any]] = []

    def fail(check: str, message: str, **details: Any) -> None:
        failures.append({"check": check, "message": message, **details})

    for message in validation_problems:
        fail("range" if _is_range_problem(message) else "format", message)

    for axis in AXES:
        entry = kappa_report["axes"].get(axis)
        if entry is None:
            continue
        kappa = entry["kappa"]
        lo, hi = entry.get("kappa_ci") or [None, None]
        ci = f" (95% CI {_fmt(lo)} to {_fmt(hi)})" if lo is not None else ""
        if kappa is None:
            reason = entry.get("kappa_note") or "not defined"
            fail("kappa", f"{axis}: weighted kappa n/a ({reason}); need >= {min_kappa:.2f}")
        elif kappa < min_kappa:
            fail(
                "kappa",
                f"{axis}: weighted kappa {kappa:.3f}{ci} below min_kappa {min_kappa:.2f}",
                axis=axis,
                kappa=kappa,
                kappa_ci=[lo, hi],
            )

    counts = Counter(a.id for a in humans)
    short = sorted(t.id for t in tasks if counts.get(t.id, 0) < overlap)
    if short:
        listed = ", ".join(short[:_LISTED_IDS]) + (" ..." if len(short) > _LISTED_IDS else "")
        fail(
            "completeness",
            f"{len(short)} of {len(tasks)} tasks have fewer than {overlap} human ratings: {listed}",
            ids=short,
        )

    human_ids = {a.annotator_id for a in humans}
    flagged = [f for f in outlier_report.get("consistency", []) if f["annotator_id"] in human_ids]
    if humans:
        rate = len(flagged) / len(humans)
        if rate > max_consistency_rate:
            by_rule = Counter(rule for f in flagged for rule in f["rules"])
            rules = ", ".join(f"{r} {n}" for r, n in sorted(by_rule.items()))
            fail(
                "consistency",
                f"{len(flagged)} of {len(humans)} human annotations ({rate:.1%}) break a "
                f"consistency rule ({rules}); max_consistency_rate is {max_consistency_rate:.0%}",
                rate=round(rate, 4),
            )

    for f in outlier_report.get("rater_flags", []):
        # A straight-liner's kappa is undefined, so the low-agreement check cannot catch them.
        if f["kind"] == "straight_liner":
            fail(
                "outliers",
                f"{f['annotator_id']}: straight-liner on {f['axis']} (every one of {f['n']} "
                f"ratings is {f['value']:g})",
                annotator_id=f["annotator_id"],
            )
    for f in outlier_report.get("annotators", []):
        if f["kind"] == "bias":
            what = f"bias on {f['axis']} ({f['value']:+.3f} points, n={f['n']})"
        else:
            what = f"low agreement (kappa {f['value']:.3f} < {min_kappa:.2f}, n={f['n']})"
        fail("outliers", f"{f['annotator_id']}: {what}", annotator_id=f["annotator_id"])

    order = {c: i for i, c in enumerate(CHECKS)}
    failures.sort(key=lambda f: order[f["check"]])  # stable: keeps file/axis order within
    per_check = Counter(f["check"] for f in failures)
    return {
        "status": "fail" if failures else "pass",
        "n_failures": len(failures),
        "checks": {c: {"passed": per_check[c] == 0, "n_failures": per_check[c]} for c in CHECKS},
        "failures": failures,
    }
