"""Choosing an answer by log-likelihood (lm-evaluation-harness's ``acc`` and ``acc_norm``).

Each choice is a continuation of the same prompt; the model's answer is the choice whose
continuation has the highest total log-probability (``acc``), or the highest log-probability
per character of the continuation (``acc_norm``, lm-eval's length normalisation, which keeps a
long choice from losing only because it has more tokens to pay for).

The engine's side (which benchmarks, the requests, the ``ll_*`` columns of the outputs) is
:mod:`evalpipe.inference.loglikelihood`; this module scores those columns (docs/scoring.md,
"Log-likelihood scoring"):

- :func:`score_loglikelihood` scores those columns into the frame
  :func:`evalpipe.scoring.scorer.score_frame` produces, so reports work unchanged;
- :func:`method_agreement` compares the generated and the log-likelihood answers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.errors import InputError
from evalpipe.inference.loglikelihood import LL_COLUMNS, not_applicable_reason
from evalpipe.scoring.metrics import best_score, exact_match
from evalpipe.scoring.scorer import accepted_golds, check_columns, with_scores

METHODS = ("generate", "loglikelihood", "both")
# The columns score_loglikelihood reads (besides the gold columns).
_SCORED_FROM = ("ll_choices", "ll_continuations", "ll_logprobs")
# parse_status of an answer chosen by log-likelihood: the statuses the reports know
# (strict | fallback | unparsed); a chosen label is a committed, in-format answer.
CHOSEN = "strict"
UNPARSED = "unparsed"
# kappa's category for a row without an answer; never a label (labels are stripped words)
_NO_ANSWER = "<unparsed>"


def pick_choice(logprobs: Sequence[float], continuations: Sequence[str]) -> tuple[int, int]:
    """Indices of the choice picked by ``acc`` (total log-probability) and ``acc_norm``
    (log-probability per character of the continuation). Ties go to the first choice.

    Parameters
    ----------
    logprobs : one total log-probability per choice.
    continuations : the scored texts, for their lengths.

    Returns
    -------
    (acc_index, acc_norm_index)

    Examples
    --------
    >>> pick_choice([-2.0, -3.0], [" no", " yes, indeed"])
    (0, 1)
    """
    if len(logprobs) != len(continuations) or not logprobs:
        raise InputError(
            f"pick_choice: {len(logprobs)} log-probabilities for {len(continuations)} choices"
        )
    values = np.asarray(logprobs, dtype=float)
    lengths = np.asarray([max(1, len(c)) for c in continuations], dtype=float)
    return int(np.argmax(values)), int(np.argmax(values / lengths))


# --- engine results -> outputs columns -> scored frame -----------------------------------------


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _as_list(value: Any) -> list[Any] | None:
    """A list cell as a Python list (Parquet gives numpy arrays); None when absent."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return list(value)


def _pick(
    labels: list[Any] | None, continuations: list[Any] | None, logprobs: list[Any] | None
) -> tuple[int, int] | str:
    """(acc index, acc_norm index), or why the row has no answer."""
    if not labels or not logprobs or not continuations:
        return "no log-probabilities"
    if not len(labels) == len(continuations) == len(logprobs):
        return (
            f"{len(logprobs)} log-probabilities, {len(continuations)} continuations for "
            f"{len(labels)} choices"
        )
    try:
        values = [float(v) for v in logprobs]
    except (TypeError, ValueError):
        return "a log-probability is not a number"
    if any(math.isnan(v) for v in values):
        return "a log-probability is NaN"
    if not any(math.isfinite(v) for v in values):
        return "no finite log-probability"
    return pick_choice(values, [str(c) for c in continuations])


