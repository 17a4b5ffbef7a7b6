"""The report: data in (metrics dicts, DataFrames), one self-contained HTML string out.

Every section degrades on its own: when an input is absent the section says which file is
missing and which stage writes it, and the rest of the report is still built. Every table carries
a ``model`` column so that reports of several models read the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.report import html as h
from evalpipe.report.answer import (
    PDR_TITLE,
    answer_section,
    change,
    ci_label,
    ci_method,
    most_harmful,
)
from evalpipe.report.impact import impact_forest, kinds_section, words_section
from evalpipe.report.svg import ForestRow, empty_figure, forest_plot, grouped_bars
from evalpipe.report.typos import typos_section
from evalpipe.scoring.views import parse_view

ORIGINAL = "original"
STATUSES = ("strict", "fallback", "unparsed")
ROBUSTNESS_KEYS = ("accuracy_original", "accuracy_perturbed", "delta")


@dataclass
class ReportData:
    """Everything the report shows; any part may be None (absent input).

    Attributes
    ----------
    provenance:
        ``models`` (the slugs of params.yaml ``models``), ``model_ids`` (slug -> identity of
        its scored outputs), ``params`` (the relevant params.yaml sections),
        ``inputs`` (``{path: content hash}``), optionally ``commit`` and ``label``.
    robustness, classification:
        ``data/scored/<model>/{robustness,classification}_details.json`` nested by model
        ``{model: {view: {...}}}`` (a view is a benchmark, or ``<benchmark>.ll`` /
        ``.ll_norm`` for log-likelihood scoring), or flat ``{benchmark: {...}}``.
    agreement:
        ``data/annotations/quality_reports/agreement.json``: the full agreement summary (per axis
        ``kappa, alpha, ac2, n, judge_kappa, markers_kappa``, counts, gate, data notes).
    kappa_report:
        ``data/annotations/quality_reports/kappa_report.json``.
    rejected:
        Records of ``data/annotations/rejected/low_agreement.jsonl``.
    words, operations, scripts:
        ``data/impact/{words,operations,scripts}.parquet``.
    scored:
        ``{benchmark: data/scored/<benchmark>.parquet}``.
    perturbed:
        ``{benchmark: data/perturbed/<benchmark>.parquet}`` (``benchmark, example_id,
        word_rank, fields, perturbations``): the edits and field texts of the examples, which
        the scored rows do not carry.
    perturb_summaries:
        ``{benchmark: data/perturbed/<benchmark>.summary.json}``: the typo model, its
        probabilities and the typos made per kind.
    languages:
        ``{benchmark: language}`` (params.yaml ``benchmarks.suites``): the language column of
        the accuracy tables and the first screen's grouping.
    missing:
        ``{input name: message}`` for inputs the stage could not find.
    metrics:
        ``{metrics file path: parsed JSON}`` as committed (for the comparison's diff); the
        tables use ``robustness`` / ``classification``, which the stage fills from the full
        details files under data/scored/ when they exist.
    """

    provenance: dict[str, Any] = field(default_factory=dict)
    robustness: dict[str, Any] | None = None
    classification: dict[str, Any] | None = None
    agreement: dict[str, Any] | None = None
    kappa_report: dict[str, Any] | None = None
    rejected: list[dict[str, Any]] | None = None
    words: pd.DataFrame | None = None
    operations: pd.DataFrame | None = None
    scripts: pd.DataFrame | None = None
    scored: dict[str, pd.DataFrame] = field(default_factory=dict)
    perturbed: dict[str, pd.DataFrame] = field(default_factory=dict)
    perturb_summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    languages: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportOptions:
    """The ``report`` section of params.yaml."""

    top_words: int = 20
    examples_per_benchmark: int = 3
    title: str = "evalpipe report"


# ---------------------------------------------------------------------------------------------
# Helpers


def wilson_interval(successes: float, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (stays inside [0, 1], sane at 0 and n).

    Parameters
    ----------
    successes:
        Number of successes (may be fractional when derived from a rounded rate).
    n:
        Trials (> 0).
    level:
        Confidence level.

    Returns
    -------
    tuple of float
        ``(low, high)``.

    Examples
    --------
    >>> [round(x, 4) for x in wilson_interval(0, 10)]
    [0.0, 0.2775]
    """
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def by_model(metrics: Mapping[str, Any] | None, default_model: str) -> dict[str, dict[str, Any]]:
    """``{model: {benchmark: stats}}`` from a flat ``{benchmark: stats}`` or nested metrics file.

    A flat file (one model per run, today's layout) is attributed to ``default_model``.
    """
    if not metrics:
        return {}
    entries = {k: v for k, v in metrics.items() if isinstance(v, Mapping)}
    # Nested by model: every entry maps benchmarks to stats mappings; a flat file's stats hold
    # numbers.
    nested = bool(entries) and all(
        v and all(isinstance(x, Mapping) for x in v.values()) for v in entries.values()
    )
    if not nested:
        return {default_model: dict(entries)}
    return {m: {b: s for b, s in v.items() if isinstance(s, Mapping)} for m, v in entries.items()}


def default_model(data: ReportData) -> str:
    """The model label to attribute flat metrics to: the scored outputs' ``model``, else params."""
    models = data.provenance.get("models") or []
    if len(models) == 1:
        return str(models[0])
    if models:
        return " + ".join(str(m) for m in models)
    return "model"


def benchmark_languages(data: ReportData) -> dict[str, str]:
    """``{benchmark: language}``: ``data.languages`` (params.yaml ``benchmarks.suites``) first,
    then ``benchmarks.suites`` in the provenance params, then a ``language`` column of the
    perturbed or scored rows (the scored files carry none today)."""
    out: dict[str, str] = {}
    for frames in (data.scored, data.perturbed):
        for name, frame in frames.items():
            if "language" in frame.columns and frame["language"].notna().any():
                out[name] = str(frame["language"].dropna().iloc[0])
    suites = ((data.provenance.get("params") or {}).get("benchmarks") or {}).get("suites")
    if isinstance(suites, Mapping):
        out.update({str(k): str(v) for k, v in suites.items() if isinstance(v, str)})
    out.update(data.languages)
    return out


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, np.ndarray):
        return list(value)
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return []
        return parsed if isinstance(parsed, list) else []
    return []


