"""The readouts sections: calibration of the choice probabilities, and the first answer token's
KL from top-k log-probabilities, clean against typo'd (``metrics/<model>/readouts.json``)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from evalpipe.report import html as h
from evalpipe.report.data import ReportData
from evalpipe.report.study import ReportPart, Section

FILE = "readouts.json"


def _interval(low: Any, high: Any) -> str:
    return h.fmt_ci(low, high, signed=True)


def calibration_rows(data: ReportData) -> list[dict[str, Any]]:
    """One row per (model, log-likelihood view) of every ``metrics/<model>/readouts.json``."""
    rows = []
    for path, figures in sorted(data.metrics.items()):
        where = PurePosixPath(str(path))
        if where.name != FILE or not isinstance(figures, dict):
            continue
        for view, f in sorted((figures.get("calibration") or {}).items()):
            rows.append(
                {
                    "model": where.parent.name,
                    "view": view,
                    **f,
                    "ece_ci": _interval(f.get("ece_ci_low"), f.get("ece_ci_high")),
                    "brier_ci": _interval(f.get("brier_ci_low"), f.get("brier_ci_high")),
                    "kl_ci": _interval(f.get("choice_kl_ci_low"), f.get("choice_kl_ci_high")),
                }
            )
    return rows


def calibration_section(data: ReportData) -> str | None:
    """The calibration table; None when no model wrote readouts."""
    rows = calibration_rows(data)
    if not rows:
        return None
    columns = [
        h.text("model", "model"),
        h.text("view", "view"),
        h.num("n", "pairs", 0),
        h.num("n_unscored", "unscored", 0),
        h.num("ece_original", "ECE clean"),
        h.num("ece_perturbed", "ECE typo'd"),
        h.num("ece_delta", "ECE change"),
        h.text("ece_ci", "CI"),
        h.num("brier_original", "Brier clean"),
        h.num("brier_perturbed", "Brier typo'd"),
        h.num("brier_delta", "Brier change"),
        h.text("brier_ci", "CI"),
        h.num("choice_kl", "choice KL (nats)"),
        h.text("kl_ci", "CI"),
        h.num("n_choice_kl_infinite", "KL infinite", 0),
    ]
    note = (
        '<p class="note">Choice probabilities of log-likelihood scoring (softmax over the '
        "options' log-likelihoods; per character for <i>.ll_norm</i>), on the typo pairs' clean "
        "and typo'd prompts. ECE: 10 fixed equal-width confidence bins; Brier: sum over the "
        "options of the squared gap to the gold option's one-hot (0 best, 2 worst). Changes are "
        "typo'd - clean on the same pairs. Choice KL: mean per-pair KL(clean || typo'd) of the "
        "choice probabilities (pairs where the typo'd side gives 0 to an option are counted, not "
        "averaged). Intervals: cluster basic bootstrap over examples (ECE: approximate, it covers "
        "less than its level with several pairs per example), CR2 t on the per-pair difference "
        "(Brier), cluster bootstrap-t (choice KL) "
        '(docs/scoring.md, "Calibration under typos"). Pairs without probabilities on a side '
        "are counted as unscored, not used.</p>"
    )
    return note + h.table(columns, rows, sortable=True, table_id="calibration-table", scroll=True)


def first_token_rows(data: ReportData) -> list[dict[str, Any]]:
    """One row per (model, generated view) of the ``first_token_kl`` blocks."""
    rows = []
    for path, figures in sorted(data.metrics.items()):
        where = PurePosixPath(str(path))
        if where.name != FILE or not isinstance(figures, dict):
            continue
        for view, f in sorted((figures.get("first_token_kl") or {}).items()):
            ci = _interval(f.get("ci_low"), f.get("ci_high"))
            rows.append({"model": where.parent.name, "view": view, **f, "ci": ci})
    return rows


def first_token_section(data: ReportData) -> str | None:
    """The first-token KL table; None when no model asked for top-k log-probabilities."""
    rows = first_token_rows(data)
    if not rows:
        return None
    columns = [
        h.text("model", "model"),
        h.text("view", "view"),
        h.num("n", "pairs", 0),
        h.num("n_unavailable", "unavailable", 0),
        h.num("first_token_kl", "first-token KL (nats)"),
        h.text("ci", "CI"),
    ]
    note = (
        '<p class="note">How far a typo moves the distribution of the first generated answer '
        "token: mean per-pair KL(clean || typo'd) of the backend's top-k log-probabilities "
        "(<code>scoring.top_logprobs</code>), both sides on the union of their top-k tokens, a "
        "token missing from one side's top k given that side's k-th log-probability, each side "
        "renormalised over the union. Pairs whose clean or typo'd answer came back without top-k "
        "log-probabilities are counted as unavailable, not used. Interval: cluster bootstrap-t "
        'over examples (docs/scoring-studies.md, "First-token KL"). Not the choice KL of the '
        "calibration table, which compares the options' log-likelihood probabilities.</p>"
    )
    return note + h.table(columns, rows, sortable=True, table_id="first-token-kl-table")


def _sections(data: ReportData) -> list[Section]:
    return [
        ("calibration", "Calibration under typos", calibration_section(data)),
        ("first-token-kl", "First-token KL under typos", first_token_section(data)),
    ]


PART = ReportPart("readouts", "figures", _sections)
