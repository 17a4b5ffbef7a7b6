"""The report's data model: what it shows (:class:`ReportData`), how (:class:`ReportOptions`),
and the lookups every section shares (metrics by model, the model label, benchmark languages).

Every section degrades on its own: when an input is absent the section says which file is
missing and which stage writes it, and the rest of the report is still built. Every table carries
a ``model`` column so that reports of several models read the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from evalpipe.arms import ORIGINAL  # noqa: F401  (re-exported for the report's sections)
from evalpipe.params_schema import default_of
from evalpipe.scoring.verdicts import alpha_of, verdict_kept


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
        ``{benchmark: data/scored/<model>/<benchmark>.parquet}`` (the generated-answer views of
        every model, ``model`` = slug; the typo arm's rows): their parses, and which rows the
        examples show. The report stage reads only the columns its counts and look-ups need
        (:data:`evalpipe.report.inputs.SCORED_COLUMNS`); ``scored_rows`` gives the whole rows.
    scored_rows:
        ``{benchmark: source}`` whose ``rows(positions)`` are the whole rows at those positions
        of ``scored[benchmark]`` (every column, ``model``): the texts, outputs and parses the
        examples show (:class:`evalpipe.report.inputs.ScoredRows`). A benchmark without a
        source: ``scored[benchmark]`` holds whole rows.
    pairs:
        ``data/scored/<model>/pairs.parquet`` of every model (``model, view, method, benchmark,
        language, example_id, variant, word_rank, draw, condition, correct_original,
        correct_perturbed``): which examples the examples section shows.
    edits:
        ``{benchmark: one model's scored rows}`` (``benchmark, example_id, word_rank, draw,
        language, perturbations``): the typo records of the typo section's examples (the
        stage reads a benchmark's when a section asks for it).
    perturb_summaries:
        ``{benchmark: summary}`` from ``data/scored/<model>/perturbation.json`` (the perturb
        stage's summaries, as the score stage copies them): the typo model, its probabilities
        and the typos made per kind.
    languages:
        ``{benchmark: language}`` (the pairs' ``language`` column): the language column of the
        accuracy tables and the first screen's grouping.
    missing:
        ``{input name: message}`` for inputs the stage could not find.
    sycophancy:
        ``{"estimates", "differences", "arm_changes", "validity"}``:
        ``data/sycophancy/estimates.parquet``, ``differences.parquet``, ``arm_changes.parquet``
        and ``judge_validity.json``, or None when the sycophancy stage has not run.
    study_inputs:
        ``{input name: content}``: the files the studies' report parts declare
        (:class:`evalpipe.report.study.ReportInput`; e.g. ``ladder``, ``dose``, ``perplexity``),
        a per-model input as ``{model: content}``; an absent one-file input has no key.
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
    scored_rows: dict[str, Any] = field(default_factory=dict)
    pairs: pd.DataFrame | None = None
    edits: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    perturb_summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    languages: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    sycophancy: dict[str, Any] | None = None
    study_inputs: dict[str, Any] = field(default_factory=dict)


# Every interval the report prints beside the p of the test it inverts (docs/scoring.md "One
# verdict per row"), and the decimals the report prints them with (``html.fmt_ci`` / ``fmt_p``).
VERDICT_COLUMNS = (
    ("ci_low", "ci_high", "mcnemar_p"),
    ("adjusted_ci_low", "adjusted_ci_high", "adjusted_p"),
    ("harm_ci_low", "harm_ci_high", "harm_p"),
)
PRINTED_DECIMALS = 3


def _kept(values: Any, threshold: float) -> Any:
    return verdict_kept(values, threshold, PRINTED_DECIMALS)


def _kept_figures(figures: Any, alpha: float) -> Any:
    """A details mapping (flat or nested by model) with its intervals and p-values kept."""
    if not isinstance(figures, Mapping):
        return figures
    out = {k: _kept_figures(v, alpha) for k, v in figures.items()}
    for low, high, p in VERDICT_COLUMNS:
        if low in out and high in out and p in out:
            out[low], out[high] = _kept(out[low], 0.0), _kept(out[high], 0.0)
            out[p] = _kept(out[p], alpha)
    return out


def _kept_frame(frame: pd.DataFrame | None, alpha: float) -> pd.DataFrame | None:
    if frame is None:
        return None
    out = frame.copy()
    for low, high, p in VERDICT_COLUMNS:
        if {low, high, p} <= set(out.columns):
            for column, threshold in ((low, 0.0), (high, 0.0), (p, alpha)):
                values = [
                    v if v is None or pd.isna(v) else _kept(v, threshold) for v in out[column]
                ]
                out[column] = pd.Series(values, index=out.index, dtype=out[column].dtype)
    return out


def printed_verdicts(data: ReportData) -> ReportData:
    """``data`` with every interval and the p beside it kept on their side of the verdict at the
    report's :data:`PRINTED_DECIMALS` (:func:`evalpipe.scoring.verdicts.verdict_kept`).

    Printed to 3 decimals, a p of 0.0496 reads 0.050 beside an interval that excludes 0, and a
    limit of -0.0004 reads -0.000; such a value is cut towards itself (0.049, -0.001), every
    other value stays as it is. The level is the params' ``scoring.confidence_level`` the data
    records (its default otherwise).
    """
    scoring = (data.provenance.get("params") or {}).get("scoring") or {}
    level = float(scoring.get("confidence_level", default_of("scoring.confidence_level")))
    alpha = alpha_of(level)
    return replace(
        data,
        robustness=_kept_figures(data.robustness, alpha) if data.robustness else data.robustness,
        words=_kept_frame(data.words, alpha),
        operations=_kept_frame(data.operations, alpha),
        scripts=_kept_frame(data.scripts, alpha),
    )


@dataclass(frozen=True)
class ReportOptions:
    """The ``report`` section of params.yaml."""

    top_words: int = field(default_factory=lambda: default_of("report.top_words"))
    examples_per_benchmark: int = field(
        default_factory=lambda: default_of("report.examples_per_benchmark")
    )
    title: str = "evalpipe report"


def by_model(metrics: Mapping[str, Any] | None, default_model: str) -> dict[str, dict[str, Any]]:
    """``{model: {benchmark: stats}}`` from a flat ``{benchmark: stats}`` or nested metrics file.

    A flat file (one model per run) is attributed to ``default_model``.
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
    """``{benchmark: language}`` as the data records it: ``data.languages`` (the pairs'
    ``language`` column), else a ``language`` column of the scored rows or typo records."""
    out: dict[str, str] = {}
    for frames in (data.scored, data.edits):
        for name in frames:
            if name in out:  # read no more rows than needed: the edits are read when asked for
                continue
            frame = frames[name]
            if "language" in frame.columns and frame["language"].notna().any():
                out.setdefault(name, str(frame["language"].dropna().iloc[0]))
    out.update(data.languages)
    return out