def _fields(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"text": value}
        if isinstance(parsed, dict):
            return {str(k): str(v) for k, v in parsed.items()}
    return {}


# ---------------------------------------------------------------------------------------------
# Sections


def provenance_section(data: ReportData) -> str:
    """What produced the report: models, prompt style, params, commit, input versions."""
    prov = data.provenance
    params = prov.get("params") or {}
    rows = [
        {
            "what": "models (slug: identity of the scored outputs)",
            "value": ", ".join(
                f"{m}: {ids[m]}" if (ids := prov.get("model_ids") or {}).get(m) else str(m)
                for m in prov.get("models") or []
            )
            or "n/a",
        },
        {"what": "prompt style", "value": (params.get("prompt") or {}).get("style", "n/a")},
        {
            "what": "git commit",
            "value": prov.get("commit")
            or "not recorded (the DVC stage leaves it out so the file depends only on its "
            "inputs; the input hashes below identify the data)",
        },
    ]
    if prov.get("label"):
        rows.insert(0, {"what": "revision", "value": prov["label"]})
    body = h.table([h.text("what", "item"), h.text("value", "value")], rows)
    if params:
        body += "<h3>Parameters</h3>" + h.table(
            [h.text("key", "params.yaml key"), h.text("value", "value")],
            [
                {"key": key, "value": json.dumps(value, ensure_ascii=False, sort_keys=True)}
                for key, value in _flatten_params(params)
            ],
        )
    inputs = prov.get("inputs") or {}
    if inputs:
        body += "<h3>Data versions (content hashes of the inputs)</h3>" + h.table(
            [h.text("path", "input"), h.text("md5", "md5")],
            [{"path": p, "md5": v} for p, v in sorted(inputs.items())],
        )
    if data.missing:
        body += "<h3>Missing inputs</h3>" + "".join(
            h.missing(f"{name}: {msg}") for name, msg in sorted(data.missing.items())
        )
    return body


