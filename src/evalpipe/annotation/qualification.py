"""The annotator qualification test: 30 items, passed at kappa >= 0.60.

The items ship with the guidelines (``guidelines/qualification.jsonl``): tasks in the task
format plus ``reference``, the reference rating on each axis. An annotator's ratings are
scored per axis by quadratic weighted kappa against the reference over the fixed categories 1-5
(the same estimator as inter-annotator agreement, :mod:`evalpipe.annotation.agreement`);
``overall`` is the mean of the four axis kappas, and the annotator passes when
``overall >= threshold`` with every item rated.

The reference ratings, like the worked examples in ``examples.json``, were written for evalpipe
by its authors against the guideline anchors; they are a teaching and screening aid, not an
externally validated gold standard.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from importlib import resources
from typing import Any

from evalpipe.annotation.agreement import quadratic_weighted_kappa
from evalpipe.annotation.schema import AXES, LABELS, DialoguePair
from evalpipe.errors import InputError

QUALIFICATION_FILE = "qualification.jsonl"
DEFAULT_THRESHOLD = 0.60


def qualification_items() -> list[dict[str, Any]]:
    """The bundled qualification items: ``{id, user, response, context, reference}`` each.

    Returns
    -------
    list[dict]
        In file order (ids ``qual_001`` ... ``qual_030``).
    """
    text = (
        resources.files("evalpipe.annotation.guidelines")
        .joinpath(QUALIFICATION_FILE)
        .read_text(encoding="utf-8")
    )
    items = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        problems = _reference_problems(obj.get("reference"))
        if problems:
            raise InputError(f'{QUALIFICATION_FILE}:{line_no}: field "reference": {problems}')
        items.append(obj)
    return items


def qualification_tasks() -> list[DialoguePair]:
    """The qualification items as tasks (without their reference ratings)."""
    return [
        DialoguePair(i["id"], i["user"], i["response"], list(i.get("context", [])))
        for i in qualification_items()
    ]


def qualification_reference() -> dict[str, dict[str, int]]:
    """``{item_id: {axis: reference score}}`` of the bundled qualification items."""
    return {i["id"]: dict(i["reference"]) for i in qualification_items()}


def _reference_problems(block: Any) -> str:
    if not isinstance(block, Mapping):
        return f"expected an object {{axis: 1-5}}, got {type(block).__name__}"
    bad = [a for a in AXES if not _valid_score(block.get(a))]
    return f"axes {bad} need an integer 1-5" if bad else ""


def _valid_score(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in LABELS


def score_qualification(
    ratings: Mapping[str, Mapping[str, int]],
    reference: Mapping[str, Mapping[str, int]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """Score one annotator's qualification ratings against the reference.

    Parameters
    ----------
    ratings:
        ``{item_id: {axis: 1-5}}`` from the annotator. Items not in ``reference`` are ignored;
        an axis left out of an item counts as not rated.
    reference:
        ``{item_id: {axis: 1-5}}``, e.g. :func:`qualification_reference`.
    threshold:
        Pass mark for ``overall`` (0.60 by default).

    Returns
    -------
    dict
        ``axes``: per axis ``{kappa, n, passed, undefined_reason}`` (kappa is quadratic weighted,
        labels 1-5; ``None`` with a reason when undefined);
        ``overall``: mean of the axis kappas (``None`` when any axis is undefined);
        ``passed``: ``overall >= threshold`` and every reference item rated on every axis;
        ``n_items``, ``n_rated``, ``missing`` (reference ids not fully rated), ``threshold``,
        ``reason`` (why it did not pass, ``None`` when it passed).

    Raises
    ------
    InputError
        A rating that is not an integer 1-5 (names the item and axis).

    >>> ref = {"q1": dict.fromkeys(AXES, 1), "q2": dict.fromkeys(AXES, 5)}
    >>> score_qualification(ref, ref)["passed"]
    True
    """
    for item_id, block in ratings.items():
        for axis, value in block.items():
            if axis in AXES and not _valid_score(value):
                raise InputError(
                    f'qualification ratings, item {item_id!r}: field "{axis}": '
                    f"expected an integer 1-5, got {value!r}"
                )
    ref_ids = sorted(reference)
    missing = [i for i in ref_ids if not all(a in ratings.get(i, {}) for a in AXES)]
    axes: dict[str, Any] = {}
    for axis in AXES:
        common = [i for i in ref_ids if axis in ratings.get(i, {}) and axis in reference[i]]
        mine = [int(ratings[i][axis]) for i in common]
        ref = [int(reference[i][axis]) for i in common]
        kappa: float | None = None
        reason: str | None = None
        if not common:
            reason = "no rated items"
        else:
            qwk = quadratic_weighted_kappa(mine, ref)
            if math.isnan(qwk):
                reason = "constant ratings: annotator and reference use one and the same score"
            else:
                kappa = round(qwk, 4)
        axes[axis] = {
            "kappa": kappa,
            "n": len(common),
            "passed": kappa is not None and kappa >= threshold,
            "undefined_reason": reason,
        }
    kappas = [axes[a]["kappa"] for a in AXES]
    overall = None if any(k is None for k in kappas) else round(sum(kappas) / len(kappas), 4)
    if missing:
        reason = f"{len(missing)} of {len(ref_ids)} items not rated on every axis"
    elif overall is None:
        undefined = [a for a in AXES if axes[a]["kappa"] is None]
        reason = f"kappa undefined on {', '.join(undefined)}"
    elif overall < threshold:
        reason = f"overall kappa {overall:.2f} below {threshold:.2f}"
    else:
        reason = None
    return {
        "axes": axes,
        "overall": overall,
        "passed": reason is None,
        "threshold": threshold,
        "n_items": len(ref_ids),
        "n_rated": len(ref_ids) - len(missing),
        "missing": missing,
        "reason": reason,
    }
