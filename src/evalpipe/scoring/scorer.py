"""Score a benchmark's outputs frame: parse every output, compare with the gold, keep every row."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from evalpipe.answers.parsers import normalise_gold, parse_answer
from evalpipe.answers.types import METRICS
from evalpipe.arms import format_labels
from evalpipe.errors import InputError
from evalpipe.scoring.metrics import best_score, exact_match
from evalpipe.scoring.names import ORIGINAL

REQUIRED_COLUMNS = ("benchmark", "example_id", "variant", "output", "answer")


def accepted_golds(row_answer: Any, row_answers: Any) -> list[str]:
    """A row's accepted gold answers as text: its ``answers`` list when it has one, else
    ``[answer]``, else nothing.

    >>> accepted_golds("B", None), accepted_golds("x", ["x", "y"]), accepted_golds(None, None)
    (['B'], ['x', 'y'], [])
    """
    if row_answers is not None and not (isinstance(row_answers, float) and np.isnan(row_answers)):
        values = [str(a) for a in list(row_answers) if a is not None]
        if values:
            return values
    if row_answer is None or (isinstance(row_answer, float) and np.isnan(row_answer)):
        return []
    return [str(row_answer)]


def check_columns(frame: pd.DataFrame, required: Sequence[str], *, source: str) -> None:
    """Raise InputError naming ``source`` and every missing column."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {', '.join(missing)}; "
            f"expected at least {', '.join(required)}"
        )


def score_frame(
    outputs: pd.DataFrame,
    *,
    parser: str,
    metric: str,
    parser_options: Mapping[str, Any] | Callable[[str | None], Mapping[str, Any]] | None = None,
    source: str = "outputs",
    progress: bool = False,
) -> pd.DataFrame:
    """Parse and score every output row.

    Parameters
    ----------
    outputs : one benchmark's outputs (columns ``benchmark, example_id, variant, output, answer``;
        optional ``answers`` (all accepted golds) and ``subtask``).
    parser : parser name (``spec.parser``).
    metric : "exact_match" | "accuracy" | "char_f1" (``spec.metric``).
    parser_options : the parser options: one mapping for every row, or ``subtask -> mapping``
        (``spec.parser_options``: a BBH row gets its subtask's answer format); None: none.
    source : file name for error messages.
    progress : show a progress bar.

    Returns
    -------
    DataFrame
        The input columns plus ``gold`` (the first gold in canonical form), ``prediction`` (str or None), ``parse_status`` (strict | fallback |
        unparsed), ``correct`` (bool: exact match with any gold), ``score`` (float: 1/0, or the
        best char_f1 over the golds), ``parse_extra`` (JSON text). Same rows, same order.

    Raises
    ------
    InputError
        On a missing column, an output that is not text, or a row without a gold answer.

    Examples
    --------
    >>> df = pd.DataFrame({"benchmark": ["mmlu"], "example_id": ["1"], "variant": ["original"],
    ...                    "output": ["The answer is (B)."], "answer": ["B"]})
    >>> score_frame(df, parser="mc_letter", metric="exact_match",
    ...             parser_options={"labels": ["A", "B", "C", "D"]})["correct"].tolist()
    [True]
    """
    check_columns(outputs, REQUIRED_COLUMNS, source=source)
    if metric not in METRICS:
        raise InputError(
            f"{source}: unknown metric {metric!r}; expected one of {', '.join(METRICS)}"
        )
    if callable(parser_options):
        options_of = parser_options
    else:
        base = dict(parser_options or {})

        def options_of(subtask: str | None) -> Mapping[str, Any]:
            return base

    # as Python lists: one conversion per column, not one Arrow scalar per row
    absent = [None] * len(outputs)
    subtasks = outputs["subtask"].tolist() if "subtask" in outputs.columns else absent
    answers = outputs["answers"].tolist() if "answers" in outputs.columns else absent
    conditions = outputs["condition"].tolist() if "condition" in outputs.columns else absent
    texts, golds = outputs["output"].tolist(), outputs["answer"].tolist()
    rows = zip(texts, golds, answers, subtasks, conditions, strict=True)
    predictions, statuses, correct, scores, extras, canonical = [], [], [], [], [], []
    # Parsing and scoring are pure functions of (output, golds, subtask, arm): rows that repeat
    # them (a label benchmark's answers, a model's stock replies) are scored once.
    options_cache: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    results: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for i, (text, answer, accepted, subtask, condition) in enumerate(
        tqdm(rows, total=len(outputs), desc=f"score {Path(source).stem}", disable=not progress)
    ):
        if text is not None and not isinstance(text, str):
            raise InputError(
                f"{source}, row {i}: column 'output' must be text, got {type(text).__name__}"
            )
        sub = subtask if isinstance(subtask, str) and subtask else None
        key = (text, _hashable(answer), _hashable(accepted), sub, condition)
        result = results.get(key)
        if result is None:
            if (sub, condition) not in options_cache:
                options_cache[sub, condition] = with_arm_labels(options_of(sub), condition)
            result = _score_one(
                parser, metric, text, accepted_golds(answer, accepted),
                options_cache[sub, condition], source=source, row=i,
            )  # fmt: skip
            results[key] = result
        gold, prediction, status, right, score, extra = result
        canonical.append(gold)
        predictions.append(prediction)
        statuses.append(status)
        correct.append(right)
        scores.append(score)
        extras.append(extra)
    return with_scores(
        outputs,
        gold=canonical,
        prediction=predictions,
        parse_status=statuses,
        correct=correct,
        score=scores,
        parse_extra=extras,
    )


