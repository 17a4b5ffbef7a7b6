"""The accuracy sections: per (model, view) accuracy with Wilson intervals and its figure, the
models side by side, the confusion matrices and how the answers parsed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.answers.parsers.result import STATUSES
from evalpipe.report import html as h
from evalpipe.report.answer import PDR_TITLE, change, ci_label, ci_method, mde_column
from evalpipe.report.data import ORIGINAL, ReportData, benchmark_languages, by_model, default_model
from evalpipe.report.svg import empty_figure, grouped_bars
from evalpipe.scoring.intervals import wilson_interval
from evalpipe.scoring.views import parse_view


def headline_rows(data: ReportData, *, level: float = 0.95) -> list[dict[str, Any]]:
    """One row per (model, benchmark) from the robustness metrics, with Wilson CIs added.

    The accuracy CIs are Wilson intervals on the ``n`` paired examples; the delta CI is the
    score stage's (``ci_method`` names its method when the details file records one).
    """
    languages = benchmark_languages(data)
    rows = []
    for model, benchmarks in by_model(data.robustness, default_model(data)).items():
        for bench in sorted(benchmarks):
            stats = dict(benchmarks[bench])
            language = languages.get(parse_view(bench)[0])
            row = {"model": model, "benchmark": bench, "language": language, **stats}
            n = stats.get("n")
            for key in ("accuracy_original", "accuracy_perturbed"):
                value = stats.get(key)
                if isinstance(n, int | float) and n and not h.is_missing(value):
                    low, high = map(float, wilson_interval(float(value) * n, int(n), level=level))
                    row[f"{key}_ci"] = h.fmt_ci(low, high)
                    row[f"{key}_low"], row[f"{key}_high"] = low, high
            row["delta_ci"] = h.fmt_ci(stats.get("ci_low"), stats.get("ci_high"))
            rows.append(row)
    return rows


def headline_columns(method: str | None = None) -> list[h.Column]:
    """Columns of the accuracy table; ``method`` names the accuracy change's interval."""
    return [
        h.text("model", "model"),
        h.text("benchmark", "benchmark"),
        h.text("language", "language"),
        h.num("n", "pairs", 0, title="paired (example, word) comparisons"),
        h.num("accuracy_original", "acc. original"),
        h.text("accuracy_original_ci", "95% CI (Wilson)"),
        h.num("accuracy_perturbed", "acc. perturbed"),
        h.text("accuracy_perturbed_ci", "95% CI (Wilson)"),
        change("delta"),
        h.text("delta_ci", ci_label(method)),
        mde_column(),
        h.num("pdr", "drop rate (PDR)", title=f"{PDR_TITLE}; n/a when original accuracy is 0"),
        h.num("accuracy_strict", "acc. strict", title="only strictly parsed answers count"),
        h.num("accuracy_flexible", "acc. flexible", title="fallback parses count too"),
        h.num("unparsed_rate", "unparsed rate"),
        h.num("truncated_rate", "truncated rate", title="generation stopped at the token budget"),
        h.Column("mcnemar_p", "McNemar p", h.fmt_p, numeric=True),
    ]


def headline_figure(data: ReportData) -> str:
    """Grouped bars: accuracy on original vs perturbed prompts per benchmark (Wilson CIs)."""
    rows = headline_rows(data)
    if not rows:
        return empty_figure(
            "Accuracy per benchmark: data/scored/<model>/robustness_details.json not available"
        )
    multi = len({r["model"] for r in rows}) > 1
    cats = [f"{r['model']}: {r['benchmark']}" if multi else r["benchmark"] for r in rows]
    series = [
        ("original", "#1f5fbf", [r.get("accuracy_original") for r in rows]),
        ("perturbed", "#f5a524", [r.get("accuracy_perturbed") for r in rows]),
    ]
    intervals = [
        [(r.get("accuracy_original_low"), r.get("accuracy_original_high")) for r in rows],
        [(r.get("accuracy_perturbed_low"), r.get("accuracy_perturbed_high")) for r in rows],
    ]
    return grouped_bars(
        cats,
        series,
        title="Accuracy on the same examples, original vs perturbed (95% Wilson CI)",
        y_label="accuracy",
        intervals=intervals,
        width=max(560, 84 * len(cats) + 80),
    )


