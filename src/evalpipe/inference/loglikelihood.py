"""Log-likelihood requests: what the generate stage asks an engine to score when a benchmark is
scored by choosing the most likely answer (lm-evaluation-harness's ``acc`` / ``acc_norm``).

- :func:`not_applicable_reason` says whether a benchmark has a fixed label space to score;
- :func:`loglikelihood_requests` builds, per prompt, one request per choice, continuing the
  prompt the way the spec's ``loglikelihood`` block declares (separator, cue, choice text);
- :func:`loglikelihood_columns` turns the engine's scores into the ``ll_*`` columns of the
  outputs frame (:data:`LL_COLUMNS`), which :mod:`evalpipe.scoring.loglikelihood` scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from jinja2 import TemplateError

from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.errors import InputError
from evalpipe.inference.types import Loglikelihood, LoglikelihoodRequest
from evalpipe.params_schema import default_of

# Per-row columns the log-likelihood scores add to an outputs frame, one list entry per choice.
LL_COLUMNS = ("ll_choices", "ll_continuations", "ll_logprobs", "ll_tokens", "ll_greedy")


def choice_continuations(labels: Sequence[str], *, separator: str = " ") -> list[str]:
    """The continuation scored for each label: the separator, then the label.

    >>> choice_continuations(["A", "B"])
    [' A', ' B']
    """
    if not labels:
        raise InputError("loglikelihood scoring needs a label space (the benchmark's labels)")
    return [f"{separator}{label}" for label in labels]


# --- which benchmarks, which continuations --------------------------------------------------


def not_applicable_reason(
    spec: BenchmarkSpec, *, style: str = default_of("prompt.style")
) -> str | None:
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
    out: list[str] = []
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
    style: str = default_of("prompt.style"),
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
            row: Any = choices[i]  # type: ignore[index]  # pandas gives NaN for a missing row
            row_choices = None if _missing(row) else [str(c) for c in list(row)]
            continuations = _continuations(spec, row_choices, f"{spec.name}, row {i}")[1]
        out.append([LoglikelihoodRequest(prompt + cue, c) for c in continuations])
    return out, ""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


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
