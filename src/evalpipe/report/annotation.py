"""The annotation agreement section: kappa, alpha and AC2 per axis with their intervals, humans
vs the LLM judge vs the marker rater, per annotator, the rejected items, and the notes on where
the ratings came from."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalpipe.report import html as h
from evalpipe.report.data import ReportData
from evalpipe.report.svg import ForestRow, empty_figure, forest_plot

AXIS_ORDER = ("social", "avoidant", "mechanical", "self")


def _note(value: Any) -> str | None:
    if not value:
        return None
    if isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def data_notes(data: ReportData) -> dict[str, bool]:
    """The agreement stage's flags on where its ratings came from (``agreement.json``
    ``data_notes``): ``sample_batches``, ``illustrative_humans``, ``markers_in_sample``."""
    notes = (data.agreement or {}).get("data_notes")
    return {str(k): bool(v) for k, v in notes.items()} if isinstance(notes, Mapping) else {}


SAMPLE_BATCHES_NOTE = (
    "Sample data: these agreement figures come from the bundled sample batches "
    "(data/samples/annotations/, annotators illustrative_*), which the agreement stage reads while "
    "the campaign folder data/raw/annotations/ holds no batch. They were written for the project "
    "to exercise the pipeline, not collected from annotators: they describe those files, not what "
    "annotators achieve on the guideline. The first real batch replaces them."
)
ILLUSTRATIVE_NOTE = (
    "The human ratings include the bundled illustrative batches (annotators illustrative_*): "
    "written for the project, not collected in an annotation campaign."
)
MARKERS_IN_SAMPLE_NOTE = (
    "The marker rater's kappa is in-sample: its phrase tables were written against the same "
    "bundled dialogues, so it overstates what the markers achieve on new text."
)


def agreement_figure(
    kappa_report: Mapping[str, Any] | None, *, sample_batches: bool = False
) -> str:
    """Forest plot of human-vs-human quadratic kappa per axis with its bootstrap CI; its title
    says so when the ratings are the bundled sample batches."""
    axes = (kappa_report or {}).get("axes") or {}
    if not axes:
        return empty_figure("Annotation agreement: kappa_report.json not available")
    rows = []
    for axis in [a for a in AXIS_ORDER if a in axes] + sorted(set(axes) - set(AXIS_ORDER)):
        entry = axes[axis]
        ci = entry.get("kappa_ci") or [None, None]
        rows.append(
            ForestRow(
                axis,
                entry.get("kappa"),
                ci[0],
                ci[1],
                note=f"n {entry.get('n_items', 'n/a')}",
            )
        )
    return forest_plot(
        rows,
        title="Human-vs-human agreement per axis (quadratic kappa, bootstrap CI)"
        + (": bundled sample batches" if sample_batches else ""),
        x_label="kappa",
    )


def annotation_section(data: ReportData) -> str:
    """Agreement per axis with CIs, human vs judge vs markers, per annotator, rejected items."""
    report = data.kappa_report or {}
    metrics = data.agreement or {}
    if not report and not metrics:
        return h.missing(
            "data/annotations/quality_reports/agreement.json and kappa_report.json are "
            "missing: run `dvc repro agreement`."
        )
    parts = []
    flags = data_notes(data)
    sentences = [
        note
        for flag, note in (
            ("sample_batches", SAMPLE_BATCHES_NOTE),
            ("illustrative_humans", ILLUSTRATIVE_NOTE),
            ("markers_in_sample", MARKERS_IN_SAMPLE_NOTE),
        )
        if flags.get(flag) and (flag != "illustrative_humans" or not flags.get("sample_batches"))
    ]
    if sentences:
        parts.append(
            '<div class="missing" id="agreement-data-notes">'
            + "".join(f"<p>{h.esc(s)}</p>" for s in sentences)
            + "</div>"
        )
    axes = report.get("axes") or {}
    if axes:
        rows = []
        for axis in [a for a in AXIS_ORDER if a in axes] + sorted(set(axes) - set(AXIS_ORDER)):
            e = axes[axis]
            rows.append(
                {
                    "axis": axis,
                    "n": e.get("n_items"),
                    "kappa": e.get("kappa"),
                    "kappa_ci": h.fmt_ci(*(e.get("kappa_ci") or [None, None])),
                    "alpha": e.get("alpha"),
                    "alpha_ci": h.fmt_ci(*(e.get("alpha_ci") or [None, None])),
                    "ac2": e.get("ac2"),
                    "ac2_ci": h.fmt_ci(*(e.get("ac2_ci") or [None, None])),
                    "raw": e.get("raw_agreement"),
                    "raw_ci": h.fmt_ci(*(e.get("raw_agreement_ci") or [None, None])),
                    "within_one": e.get("within_one_agreement"),
                    "within_one_ci": h.fmt_ci(*(e.get("within_one_agreement_ci") or [None, None])),
                    "status": e.get("status"),
                    "note": _note(e.get("kappa_note") or e.get("undefined_reason")),
                }
            )
        boot = report.get("bootstrap") or {}
        parts.append(
            "<h3>Human-vs-human agreement per axis</h3>"
            f'<p class="note">Quadratic-weighted kappa (labels 1-5), Krippendorff alpha '
            f"(ordinal), Gwet AC2; CIs: {h.esc(boot.get('samples', 'n/a'))} bootstrap resamples "
            f"of items, level {h.esc(boot.get('confidence_level', 'n/a'))}. Kappa estimator: "
            f"{h.esc(report.get('kappa_estimator', 'n/a'))}.</p>"
            + h.table(
                [
                    h.text("axis", "axis"),
                    h.num("n", "items", 0),
                    h.num("kappa", "kappa"),
                    h.text("kappa_ci", "CI"),
                    h.num("alpha", "alpha"),
                    h.text("alpha_ci", "CI"),
                    h.num("ac2", "AC2"),
                    h.text("ac2_ci", "CI"),
                    h.num("raw", "exact agreement"),
                    h.text("raw_ci", "CI"),
                    h.num("within_one", "within ±1"),
                    h.text("within_one_ci", "CI"),
                    h.text("status", "status"),
                    h.text("note", "note"),
                ],
                rows,
                table_id="agreement-axes",
            )
            + f"<figure>{agreement_figure(report, sample_batches=flags.get('sample_batches', False))}"
            "</figure>"
        )
    elif metrics:
        parts.append(
            h.missing(
                "kappa_report.json is missing: agreement without CIs from "
                "quality_reports/agreement.json."
            )
        )
    # Human vs LLM judge vs marker rater, each against the human consensus.
    rater_rows = []
    for axis in AXIS_ORDER:
        entry = axes.get(axis) or {}
        m = metrics[axis] if isinstance(metrics.get(axis), Mapping) else {}
        if entry or m:
            rater_rows.append(
                {
                    "rater": "humans (pairwise)",
                    "axis": axis,
                    "kappa": entry.get("kappa", m.get("kappa")),
                    "n": entry.get("n_items", m.get("n")),
                }
            )
        for kind, key in (("judge_vs_consensus", "LLM judge"), ("markers_vs_consensus", "markers")):
            for rater, per_axis in sorted((report.get(kind) or {}).items()):
                stats = (per_axis or {}).get(axis) or {}
                if not stats:
                    continue
                rater_rows.append(
                    {
                        "rater": f"{key} ({rater})",
                        "axis": axis,
                        "kappa": stats.get("kappa"),
                        "raw": stats.get("raw_agreement"),
                        "within_one": stats.get("within_one_agreement"),
                        "n": stats.get("n"),
                    }
                )
            if not report.get(kind) and m:
                metric_key = "judge_kappa" if key == "LLM judge" else "markers_kappa"
                if m.get(metric_key) is not None:
                    rater_rows.append({"rater": key, "axis": axis, "kappa": m.get(metric_key)})
    if rater_rows:
        parts.append(
            "<h3>Humans vs LLM judge vs marker rater</h3>"
            '<p class="note">The judge and the marker rater are scored against the human '
            "consensus; compare their kappa with the human-vs-human kappa of the same axis.</p>"
            + h.table(
                [
                    h.text("rater", "rater"),
                    h.text("axis", "axis"),
                    h.num("kappa", "kappa"),
                    h.num("raw", "exact agreement"),
                    h.num("within_one", "within ±1"),
                    h.num("n", "items", 0),
                ],
                rater_rows,
                sortable=True,
                table_id="raters",
            )
        )
    per_annotator = report.get("annotator_kappas") or {}
    if per_annotator:
        axis_cols = [a for a in AXIS_ORDER if any(a in v for v in per_annotator.values())]
        parts.append(
            "<h3>Per annotator (kappa with the other annotators)</h3>"
            + h.table(
                [h.text("annotator", "annotator")]
                + [h.num(a, a) for a in axis_cols]
                + [h.num("overall", "overall")],
                [{"annotator": k, **v} for k, v in sorted(per_annotator.items())],
                sortable=True,
                table_id="annotators",
            )
        )
    excluded = report.get("excluded_annotators") or []
    if excluded:
        parts.append(f"<p>Excluded from the consensus: {h.esc(', '.join(excluded))}</p>")
    if data.rejected is None:
        parts.append(h.missing("data/annotations/rejected/low_agreement.jsonl is missing."))
    else:
        parts.append(f"<h3>Rejected items ({len(data.rejected)})</h3>")
        if data.rejected:
            parts.append(
                h.table(
                    [
                        h.text("id", "item"),
                        h.text("reasons", "reasons"),
                        h.text("ratings", "ratings"),
                    ],
                    [
                        {
                            "id": r.get("id"),
                            "reasons": "; ".join(str(x) for x in r.get("reasons") or []),
                            "ratings": json.dumps(
                                r.get("ratings"), ensure_ascii=False, sort_keys=True
                            ),
                        }
                        for r in data.rejected
                    ],
                    table_id="rejected",
                )
            )
    return "".join(parts)
