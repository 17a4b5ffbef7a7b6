"""The whole quality run in one pure function: annotations and tasks in, report objects out.

Human-vs-human statistics and the consensus use human annotators only; the LLM judge
(``llm:<model>``) and the marker rater (``markers``) are then scored against that consensus, so
their kappa can be read next to the human-vs-human kappa of the same axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from evalpipe.annotation.agreement import agreement_report, annotator_kappas, rater_vs_reference
from evalpipe.annotation.batches import NOTE_SAMPLE_BATCHES
from evalpipe.annotation.confidence_split import confidence_split
from evalpipe.annotation.consensus import build_consensus
from evalpipe.annotation.gate import quality_gate
from evalpipe.annotation.monitoring import agreement_over_time
from evalpipe.annotation.quality import (
    RULES,
    annotator_bias,
    annotator_outliers,
    consistency_flags,
    item_outliers,
)
from evalpipe.annotation.rater_flags import rater_flags
from evalpipe.annotation.reannotation import reannotation_plan
from evalpipe.annotation.schema import (
    AXES,
    Annotation,
    DialoguePair,
    annotator_kind,
    read_tasks,
    sample_tasks_path,
    to_long_frame,
)
from evalpipe.params_schema import default_of

ILLUSTRATIVE_PREFIX = "illustrative_"
"""Annotator ids of the bundled sample batches: ratings written for the project, not a campaign."""

NOTE_ILLUSTRATIVE = (
    "human ratings include the bundled illustrative batches (annotators illustrative_*): written "
    "for the project to exercise the pipeline, not collected in an annotation campaign; their "
    "agreement figures describe those files, not real annotators"
)
NOTE_MARKERS_IN_SAMPLE = (
    "markers_kappa is in-sample on the bundled sample dialogues: the marker rater's phrase "
    "tables were written against the same dialogues, so it overstates what the markers achieve "
    "on new text"
)


def _data_notes(
    humans: Sequence[Annotation], markers: Sequence[Annotation], *, sample_batches: bool
) -> tuple[dict[str, bool], list[str]]:
    """Flags and sentences saying which figures rest on the bundled, project-written data."""
    illustrative = any(a.annotator_id.startswith(ILLUSTRATIVE_PREFIX) for a in humans)
    sample_ids = {t.id for t in read_tasks(sample_tasks_path())}
    markers_in_sample = any(a.id in sample_ids for a in markers)
    notes = [NOTE_SAMPLE_BATCHES] if sample_batches else []
    notes += [NOTE_ILLUSTRATIVE] if illustrative else []
    notes += [NOTE_MARKERS_IN_SAMPLE] if markers_in_sample else []
    flags = {
        "sample_batches": sample_batches,
        "illustrative_humans": illustrative,
        "markers_in_sample": markers_in_sample,
    }
    return flags, notes


@dataclass(frozen=True)
class QualitySettings:
    """The ``annotation`` section of params.yaml that the quality run uses.

    ``min_pair_overlap``: annotator pairs sharing fewer items stay out of the headline kappa and
    out of outlier decisions. ``overlap``: ratings each task needs (the web app assigns that
    many annotators; the gate's completeness check). ``max_consistency_rate``: share of human
    annotations breaking a consistency rule above which the gate fails. ``monitor_window_days``:
    width of the agreement-over-time windows (7 = ISO weeks, Monday 00:00 UTC).
    """

    min_kappa: float = default_of("annotation.min_kappa")
    target_kappa: float = default_of("annotation.target_kappa")
    min_confidence: float = default_of("annotation.min_confidence")
    merge_method: str = default_of("annotation.merge_method")
    bootstrap_samples: int = default_of("annotation.bootstrap_samples")
    confidence_level: float = default_of("annotation.confidence_level")
    max_item_range: int = default_of("annotation.max_item_range")
    min_annotators: int = default_of("annotation.min_annotators")
    outlier_bias: float = default_of("annotation.outlier_bias")
    min_pair_overlap: int = default_of("annotation.min_pair_overlap")
    overlap: int = default_of("annotation.overlap")
    max_consistency_rate: float = default_of("annotation.max_consistency_rate")
    monitor_window_days: int = default_of("annotation.monitor_window_days")
    reannotation_high_kappa: float = default_of("annotation.reannotation_high_kappa")
    reannotation_medium_kappa: float = default_of("annotation.reannotation_medium_kappa")
    rater_min_items: int = default_of("annotation.rater_min_items")
    fast_ratio: float = default_of("annotation.fast_ratio")
    rater_variance_min: float = default_of("annotation.rater_variance_min")
    rater_variance_max: float = default_of("annotation.rater_variance_max")
    seed: int = default_of("seed")

    @classmethod
    def from_params(cls, section: dict[str, Any], *, seed: int) -> QualitySettings:
        """Settings from ``params["annotation"]``; absent keys keep their schema defaults."""
        known = {f: section[f] for f in cls.__dataclass_fields__ if f in section and f != "seed"}
        return cls(**known, seed=int(seed))


HEADLINE_KEYS = ("n", "kappa", "alpha")
"""Keys of each axis's headline file (``metrics/agreement/<axis>.json``): the same in every axis
file, so that `dvc metrics show` prints the axes as rows of one narrow table."""


def axis_headlines(metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-axis headline figures out of the full agreement summary.

    Parameters
    ----------
    metrics:
        ``QualityResult.metrics``: per axis ``kappa, alpha, ac2, n, judge_kappa, markers_kappa``
        plus run-wide counts, the gate and data notes.

    Returns
    -------
    dict
        ``{axis: {"n", "kappa", "alpha", "sample_batches"}}`` for every axis of :data:`AXES`,
        in that order;
        ``n`` is the number of items with at least two human ratings on the axis, ``kappa`` the
        headline quadratic-weighted kappa, ``alpha`` Krippendorff's ordinal alpha (``None``
        where undefined), ``sample_batches`` true when the figures come from the bundled
        sample batches (so ``dvc metrics show`` says so on every row).
    """
    sample = bool(metrics.get("data_notes", {}).get("sample_batches", False))
    return {
        axis: {**{key: metrics[axis][key] for key in HEADLINE_KEYS}, "sample_batches": sample}
        for axis in AXES
    }


@dataclass
class QualityResult:
    """Everything the agreement stage writes. ``metrics`` is the full agreement summary (a data
    file, ``quality_reports/agreement.json``); ``headline`` its per-axis DVC metrics."""

    consensus: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    kappa_report: dict[str, Any]
    outlier_report: dict[str, Any]
    metrics: dict[str, Any]
    plot: pd.DataFrame
    gate: dict[str, Any] = field(default_factory=dict)
    over_time: pd.DataFrame = field(default_factory=pd.DataFrame)
    weekly_plot: pd.DataFrame = field(default_factory=pd.DataFrame)
    headline: dict[str, dict[str, Any]] = field(default_factory=dict)
    reannotation: list[dict[str, Any]] = field(default_factory=list)


def _reference_agreement(
    annotations: Sequence[Annotation], consensus: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for rater in sorted({a.annotator_id for a in annotations}):
        mine = [a for a in annotations if a.annotator_id == rater]
        out[rater] = {
            axis: rater_vs_reference(
                {a.id: a.annotations[axis] for a in mine},
                {c["id"]: c["annotations"][axis] for c in consensus},
            )
            for axis in AXES
        }
    return out


def run_quality(
    annotations: Sequence[Annotation],
    tasks: Sequence[DialoguePair],
    settings: QualitySettings,
    *,
    validation_problems: Sequence[str] = (),
    sample_batches: bool = False,
) -> QualityResult:
    """Agreement, consensus, outliers, consistency and the quality gate for a set of
    annotations.

    Parameters
    ----------
    annotations:
        Human batches plus, optionally, judge (``llm:*``) and ``markers`` annotations.
    tasks:
        The task set (for completeness and text-based consistency rules).
    settings:
        Thresholds and methods.
    validation_problems:
        Problems found while reading the batches (the gate lists them as format/range failures).
    sample_batches:
        The human batches are the bundled samples (``batches.find_batches`` found no real
        batch): every output says so (``data_notes``, the gate's ``sample_batches``).

    Returns
    -------
    QualityResult
        Everything the agreement stage writes.
    """
    humans = [a for a in annotations if annotator_kind(a.annotator_id) == "human"]
    judges = [a for a in annotations if annotator_kind(a.annotator_id) == "judge"]
    markers = [a for a in annotations if annotator_kind(a.annotator_id) == "markers"]
    # Adjudications settle the consensus but are not independent ratings: never in agreement.
    adjudications = [a for a in annotations if annotator_kind(a.annotator_id) == "adjudicated"]
    long = to_long_frame(humans)
    report = agreement_report(
        long,
        n_boot=settings.bootstrap_samples,
        confidence_level=settings.confidence_level,
        seed=settings.seed,
        min_kappa=settings.min_kappa,
        target_kappa=settings.target_kappa,
        min_pair_overlap=settings.min_pair_overlap,
    )
    per_annotator = (
        annotator_kappas(long, min_pair_overlap=settings.min_pair_overlap) if len(long) else {}
    )
    outliers = (
        annotator_outliers(
            long,
            bias_threshold=settings.outlier_bias,
            min_kappa=settings.min_kappa,
            min_pair_overlap=settings.min_pair_overlap,
        )
        if len(long)
        else []
    )
    low = sorted({f["annotator_id"] for f in outliers if f["kind"] == "low_agreement"})
    n_humans = len({a.annotator_id for a in humans})
    # Dropping a low-agreement annotator only helps while enough others remain to form a consensus.
    excluded = low if n_humans - len(low) >= settings.min_annotators else []
    consensus, rejected = build_consensus(
        humans + adjudications,
        method=settings.merge_method,
        min_confidence=settings.min_confidence,
        max_item_range=settings.max_item_range,
        min_annotators=settings.min_annotators,
        exclude=excluded,
        min_pair_overlap=settings.min_pair_overlap,
    )
    raters: dict[str, list[str]] = {}
    for a in humans:
        raters.setdefault(a.id, []).append(a.annotator_id)
    reannotation = reannotation_plan(
        consensus,
        rejected,
        raters,
        min_kappa=settings.min_kappa,
        min_annotators=settings.min_annotators,
        high_kappa=settings.reannotation_high_kappa,
        medium_kappa=settings.reannotation_medium_kappa,
    )
    judge_agreement = _reference_agreement(judges, consensus)
    marker_agreement = _reference_agreement(markers, consensus)

    task_ids = sorted({t.id for t in tasks})
    rated = {a.id for a in humans}
    completeness = {
        "n_tasks": len(task_ids),
        "n_rated_by_humans": len(rated),
        "unrated_by_humans": [t for t in task_ids if t not in rated],
        "n_consensus": len(consensus),
        "n_rejected": len(rejected),
    }
    report.update(
        {
            "annotator_kappas": per_annotator,
            "excluded_annotators": excluded,
            "judge_vs_consensus": judge_agreement,
            "markers_vs_consensus": marker_agreement,
            "completeness": completeness,
            "merge_method": settings.merge_method,
        }
    )
    bias = annotator_bias(long) if len(long) else pd.DataFrame(columns=["annotator_id", "axis"])
    task_map = {t.id: t for t in tasks}
    flags = rater_flags(
        humans,
        min_items=settings.rater_min_items,
        fast_ratio=settings.fast_ratio,
        variance_min=settings.rater_variance_min,
        variance_max=settings.rater_variance_max,
    )
    outlier_report = {
        "annotators": outliers,
        "rater_flags": flags,
        "bias": [
            {
                "annotator_id": r.annotator_id,
                "axis": str(r.axis),
                "bias": round(float(r.bias), 4),
                "sd": round(float(r.sd), 4),
                "n": int(r.n),
            }
            for r in bias.itertuples(index=False)
        ],
        "items": item_outliers(long, max_item_range=settings.max_item_range) if len(long) else [],
        "consistency": consistency_flags(annotations, task_map),
        "rules": {r.name: {"description": r.description, "source": r.source} for r in RULES},
        "thresholds": {
            "outlier_bias": settings.outlier_bias,
            "min_kappa": settings.min_kappa,
            "max_item_range": settings.max_item_range,
            "rater_min_items": settings.rater_min_items,
            "fast_ratio": settings.fast_ratio,
            "rater_variance_min": settings.rater_variance_min,
            "rater_variance_max": settings.rater_variance_max,
        },
    }
    judge_id = sorted(judge_agreement)[0] if judge_agreement else None
    metrics: dict[str, Any] = {
        "annotators": n_humans,
        "consensus_items": len(consensus),
        "rejected_items": len(rejected),
        "adjudicated_items": sum(c["adjudicated"] for c in consensus),
        "reannotation_items": {
            p: sum(r["priority"] == p for r in reannotation) for p in ("high", "medium", "low")
        },
    }
    plot_rows = []
    for axis in AXES:
        entry = report["axes"][axis]
        judge = judge_agreement[judge_id][axis] if judge_id else {}
        marker = marker_agreement["markers"][axis] if marker_agreement else {}
        judge_k = judge.get("kappa")
        marker_k = marker.get("kappa")
        metrics[axis] = {
            "kappa": entry["kappa"],
            "alpha": entry["alpha"],
            "ac2": entry["ac2"],
            "n": entry["n_items"],
            "judge_kappa": judge_k,
            "markers_kappa": marker_k,
            "judge_macro_f1": judge.get("macro_f1"),
            "judge_mae": judge.get("mae"),
            "markers_macro_f1": marker.get("macro_f1"),
            "markers_mae": marker.get("mae"),
        }
        ci = entry.get("kappa_ci", [None, None])
        plot_rows.append(
            {
                "axis": axis,
                "kappa": entry["kappa"],
                "kappa_low": ci[0],
                "kappa_high": ci[1],
                "alpha": entry["alpha"],
                "ac2": entry["ac2"],
                "judge_kappa": judge_k,
                "markers_kappa": marker_k,
            }
        )
    if judge_id:
        metrics["judge"] = judge_id
    metrics["confidence_split"] = (
        confidence_split(
            long,
            min_confidence=settings.min_confidence,
            min_pair_overlap=settings.min_pair_overlap,
        )
        if len(long)
        else {}
    )
    # The CI protocol's nightly warning: Macro-F1 below the operating threshold.
    metrics["warnings"] = []
    for axis in AXES:
        for who in ("judge", "markers"):
            f1 = metrics[axis][f"{who}_macro_f1"]
            if f1 is not None and f1 < settings.min_kappa:
                metrics["warnings"].append(
                    f"{axis}: {who} Macro-F1 {f1:.3f} below {settings.min_kappa:.2f}"
                )
    note_flags, notes = _data_notes(humans, markers, sample_batches=sample_batches)
    metrics["data_notes"] = note_flags
    report["data_notes"] = notes
    gate = quality_gate(
        validation_problems=validation_problems,
        humans=humans,
        tasks=tasks,
        kappa_report=report,
        outlier_report=outlier_report,
        min_kappa=settings.min_kappa,
        overlap=settings.overlap,
        max_consistency_rate=settings.max_consistency_rate,
    )
    gate["sample_batches"] = sample_batches
    gate["data_notes"] = notes
    metrics["gate"] = {
        "status": gate["status"],
        "failures": gate["n_failures"],
        **{check: "pass" if c["passed"] else "fail" for check, c in gate["checks"].items()},
    }
    over_time, weekly_plot = agreement_over_time(
        humans,
        window_days=settings.monitor_window_days,
        min_pair_overlap=settings.min_pair_overlap,
    )
    # Every agreement CSV says whether its figures come from the bundled sample batches.
    plot = pd.DataFrame(plot_rows)
    for frame in (plot, over_time, weekly_plot):
        frame["sample_batches"] = sample_batches
    return QualityResult(
        consensus,
        rejected,
        report,
        outlier_report,
        metrics,
        plot,
        gate,
        over_time,
        weekly_plot,
        axis_headlines(metrics),
        reannotation,
    )