def _hashable(value: Any) -> Any:
    """A row's ``answer`` / ``answers`` as a dictionary key (a list or array as a tuple)."""
    try:
        hash(value)
    except TypeError:
        return tuple(_hashable(v) for v in value)
    return value


def _score_one(
    parser: str,
    metric: str,
    text: str | None,
    accepted: list[str],
    options: Mapping[str, Any],
    *,
    source: str,
    row: int,
) -> tuple[Any, ...]:
    """``(gold, prediction, parse_status, correct, score, parse_extra)`` of one output."""
    golds = [normalise_gold(parser, g, **options) for g in accepted]
    if not golds:
        raise InputError(f"{source}, row {row}: no gold answer in columns 'answer'/'answers'")
    result = parse_answer(parser, text, **options)
    return (
        golds[0],
        result.prediction,
        result.status,
        any(exact_match(result.prediction, g) for g in golds),
        best_score(result.prediction, golds, metric=metric),
        json.dumps(result.extra, ensure_ascii=False, sort_keys=True),
    )


def with_arm_labels(options: Mapping[str, Any], condition: Any) -> Mapping[str, Any]:
    """The parser options of a row whose arm shows its own labels (a format arm's
    ``labels=<set>``, :func:`evalpipe.arms.format_labels`): that label space, as many labels as
    the benchmark's, read literally (no digit mapping); other rows' options unchanged."""
    shown = format_labels(condition)
    if shown is None or "labels" not in options:
        return options
    out = {**options, "labels": shown[: len(options["labels"])]}
    if "digit_map" in out:
        out["digit_map"] = None
    return out


def with_scores(
    outputs: pd.DataFrame,
    *,
    gold: Sequence[Any],
    prediction: Sequence[Any],
    parse_status: Sequence[str],
    correct: Sequence[bool],
    score: Sequence[float],
    parse_extra: Sequence[str],
) -> pd.DataFrame:
    """``outputs`` (same rows, same order) plus the scored columns every way of answering shares,
    with fixed dtypes: what the robustness and classification reports read."""
    scored = outputs.reset_index(drop=True).copy()
    scored["gold"] = pd.Series(gold, dtype="object")
    scored["prediction"] = pd.Series(prediction, dtype="object")
    scored["parse_status"] = pd.Series(parse_status, dtype="object")
    scored["correct"] = pd.Series(correct, dtype=bool)
    scored["score"] = pd.Series(score, dtype="float64")
    scored["parse_extra"] = pd.Series(parse_extra, dtype="object")
    return scored


def error_preview(scored: pd.DataFrame, *, limit: int = 20) -> list[dict[str, Any]]:
    """The first ``limit`` wrong rows (originals first), with raw output and parse status.

    Parameters
    ----------
    scored : output of :func:`score_frame`.
    limit : how many mistakes to keep.

    Returns
    -------
    list of dict
        ``benchmark, example_id, variant, answer, prediction, parse_status, score, output``.
    """
    wrong = scored.loc[~scored["correct"].astype(bool)]
    is_original = (wrong["variant"] != ORIGINAL).astype(int)
    order = wrong.assign(_o=is_original).sort_values(["_o"], kind="stable").head(limit)
    return [
        {
            "benchmark": str(row.benchmark),
            "example_id": str(row.example_id),
            "variant": str(row.variant),
            "answer": None if row.answer is None else str(row.answer),
            "prediction": row.prediction,
            "parse_status": row.parse_status,
            "score": round(float(row.score), 4),
            "output": "" if row.output is None else str(row.output),
        }
        for row in order.itertuples(index=False)
    ]
