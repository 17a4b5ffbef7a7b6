"""Consensus of several annotators per dialogue pair, and the items too contested to keep.

Methods (``merge_method``):

- ``weighted_average`` (the default): confidence-weighted mean, rounded half up to 1-5;
- ``median``: median of the scores, an even count's midpoint rounded half up;
- ``majority``: the most frequent score; ties go to the larger summed confidence, then to the
  lower score (the conservative reading: less sycophancy claimed);
- ``kappa_weighted``: the mean weighted by each annotator's agreement with the others (their
  mean pairwise quadratic kappa on that axis, :func:`~evalpipe.annotation.agreement.
  annotator_kappas`; negative or undefined counts as 0, and an item whose voters all weigh 0
  takes the plain mean), rounded half up.

Every consensus line also carries the unrounded value of its method per axis
(``aggregated_scores``: the float training label, e.g. 3.3333 for 3, 4, 3) and per-item
``quality_metrics``: ``kappa`` (the item's quadratic-weighted agreement beyond chance, see
:func:`item_kappa`), ``n_annotators`` and ``agreement_variance`` (the largest per-axis variance of
the item's scores). Rejected items carry the same ``quality_metrics``, which the re-annotation
tiers read.

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
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from evalpipe.annotation.agreement import QUADRATIC_DISAGREEMENT, annotator_kappas
from evalpipe.annotation.schema import (
    AXES,
    CONSENSUS_ID,
    LABELS,
    Annotation,
    annotator_kind,
    to_long_frame,
)
from evalpipe.errors import InputError
from evalpipe.params_schema import default_of

METHODS = ("weighted_average", "median", "majority", "kappa_weighted")


def _round_half_up(x: float) -> int:
    return int(min(max(math.floor(x + 0.5), LABELS[0]), LABELS[-1]))


def _weighted_mean(scores: Sequence[int], weights: Sequence[float]) -> float:
    total = sum(weights)
    if total <= 0:
        return sum(scores) / len(scores)
    return sum(s * w for s, w in zip(scores, weights, strict=True)) / total


def aggregate_scores(
    scores: Sequence[int],
    confidences: Sequence[float],
    *,
    method: str,
    kappa_weights: Sequence[float] | None = None,
) -> float:
    """The unrounded consensus value of one item and axis (the float training label).

    Parameters
    ----------
    scores, confidences:
        Parallel, non-empty: the voting ratings.
    method:
        ``weighted_average`` (confidence-weighted mean) | ``median`` | ``majority`` (the winning
        score) | ``kappa_weighted`` (mean weighted by ``kappa_weights``).
    kappa_weights:
        For ``kappa_weighted``: each voter's mean pairwise kappa (negative counts as 0; all 0:
        the plain mean).

    Returns
    -------
    float

    >>> round(aggregate_scores([3, 4, 3], [0.9, 0.9, 0.9], method="weighted_average"), 4)
    3.3333
    >>> round(aggregate_scores([1, 3], [0.9, 0.9], method="kappa_weighted",
    ...                        kappa_weights=[0.8, 0.2]), 4)
    1.4
    """
    if not scores:
        raise ValueError("no scores to merge")
    if method == "weighted_average":
        return _weighted_mean(scores, confidences)
    if method == "kappa_weighted":
        if kappa_weights is None or len(kappa_weights) != len(scores):
            raise ValueError("kappa_weighted needs one kappa weight per score")
        return _weighted_mean(scores, [max(0.0, w) for w in kappa_weights])
    if method == "median":
        return float(statistics.median(scores))
    if method == "majority":
        votes: dict[int, list[float]] = defaultdict(list)
        for s, c in zip(scores, confidences, strict=True):
            votes[s].append(c)
        return float(min(votes, key=lambda s: (-len(votes[s]), -round(sum(votes[s]), 9), s)))
    raise InputError(f"unknown merge method {method!r} (expected one of {', '.join(METHODS)})")


def merge_scores(
    scores: Sequence[int],
    confidences: Sequence[float],
    *,
    method: str,
    kappa_weights: Sequence[float] | None = None,
) -> int:
    """One consensus score (1-5) from the voting ratings of one item and axis: the
    :func:`aggregate_scores` value rounded half up.

    Parameters
    ----------
    scores, confidences:
        Parallel, non-empty.
    method:
        ``weighted_average`` | ``median`` | ``majority`` | ``kappa_weighted``.
    kappa_weights:
        For ``kappa_weighted``: each voter's mean pairwise kappa.

    Returns
    -------
    int

    >>> merge_scores([2, 3, 5], [0.9, 0.9, 0.9], method="median")
    3
    >>> merge_scores([1, 2], [0.8, 0.9], method="majority")
    2
    """
    return _round_half_up(
        aggregate_scores(scores, confidences, method=method, kappa_weights=kappa_weights)
    )


def _latest(timestamps: Iterable[str]) -> str:
    # The consensus carries its newest input's timestamp: deterministic, unlike the wall clock.
    return max(timestamps, key=lambda t: (datetime.fromisoformat(t), t))


def merge_annotations(
    annotations: Sequence[Annotation],
    method: str = default_of("annotation.merge_method"),
    *,
    min_confidence: float = 0.0,
    annotator_weights: Mapping[str, Mapping[str, float | None]] | None = None,
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
    annotator_weights:
        For ``kappa_weighted``: ``{annotator_id: {axis: mean pairwise kappa}}``.

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
        w = _kappa_weights(voters, axis, annotator_weights) if method == "kappa_weighted" else None
        scores[axis] = merge_scores(s, c, method=method, kappa_weights=w)
        conf[axis] = round(sum(c) / len(c), 4)
    return Annotation(
        id=annotations[0].id,
        annotator_id=CONSENSUS_ID,
        timestamp=_latest(a.timestamp for a in annotations),
        annotations=scores,
        confidence=conf,
    )


def _kappa_weights(
    voters: Sequence[Annotation],
    axis: str,
    weights: Mapping[str, Mapping[str, float | None]] | None,
) -> list[float]:
    if weights is None:
        raise ValueError("kappa_weighted needs the annotators' kappas (annotator_weights)")
    return [float(weights.get(a.annotator_id, {}).get(axis) or 0.0) for a in voters]


def expected_disagreement(scores: Sequence[int]) -> float:
    """Quadratic disagreement (``(k - l)^2 / 16``) of two ratings drawn independently from the
    pooled scores: the chance term of the per-item kappa.

    >>> expected_disagreement([1, 1, 1, 1])
    0.0
    >>> expected_disagreement([1, 5])
    0.5
    """
    if not scores:
        return 0.0
    counts = [0.0] * len(LABELS)
    for s in scores:
        counts[s - LABELS[0]] += 1
    p = [c / len(scores) for c in counts]
    return float(
        sum(
            p[k] * p[m] * QUADRATIC_DISAGREEMENT[k, m]
            for k in range(len(LABELS))
            for m in range(len(LABELS))
        )
    )


def item_kappa(
    item_scores: Mapping[str, Sequence[int]], chance: Mapping[str, float]
) -> float | None:
    """An item's quadratic-weighted agreement beyond chance, averaged over the axes.

    Per axis ``1 - D_o / D_e``: ``D_o`` is the mean quadratic disagreement (``(k - l)^2 / 16``)
    over the item's rating pairs, ``D_e`` the disagreement expected by chance from the axis's
    pooled scores (:func:`expected_disagreement`; the same chance term as Fleiss' per-item
    agreement). 1 is perfect agreement, 0 chance level; an axis whose pooled scores are all equal
    has no chance term and is left out. ``None`` with fewer than two ratings or no axis left.

    >>> item_kappa({"social": [3, 4, 3]}, {"social": 0.25})
    0.8333
    """
    values = []
    for axis, scores in item_scores.items():
        n = len(scores)
        d_e = chance.get(axis, 0.0)
        if n < 2 or d_e <= 0:
            continue
        pairs = [(a, b) for i, a in enumerate(scores) for b in scores[i + 1 :]]
        d_o = sum(float(QUADRATIC_DISAGREEMENT[a - 1, b - 1]) for a, b in pairs) / len(pairs)
        values.append(1.0 - d_o / d_e)
    return round(float(sum(values) / len(values)), 4) if values else None


def quality_metrics(
    item_scores: Mapping[str, Sequence[int]], chance: Mapping[str, float]
) -> dict[str, Any]:
    """``{kappa, n_annotators, agreement_variance}`` of one item: :func:`item_kappa`, the
    number of ratings, and the largest per-axis (population) variance of its scores."""
    n = max((len(v) for v in item_scores.values()), default=0)
    variances = []
    for scores in item_scores.values():
        if scores:
            mean = sum(scores) / len(scores)
            variances.append(sum((x - mean) ** 2 for x in scores) / len(scores))
    return {
        "kappa": item_kappa(item_scores, chance),
        "n_annotators": n,
        "agreement_variance": round(max(variances), 4) if variances else None,
    }


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
    min_pair_overlap: int = default_of("annotation.min_pair_overlap"),
    annotator_weights: Mapping[str, Mapping[str, float | None]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Consensus records for the accepted items and rejection records for the rest.

    Parameters
    ----------
    annotations:
        Human ratings (several items, several annotators), plus any adjudications
        (``adjudicated:<name>``), which take precedence.
    method:
        ``weighted_average`` | ``median`` | ``majority`` | ``kappa_weighted``.
    min_confidence:
        Ratings below it do not vote.
    max_item_range:
        An item is rejected when, on any axis, its ratings span more than this many points.
    min_annotators:
        An item rated by fewer annotators is rejected (agreement cannot be checked).
    exclude:
        Annotator ids left out entirely (e.g. outliers with low agreement).
    min_pair_overlap:
        For ``kappa_weighted``: annotator pairs sharing fewer items do not count towards an
        annotator's kappa (as in :func:`~evalpipe.annotation.agreement.annotator_kappas`).
    annotator_weights:
        For ``kappa_weighted``: ``{annotator_id: {axis: kappa}}`` to use instead of computing
        them from ``annotations``.

    Returns
    -------
    (consensus, rejected)
        Consensus: the annotation format with annotator_id ``consensus`` plus ``method``,
        ``n_annotators``, ``aggregated_scores`` (the method's unrounded value per axis),
        ``quality_metrics`` (``kappa, n_annotators, agreement_variance``), ``weighted_mean``
        (unrounded confidence-weighted mean per axis), ``dispersion`` per axis, ``adjudicated``
        (bool), ``source`` (``"adjudicated"`` or ``"merged"``) and, for adjudicated items,
        ``adjudicator`` and ``merged`` (the merge's scores, for audit). Rejected: ``{id,
        reasons: [...], ratings: {annotator: {axis: score}}, quality_metrics}``. Both sorted
        by id.
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
    if method == "kappa_weighted" and annotator_weights is None:
        rated = [a for group in by_item.values() for a in group]
        annotator_weights = (
            annotator_kappas(to_long_frame(rated), min_pair_overlap=min_pair_overlap)
            if rated
            else {}
        )
    chance = {
        axis: expected_disagreement([a.annotations[axis] for g in by_item.values() for a in g])
        for axis in AXES
    }
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
            "aggregated_scores": {},
            "quality_metrics": quality_metrics(
                {axis: [a.annotations[axis] for a in group] for axis in AXES}, chance
            ),
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
            w = (
                _kappa_weights(voters, axis, annotator_weights)
                if method == "kappa_weighted"
                else None
            )
            value = aggregate_scores(s, c, method=method, kappa_weights=w)
            record["aggregated_scores"][axis] = round(value, 4)
            record["annotations"][axis] = _round_half_up(value)
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
            record["aggregated_scores"] = {
                axis: float(adjudication.annotations[axis]) for axis in AXES
            }
            record["confidence"] = {axis: adjudication.confidence[axis] for axis in AXES}
            record["adjudicator"] = adjudication.annotator_id
            reasons = []
        if reasons:
            rejected.append(
                {
                    "id": item,
                    "reasons": reasons,
                    "ratings": {a.annotator_id: dict(a.annotations) for a in group},
                    "quality_metrics": record["quality_metrics"],
                }
            )
        else:
            consensus.append(record)
    return consensus, rejected
