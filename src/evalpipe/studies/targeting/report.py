"""The targeting section (``perturb.targeting: importance``): the attribution-vs-random gaps with
their fidelity, and the restoration-order rates, from each model's
metrics/<model>/targeting.json; no section without one."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from evalpipe.report import html as h
from evalpipe.report.data import ReportData
from evalpipe.report.study import ReportPart, Section

FILE = "targeting.json"


def _ci(low: Any, high: Any) -> str:
    return h.fmt_ci(low, high, signed=True)


def _files(data: ReportData) -> dict[str, dict]:
    """``{model: figures}`` of every metrics/<model>/targeting.json the report read."""
    out = {}
    for path, figures in sorted(data.metrics.items()):
        p = PurePosixPath(str(path).replace("\\", "/"))
        if p.name == FILE and isinstance(figures, dict):
            out[p.parent.name] = figures
    return out


def targeting_section(data: ReportData) -> str | None:
    files = _files(data)
    if not files:
        return None
    gaps, rates = [], []
    for model, figures in files.items():
        for row in figures.get("attribution", []):
            gaps.append({**row, "model": model, "ci": _ci(row["ci_low"], row["ci_high"]),
                         "fidelity_ci": _ci(row["fidelity_low"], row["fidelity_high"])})  # fmt: skip
        for row in figures.get("restoration", []):
            rates.append({**row, "model": model, "ci": _ci(row["ci_low"], row["ci_high"])})
    note = (
        '<p class="note">Words ranked per model by occlusion: the drop in the log-likelihood of '
        "the model's own clean answer when only that word carries its typo. <i>gap</i> = "
        "accuracy with the k most (least) important words edited minus accuracy with k random "
        "words, paired on the example (Tango interval); <i>fidelity</i> = among the examples "
        "where exactly one of the two lost the clean answer's correctness, the share where the "
        "targeted one did (0.5: no better than chance; Wilson). Restoration: among examples "
        "right when clean and wrong with k random typos, the share right again once r typo'd "
        'words are put back in each order (Wilson). docs/perturbation.md, "Targeting".</p>'
    )
    gap_columns = [
        h.text("model", "model"), h.text("view", "view"), h.text("order", "targeted"),
        h.num("k", "k", 0), h.num("n", "examples", 0),
        h.num("accuracy_targeted", "accuracy targeted"), h.num("accuracy_random", "accuracy random"),
        h.num("gap", "gap"), h.text("ci", "95% CI"), h.num("fidelity", "fidelity"),
        h.text("fidelity_ci", "fidelity CI"),
    ]  # fmt: skip
    rate_columns = [
        h.text("model", "model"), h.text("view", "view"), h.text("order", "restored first"),
        h.num("k", "k", 0), h.num("r", "r", 0), h.num("n", "examples", 0),
        h.num("restored", "right again", 0), h.num("rate", "rate"), h.text("ci", "95% CI"),
    ]  # fmt: skip
    return (
        note
        + h.table(gap_columns, gaps, sortable=True, table_id="targeting-table", scroll=True)
        + h.table(rate_columns, rates, sortable=True, table_id="restoration-table", scroll=True)
    )


def _sections(data: ReportData) -> list[Section]:
    return [("targeting", "Which words the model leans on (occlusion)", targeting_section(data))]


PART = ReportPart("targeting", "figures", _sections)
