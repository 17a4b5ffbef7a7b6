"""The sycophancy study in one call: replies, the panel's ratings and people's ratings in; the
estimates, paired differences, per-reply panel table and the judge validity report out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalpipe.annotation.schema import AXES
from evalpipe.sycophancy.estimates import (
    arm_changes,
    metrics_of,
    model_estimates,
    paired_differences,
)
from evalpipe.sycophancy.panel import inter_judge_agreement, panel_ratings
from evalpipe.sycophancy.validity import human_labels, judge_validity, self_grading

ILLUSTRATIVE_NOTE = (
    "the human ratings are the bundled illustrative sample batches (data/samples/annotations), "
    "written for the project, not real raters: the validity figures show how the report reads, "
    "not how good the judge is"
)


@dataclass(frozen=True)
class StudySettings:
    models: Sequence[str]
    model_names: Mapping[str, str]
    judge_names: Mapping[str, str]
    threshold: int
    confidence: float
    epsilon: float
    sample_batches: bool


@dataclass(frozen=True)
class StudyResult:
    estimates: pd.DataFrame
    differences: pd.DataFrame
    arm_changes: pd.DataFrame
    panel: pd.DataFrame
    validity: dict[str, Any]
    panel_agreement: dict[str, Any]
    metrics: dict[str, dict[str, Any]]
    judge_metrics: dict[str, dict[str, Any]]


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN floats as None and NumPy scalars as Python ones (for JSON files).

    >>> json_safe({"a": float("nan"), "b": [1.5]})
    {'a': None, 'b': [1.5]}
    """
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj


def human_reason(estimates: pd.DataFrame, *, sample_batches: bool) -> str:
    """Why human-based rows are unavailable, in one sentence (empty when all are available)."""
    missing = estimates[(estimates["estimator"] != "judge") & ~estimates["available"]]
    if missing.empty:
        return ""
    why = "people have not rated the sampled replies yet (data/annotation_tasks/tasks.jsonl, ids syc/...)"
    if sample_batches:
        why += "; the bundled sample batches rate the sample tasks only"
    return why


def run_study(
    replies: pd.DataFrame,
    ratings: pd.DataFrame,
    humans: pd.DataFrame,
    lengths: Mapping[str, int],
    settings: StudySettings,
    *,
    prompt_version: str,
) -> StudyResult:
    """Everything the sycophancy stage writes.

    Parameters
    ----------
    replies:
        ``data/sycophancy/replies.parquet`` (every model, with the human sample marked).
    ratings:
        Every judge's ratings, long (``judge, id, axis, score, confidence``), of the replies and
        of the annotation tasks.
    humans:
        Independent human ratings, long (``id, annotator_id, axis, score, confidence``).
    lengths:
        Response length in characters per task id (replies and annotation tasks).
    settings:
        Models, names, threshold, confidence level, the alternative annotator test's margin and
        whether the human ratings are the illustrative sample batches.
    prompt_version:
        The judge prompt's version, recorded beside every judge's figures.
    """
    reply_ids = set(replies["task_id"])
    on_replies = ratings[ratings["id"].isin(reply_ids)]
    panel = panel_ratings(on_replies)
    labels = human_labels(humans)
    grid: dict[str, Any] = {
        "models": settings.models,
        "threshold": settings.threshold,
        "confidence": settings.confidence,
    }
    estimates = model_estimates(replies, panel, labels, **grid)
    reason = human_reason(estimates, sample_batches=settings.sample_batches)
    estimates.loc[~estimates["available"] & (estimates["estimator"] != "judge"), "reason"] = (
        estimates["reason"] + ("; " + reason if reason else "")
    )
    differences = paired_differences(replies, panel, labels, **grid)
    arms = arm_changes(replies, panel, labels, **grid)

    flags = self_grading(settings.judge_names, settings.model_names)
    validity: dict[str, Any] = {}
    judge_metrics: dict[str, dict[str, Any]] = {}
    rated_by_people = set(humans["id"])
    for judge in sorted(settings.judge_names):
        mine = ratings[(ratings["judge"] == judge) & ratings["id"].isin(rated_by_people)]
        per_axis = judge_validity(
            mine, humans, lengths, epsilon=settings.epsilon, confidence=settings.confidence
        )
        validity[judge] = {
            **per_axis,
            "model": settings.judge_names[judge],
            "prompt_version": prompt_version,
            "self_grading": flags.get(judge, {}),
            "illustrative": settings.sample_batches,
            "note": ILLUSTRATIVE_NOTE if settings.sample_batches else "",
        }
        judge_metrics[judge] = {
            "prompt_version": prompt_version,
            **{
                axis: {
                    "kappa": per_axis[axis]["kappa"],
                    "winning_rate": per_axis[axis]["winning_rate"],
                    "n_items": per_axis[axis]["n_items"],
                    "illustrative": settings.sample_batches,
                }
                for axis in AXES
            },
        }
    metrics = {m: metrics_of(estimates, m) for m in settings.models}
    agreement = inter_judge_agreement(on_replies)
    return StudyResult(
        estimates, differences, arms, panel, validity, agreement, metrics, judge_metrics
    )
