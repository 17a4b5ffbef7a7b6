"""Two revisions side by side: headline accuracy, per-word changes, agreement, and the metrics
diff (what `dvc metrics diff` says) as readable tables."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalpipe.report import html as h
from evalpipe.report.accuracy import headline_rows
from evalpipe.report.annotation import AXIS_ORDER, data_notes
from evalpipe.report.data import ReportData, ReportOptions
from evalpipe.report.provenance import provenance_section
from evalpipe.report.typos import MODEL_SETTINGS, summary_columns, summary_rows

MetricsDiff = dict[str, dict[str, dict[str, Any]]]


def flatten_metrics(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Numeric leaves of a metrics JSON as dotted keys (``jnli.delta``), like `dvc metrics show`.

    Parameters
    ----------
    obj:
        A parsed metrics file.
    prefix:
        Key prefix (used by the recursion).

    Returns
    -------
    dict
        ``{dotted key: number or None}``; strings and lists are left out, as DVC does.

    Examples
    --------
    >>> flatten_metrics({"a": {"b": 1, "c": "x"}, "d": None})
    {'a.b': 1, 'd': None}
    """
    out: dict[str, Any] = {}
    if isinstance(obj, Mapping):
        for key in sorted(obj):
            out.update(flatten_metrics(obj[key], f"{prefix}{key}."))
    elif obj is None or (isinstance(obj, numbers.Number) and not isinstance(obj, bool)):
        out[prefix[:-1]] = obj
    return out


def diff_metrics(old: Mapping[str, Any | None], new: Mapping[str, Any | None]) -> MetricsDiff:
    """The same shape as ``dvc metrics diff --json``: ``{file: {key: {old, new, diff}}}``.

    Only changed keys are listed (``dvc metrics diff`` without ``--all``); a key present on one
    side only has ``None`` on the other.

    Parameters
    ----------
    old, new:
        ``{metrics file path: parsed JSON or None (absent)}``.

    Returns
    -------
    dict
        Changed metrics per file.
    """
    out: MetricsDiff = {}
    for path in sorted(set(old) | set(new)):
        a = flatten_metrics(old.get(path) or {})
        b = flatten_metrics(new.get(path) or {})
        changed = {}
        for key in sorted(set(a) | set(b)):
            va, vb = a.get(key), b.get(key)
            if va == vb:
                continue
            delta = vb - va if isinstance(va, int | float) and isinstance(vb, int | float) else None
            changed[key] = {"old": va, "new": vb, "diff": delta}
        if changed:
            out[path] = changed
    return out


def metrics_diff_rows(diff: MetricsDiff) -> list[dict[str, Any]]:
    """Rows ``file, benchmark_or_axis, metric, old, new, diff`` from a metrics diff."""
    rows = []
    for path in sorted(diff):
        for key in sorted(diff[path]):
            entry = diff[path][key] or {}
            head, _, tail = key.rpartition(".")
            rows.append(
                {
                    "file": path,
                    "entry": head or "",
                    "metric": tail,
                    "old": entry.get("old"),
                    "new": entry.get("new"),
                    "diff": entry.get("diff"),
                }
            )
    return rows


def headline_comparison(a: ReportData, b: ReportData) -> list[dict[str, Any]]:
    """Per (model, benchmark): accuracy original / perturbed, delta, PDR, unparsed on both sides."""
    ra = {(r["model"], r["benchmark"]): r for r in headline_rows(a)}
    rb = {(r["model"], r["benchmark"]): r for r in headline_rows(b)}
    rows = []
    for key in sorted(set(ra) | set(rb)):
        x, y = ra.get(key, {}), rb.get(key, {})
        row: dict[str, Any] = {"model": key[0], "benchmark": key[1]}
        for metric in ("accuracy_original", "accuracy_perturbed", "delta", "pdr", "unparsed_rate"):
            va, vb = x.get(metric), y.get(metric)
            row[f"{metric}_a"], row[f"{metric}_b"] = va, vb
            row[f"{metric}_change"] = (
                None if h.is_missing(va) or h.is_missing(vb) else float(vb) - float(va)
            )
        rows.append(row)
    return rows


WORD_KEYS = ["model", "language", "source", "scope", "word"]


