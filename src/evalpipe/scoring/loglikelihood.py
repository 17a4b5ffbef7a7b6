"""Choosing an answer by log-likelihood (lm-evaluation-harness's ``acc`` and ``acc_norm``).

Each choice is a continuation of the same prompt; the model's answer is the choice whose
continuation has the highest total log-probability (``acc``), or the highest log-probability
per character of the continuation (``acc_norm``, lm-eval's length normalisation, which keeps a
long choice from losing only because it has more tokens to pay for).

The layer between benchmark specs and the score stage (docs/scoring.md, "Log-likelihood
scoring"):

- :func:`not_applicable_reason` says whether a benchmark has a fixed label space to score;
- :func:`loglikelihood_requests` builds, per prompt, one request per choice, continuing the
  prompt the way the spec's ``loglikelihood`` block declares (separator, cue, choice text);
- :func:`loglikelihood_columns` turns the engine's scores into the ``ll_*`` columns of the
  outputs frame (:data:`LL_COLUMNS`);
- :func:`score_loglikelihood` scores those columns into the frame
  :func:`evalpipe.scoring.scorer.score_frame` produces, so reports work unchanged;
- :func:`method_agreement` compares the generated and the log-likelihood answers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jinja2 import TemplateError

from evalpipe.errors import InputError
from evalpipe.inference.types import Loglikelihood, LoglikelihoodRequest
from evalpipe.scoring.metrics import best_score, exact_match
from evalpipe.scoring.scorer import _golds, check_columns, with_scores

if TYPE_CHECKING:  # spec.py imports the scoring package: no import cycle at run time
    from evalpipe.benchmarks.spec import BenchmarkSpec

METHODS = ("generate", "loglikelihood", "both")
# Per-row columns the log-likelihood scores add to an outputs frame, one list entry per choice.
LL_COLUMNS = ("ll_choices", "ll_continuations", "ll_logprobs", "ll_tokens", "ll_greedy")
# The columns score_loglikelihood reads (besides the gold columns).
_SCORED_FROM = ("ll_choices", "ll_continuations", "ll_logprobs")
# parse_status of an answer chosen by log-likelihood: the statuses the reports know
# (strict | fallback | unparsed); a chosen label is a committed, in-format answer.
CHOSEN = "strict"
UNPARSED = "unparsed"
# kappa's category for a row without an answer; never a label (labels are stripped words)
_NO_ANSWER = "<unparsed>"


def choice_continuations(labels: Sequence[str], *, separator: str = " ") -> list[str]:
    """The continuation scored for each label: the separator, then the label.

    >>> choice_continuations(["A", "B"])
    [' A', ' B']
    """
    if not labels:
        raise InputError("loglikelihood scoring needs a label space (the benchmark's labels)")
    return [f"{separator}{label}" for label in labels]


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


# --- which benchmarks, which continuations --------------------------------------------------


def not_applicable_reason(spec: BenchmarkSpec, *, style: str = "zero_shot") -> str | None:
    """Why ``spec`` cannot be scored by log-likelihood in prompt ``style``, or None if it can.

    It can when the benchmark has a fixed label space (``labels``) and a choice-type answer
    (multiple-choice letters or indices, NLI or sentiment labels: answer types with
    classification metrics), the spec does not declare ``loglikelihood.not_applicable``, and
    the prompt ends where the answer starts (not ``cot``, which asks for reasoning first).

    Parameters
    ----------
    spec : the benchmark.
    style : zero_shot | few_shot | cot (``prompt.style``).

    Returns
    -------
    str or None

    Examples
    --------
    >>> from evalpipe.benchmarks import get_spec
    >>> not_applicable_reason(get_spec("mmlu")) is None
    True
    >>> print(not_applicable_reason(get_spec("gsm8k")))  # doctest: +ELLIPSIS
    gsm8k: answer type 'number' is free-form...
    """
    if spec.loglikelihood.not_applicable:
        return f"{spec.name}: {spec.loglikelihood.not_applicable}"
    if not spec.labels or not spec.answer.classification:
        return (
            f"{spec.name}: answer type {spec.answer_type!r} is free-form (no fixed label space "
            "in the spec's `labels`), so there are no choices to score; it is scored by "
            "generation only"
        )
    if style == "cot":
        return (
            f"{spec.name}: chain-of-thought prompts ask for reasoning before the answer, while "
            "log-likelihood scores an answer right after the prompt; use prompt.style "
            "zero_shot or few_shot"
        )
    return None


def _continuations(
    spec: BenchmarkSpec, choices: Sequence[str] | None, where: str
) -> tuple[list[str], list[str]]:
    """(labels, continuations) of one row: every label, or the first ``len(choices)``."""
    labels = list(spec.labels or [])
    if choices is not None:
        if not choices or len(choices) > len(labels):
            raise InputError(
                f"{where}: {len(choices)} choices for the {len(labels)} labels of {spec.name} "
                f"({', '.join(labels)}); expected 1 to {len(labels)}"
            )
        labels = labels[: len(choices)]
    setup = spec.loglikelihood
    out = []
    for i, label in enumerate(labels):
        try:
            text = setup.render_choice(label, i, None if choices is None else str(choices[i]))
        except TemplateError as exc:
            raise InputError(
                f"{spec.path}: loglikelihood.choice: {type(exc).__name__}: {exc} "
                "(variables: label, index, choice; `choice` needs the rows' choices)"
            ) from exc
        continuation = setup.separator + text
        if not continuation:
            raise InputError(
                f"{spec.path}: loglikelihood: choice {label!r} gives an empty continuation"
            )
        if continuation in out:
            raise InputError(
                f"{where}: labels {labels[out.index(continuation)]!r} and {label!r} give the same "
                f"continuation {continuation!r}; the choices could not be told apart"
            )
        out.append(continuation)
    return labels, out


def loglikelihood_requests(
    spec: BenchmarkSpec,
    prompts: Sequence[str],
    *,
    style: str = "zero_shot",
    choices: Sequence[Sequence[str] | None] | None = None,
) -> tuple[list[list[LoglikelihoodRequest]] | None, str]:
    """One :class:`LoglikelihoodRequest` per choice for every prompt, or why there are none.

    The context is the raw prompt (no chat template: see ``LoglikelihoodRequest``) followed by
    the spec's ``loglikelihood.cue``; the continuation of label ``i`` is
    ``loglikelihood.separator`` followed by ``loglikelihood.choice`` rendered for it (default:
    the label itself, so ``" B"`` after MMLU's ``Answer:`` and ``"entailment"`` after JNLI's
    ``### 応答:\\n``).

    Parameters
    ----------
    spec : the benchmark.
    prompts : the prompts as ``build_prompts`` rendered them (one per row).
    style : the prompt style they were rendered in.
    choices : per row, the choice texts (the rows' ``choices`` column; None for a row without
        choices, e.g. NLI), or None. A row with choices is scored on its first
        ``len(choices)`` labels, and the texts are the ``choice`` variable of the template.

    Returns
    -------
    (requests per row, reason)
        ``(None, reason)`` when the benchmark cannot be scored so
        (:func:`not_applicable_reason`); else ``(requests, "")``, ``requests[i][j]`` scoring
        choice ``j`` of prompt ``i`` (labels ``spec.labels[:len(requests[i])]``).

    Raises
    ------
    InputError
        A prompt that is not text, choices that do not fit the labels, or a ``choice``
        template that fails.

    Examples
    --------
    >>> from evalpipe.benchmarks import get_spec
    >>> requests, _ = loglikelihood_requests(get_spec("mmlu"), ["Q?\\nAnswer:"])
    >>> [r.continuation for r in requests[0]]
    [' A', ' B', ' C', ' D']
    >>> loglikelihood_requests(get_spec("bbh"), ["Q: ..."])[0] is None
    True
    """
    reason = not_applicable_reason(spec, style=style)
    if reason is not None:
        return None, reason
    if choices is not None and len(choices) != len(prompts):
        raise InputError(f"{spec.name}: {len(choices)} rows of choices for {len(prompts)} prompts")
    cue = spec.loglikelihood.cue
    shared = None if choices is not None else _continuations(spec, None, spec.name)[1]
    out: list[list[LoglikelihoodRequest]] = []
    for i, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise InputError(f"{spec.name}, prompt {i}: expected text, got {type(prompt).__name__}")
        if shared is not None:
            continuations = shared
        else:
            row = choices[i]  # type: ignore[index]
            row_choices = None if _missing(row) else [str(c) for c in list(row)]
            continuations = _continuations(spec, row_choices, f"{spec.name}, row {i}")[1]
        out.append([LoglikelihoodRequest(prompt + cue, c) for c in continuations])
    return out, ""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# --- engine results -> outputs columns -> scored frame -----------------------------------------


def loglikelihood_columns(
    spec: BenchmarkSpec,
    requests: Sequence[Sequence[LoglikelihoodRequest]],
    results: Sequence[Loglikelihood],
) -> pd.DataFrame:
    """The ``ll_*`` columns of the outputs frame, one row per prompt.

    Parameters
    ----------
    spec : the benchmark the requests were built for.
    requests : :func:`loglikelihood_requests`' requests per row.
    results : ``Engine.loglikelihood`` of the flattened requests (row by row, in order).

    Returns
    -------
    DataFrame
        Columns :data:`LL_COLUMNS`, each cell a list with one entry per choice:
        ``ll_choices`` (the label), ``ll_continuations`` (the scored text, whose length
        ``acc_norm`` divides by), ``ll_logprobs`` (total log-probability of the continuation),
        ``ll_tokens`` (its token count), ``ll_greedy`` (every continuation token was the
        model's top choice, lm-eval's ``is_greedy``).

    Raises
    ------
    InputError
        When the results do not match the requests in number.
    """
    total = sum(len(r) for r in requests)
    if total != len(results):
        raise InputError(f"{spec.name}: {len(results)} log-likelihood results for {total} requests")
    labels = list(spec.labels or [])
    rows: dict[str, list[Any]] = {c: [] for c in LL_COLUMNS}
    offset = 0
    for i, row in enumerate(requests):
        if len(row) > len(labels):
            raise InputError(f"{spec.name}, row {i}: {len(row)} requests for {len(labels)} labels")
        scores = results[offset : offset + len(row)]
        offset += len(row)
        rows["ll_choices"].append(labels[: len(row)])
        rows["ll_continuations"].append([r.continuation for r in row])
        rows["ll_logprobs"].append([float(s.logprob) for s in scores])
        rows["ll_tokens"].append([int(s.n_tokens) for s in scores])
        rows["ll_greedy"].append([bool(s.greedy) for s in scores])
    return pd.DataFrame(rows, columns=list(LL_COLUMNS))


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
        :func:`~evalpipe.scoring.report.build_reports` reads it unchanged: the input columns
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
        options = spec.answer_kwargs({"subtask": sub}, scoring=scoring)
        golds = [answer_type.normalise_gold(g, **options) for g in _golds(answer, accepted)]
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

_KEYS = ("benchmark", "example_id", "variant", "word_rank")


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

    Rows are matched on ``benchmark, example_id, variant, word_rank`` (those both frames
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
