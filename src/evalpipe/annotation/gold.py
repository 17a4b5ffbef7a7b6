"""Gold items hidden in the live queue: reading the gold file and scoring annotators on it.

The gold file has the qualification set's format: one task per line (``id, user, response,
context``) plus ``reference: {axis: 1-5}``. The web app mixes a share of them into each
annotator's queue, looking like any other item; their ratings never leave the database as
ratings (no batch, no agreement, no consensus) and are scored here instead: per annotator the
share of axes rated exactly as the reference (``accuracy``), the mean absolute difference
(``mae``), and the drift, accuracy on the later half of their gold ratings minus the earlier
half, in the order they were saved (negative: getting worse).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from evalpipe.annotation.schema import AXES, LABELS, DialoguePair, validate_task
from evalpipe.jsonl_records import read_jsonl_records


def read_gold(path: str | os.PathLike[str]) -> list[tuple[DialoguePair, dict[str, int]]]:
    """The gold items of a JSONL file: ``(task, reference)`` each, in file order.

    Raises
    ------
    InputError
        Listing every bad line (``file:line``): invalid JSON or task, a reference that is not
        ``{axis: 1-5}`` on every axis, a repeated id.
    """
    out = []
    for _, obj in read_jsonl_records(path, _gold_problems, what="gold file"):
        task = DialoguePair(obj["id"], obj["user"], obj["response"], list(obj.get("context", [])))
        out.append((task, {a: int(obj["reference"][a]) for a in AXES}))
    return out


def _gold_problems(obj: Any, *, where: str) -> list[str]:
    """A task's problems, and a reference that is not ``{axis: 1-5}`` on every axis."""
    found = validate_task(obj, where=where)
    ref = obj.get("reference") if isinstance(obj, dict) else None
    if not isinstance(ref, dict) or any(ref.get(a) not in LABELS for a in AXES):
        found.append(f'{where}: field "reference": expected {{axis: 1-5}} for every axis')
    return found


def score_gold(
    ratings: Sequence[Mapping[str, Any]], reference: Mapping[str, Mapping[str, int]]
) -> list[dict[str, Any]]:
    """Per-annotator accuracy and drift on the gold items.

    Parameters
    ----------
    ratings:
        ``{annotator_id, item_id, scores: {axis: 1-5}, saved_at}`` of gold items.
    reference:
        ``{item_id: {axis: 1-5}}``.

    Returns
    -------
    list[dict]
        ``{annotator_id, n, accuracy, mae, early_accuracy, late_accuracy, drift}`` sorted by
        annotator; the halves split the ratings in save order (the middle one goes to the later
        half); ``drift`` is ``late - early``, ``None`` with fewer than two gold ratings.

    >>> ref = {"g1": {a: 1 for a in AXES}, "g2": {a: 2 for a in AXES}}
    >>> rows = [{"annotator_id": "x", "item_id": "g1", "scores": {a: 1 for a in AXES},
    ...          "saved_at": "1"},
    ...         {"annotator_id": "x", "item_id": "g2", "scores": {a: 4 for a in AXES},
    ...          "saved_at": "2"}]
    >>> r = score_gold(rows, ref)[0]
    >>> r["accuracy"], r["mae"], r["drift"]
    (0.5, 1.0, -1.0)
    """
    by: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in ratings:
        if r["item_id"] in reference:
            by[r["annotator_id"]].append(r)
    out = []
    for who in sorted(by):
        rows = sorted(by[who], key=lambda r: (r["saved_at"], r["item_id"]))
        hits = [
            sum(r["scores"][a] == reference[r["item_id"]][a] for a in AXES) / len(AXES)
            for r in rows
        ]
        errors = [
            sum(abs(r["scores"][a] - reference[r["item_id"]][a]) for a in AXES) / len(AXES)
            for r in rows
        ]
        half = len(rows) // 2
        early = sum(hits[:half]) / half if half else None
        late = sum(hits[half:]) / (len(hits) - half) if half else None
        out.append(
            {
                "annotator_id": who,
                "n": len(rows),
                "accuracy": round(sum(hits) / len(hits), 4),
                "mae": round(sum(errors) / len(errors), 4),
                "early_accuracy": None if early is None else round(early, 4),
                "late_accuracy": None if late is None else round(late, 4),
                "drift": None if early is None else round(late - early, 4),
            }
        )
    return out