def word_changes(a: pd.DataFrame | None, b: pd.DataFrame | None) -> pd.DataFrame:
    """Per-word deltas of both revisions joined on model, language, source, scope and word.

    Sorted by the size of the change (largest first; words on one side only last).

    Returns
    -------
    DataFrame
        ``model, language, source, scope, word, rank, n_a, n_b, delta_a, delta_b, change,
        ci_a, ci_b``.
    """
    cols = [*WORD_KEYS, "rank", "n", "delta", "ci_low", "ci_high"]
    empty = pd.DataFrame(columns=cols)
    left = (a if a is not None else empty)[cols]
    right = (b if b is not None else empty)[cols]
    merged = left.merge(right, on=WORD_KEYS, how="outer", suffixes=("_a", "_b"))
    merged["rank"] = merged["rank_a"].combine_first(merged["rank_b"])
    merged["change"] = merged["delta_b"].astype(float) - merged["delta_a"].astype(float)
    merged["ci_a"] = [
        h.fmt_ci(lo, hi) for lo, hi in zip(merged["ci_low_a"], merged["ci_high_a"], strict=True)
    ]
    merged["ci_b"] = [
        h.fmt_ci(lo, hi) for lo, hi in zip(merged["ci_low_b"], merged["ci_high_b"], strict=True)
    ]
    merged["_size"] = merged["change"].abs().fillna(-1.0)
    merged = merged.sort_values(
        ["_size", *WORD_KEYS], ascending=[False] + [True] * 5, kind="stable"
    )
    return merged[
        [*WORD_KEYS, "rank", "n_a", "n_b", "delta_a", "delta_b", "change", "ci_a", "ci_b"]
    ].reset_index(drop=True)


def typo_settings(data: ReportData) -> dict[str, Any]:
    """The ``perturb`` section of a revision's params.yaml (empty when it has none)."""
    section = (data.provenance.get("params") or {}).get("perturb")
    return dict(section) if isinstance(section, Mapping) else {}


def typo_model_rows(a: ReportData, b: ReportData) -> list[dict[str, Any]]:
    """Per ``perturb`` setting: its value on both sides and whether it changed.

    The typo model and its probabilities come first, then any other setting (e.g. ``draws``);
    a setting a revision's params.yaml leaves out shows as ``not set`` (that revision's default).

    Returns
    -------
    list of dict
        ``setting, a, b, changed`` (``changed`` is ``"changed"`` or ``""``).
    """
    sa, sb = typo_settings(a), typo_settings(b)
    keys = [k for k in MODEL_SETTINGS if k in sa or k in sb]
    keys += sorted((set(sa) | set(sb)) - set(MODEL_SETTINGS))
    rows = []
    for key in keys:
        va, vb = sa.get(key, "not set"), sb.get(key, "not set")
        rows.append(
            {
                "setting": f"perturb.{key}",
                "a": h.fmt_num(va, 3) if isinstance(va, float) else str(va),
                "b": h.fmt_num(vb, 3) if isinstance(vb, float) else str(vb),
                "changed": "changed" if va != vb else "",
            }
        )
    return rows


def typo_count_rows(
    a: ReportData, b: ReportData, *, label_a: str, label_b: str
) -> list[dict[str, Any]]:
    """The perturb summaries of both sides, per benchmark one row per revision (``a`` first)."""
    rows = []
    side_a = {r["benchmark"]: r for r in summary_rows(a.perturb_summaries)}
    side_b = {r["benchmark"]: r for r in summary_rows(b.perturb_summaries)}
    for bench in sorted(set(side_a) | set(side_b)):
        for label, side in ((label_a, side_a), (label_b, side_b)):
            rows.append({"benchmark": bench, "revision": label, **side.get(bench, {})})
    return rows


def _model_label(data: ReportData) -> str:
    """The typo model of a revision: params.yaml, else its summaries, else ``n/a``."""
    model = typo_settings(data).get("model")
    if model is None:
        found = sorted(
            {str(r["model"]) for r in summary_rows(data.perturb_summaries) if r["model"]}
        )
        return ", ".join(found) or "n/a"
    return str(model)


KIND_KEYS = ("model", "language", "source", "scope", "op")


def kind_changes(a: pd.DataFrame | None, b: pd.DataFrame | None) -> pd.DataFrame:
    """Accuracy change per typo kind (``data/impact/operations.parquet``) of both revisions, joined
    on model, language, source, scope and op (those both tables have), in key order.

    Returns
    -------
    DataFrame
        The keys, ``n_a, n_b, delta_a, delta_b, change`` (b minus a).
    """
    frames = [f for f in (a, b) if f is not None]
    keys = [k for k in KIND_KEYS if frames and all(k in f.columns for f in frames)]
    cols = [*keys, "n", "delta"]
    empty = pd.DataFrame(columns=cols)

    def side(frame: pd.DataFrame | None) -> pd.DataFrame:
        if frame is None:
            return empty
        return frame[[c for c in cols if c in frame.columns]].reindex(columns=cols)

    merged = side(a).merge(side(b), on=keys, how="outer", suffixes=("_a", "_b"))
    merged["change"] = merged["delta_b"].astype(float) - merged["delta_a"].astype(float)
    merged = merged.sort_values(keys, kind="stable") if keys else merged
    return merged[[*keys, "n_a", "n_b", "delta_a", "delta_b", "change"]].reset_index(drop=True)


