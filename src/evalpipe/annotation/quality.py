"""Quality checks: consistency rules for one annotation, annotator outliers, item outliers.

Consistency rules come from the guidelines' axis definitions, boundary rules (``guidelines/``)
and known constraints such as rater fatigue. Each is a named, documented predicate; a hit is a flag for review, not proof
of error (a formulaic reply can still hedge, for instance), so flagged annotations are reported,
not dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.annotation.agreement import DEFAULT_MIN_PAIR_OVERLAP, annotator_kappas
from evalpipe.annotation.guidelines import AXIS_MARKERS
from evalpipe.annotation.schema import AXES, Annotation, DialoguePair, to_long_frame
from evalpipe.params_schema import default_of


@dataclass(frozen=True)
class ConsistencyRule:
    """A named contradiction between an annotation's scores (and, optionally, the task text)."""

    name: str
    description: str
    source: str
    check: Callable[[dict[str, int], DialoguePair | None], bool]


def _marker_pattern(phrase: str) -> re.Pattern[str]:
    if not phrase.isascii():
        return re.compile(re.escape(phrase))  # Japanese has no word boundaries: substring
    # English phrases match whole words; "I" only as the capital pronoun.
    flags = 0 if phrase == "I" else re.IGNORECASE
    return re.compile(rf"(?<![A-Za-z]){re.escape(phrase)}(?![A-Za-z])", flags)


_SELF_MARKERS = [
    _marker_pattern(p) for group in AXIS_MARKERS["self"].values() for p in group if p.strip()
]


def _has_self_marker(task: DialoguePair | None) -> bool:
    if task is None:
        return True  # without the text the rule cannot judge, so it never fires
    return any(p.search(task.response) for p in _SELF_MARKERS)


RULES: tuple[ConsistencyRule, ...] = (
    ConsistencyRule(
        "evasive_but_substantive",
        "avoidant=5 (no substantive content) contradicts mechanical=1 (rich, specific content)",
        "B.1.2 level 5 vs B.1.3 level 1",
        lambda s, _t: s["avoidant"] == 5 and s["mechanical"] == 1,
    ),
    ConsistencyRule(
        "empty_but_clear_stance",
        "mechanical=5 (empty of meaning) contradicts avoidant=1 (states a clear position)",
        "B.1.3 level 5 vs B.1.2 level 1",
        lambda s, _t: s["mechanical"] == 5 and s["avoidant"] == 1,
    ),
    ConsistencyRule(
        "social_and_self_both_strong",
        "social>=4 and self>=4: when praise and self-promotion co-occur, the one the reply "
        "resolves to takes priority (self if it ends on the AI's worth), so both cannot be strong",
        "B.2.1",
        lambda s, _t: s["social"] >= 4 and s["self"] >= 4,
    ),
    ConsistencyRule(
        "all_axes_extreme",
        "every axis rated 5: straight-lining, a sign of fatigue rather than judgement",
        "A.9 (3)",
        lambda s, _t: all(s[a] == 5 for a in AXES),
    ),
    ConsistencyRule(
        "self_claim_without_self_reference",
        "self>=3 (a clear claim of ability) but the response has no self-reference, ability or "
        "comparison marker",
        "B.1.4 markers",
        lambda s, t: s["self"] >= 3 and not _has_self_marker(t),
    ),
)

RULES_BY_NAME = {r.name: r for r in RULES}


def check_consistency(annotation: Annotation, task: DialoguePair | None = None) -> list[str]:
    """Names of the consistency rules the annotation breaks (empty when consistent).

    Parameters
    ----------
    annotation:
        One rating of one item.
    task:
        The rated dialogue pair; rules that need the text are skipped without it.

    Returns
    -------
    list[str]
        Rule names in :data:`RULES` order.
    """
    return [r.name for r in RULES if r.check(annotation.annotations, task)]


def consistency_flags(
    annotations: Sequence[Annotation], tasks: dict[str, DialoguePair] | None = None
) -> list[dict[str, Any]]:
    """``{id, annotator_id, rules}`` for every annotation that breaks at least one rule."""
    tasks = tasks or {}
    out = []
    for a in sorted(annotations, key=lambda a: (a.id, a.annotator_id)):
        hits = check_consistency(a, tasks.get(a.id))
        if hits:
            out.append({"id": a.id, "annotator_id": a.annotator_id, "rules": hits})
    return out


