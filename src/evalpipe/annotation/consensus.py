"""Consensus of several annotators per dialogue pair, and the items too contested to keep.

Methods (``merge_method``):

- ``weighted_average`` (the default): confidence-weighted mean, rounded half up to 1-5;
- ``median``: median of the scores, an even count's midpoint rounded half up;
- ``majority``: the most frequent score; ties go to the larger summed confidence, then to the
  lower score (the conservative reading: less sycophancy claimed).

Ratings with confidence below ``min_confidence`` do not vote, but they still count for the
item's dispersion: a confident-but-lonely rating must not hide that others disagreed.

Adjudications (records with ``annotator_id`` ``adjudicated:<name>``, exported by the web app's
adjudicator) come first: an adjudicated item takes the adjudicator's scores on every axis, is
never rejected (the adjudication is what settles a disagreement), and its consensus line says so
(``adjudicated: true``, ``adjudicator``, ``source: "adjudicated"`` and ``merged``: what the merge
alone would have given). When an item was adjudicated more than once, the newest record wins.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from evalpipe.annotation.schema import AXES, CONSENSUS_ID, LABELS, Annotation, annotator_kind
from evalpipe.errors import InputError
from evalpipe.params_schema import default_of

METHODS = ("weighted_average", "median", "majority")


def _round_half_up(x: float) -> int:
    return int(min(max(math.floor(x + 0.5), LABELS[0]), LABELS[-1]))


def merge_scores(scores: Sequence[int], confidences: Sequence[float], *, method: str) -> int:
    """One consensus score (1-5) from the voting ratings of one item and axis.

    Parameters
    ----------
    scores, confidences:
        Parallel, non-empty.
    method:
        ``weighted_average`` | ``median`` | ``majority``.

    Returns
    -------
    int

    >>> merge_scores([2, 3, 5], [0.9, 0.9, 0.9], method="median")
    3
    >>> merge_scores([1, 2], [0.8, 0.9], method="majority")
    2
    """
    if not scores:
        raise ValueError("no scores to merge")
    if method == "weighted_average":
        total = sum(confidences)
        if total <= 0:
            return _round_half_up(sum(scores) / len(scores))
        return _round_half_up(sum(s * c for s, c in zip(scores, confidences, strict=True)) / total)
    if method == "median":
        return _round_half_up(statistics.median(scores))
    if method == "majority":
        votes: dict[int, list[float]] = defaultdict(list)
        for s, c in zip(scores, confidences, strict=True):
            votes[s].append(c)
        return min(votes, key=lambda s: (-len(votes[s]), -round(sum(votes[s]), 9), s))
    raise InputError(f"unknown merge method {method!r} (expected one of {', '.join(METHODS)})")


def _latest(timestamps: Iterable[str]) -> str:
    # The consensus carries its newest input's timestamp: deterministic, unlike the wall clock.
    return max(timestamps, key=lambda t: (datetime.fromisoformat(t), t))


def merge_annotations(
    annotations: Sequence[Annotation],
    method: str = default_of("annotation.merge_method"),
    *,
    min_confidence: float = 0.0,
) -> Annotation:
    """Merge several annotators' ratings of one item into one ``consensus`` Annotation.

    Parameters
    ----------
    annotations:
        Ratings of the same id.
    method:
        See the module docstring.
    min_confidence:
        Ratings below it do not vote; if none is left on an axis, all ratings vote.

    Returns
    -------
    Annotation
        annotator_id ``consensus``; confidence per axis is the mean confidence of the voters.
    """
    if not annotations:
        raise ValueError("no annotations to merge")
    if len({a.id for a in annotations}) != 1:
        raise ValueError("annotations of different items cannot be merged")
    scores: dict[str, int] = {}
    conf: dict[str, float] = {}
    for axis in AXES:
        voters = [a for a in annotations if a.confidence[axis] >= min_confidence] or list(
            annotations
        )
        s = [a.annotations[axis] for a in voters]
        c = [a.confidence[axis] for a in voters]
        scores[axis] = merge_scores(s, c, method=method)
        conf[axis] = round(sum(c) / len(c), 4)
    return Annotation(
        id=annotations[0].id,
        annotator_id=CONSENSUS_ID,
        timestamp=_latest(a.timestamp for a in annotations),
        annotations=scores,
        confidence=conf,
    )


def _newer(a: Annotation, b: Annotation) -> bool:
    """Whether ``a`` is the later record (ties: the larger annotator id, for determinism)."""
    return (datetime.fromisoformat(a.timestamp), a.annotator_id) > (
        datetime.fromisoformat(b.timestamp),
        b.annotator_id,
    )


def _dispersion(scores: Sequence[int]) -> dict[str, Any]:
    if not scores:
        return {"n": 0, "mean": None, "sd": None, "range": 0, "scores": []}
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return {
        "n": len(scores),
        "mean": round(mean, 4),
        "sd": round(sd, 4),
        "range": max(scores) - min(scores),
        "scores": sorted(scores),
    }


def build_consensus(
    annotations: Sequence[Annotation],
    *,
    method: str = default_of("annotation.merge_method"),
    min_confidence: float = default_of("annotation.min_confidence"),
    max_item_range: int = default_of("annotation.max_item_range"),
    min_annotators: int = default_of("annotation.min_annotators"),
    exclude: Iterable[str] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Consensus records for the accepted items and rejection records for the rest.

    Parameters
    ----------
    annotations:
        Human ratings (several items, several annotators), plus any adjudications
        (``adjudicated:<name>``), which take precedence.
    method:
        ``weighted_average`` | ``median`` | ``majority``.
    min_confidence:
        Ratings below it do not vote.
    max_item_range:
        An item is rejected when, on any axis, its ratings span more than this many points.
    min_annotators:
        An item rated by fewer annotators is rejected (agreement cannot be checked).
    exclude:
        Annotator ids left out entirely (e.g. outliers with low agreement).

    Returns
    -------
    (consensus, rejected)
        Consensus: the annotation format with annotator_id ``consensus`` plus ``method``,
        ``n_annotators``, ``weighted_mean`` (unrounded confidence-weighted mean per axis),
        ``dispersion`` per axis, ``adjudicated`` (bool), ``source`` (``"adjudicated"`` or
        ``"merged"``) and, for adjudicated items, ``adjudicator`` and ``merged`` (the merge's
        scores, for audit). Rejected: ``{id, reasons: [...], ratings: {annotator: {axis:
        score}}}``. Both sorted by id.
    """
    if method not in METHODS:
        raise InputError(f"unknown merge method {method!r} (expected one of {', '.join(METHODS)})")
    excluded = set(exclude)
    by_item: dict[str, list[Annotation]] = defaultdict(list)
    adjudications: dict[str, Annotation] = {}
    for a in annotations:
        if annotator_kind(a.annotator_id) == "adjudicated":
            prev = adjudications.get(a.id)
            if prev is None or _newer(a, prev):
                adjudications[a.id] = a
        elif a.annotator_id not in excluded:
            by_item[a.id].append(a)
    consensus: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for item in sorted(set(by_item) | set(adjudications)):
        group = sorted(by_item.get(item, []), key=lambda a: a.annotator_id)
        adjudication = adjudications.get(item)
        reasons: list[str] = []
        if len(group) < min_annotators:
            reasons.append(f"only {len(group)} annotator(s), need {min_annotators}")
        stamps = [a.timestamp for a in group] + ([adjudication.timestamp] if adjudication else [])
        record: dict[str, Any] = {
            "id": item,
            "annotator_id": CONSENSUS_ID,
            "timestamp": _latest(stamps),
            "annotations": {},
            "confidence": {},
            "method": method,
            "n_annotators": len(group),
            "weighted_mean": {},
            "dispersion": {},
        }
        for axis in AXES:
            all_scores = [a.annotations[axis] for a in group]
            disp = _dispersion(all_scores)
            record["dispersion"][axis] = disp
            if disp["range"] > max_item_range:
                reasons.append(
                    f"low agreement on {axis}: scores {disp['scores']} span {disp['range']} "
                    f"> {max_item_range}"
                )
            voters = [a for a in group if a.confidence[axis] >= min_confidence]
            if not voters:
                reasons.append(f"no {axis} rating with confidence >= {min_confidence}")
                continue
            s = [a.annotations[axis] for a in voters]
            c = [a.confidence[axis] for a in voters]
            record["annotations"][axis] = merge_scores(s, c, method=method)
            record["confidence"][axis] = round(sum(c) / len(c), 4)
            total = sum(c)
            record["weighted_mean"][axis] = round(
                sum(x * w for x, w in zip(s, c, strict=True)) / total, 4
            )
        record["adjudicated"] = adjudication is not None
        record["source"] = "adjudicated" if adjudication else "merged"
        if adjudication is not None:
            # The adjudicator settles the item: their scores replace the merge on every axis,
            # and the reasons it would have been rejected no longer apply.
            record["merged"] = dict(record["annotations"])
            record["annotations"] = {axis: adjudication.annotations[axis] for axis in AXES}
            record["confidence"] = {axis: adjudication.confidence[axis] for axis in AXES}
            record["adjudicator"] = adjudication.annotator_id
            reasons = []
        if reasons:
            rejected.append(
                {
                    "id": item,
                    "reasons": reasons,
                    "ratings": {a.annotator_id: dict(a.annotations) for a in group},
                }
            )
        else:
            consensus.append(record)
    return consensus, rejected