def typos_comparison(a: ReportData, b: ReportData, *, label_a: str, label_b: str) -> str:
    """The typo model of both revisions side by side: settings, typos made per kind per benchmark
    (perturb summaries) and the accuracy change per kind (operations impact table)."""
    parts = []
    settings = typo_model_rows(a, b)
    if settings:
        parts.append(
            h.table(
                [
                    h.text("setting", "setting"),
                    h.text("a", label_a),
                    h.text("b", label_b),
                    h.text("changed", "changed"),
                ],
                settings,
                table_id="compare-typo-model",
            )
        )
    else:
        parts.append(h.missing("Neither revision's params.yaml has a perturb section."))
    counts = typo_count_rows(a, b, label_a=label_a, label_b=label_b)
    if counts:
        parts.append(
            '<p class="note">Typos made per kind (data/scored/&lt;model&gt;/perturbation.json), '
            "one row per revision: what each side's data was made with.</p>"
            + h.table(
                [h.text("revision", "revision"), *summary_columns()],
                counts,
                sortable=True,
                table_id="compare-typo-counts",
                scroll=True,
            )
        )
    else:
        parts.append(
            h.missing(
                f"data/scored/<model>/perturbation.json is missing in both {label_a} and {label_b}."
            )
        )
    if a.operations is not None or b.operations is not None:
        kinds = kind_changes(a.operations, b.operations)
        keys = [k for k in KIND_KEYS if k in kinds.columns]
        parts.append(
            '<p class="note">Accuracy change per typo kind (data/impact/operations.parquet, '
            f"marginal rows); change = {h.esc(label_b)} - {h.esc(label_a)}.</p>"
            + h.table(
                [h.text(k, k) for k in keys]
                + [
                    h.num("n_a", f"n {label_a}", 0),
                    h.num("n_b", f"n {label_b}", 0),
                    h.signed("delta_a", f"accuracy change {label_a}"),
                    h.signed("delta_b", f"accuracy change {label_b}"),
                    h.signed("change", "change"),
                ],
                [
                    {k: (None if h.is_missing(v) else v) for k, v in r.items()}
                    for r in kinds.to_dict(orient="records")
                ],
                sortable=True,
                table_id="compare-typo-kinds",
                scroll=True,
            )
        )
    return "".join(parts)


def _axis_kappa(data: ReportData, axis: str) -> Any:
    """Headline kappa of one axis: the kappa report, else the full agreement summary (both DVC
    data), else the axis's headline metrics file, which is in Git and so there for any commit."""
    for source in (
        ((data.kappa_report or {}).get("axes") or {}).get(axis),
        (data.agreement or {}).get(axis),
        data.metrics.get(f"metrics/agreement/{axis}.json"),
    ):
        if isinstance(source, Mapping) and "kappa" in source:
            return source["kappa"]
    return None


def _agreement_rows(a: ReportData, b: ReportData) -> list[dict[str, Any]]:
    rows = []
    for axis in AXIS_ORDER:
        ka, kb = _axis_kappa(a, axis), _axis_kappa(b, axis)
        if ka is None and kb is None:
            continue
        rows.append(
            {
                "axis": axis,
                "kappa_a": ka,
                "kappa_b": kb,
                "change": None if ka is None or kb is None else kb - ka,
            }
        )
    return rows