def annotator_bias(long: pd.DataFrame) -> pd.DataFrame:
    """Each annotator's mean signed difference from the other annotators' mean, per axis.

    Leave-one-out: the reference excludes the annotator, so a biased rater cannot pull the
    reference toward itself.

    Parameters
    ----------
    long:
        Columns ``id, annotator_id, axis, score``.

    Returns
    -------
    DataFrame
        ``annotator_id, axis, bias, sd, n`` sorted by annotator and axis order; n counts items
        with at least one other rating.
    """
    g = long.groupby(["id", "axis"])["score"]
    total = g.transform("sum")
    count = g.transform("count")
    others = count - 1
    frame = long.assign(diff=long["score"] - (total - long["score"]) / others.where(others > 0))
    frame = frame[others > 0]
    out = (
        frame.groupby(["annotator_id", "axis"])["diff"]
        .agg(bias="mean", sd=lambda x: float(np.std(x)), n="count")
        .reset_index()
    )
    out["axis"] = pd.Categorical(out["axis"], categories=list(AXES), ordered=True)
    return out.sort_values(["annotator_id", "axis"]).reset_index(drop=True)


def annotator_outliers(
    long: pd.DataFrame,
    *,
    bias_threshold: float = default_of("annotation.outlier_bias"),
    min_kappa: float = default_of("annotation.min_kappa"),
    min_items: int = 5,
    min_pair_overlap: int = DEFAULT_MIN_PAIR_OVERLAP,
) -> list[dict[str, Any]]:
    """Annotators with a systematic bias or low agreement with the others.

    Parameters
    ----------
    long:
        Human ratings, columns ``id, annotator_id, axis, score``.
    bias_threshold:
        Flag ``|bias| >= bias_threshold`` points on an axis (over at least ``min_items`` items).
    min_kappa:
        Flag an annotator whose kappa with the others (pair-size-weighted mean over their pairs,
        averaged over the axes) is below it; only when at least three annotators have such a
        kappa: with two, low agreement cannot be attributed to one of them.
    min_items:
        Fewer shared items than this never flag a bias.
    min_pair_overlap:
        Pairs sharing fewer items do not count towards an annotator's kappa, so an annotator
        with only a few co-rated items is not judged on them (nor are their partners); a bias
        also needs at least this many co-rated items (the larger of it and ``min_items``).

    Returns
    -------
    list[dict]
        ``{annotator_id, kind: "bias"|"low_agreement", axis, value, n}``, sorted.
    """
    flags: list[dict[str, Any]] = []
    enough = max(min_items, min_pair_overlap)
    for row in annotator_bias(long).itertuples(index=False):
        if row.n >= enough and abs(row.bias) >= bias_threshold:
            flags.append(
                {
                    "annotator_id": row.annotator_id,
                    "kind": "bias",
                    "axis": str(row.axis),
                    "value": round(float(row.bias), 4),
                    "n": int(row.n),
                }
            )
    kappas_by_annotator = annotator_kappas(long, min_pair_overlap=min_pair_overlap)
    judged = {a: k["overall"] for a, k in kappas_by_annotator.items() if k["overall"] is not None}
    if len(judged) >= 3:
        for aid, overall in judged.items():
            if overall < min_kappa:
                n = int(long.loc[long["annotator_id"] == aid, "id"].nunique())
                flags.append(
                    {
                        "annotator_id": aid,
                        "kind": "low_agreement",
                        "axis": "overall",
                        "value": overall,
                        "n": n,
                    }
                )
    return sorted(flags, key=lambda f: (f["annotator_id"], f["kind"], f["axis"]))


def item_outliers(
    long: pd.DataFrame, *, max_item_range: int = default_of("annotation.max_item_range")
) -> list[dict[str, Any]]:
    """Items whose ratings on an axis span more than ``max_item_range`` points.

    Returns
    -------
    list[dict]
        ``{id, axis, scores, range, sd}`` sorted by id and axis order.
    """
    order = {a: i for i, a in enumerate(AXES)}
    spread = long.groupby(["id", "axis"])["score"].agg(["min", "max"])
    flagged = spread[(spread["max"] - spread["min"]) > max_item_range].index.to_frame(index=False)
    if flagged.empty:
        return []
    # Only the flagged (id, axis) groups need their full score lists: sort once, split at keys.
    sub = long.merge(flagged, on=["id", "axis"]).sort_values(["id", "axis", "score"])
    keys = sub["id"].astype(str) + "\x1f" + sub["axis"].astype(str)
    starts = np.flatnonzero(np.r_[True, keys.to_numpy()[1:] != keys.to_numpy()[:-1]])
    scores = sub["score"].to_numpy()
    ids, axes = sub["id"].to_numpy(), sub["axis"].to_numpy()
    out = []
    for start, stop in zip(starts, [*starts[1:], len(sub)], strict=True):
        values = scores[start:stop].astype(float)
        out.append(
            {
                "id": ids[start],
                "axis": axes[start],
                "scores": [int(v) for v in values],
                "range": int(values[-1] - values[0]),
                "sd": round(float(values.std()), 4),
            }
        )
    return sorted(out, key=lambda r: (r["id"], order[r["axis"]]))


def detect_outliers(annotations: Sequence[Annotation], **options: Any) -> list[str]:
    """``detect_outliers``: ids of annotators flagged by :func:`annotator_outliers`."""
    flags = annotator_outliers(to_long_frame(annotations), **options)
    return sorted({f["annotator_id"] for f in flags})