def headline_section(data: ReportData) -> str:
    """The per-benchmark headline table and figure."""
    rows = headline_rows(data)
    if not rows:
        return h.missing(
            "data/scored/<model>/robustness_details.json is missing or empty: run `dvc repro score` to fill this table."
        )
    absent = [
        k
        for k in ("accuracy_strict", "accuracy_flexible", "truncated_rate")
        if not any(k in r for r in rows)
    ]
    note = (
        '<p class="note">Pairs are (example, target word) comparisons on the same examples. '
        "Accuracy change = accuracy perturbed - accuracy original (negative = the typos cost "
        "accuracy); drop rate (PDR) = 1 - accuracy perturbed / accuracy original (PromptBench; "
        "positive = accuracy dropped). "
        + (f"Not in this metrics file (shown as n/a): {', '.join(absent)}." if absent else "")
        + "</p>"
    )
    return (
        note
        + h.table(
            headline_columns(ci_method(rows)),
            rows,
            sortable=True,
            table_id="headline-table",
            scroll=True,
        )
        + f"<figure>{headline_figure(data)}</figure>"
    )


def models_section(data: ReportData) -> str:
    """The models side by side: one row per benchmark and scoring method, one column group per
    model; and, with ``scoring.method: both``, how often the two methods pick the same answer."""
    rows = headline_rows(data)
    if not rows:
        return h.missing("No robustness figures: run `dvc repro score` first.")
    models = sorted({str(r["model"]) for r in rows})
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        benchmark, method = parse_view(str(r["benchmark"]))
        entry = by_key.setdefault((benchmark, method), {"benchmark": benchmark, "method": method})
        for key in ("accuracy_original", "accuracy_perturbed", "delta", "pdr", "unparsed_rate"):
            entry[f"{r['model']}|{key}"] = r.get(key)
        entry[f"{r['model']}|delta_ci"] = r.get("delta_ci")
    columns = [h.text("benchmark", "benchmark"), h.text("method", "method")]
    for m in models:
        columns += [
            h.num(f"{m}|accuracy_original", f"{m}: acc. original"),
            h.num(f"{m}|accuracy_perturbed", f"{m}: acc. perturbed"),
            change(f"{m}|delta", f"{m}: accuracy change"),
            h.text(f"{m}|delta_ci", f"{m}: 95% CI"),
            h.num(f"{m}|unparsed_rate", f"{m}: unparsed"),
        ]
    note = (
        f'<p class="note">{len(models)} model(s): {", ".join(h.esc(m) for m in models)}. Methods: '
        "generate = the parsed generated answer; loglikelihood / loglikelihood_norm = the choice "
        "with the highest log-probability (lm-eval's acc / acc_norm). Add models under "
        "<code>models:</code> in params.yaml; <code>plots/models.csv</code> holds this table "
        "(its <code>delta</code> is the accuracy change, its <code>pdr</code> the drop rate).</p>"
    )
    body = note + h.table(
        columns,
        [by_key[k] for k in sorted(by_key)],
        sortable=True,
        table_id="models-table",
        scroll=True,
    )
    agreement = []
    for model, views in by_model(data.robustness, default_model(data)).items():
        for view, stats in sorted(views.items()):
            figures = stats.get("method_agreement") if isinstance(stats, Mapping) else None
            if isinstance(figures, Mapping):
                benchmark = parse_view(view)[0]
                agreement.append({"model": model, "benchmark": benchmark, **figures})
    if agreement:
        body += "<h3>Generated vs log-likelihood answers</h3>" + h.table(
            [
                h.text("model", "model"),
                h.text("benchmark", "benchmark"),
                h.num("n", "rows", 0),
                h.num(
                    "agreement", "same answer", title="an unparsed generation agrees with nothing"
                ),
                h.num("kappa", "Cohen's kappa"),
                h.num("accuracy_generate", "acc. generate"),
                h.num("accuracy_loglikelihood", "acc. loglikelihood"),
                h.num("generate_unparsed", "generate unparsed", 0),
            ],
            agreement,
            sortable=True,
        )
    return body