def build_comparison(
    a: ReportData,
    b: ReportData,
    *,
    label_a: str,
    label_b: str,
    metrics_diff: MetricsDiff,
    diff_source: str,
    options: ReportOptions | None = None,
) -> str:
    """The comparison report of revision ``a`` (before) and ``b`` (after).

    Parameters
    ----------
    a, b:
        The two revisions' report inputs.
    label_a, label_b:
        How to call them (e.g. ``main``, ``workspace``).
    metrics_diff:
        ``dvc metrics diff --json`` output, or :func:`diff_metrics` of the two sides.
    diff_source:
        Where ``metrics_diff`` came from (shown to the reader).
    options:
        Title and top-N.

    Returns
    -------
    str
        A complete, self-contained HTML document.
    """
    options = options or ReportOptions()
    la, lb = h.esc(label_a), h.esc(label_b)

    def pair(metric: str, label: str, signed: bool = False) -> list[h.Column]:
        make = h.signed if signed else h.num
        return [
            make(f"{metric}_a", f"{label} {label_a}"),
            make(f"{metric}_b", f"{label} {label_b}"),
            h.signed(f"{metric}_change", "change"),
        ]

    head_rows = headline_comparison(a, b)
    headline = (
        h.table(
            [
                h.text("model", "model"),
                h.text("benchmark", "benchmark"),
                *pair("accuracy_original", "acc. original"),
                *pair("accuracy_perturbed", "acc. perturbed"),
                *pair("delta", "accuracy change", signed=True),
                *pair("pdr", "drop rate (PDR)"),
                *pair("unparsed_rate", "unparsed"),
            ],
            head_rows,
            sortable=True,
            table_id="compare-headline",
            scroll=True,
        )
        if head_rows
        else h.missing(
            "Neither revision has robustness figures (data/scored/<model>/robustness_details.json)."
        )
    )

    if a.words is None and b.words is None:
        words = h.missing(f"data/impact/words.parquet is missing in both {label_a} and {label_b}.")
    else:
        notes = [
            h.missing(f"data/impact/words.parquet is missing in {lbl}: its side shows n/a.")
            for lbl, d in ((label_a, a), (label_b, b))
            if d.words is None
        ]
        changes = word_changes(a.words, b.words)
        words = "".join(notes) + (
            f'<p class="note">{len(changes)} rows, largest change first; accuracy change = '
            "accuracy perturbed - original (negative = the typos cost accuracy); change = "
            f"accuracy change {lb} - accuracy change {la} (negative: the typo hurts more in "
            f"{lb}).</p>"
            + h.table(
                [h.text(k, k) for k in WORD_KEYS]
                + [
                    h.num("rank", "freq. rank", 0),
                    h.num("n_a", f"n {label_a}", 0),
                    h.num("n_b", f"n {label_b}", 0),
                    h.signed("delta_a", f"accuracy change {label_a}"),
                    h.text("ci_a", "CI"),
                    h.signed("delta_b", f"accuracy change {label_b}"),
                    h.text("ci_b", "CI"),
                    h.signed("change", "change"),
                ],
                [
                    {k: (None if h.is_missing(v) else v) for k, v in r.items()}
                    for r in changes.to_dict(orient="records")
                ],
                sortable=True,
                table_id="compare-words",
                scroll=True,
            )
        )

    diff_rows = metrics_diff_rows(metrics_diff)
    diff = f'<p class="note">Source: {h.esc(diff_source)}. Only changed metrics are listed.</p>' + (
        h.table(
            [
                h.text("file", "file"),
                h.text("entry", "benchmark / axis"),
                h.text("metric", "metric"),
                h.num("old", label_a, 4),
                h.num("new", label_b, 4),
                h.signed("diff", "change", 4),
            ],
            diff_rows,
            sortable=True,
            table_id="metrics-diff-table",
            scroll=True,
        )
        if diff_rows
        else "<p>No metric changed.</p>"
    )

    agreement_rows = _agreement_rows(a, b)
    agreement = (
        h.table(
            [
                h.text("axis", "axis"),
                h.num("kappa_a", f"kappa {label_a}"),
                h.num("kappa_b", f"kappa {label_b}"),
                h.signed("change", "change"),
            ],
            agreement_rows,
            table_id="compare-agreement",
        )
        if agreement_rows
        else h.missing("No agreement metrics on either side.")
    )
    samples = [
        lbl for lbl, d in ((label_a, a), (label_b, b)) if data_notes(d).get("sample_batches")
    ]
    if samples and agreement_rows:
        agreement = (
            h.missing(
                f"Sample data in {' and '.join(samples)}: the agreement figures of "
                f"{'both sides' if len(samples) == 2 else 'that side'} come from the bundled "
                "sample batches (data/samples/annotations/), written for the project, not "
                "collected from annotators."
            )
            + agreement
        )
    provenance = (
        f'<div class="pair"><div><h3>{la}</h3>{provenance_section(a)}</div>'
        f"<div><h3>{lb}</h3>{provenance_section(b)}</div></div>"
    )
    return h.page(
        f"{options.title}: {label_a} vs {label_b}",
        f"before: {label_a} · after: {label_b} · typo model: {_model_label(a)} vs "
        f"{_model_label(b)}",
        [
            ("headline", "Accuracy per benchmark", headline),
            (
                "typos",
                "Typo model",
                typos_comparison(a, b, label_a=label_a, label_b=label_b),
            ),
            ("words", "Per-word changes", words),
            ("metrics-diff", "dvc metrics diff", diff),
            ("annotation", "Annotation agreement", agreement),
            ("provenance", "What produced each side", provenance),
        ],
    )
