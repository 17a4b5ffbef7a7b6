"""The run-to-run spread section: per model and view, the typo effect beside what answering the
clean prompt again at another seed, with other demonstrations or under another instruction
template does (metrics/<model>/repeats.json); omitted when no model ran with
``sampling.repeats`` or ``prompt.fewshot_draws`` above 1 or ``prompt.templates``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalpipe.arms import FEWSHOT_DRAW, REPEAT, TEMPLATE, TYPO
from evalpipe.report import html as h
from evalpipe.report.data import ReportData
from evalpipe.report.study import ReportInput, ReportPart, Section
from evalpipe.studies.repeats import paths

SOURCE_LABELS = {
    TYPO: "typos (every replicate)",
    REPEAT: "rerun at another seed",
    FEWSHOT_DRAW: "other demonstrations",
}


def spread_rows(repeats: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (model, view, source): ``{model: repeats.json}`` flattened for the table,
    with the intervals printed as ``[low, high]``."""
    rows = []
    for model, figures in sorted(repeats.items()):
        for view, sources in sorted((figures.get("views") or {}).items()):
            labels = dict(SOURCE_LABELS)
            worded = sorted(s for s in sources if s.startswith(f"{TEMPLATE}:"))
            labels.update({s: f"template {s.split(':', 1)[1]}" for s in worded})
            if worded:
                labels["templates"] = "every template (pooled)"
            for source, label in labels.items():
                if isinstance(stats := sources.get(source), Mapping):
                    rows.append(
                        {
                            "model": model,
                            "view": view,
                            "source": label,
                            **stats,
                            "delta_ci": h.fmt_ci(stats.get("ci_low"), stats.get("ci_high")),
                            "change_ci": h.fmt_ci(
                                stats.get("answer_change_low"), stats.get("answer_change_high")
                            ),
                        }
                    )
    return rows


def spread_section(repeats: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The table from ``{model: repeats.json}``, or None without any model's repeats.json."""
    rows = spread_rows(repeats)
    if not rows:
        return None
    columns = [
        h.text("model", "model"),
        h.text("view", "benchmark"),
        h.text("source", "what changed"),
        h.num("n", "pairs", 0),
        h.num("n_examples", "examples", 0),
        h.signed("delta", "accuracy change"),
        h.text("delta_ci", "95% CI"),
        h.num("answer_change", "answers changed"),
        h.text("change_ci", "95% CI "),
    ]
    note = (
        '<p class="note">Is the typo effect larger than what a rerun does? Each row pairs '
        "answers on the same examples: <i>typos</i> the typo'd prompt against the clean one over "
        "every replicate (the headline's pairs), <i>rerun at another seed</i> the clean prompt "
        "sampled again against its first answer (<code>sampling.repeats</code>), <i>other "
        "demonstrations</i> the clean prompt with another hashed few-shot selection "
        "(<code>prompt.fewshot_draws</code>). A rerun changes no accuracy in expectation, so "
        "its share of changed answers is the noise floor the typos' share is read against. "
        "<i>template &lt;name&gt;</i> the clean prompt under that instruction template "
        "(<code>prompt.templates</code>) against the spec's own instruction, and <i>every "
        "template</i> all of them pooled: is the typo effect larger than what rewording does? "
        "Intervals cluster on the example (its replicates are one cluster): the headline's "
        "paired interval for the accuracy change, CR2 t for the share "
        '(docs/scoring.md, "Repeats and few-shot draws").</p>'
    )
    return note + h.table(columns, rows, sortable=True, table_id="repeats-table", scroll=True)


def _sections(data: ReportData) -> list[Section]:
    body = spread_section(data.study_inputs.get("repeats", {}))
    return [("repeats", "Run-to-run and wording spread beside the typo effect", body)]


PART = ReportPart(
    "repeats",
    "figures",
    _sections,
    inputs=(ReportInput("repeats", "json", model_path=paths.metrics),),
)