def score_loglikelihood(
    outputs: pd.DataFrame,
    spec: BenchmarkSpec,
    *,
    normalised: bool,
    source: str = "outputs",
    scoring: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Score every row by the choice with the highest log-likelihood (``acc`` or ``acc_norm``).

    Parameters
    ----------
    outputs : one benchmark's outputs with the :data:`LL_COLUMNS` (``ll_choices``,
        ``ll_continuations``, ``ll_logprobs`` at least) and ``benchmark, example_id, variant,
        answer``; optional ``answers``, ``subtask``, ``output``.
    spec : the benchmark (answer type -> gold normaliser, metric).
    normalised : False: ``acc`` (highest total log-probability); True: ``acc_norm`` (highest
        log-probability per character of the continuation).
    source : file name for error messages.
    scoring : the ``scoring`` params section (answer-type options), or None.

    Returns
    -------
    DataFrame
        The same columns :func:`~evalpipe.scoring.scorer.score_frame` gives, so that
        :func:`~evalpipe.scoring.summaries.build_reports` reads it unchanged: the input columns
        plus ``gold`` (canonical), ``prediction`` (the chosen label in canonical form, None
        without log-probabilities), ``parse_status`` (``strict`` for a chosen label,
        ``unparsed`` for a row without usable log-probabilities: counted, never dropped),
        ``correct``, ``score``, ``parse_extra`` (JSON: ``method``, ``normalised``, the ``acc``
        and ``acc_norm`` labels, ``greedy`` of the chosen continuation; or the ``reason`` a row
        has no answer). ``output`` is kept (null when absent: no generation) and
        ``finish_reason`` is set to ``loglikelihood`` on every row: no answer here was cut by a
        generation budget, so ``truncated_rate`` is 0. Same rows, same order.

    Raises
    ------
    InputError
        When log-likelihood scoring does not apply to ``spec`` (the reason), a column is
        missing, or a row has no gold answer.

    Examples
    --------
    >>> from evalpipe.benchmarks import get_spec
    >>> df = pd.DataFrame({"benchmark": ["mmlu"], "example_id": ["1"], "variant": ["original"],
    ...                    "answer": ["B"], "ll_choices": [["A", "B"]],
    ...                    "ll_continuations": [[" A", " B"]], "ll_logprobs": [[-3.0, -1.0]]})
    >>> score_loglikelihood(df, get_spec("mmlu"), normalised=False)["prediction"].tolist()
    ['B']
    """
    reason = not_applicable_reason(spec)
    if reason is not None:
        raise InputError(f"{source}: log-likelihood scoring does not apply: {reason}")
    missing = [c for c in _SCORED_FROM if c not in outputs.columns]
    if missing:
        raise InputError(
            f"{source}: no log-likelihood scores (missing column(s) {', '.join(missing)}); "
            "they are written when scoring.method is loglikelihood or both"
        )
    check_columns(outputs, ("benchmark", "example_id", "variant", "answer"), source=source)
    answer_type = spec.answer
    n = len(outputs)
    column = {c: outputs[c].tolist() if c in outputs.columns else [None] * n for c in LL_COLUMNS}
    answers = outputs["answers"].tolist() if "answers" in outputs.columns else [None] * n
    subtasks = outputs["subtask"].tolist() if "subtask" in outputs.columns else [None] * n
    predictions, statuses, correct, scores, extras, canonical = [], [], [], [], [], []
    for i, (answer, accepted, subtask) in enumerate(
        zip(outputs["answer"].tolist(), answers, subtasks, strict=True)
    ):
        sub = subtask if isinstance(subtask, str) and subtask else None
        options = spec.parser_options(sub, scoring=scoring)
        golds = [answer_type.normalise_gold(g, **options) for g in accepted_golds(answer, accepted)]
        if not golds:
            raise InputError(f"{source}, row {i}: no gold answer in columns 'answer'/'answers'")
        labels = _as_list(column["ll_choices"][i])
        picked = _pick(
            labels, _as_list(column["ll_continuations"][i]), _as_list(column["ll_logprobs"][i])
        )
        extra: dict[str, Any] = {"method": "loglikelihood", "normalised": bool(normalised)}
        if isinstance(picked, str):
            prediction, status = None, UNPARSED
            extra["reason"] = picked
        else:
            assert labels is not None  # _pick returned indices
            acc, acc_norm = picked
            chosen = acc_norm if normalised else acc
            prediction = answer_type.normalise_gold(str(labels[chosen]), **options)
            status = CHOSEN
            greedy = _as_list(column["ll_greedy"][i])
            extra.update(
                acc=str(labels[acc]),
                acc_norm=str(labels[acc_norm]),
                greedy=None if not greedy or len(greedy) != len(labels) else bool(greedy[chosen]),
                # the options that are right answers: the Brier score's target (scoring.calibration)
                gold_choices=[
                    k
                    for k, label in enumerate(labels)
                    if any(
                        exact_match(answer_type.normalise_gold(str(label), **options), g)
                        for g in golds
                    )
                ],
            )
        canonical.append(golds[0])
        predictions.append(prediction)
        statuses.append(status)
        correct.append(any(exact_match(prediction, g) for g in golds))
        scores.append(best_score(prediction, golds, metric=spec.metric))
        extras.append(json.dumps(extra, ensure_ascii=False, sort_keys=True))
    base = outputs.reset_index(drop=True).copy()
    if "output" not in base.columns:
        base["output"] = pd.Series([None] * n, dtype="object")
    base["finish_reason"] = "loglikelihood"
    return with_scores(
        base,
        gold=canonical,
        prediction=predictions,
        parse_status=statuses,
        correct=correct,
        score=scores,
        parse_extra=extras,
    )


# --- generate vs log-likelihood ------------------------------------------------------------------

_KEYS = ("benchmark", "example_id", "variant", "word_rank", "draw", "condition")


def cohen_kappa(first: Sequence[Any], second: Sequence[Any]) -> float | None:
    """Cohen's kappa of two raters' categories (None counts as its own category).

    None when it is undefined: no rows, or both raters always give the one same category
    (chance agreement 1; scikit-learn returns NaN there).

    Examples
    --------
    >>> cohen_kappa(["a", "b", "a", "b"], ["a", "b", "b", "b"])
    0.5
    """
    if len(first) != len(second):
        raise InputError(f"cohen_kappa: {len(first)} and {len(second)} ratings")
    if not len(first):
        return None
    a = pd.Series([_NO_ANSWER if _missing(x) else str(x) for x in first], dtype="object")
    b = pd.Series([_NO_ANSWER if _missing(x) else str(x) for x in second], dtype="object")
    observed = float((a.to_numpy() == b.to_numpy()).mean())
    pa = a.value_counts(normalize=True)
    pb = b.value_counts(normalize=True)
    expected = float(sum(pa[k] * pb.get(k, 0.0) for k in pa.index))
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1.0 - expected)


def method_agreement(scored_generate: pd.DataFrame, scored_ll: pd.DataFrame) -> dict[str, Any]:
    """How often scoring by generation and by log-likelihood pick the same answer.

    Rows are matched on ``benchmark, example_id, variant, word_rank, draw, condition`` (those both frames
    have); both frames must hold the same rows.

    Parameters
    ----------
    scored_generate : :func:`~evalpipe.scoring.scorer.score_frame`'s frame.
    scored_ll : :func:`score_loglikelihood`'s frame for the same outputs.

    Returns
    -------
    dict
        ``n`` (rows), ``agreement`` (share of rows where both methods chose the same answer;
        an unparsed answer agrees with nothing), ``kappa`` (Cohen's kappa of the two
        predictions over all rows, an unparsed answer being its own category; None when
        undefined), ``n_both_parsed`` and ``agreement_both_parsed`` (the share among rows
        both answered), ``generate_unparsed`` / ``loglikelihood_unparsed`` (rows without an
        answer), ``accuracy_generate`` / ``accuracy_loglikelihood`` (share correct over the
        same rows). Shares are None without rows.

    Raises
    ------
    InputError
        A missing column, duplicate keys, or rows in one frame and not the other.
    """
    needed = ("prediction", "parse_status", "correct")
    keys = [k for k in _KEYS if k in scored_generate.columns and k in scored_ll.columns]
    for frame, what in ((scored_generate, "generate"), (scored_ll, "loglikelihood")):
        check_columns(frame, ("example_id", "variant", *needed), source=f"{what} scores")
        if frame.duplicated(keys).any():
            raise InputError(f"{what} scores: duplicate rows for keys {', '.join(keys)}")
    left = scored_generate[[*keys, *needed]].reset_index(drop=True)
    right = scored_ll[[*keys, *needed]].reset_index(drop=True)
    merged = left.merge(right, on=keys, how="outer", suffixes=("_g", "_l"), indicator=True)
    unmatched = merged["_merge"] != "both"
    if unmatched.any():
        only_g = int((merged["_merge"] == "left_only").sum())
        only_l = int((merged["_merge"] == "right_only").sum())
        raise InputError(
            f"method_agreement: the two scored frames hold different rows ({only_g} only in "
            f"the generate scores, {only_l} only in the log-likelihood scores; keys "
            f"{', '.join(keys)})"
        )
    n = len(merged)
    pred_g = [None if _missing(p) else str(p) for p in merged["prediction_g"]]
    pred_l = [None if _missing(p) else str(p) for p in merged["prediction_l"]]
    unparsed_g = (merged["parse_status_g"] == UNPARSED).to_numpy() | np.array(
        [p is None for p in pred_g], dtype=bool
    )
    unparsed_l = (merged["parse_status_l"] == UNPARSED).to_numpy() | np.array(
        [p is None for p in pred_l], dtype=bool
    )
    same = np.array([a is not None and a == b for a, b in zip(pred_g, pred_l, strict=True)])
    both = ~unparsed_g & ~unparsed_l
    return {
        "n": n,
        "agreement": float(same.mean()) if n else None,
        "kappa": cohen_kappa(
            [None if u else p for p, u in zip(pred_g, unparsed_g, strict=True)],
            [None if u else p for p, u in zip(pred_l, unparsed_l, strict=True)],
        ),
        "n_both_parsed": int(both.sum()),
        "agreement_both_parsed": float(same[both].mean()) if both.any() else None,
        "generate_unparsed": int(unparsed_g.sum()),
        "loglikelihood_unparsed": int(unparsed_l.sum()),
        "accuracy_generate": float(merged["correct_g"].astype(bool).mean()) if n else None,
        "accuracy_loglikelihood": float(merged["correct_l"].astype(bool).mean()) if n else None,
    }
