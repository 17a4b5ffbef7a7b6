"""Rater screening beyond agreement: straight-liners, a score variance outside bounds, speed.

- ``straight_liner``: one score throughout an axis (over at least ``min_items`` ratings). Such a
  rater escapes the low-agreement check, since their pairwise kappa is undefined.
- ``variance``: the variance of an annotator's scores on an axis is above ``variance_max`` (the
  filtering protocol's 2.0: scores scattered over the scale) or below ``variance_min`` without
  being 0 (almost one score; exactly one score is a straight-liner).
- ``fast``: the annotator's median seconds per item is below ``fast_ratio`` times the team's
  median (the median over annotators of their medians), from ``annotation_duration`` in the
  batches; annotators without durations are not judged.

Each flag is a prompt for review, not proof: a campaign whose items are mostly free of
sycophancy gives many honest 1s.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from evalpipe.annotation.schema import AXES, Annotation
from evalpipe.params_schema import default_of


def rater_flags(
    annotations: Sequence[Annotation],
    *,
    min_items: int = default_of("annotation.rater_min_items"),
    fast_ratio: float = default_of("annotation.fast_ratio"),
    variance_min: float = default_of("annotation.rater_variance_min"),
    variance_max: float = default_of("annotation.rater_variance_max"),
) -> list[dict[str, Any]]:
    """Straight-liner, variance and speed flags of human annotators.

    Parameters
    ----------
    annotations:
        Human ratings; ``duration`` (seconds) where the batch recorded it.
    min_items:
        Annotators with fewer ratings (fewer timed ratings, for speed) are not judged.
    fast_ratio, variance_min, variance_max:
        Thresholds (params ``annotation.*``).

    Returns
    -------
    list[dict]
        ``{annotator_id, kind: "straight_liner"|"variance"|"fast", axis, value, n, threshold}``
        sorted by annotator, kind and axis order (``axis`` is ``"overall"`` for speed).

    >>> same = [Annotation(f"i{k}", "a", "2025-01-01T00:00:00Z", {x: 1 for x in AXES},
    ...                    {x: 1.0 for x in AXES}) for k in range(10)]
    >>> sorted({f["kind"] for f in rater_flags(same)})
    ['straight_liner']
    """
    by_rater: dict[str, list[Annotation]] = defaultdict(list)
    for a in annotations:
        by_rater[a.annotator_id].append(a)
    flags: list[dict[str, Any]] = []
    for who, mine in by_rater.items():
        if len(mine) < min_items:
            continue
        for axis in AXES:
            scores = [a.annotations[axis] for a in mine]
            var = statistics.pvariance(scores)
            if var == 0:
                flags.append(_flag(who, "straight_liner", axis, scores[0], len(mine), None))
            elif var < variance_min:
                flags.append(_flag(who, "variance", axis, var, len(mine), variance_min))
            elif var > variance_max:
                flags.append(_flag(who, "variance", axis, var, len(mine), variance_max))
    medians = {
        who: statistics.median(d)
        for who, mine in by_rater.items()
        if len(d := [a.duration for a in mine if a.duration is not None]) >= min_items
    }
    if len(medians) >= 2:
        team = statistics.median(medians.values())
        for who, median in medians.items():
            if median < fast_ratio * team:
                n = sum(a.duration is not None for a in by_rater[who])
                flags.append(_flag(who, "fast", "overall", median, n, round(fast_ratio * team, 4)))
    order = {a: i for i, a in enumerate((*AXES, "overall"))}
    return sorted(flags, key=lambda f: (f["annotator_id"], f["kind"], order[f["axis"]]))


def _flag(
    who: str, kind: str, axis: str, value: float, n: int, threshold: float | None
) -> dict[str, Any]:
    return {
        "annotator_id": who,
        "kind": kind,
        "axis": axis,
        "value": round(float(value), 4),
        "n": n,
        "threshold": threshold,
    }
