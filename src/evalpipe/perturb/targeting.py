"""Occlusion targeting for the count design (``perturb.targeting``; docs/perturbation.md,
"Targeting").

A word's *importance* to a model is how much the log-likelihood of the model's own clean answer
drops when that one word carries its typo (occlusion, a black-box stand-in for gradient or
relevance attributions): ``importance = loglik(answer | clean prompt) - loglik(answer | prompt
with the word mistyped)``. The typo of each word is the count design's own (the same hashed
key, the same characters), so a targeted row differs from the random row of the same example
only in which words are edited.

From the importances this module builds, with :func:`evalpipe.perturb.count.perturb_count_frame`
and its ``order_by`` hook, the targeted arms of one model:

- ``targeted:most`` / ``targeted:least``: for each dose k, the k most (least) important words
  edited; the count design's random rows (condition ``typo``) are the paired random-k arm;
- ``restored:<order>:<r>``: the random row of the largest dose k with r = 1, 2, 3 (r < k) of
  its k words put back, most important first, in the random order, or least important first
  (so the row keeps k - r typos, ``variant "k=<k-r>"``).

Ties keep the random order; an example whose clean answer is empty or unscored gets no
targeted rows (counted by the study). Every function is pure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from evalpipe.arms import ORIGINAL, TYPO, restored, targeted
from evalpipe.errors import InputError
from evalpipe.perturb.columns import Edit
from evalpipe.perturb.count import Word, perturb_count_frame
from evalpipe.perturb.eligibility import Eligibility
from evalpipe.perturb.loop import Example
from evalpipe.perturb.ops import Probabilities

TARGETINGS = ("random", "importance")
TARGETED_ORDERS = ("most", "least")
RESTORE_ORDERS = ("most", "random", "least")
RESTORE_SIZES = (1, 2, 3)  # words put back of the largest dose's row

ExampleKey = tuple[str, str]  # (benchmark, example_id)
WordKey = tuple[str, int]  # (field, position among the field's word tokens)


def validate_targeting(value: Any, *, source: str = "params.yaml") -> str:
    """``perturb.targeting``: one of ``TARGETINGS``.

    >>> validate_targeting("importance")
    'importance'
    """
    if value not in TARGETINGS:
        raise InputError(
            f"{source}: perturb.targeting must be one of {', '.join(TARGETINGS)}, found {value!r}"
        )
    return str(value)


def clean_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The plain arm's clean rows of a perturbed set (first draw), one per example: the
    benchmark rows the targeted arms are perturbed from."""
    keep = (rows["variant"] == ORIGINAL) & (rows["condition"] == TYPO) & (rows["draw"] == 0)
    return rows.loc[keep].drop_duplicates(["benchmark", "example_id"]).reset_index(drop=True)


def candidate_edits(
    clean: pd.DataFrame,
    *,
    probabilities: Probabilities,
    seed: int,
    eligibility: Eligibility | None,
    source: str,
) -> dict[ExampleKey, list[Edit]]:
    """Every editable eligible word of each example with its count-design edit (draw 0), in
    the count design's random order."""
    found: dict[tuple[str, str, int], list[Edit]] = {}
    perturb_count_frame(
        clean, probabilities=probabilities, seed=seed, counts=[1], eligibility=eligibility,
        source=source, all_edits=found,
    )  # fmt: skip
    return {(b, i): edits for (b, i, d), edits in found.items() if d == 0}


def occluded_fields(fields: str, edit: Edit) -> str:
    """An example's ``fields`` JSON with only ``edit``'s word mistyped.

    >>> from evalpipe.perturb.ops import Operation
    >>> op = Operation("delete", 1, "a", None, "ct")
    >>> occluded_fields('{"q": "a cat"}', Edit("q", 1, 2, 5, "cat", op))
    '{"q": "a ct"}'
    """
    parsed = json.loads(fields)
    text = parsed[edit.field]
    parsed[edit.field] = text[: edit.start] + edit.operation.perturbed + text[edit.end :]
    return json.dumps(parsed, ensure_ascii=False, sort_keys=True)


