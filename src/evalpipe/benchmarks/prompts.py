"""Prompts from the spec's templates: zero-shot, few-shot and chain-of-thought, one user message
per example.

A spec's ``prompt`` section holds Jinja templates (sandboxed, strict about undefined names):
``template.<style>`` lays out the whole prompt from ``instruction``, ``shots`` (each with
``body`` and ``target``) and ``body``; ``instruction`` (per style or one for all) and ``body``
(one example) are templates too. The English layout follows lm-evaluation-harness
("Question: ...\\nAnswer:", "Q: ...\\nA:"), the Japanese one llm-jp-eval (``### 指示:`` /
``### 入力:`` / ``### 応答:``); both live in ``specs/base/``. Answer choices are rendered here from
``choices``, so they never pass through a perturbation. Chat templates are the inference
engine's job, not this module's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from jinja2 import TemplateError

from evalpipe.benchmarks.rows import hash_key
from evalpipe.benchmarks.spec import STYLES, BenchmarkSpec
from evalpipe.errors import InputError


@dataclass(frozen=True)
class Example:
    """What a template needs from one row."""

    fields: dict[str, str]
    choices: list[str] | None
    subtask: str | None
    target: str = ""


def _context(spec: BenchmarkSpec, example: Example, style: str) -> dict[str, Any]:
    """Template variables: the example's fields by name, then what the spec declares.

    Spec-level names (``fields, choices, subtask, target, labels, subtasks, language, task_type,
    name, style, field_order`` and the prompt section's own keys) win over a field of the same
    name; a field whose name is not an identifier is reached as ``fields['名前']``.
    """
    order = [n for n in spec.mapping.get("fields", {}) if n in example.fields]
    order += [n for n in example.fields if n not in order]
    return {
        **example.fields,
        **spec.prompt["vars"],
        "fields": example.fields,
        "field_order": order,
        "choices": example.choices,
        "subtask": example.subtask,
        "target": example.target,
        "labels": list(spec.labels or []),
        "subtasks": spec.subtasks,
        "language": spec.language,
        "task_type": spec.task_type,
        "name": spec.name,
        "style": style,
    }


def _run(spec: BenchmarkSpec, template: Any, context: dict[str, Any], what: str) -> str:
    try:
        return template.render(context)
    except TemplateError as exc:
        raise InputError(f"{spec.path}: prompt.{what}: {type(exc).__name__}: {exc}") from exc


def render(
    spec: BenchmarkSpec,
    example: Example,
    shots: Sequence[Example],
    *,
    style: str,
    template: str | None = None,
) -> str:
    """One prompt text.

    Parameters
    ----------
    spec : the benchmark.
    example : the example to ask about.
    shots : solved demonstrations (used by ``few_shot`` only).
    style : zero_shot | few_shot | cot.
    template : a name of the spec's ``prompt.templates``: its instruction replaces the spec's
        ``instruction`` (None: the spec's own).

    Returns
    -------
    str
    """
    if style not in STYLES:
        raise InputError(
            f"params.yaml: prompt.style: expected one of {', '.join(STYLES)}, got {style!r}"
        )
    compiled = spec.prompt
    context = _context(spec, example, style)
    demos = []
    for shot in list(shots) if style == "few_shot" else []:
        shot_context = _context(spec, shot, style)
        demos.append(
            {"body": _run(spec, compiled["body"], shot_context, "body"), "target": shot.target}
        )
    if template is None:
        instruction, what = compiled["instruction"][style], f"instruction.{style}"
    else:
        instruction, what = template_of(spec, template)[style], f"templates.{template}.{style}"
    context["instruction"] = _run(spec, instruction, context, what)
    context["body"] = _run(spec, compiled["body"], context, "body")
    context["shots"] = demos
    return _run(spec, compiled["template"][style], context, f"template.{style}")


def template_names(spec: BenchmarkSpec) -> list[str]:
    """The names of the spec's ``prompt.templates``, in declaration order."""
    return list(spec.prompt.get("templates", {}))


def template_of(spec: BenchmarkSpec, name: str) -> dict[str, Any]:
    """The compiled instruction per style of template ``name``, or an InputError naming
    ``prompt.templates`` and the templates the spec declares."""
    named = spec.prompt.get("templates", {})
    if name not in named:
        raise InputError(
            f"params.yaml: prompt.templates: {spec.name} ({spec.path}) declares no template "
            f"{name!r}; it declares {', '.join(named) or 'none'}"
        )
    return named[name]


def _as_list(value: Any) -> list[str] | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return [str(v) for v in list(value)]


def _as_str(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _fields(value: Any, where: str) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f'{where}: column "fields": expected a JSON object of texts') from exc
    if not isinstance(parsed, dict):
        raise InputError(f'{where}: column "fields": expected a JSON object of texts')
    return {str(k): str(v) for k, v in parsed.items()}


def _examples(frame: pd.DataFrame, what: str) -> list[tuple[str, Example]]:
    out = []
    has_target = "target" in frame.columns
    for i, rec in enumerate(frame.to_dict("records")):
        target = _as_str(rec.get("target")) if has_target else None
        out.append(
            (
                str(rec["example_id"]),
                Example(
                    fields=_fields(rec["fields"], f"{what}, row {i + 1}"),
                    choices=_as_list(rec.get("choices")),
                    subtask=_as_str(rec.get("subtask")),
                    target=target if target is not None else str(rec.get("answer", "")),
                ),
            )
        )
    return out


def build_prompts(
    spec: BenchmarkSpec,
    rows: pd.DataFrame,
    fewshot: pd.DataFrame | None,
    *,
    style: str,
    n_shots: int,
    shots_draw: int = 0,
    template: str | None = None,
) -> list[str]:
    """One user-message text per row of a benchmark or perturbed frame.

    Few-shot demonstrations are chosen deterministically from ``fewshot`` (same subtask only;
    ordered by a hash of their ids, so every row of a subtask, original or perturbed, gets the
    same prefix) and never from ``rows``. A subtask missing from the pool gets no shots.
    ``shots_draw`` d > 0 orders the pool by a hash of (d, the example's id, the shot's id)
    instead (``prompt.fewshot_draws``): each example gets its own selection in each draw, shared
    by its original and perturbed rows, so draws are independent across examples and their
    pairs nest in the example's cluster like typo draws do.

    Parameters
    ----------
    spec : the benchmark.
    rows : frame with ``example_id, fields`` (JSON text or dict), ``choices``, ``subtask``.
    fewshot : the few-shot pool (``data/benchmarks/{name}.fewshot.parquet``) or None.
    style : zero_shot | few_shot | cot.
    n_shots : demonstrations per prompt for ``few_shot`` (fewer when the pool is smaller).
    shots_draw : which hashed selection of demonstrations (0: the pipeline's one selection).
    template : a name of the spec's ``prompt.templates`` (None: the spec's ``instruction``).

    Returns
    -------
    list of str, aligned with ``rows``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalpipe.benchmarks import get_spec
    >>> row = pd.DataFrame([{"example_id": "gsm8k/test/0", "fields": '{"question": "1+1?"}',
    ...                      "choices": None, "subtask": None}])
    >>> print(build_prompts(get_spec("gsm8k"), row, None, style="zero_shot", n_shots=0)[0])
    Solve the following grade-school math problem. End your answer with "#### " followed by the final number.
    <BLANKLINE>
    Question: 1+1?
    Answer:
    """
    if style not in STYLES:
        raise InputError(
            f"params.yaml: prompt.style: expected one of {', '.join(STYLES)}, got {style!r}"
        )
    if n_shots < 0:
        raise InputError(f"params.yaml: prompt.n_shots: expected >= 0, got {n_shots}")
    if template is not None:
        template_of(spec, template)
    items = _examples(rows, f"{spec.name} rows")
    pool: list[tuple[str, Example]] = []
    if style == "few_shot" and fewshot is not None and len(fewshot) and n_shots:
        evaluated = {eid for eid, _ in items}
        pool = [
            (eid, ex)
            for eid, ex in _examples(fewshot, f"{spec.name} few-shot pool")
            if eid not in evaluated
        ]
        pool.sort(key=lambda item: hash_key("shot", item[0]))
    by_subtask: dict[str | None, list[Example]] = {}
    drawn: dict[tuple[str, str | None], list[Example]] = {}
    prompts = []
    for eid, ex in items:
        shots: list[Example] = []
        if pool and shots_draw:
            if (eid, ex.subtask) not in drawn:
                candidates = [(sid, s) for sid, s in pool if s.subtask == ex.subtask]
                candidates.sort(key=lambda item: hash_key("shot", shots_draw, eid, item[0]))
                drawn[eid, ex.subtask] = [s for _, s in candidates[:n_shots]]
            shots = drawn[eid, ex.subtask]
        elif pool:
            if ex.subtask not in by_subtask:
                # Demonstrations never cross subtasks (a BBH date question gets date shots);
                # a subtask the pool lacks gets none.
                same = [s for _, s in pool if s.subtask == ex.subtask]
                by_subtask[ex.subtask] = same[:n_shots]
            shots = by_subtask[ex.subtask]
        prompts.append(render(spec, ex, shots, style=style, template=template))
    return prompts