def _flatten_params(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key in sorted(params):
        value = params[key]
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(_flatten_params(value, dotted + "."))
        else:
            out.append((dotted, value))
    return out


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
                    low, high = wilson_interval(float(value) * n, int(n), level=level)
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


def highlight_edits(text: str, edits: Sequence[Mapping[str, Any]]) -> tuple[str, str, list[str]]:
    """Original and perturbed text as HTML with every edited word marked.

    Parameters
    ----------
    text:
        The field as in the benchmark (offsets refer to it).
    edits:
        Perturbations of this field: ``start, end, original, perturbed, op``.

    Returns
    -------
    tuple
        ``(original_html, perturbed_html, problems)``: ``<del>`` marks the original word,
        ``<ins>`` its typo; an edit whose offsets do not match ``text`` is listed in
        ``problems`` and left unmarked.
    """
    problems = []
    ordered = sorted(edits, key=lambda e: (int(e["start"]), int(e["end"])))
    before, after = [], []
    cursor = 0
    for e in ordered:
        start, end = int(e["start"]), int(e["end"])
        if start < cursor or text[start:end] != e.get("original"):
            problems.append(
                f"edit {e.get('original')!r} at {start}:{end} does not match the text; not marked"
            )
            continue
        plain = h.esc(text[cursor:start])
        title = h.esc(f"{e.get('op', '')}: {e.get('original')} → {e.get('perturbed')}")
        before.append(f'{plain}<del class="edit" title="{title}">{h.esc(e["original"])}</del>')
        after.append(f'{plain}<ins class="edit" title="{title}">{h.esc(e["perturbed"])}</ins>')
        cursor = end
    tail = h.esc(text[cursor:])
    return "".join(before) + tail, "".join(after) + tail, problems


def with_perturbations(scored: pd.DataFrame, perturbed: pd.DataFrame | None) -> pd.DataFrame:
    """``scored`` with ``fields`` and ``perturbations`` taken from the perturbed set where the
    scored rows lack them (joined on benchmark, example_id, word_rank, and draw when the scored
    rows hold several typo draws)."""
    wanted = [c for c in ("fields", "perturbations") if c not in scored.columns]
    keys = ["benchmark", "example_id", "word_rank"]
    if perturbed is None or not wanted or not set(keys) <= set(perturbed.columns):
        return scored
    if "draw" in scored.columns and "draw" in perturbed.columns:
        keys.append("draw")
    extra = perturbed[keys + [c for c in wanted if c in perturbed.columns]]
    return scored.merge(extra.drop_duplicates(keys), on=keys, how="left")


def pick_examples(frame: pd.DataFrame, *, limit: int) -> list[tuple[pd.Series, pd.Series]]:
    """The first wrong perturbed answers, flips (original right, perturbed wrong) first.

    Returns ``(original_row, perturbed_row)`` pairs in a stable order (flip first, then
    example_id, word_rank).
    """
    if not {"variant", "correct", "example_id"} <= set(frame.columns):
        return []
    keys = ["example_id"] + (["model"] if "model" in frame.columns else [])
    originals = frame[frame["variant"].astype(str) == ORIGINAL].drop_duplicates(keys)
    perturbed = frame[(frame["variant"].astype(str) != ORIGINAL) & ~frame["correct"].astype(bool)]
    if not len(perturbed):
        return []
    merged = perturbed.merge(
        originals[[*keys, "correct"]].rename(columns={"correct": "_orig_correct"}),
        on=keys,
        how="inner",
    )
    merged["_flip"] = (~merged["_orig_correct"].astype(bool)).astype(int)
    sort = ["_flip", "example_id"] + [c for c in ("word_rank", "draw") if c in merged.columns]
    merged = merged.sort_values(sort, kind="stable").head(limit)
    index = originals.set_index(keys)
    out = []
    for _, row in merged.iterrows():
        key = tuple(row[k] for k in keys)
        out.append((index.loc[key if len(keys) > 1 else key[0]], row))
    return out


def _output_block(label: str, row: Mapping[str, Any]) -> str:
    status = row.get("parse_status")
    verdict = "correct" if bool(row.get("correct")) else "wrong"
    return (
        f"<div><b>{h.esc(label)}</b> — parsed as "
        f"<code>{h.esc(h.fmt_num(row.get('prediction')) if h.is_missing(row.get('prediction')) else row.get('prediction'))}</code> "
        f"({h.esc(status)}, {verdict}, finish {h.esc(row.get('finish_reason'))})"
        f'<pre class="text">{h.esc(row.get("output"))}</pre></div>'
    )


def _slip(edit: Mapping[str, Any]) -> str:
    """``op``, with the key path of a keyboard / romaji slip or the reading of a conversion."""
    extra = [
        f"{label}{edit[key]}"
        for key, label in (("keys", ""), ("reading", "reading "))
        if not h.is_missing(edit.get(key))
    ]
    return ", ".join([str(edit.get("op")), *extra])


def examples_section(data: ReportData, options: ReportOptions) -> str:
    """Original vs perturbed inputs with the edits highlighted, the outputs and their parses."""
    if not data.scored:
        return h.missing("data/scored/*.parquet are missing: no examples to show.")
    parts = [
        '<p class="note">The first wrong answers on perturbed prompts per benchmark, answers that '
        "flipped from right to wrong first. <del class='edit'>struck</del> = the word in the "
        "benchmark, <ins class='edit'>underlined</ins> = its typo.</p>"
    ]
    for bench in sorted(data.scored):
        frame = with_perturbations(data.scored[bench], data.perturbed.get(bench))
        pairs = pick_examples(frame, limit=options.examples_per_benchmark)
        parts.append(f"<h3>{h.esc(bench)}</h3>")
        if not pairs:
            parts.append('<p class="note">No wrong answer on a perturbed prompt.</p>')
            continue
        for original, perturbed in pairs:
            fields = _fields(original.get("fields"))
            edits = [dict(e) for e in _as_list(perturbed.get("perturbations"))]
            blocks = []
            for name in sorted({str(e.get("field")) for e in edits}):
                before, after, problems = highlight_edits(
                    fields.get(name, ""), [e for e in edits if str(e.get("field")) == name]
                )
                blocks.append(
                    f"<div><b>{h.esc(name)}</b>"
                    f'<div class="pair"><pre class="text">{before}</pre>'
                    f'<pre class="text">{after}</pre></div>'
                    + "".join(h.missing(p) for p in problems)
                    + "</div>"
                )
            ops = ", ".join(f"{e.get('original')}→{e.get('perturbed')} ({_slip(e)})" for e in edits)
            prompt = perturbed.get("prompt")
            parts.append(
                '<div class="example">'
                f"<div><b>{h.esc(perturbed.get('model', ''))}</b> · example "
                f"<code>{h.esc(perturbed.get('example_id'))}</code> · target word "
                f"<b>{h.esc(perturbed.get('variant'))}</b> · gold "
                f"<code>{h.esc(perturbed.get('gold', perturbed.get('answer')))}</code> · edits: "
                f"{h.esc(ops)}</div>"
                '<div class="pair"><b>original</b><b>perturbed</b></div>'
                + "".join(blocks)
                + '<div class="pair">'
                + _output_block("original output", original)
                + _output_block("perturbed output", perturbed)
                + "</div>"
                + (
                    f'<details><summary>full perturbed prompt</summary><pre class="text">'
                    f"{h.esc(prompt)}</pre></details>"
                    if isinstance(prompt, str)
                    else ""
                )
                + "</div>"
            )
    return "".join(parts)


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
        m = metrics.get(axis) if isinstance(metrics.get(axis), Mapping) else {}
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


# ---------------------------------------------------------------------------------------------
# The whole report and its figures


def build_report(data: ReportData, options: ReportOptions | None = None) -> str:
    """The self-contained HTML report.

    Parameters
    ----------
    data:
        Inputs; absent parts produce a "missing" note in their section.
    options:
        Top-N words, examples per benchmark, title.

    Returns
    -------
    str
        A complete HTML document (UTF-8 text, no external references).
    """
    options = options or ReportOptions()
    models = data.provenance.get("models") or []
    subtitle = (
        f"models: {', '.join(models) or 'n/a'} · prompt style: "
        f"{(data.provenance.get('params') or {}).get('prompt', {}).get('style', 'n/a')}"
    )
    headline = headline_rows(data)
    answer = answer_section(
        words=data.words, headline=headline, parse=parse_status_rows(data.scored)
    )
    languages = sorted({r["language"] for r in headline if r.get("language")})
    # The answer first, the figures behind it next, provenance last (DESIGN.md section 4).
    sections = [
        ("answer", "The answer: which typos cost most accuracy", answer),
        ("headline", "Accuracy per benchmark", headline_section(data)),
        ("models", "Models compared", models_section(data)),
        (
            "words",
            "Which words hurt most: every row",
            words_section(data.words, languages=languages, top=options.top_words),
        ),
        (
            "kinds",
            "Typo kinds: operation type and script class",
            kinds_section(data.operations, data.scripts),
        ),
        (
            "typos",
            "The typos: model, counts and examples",
            typos_section(summaries=data.perturb_summaries, perturbed=data.perturbed),
        ),
        ("classification", "Confusion matrices", confusion_section(data)),
        ("parsing", "How the answers parsed", parse_section(data)),
        ("examples", "Examples", examples_section(data, options)),
        ("annotation", "Annotation agreement", annotation_section(data)),
        ("provenance", "What produced this report", provenance_section(data)),
    ]
    return h.page(options.title, subtitle, sections)


def build_figures(
    data: ReportData, options: ReportOptions | None = None, *, languages: Sequence[str]
) -> dict[str, str]:
    """The report's main figures as standalone SVG files (DVC image plots).

    Parameters
    ----------
    data, options:
        As for :func:`build_report`.
    languages:
        One ``words_<language>.svg`` per language, always written (a placeholder when there
        is no data) because dvc.yaml declares them.

    Returns
    -------
    dict
        ``{file name: SVG text}``.
    """
    options = options or ReportOptions()
    figures = {
        "accuracy.svg": headline_figure(data),
        "agreement.svg": agreement_figure(
            data.kappa_report, sample_batches=data_notes(data).get("sample_batches", False)
        ),
    }
    for lang in languages:
        svg = None
        if data.words is not None and "language" in data.words.columns:
            rows = data.words[data.words["language"].astype(str) == lang]
            if "scope" in rows.columns:
                rows = rows[rows["scope"] == "pooled"]
            if len(rows):
                parts = []
                for (model, source), group in rows.groupby(["model", "source"], sort=True):
                    top = most_harmful(group, top=options.top_words)
                    parts.append(
                        impact_forest(
                            top,
                            title=f"{lang} ({source}), {model}: most harmful words, pooled",
                        )
                    )
                svg = _stack(parts)
        figures[f"words_{lang}.svg"] = svg or empty_figure(
            f"{lang}: no per-word impact rows (data/impact/words.parquet)"
        )
    return figures


def _stack(svgs: Sequence[str]) -> str:
    """Several SVGs one below the other in one SVG document."""
    if len(svgs) == 1:
        return svgs[0]
    y = 0
    width = 0
    inner = []
    for svg in svgs:
        head = svg[: svg.index(">")]
        w = int(head.split('width="')[1].split('"')[0])
        hgt = int(head.split('height="')[1].split('"')[0])
        inner.append(svg.replace("<svg ", f'<svg y="{y}" ', 1))
        y += hgt + 10
        width = max(width, w)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        f'viewBox="0 0 {width} {y}">' + "".join(inner) + "</svg>"
    )