def importances(clean: float, occluded: Sequence[float]) -> list[float] | None:
    """Each word's log-likelihood drop (clean minus occluded); None when any score is missing
    (NaN: the request was not scored), so the example gets no targeted rows.

    >>> importances(-1.0, [-3.0, -1.5])
    [2.0, 0.5]
    >>> importances(float("nan"), [-1.0]) is None
    True
    """
    values = [clean, *occluded]
    if any(v is None or math.isnan(v) for v in values):
        return None
    return [clean - v for v in occluded]


def _ranked(order: list[int], words: list[Word], scores: Mapping[WordKey, float]) -> list[int]:
    """``order`` stably sorted by importance, highest first; unscored words (uneditable) last."""

    def key(i: int) -> float:
        value = scores.get((words[i].field, words[i].position))
        return -value if value is not None else math.inf

    return sorted(order, key=key)


def importance_order(scores: Mapping[ExampleKey, Mapping[WordKey, float]], *, least: bool):
    """The ``order_by`` hook that edits the most (``least``: the least) important words first."""

    def order_by(ex: Example, draw: int, words: list[Word], order: list[int]) -> list[int]:
        mine = scores[(ex.benchmark, ex.example_id)]
        flipped = {w: -v for w, v in mine.items()} if least else mine
        return _ranked(order, words, flipped)

    return order_by


def restore_order(
    scores: Mapping[ExampleKey, Mapping[WordKey, float]],
    candidates: Mapping[ExampleKey, list[Edit]],
    *,
    k: int,
    r: int,
    how: str,
):
    """The ``order_by`` hook whose first k - r words are the random k-row's words left after
    putting r back: the r most important (``how`` ``"most"``), the r last of the random order
    (``"random"``: the count design's own k - r row, as the doses are nested) or the r least
    important (``"least"``)."""

    def order_by(ex: Example, draw: int, words: list[Word], order: list[int]) -> list[int]:
        key = (ex.benchmark, ex.example_id)
        base = [(e.field, e.occurrence) for e in candidates[key][:k]]
        if how == "random":
            kept = base[: k - r]
        else:
            mine = scores[key]
            ranked = sorted(base, key=lambda w: -mine[w])  # stable: ties in the random order
            put_back = ranked[:r] if how == "most" else ranked[len(ranked) - r :]
            kept = [w for w in base if w not in put_back]
        index = {(w.field, w.position): i for i, w in enumerate(words)}
        first = [index[w] for w in kept]
        return first + [i for i in order if i not in set(first)]

    return order_by


def targeted_arms(
    clean: pd.DataFrame,
    scores: Mapping[ExampleKey, Mapping[WordKey, float]],
    candidates: Mapping[ExampleKey, list[Edit]],
    *,
    counts: Sequence[int],
    probabilities: Probabilities,
    seed: int,
    eligibility: Eligibility | None,
    source: str,
) -> list[pd.DataFrame]:
    """The targeted and restored arms' rows (each with its clean rows), for the examples of
    ``clean`` that have ``scores``; the order of the arms is fixed (``TARGETED_ORDERS``, then
    ``RESTORE_ORDERS`` x r)."""
    keys = list(zip(clean["benchmark"].astype(str), clean["example_id"].astype(str), strict=True))
    scored = clean.loc[[key in scores for key in keys]].reset_index(drop=True)
    if scored.empty:
        return []

    def run(frame: pd.DataFrame, doses: Sequence[int], order_by: Any) -> pd.DataFrame:
        return perturb_count_frame(
            frame, probabilities=probabilities, seed=seed, counts=doses, eligibility=eligibility,
            source=source, order_by=order_by,
        ).to_pandas()  # fmt: skip

    arms = []
    for how in TARGETED_ORDERS:
        order_by = importance_order(scores, least=how == "least")
        arms.append(run(scored, counts, order_by).assign(condition=targeted(how)))
    k = max(counts)
    for r in [r for r in RESTORE_SIZES if r < k]:
        # only examples whose random k-row exists (k editable words)
        full = scored.loc[
            [len(candidates.get((b, i), ())) >= k for b, i in
             zip(scored["benchmark"].astype(str), scored["example_id"].astype(str), strict=True)]
        ].reset_index(drop=True)  # fmt: skip
        if full.empty:
            continue
        for how in RESTORE_ORDERS:
            order_by = restore_order(scores, candidates, k=k, r=r, how=how)
            arms.append(run(full, [k - r], order_by).assign(condition=restored(how, r)))
    return arms