def confusion_section(data: ReportData) -> str:
    """Confusion matrices (original prompts) from data/scored/<model>/classification_details.json."""
    per_model = by_model(data.classification, default_model(data))
    if not per_model:
        return h.missing(
            "data/scored/<model>/classification_details.json is missing: run `dvc repro score` for confusion matrices."
        )
    parts = []
    for model, benches in per_model.items():
        for bench in sorted(benches):
            stats = benches[bench]
            confusion = stats.get("confusion") or {}
            actual = list(confusion)
            predicted = sorted({p for row in confusion.values() for p in row})
            total = max([1] + [int(v) for row in confusion.values() for v in row.values()])
            head = "".join(f"<th>{h.esc(p)}</th>" for p in predicted)
            body = []
            for a in actual:
                cells = []
                for p in predicted:
                    count = int(confusion[a].get(p, 0))
                    alpha = round(0.75 * count / total, 3)
                    colour = "31,95,191" if a == p else "180,35,24"
                    cells.append(
                        f'<td class="num" style="background: rgba({colour},{alpha})">{count}</td>'
                    )
                body.append(f"<tr><th>{h.esc(a)}</th>{''.join(cells)}</tr>")
            summary = (
                f"n {h.fmt_num(stats.get('n'), 0)} · accuracy {h.fmt_num(stats.get('accuracy'))}"
                f" · macro F1 {h.fmt_num(stats.get('f1_macro'))} · invalid "
                f"{h.fmt_num(stats.get('invalid'), 0)} · unparsed "
                f"{h.fmt_num(stats.get('unparsed'), 0)}"
            )
            parts.append(
                f"<h3>{h.esc(model)} · {h.esc(bench)}</h3><p class='note'>{h.esc(summary)}</p>"
                f'<table class="confusion"><thead><tr><th>actual \\ predicted</th>{head}</tr>'
                f"</thead><tbody>{''.join(body)}</tbody></table>"
            )
    return "".join(parts)


def parse_status_rows(scored: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Counts of strict / fallback / unparsed and truncated outputs per model, benchmark, prompt kind.

    Truncated = the engine stopped at the token budget (``finish_reason == "length"``);
    ``prompt_too_long`` prompts were never sent.
    """
    rows = []
    for bench in sorted(scored):
        frame = scored[bench]
        if "parse_status" not in frame.columns:
            continue
        kind = np.where(frame["variant"].astype(str) == ORIGINAL, "original", "perturbed")
        model = frame["model"].astype(str) if "model" in frame.columns else pd.Series("model")
        finish = (
            frame["finish_reason"].astype(str)
            if "finish_reason" in frame.columns
            else pd.Series([""] * len(frame), index=frame.index)
        )
        keyed = pd.DataFrame(
            {
                "model": model.values,
                "kind": kind,
                "status": frame["parse_status"].astype(str).values,
                "finish": finish.values,
            }
        )
        for (m, k), group in keyed.groupby(["model", "kind"], sort=True):
            n = len(group)
            row: dict[str, Any] = {"model": m, "benchmark": bench, "prompts": k, "n": n}
            for status in STATUSES:
                count = int((group["status"] == status).sum())
                row[status] = count
                row[f"{status}_share"] = count / n if n else None
            row["truncated"] = int((group["finish"] == "length").sum())
            row["prompt_too_long"] = int((group["finish"] == "prompt_too_long").sum())
            rows.append(row)
    return rows


def parse_section(data: ReportData) -> str:
    """The parse-status breakdown table."""
    rows = parse_status_rows(data.scored)
    if not rows:
        return h.missing("data/scored/*.parquet are missing: run `dvc repro score`.")
    columns = [
        h.text("model", "model"),
        h.text("benchmark", "benchmark"),
        h.text("prompts", "prompts"),
        h.num("n", "outputs", 0),
        h.num("strict", "strict", 0),
        h.num("strict_share", "share", 3),
        h.num("fallback", "fallback", 0),
        h.num("fallback_share", "share", 3),
        h.num("unparsed", "unparsed", 0),
        h.num("unparsed_share", "share", 3),
        h.num("truncated", "truncated (length)", 0),
        h.num("prompt_too_long", "prompt too long", 0),
    ]
    return (
        '<p class="note">strict: the answer format was followed; fallback: a looser pattern found '
        "an answer; unparsed: no answer (counted wrong, never dropped).</p>"
        + h.table(columns, rows, sortable=True, table_id="parse-status")
    )
