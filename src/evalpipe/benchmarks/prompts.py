"""Prompt templates: zero-shot, few-shot and chain-of-thought, one user message per example.

English benchmarks follow lm-evaluation-harness layouts ("Question: ...\\nAnswer:", "Q: ...\\nA:",
MMLU's "The following are multiple choice questions (with answers) about ..."); Japanese ones
follow llm-jp-eval (a fixed header, ``### 指示:`` / ``### 入力:`` / ``### 応答:`` sections and
inputs such as ``前提：..\\n仮説：..``). Chain of thought asks for reasoning first and a final
``Answer: X`` / ``回答: X`` line (BBH: "So the answer is X."; IMDB: a final JSON object).
Answer choices are rendered here from ``choices``, so they never pass through a perturbation.
Chat templates are the inference engine's job, not this module's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalpipe.benchmarks.loading import hash_key
from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.errors import InputError

STYLES = ("zero_shot", "few_shot", "cot")

JA_HEADER = "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。要求を適切に満たす応答を書きなさい。"
JA_STRICT = "それ以外には何も含めないことを厳守してください。"
JA_COT = "まず段階的に考え、その過程を書いてください。最後の行には「回答: X」の形式で答えだけを書いてください（X は答え）。"
EN_COT = 'Think step by step, then write your final answer on the last line as "Answer: X".'

BBH_DESCRIPTIONS = {
    "boolean_expressions": "Evaluate the result of a random Boolean expression.",
    "causal_judgement": "Answer questions about causal attribution.",
    "date_understanding": "Infer the date from context.",
    "disambiguation_qa": "Clarify the meaning of sentences with ambiguous pronouns.",
    "dyck_languages": "Correctly close a Dyck-n word.",
    "formal_fallacies": "Distinguish deductively valid arguments from formal fallacies.",
    "geometric_shapes": "Name geometric shapes from their SVG paths.",
    "hyperbaton": "Order adjectives correctly in English sentences.",
    "logical_deduction_five_objects": "A logical deduction task which requires deducing the order of a sequence of objects.",
    "logical_deduction_seven_objects": "A logical deduction task which requires deducing the order of a sequence of objects.",
    "logical_deduction_three_objects": "A logical deduction task which requires deducing the order of a sequence of objects.",
    "movie_recommendation": "Recommend movies similar to the given list of movies.",
    "multistep_arithmetic_two": "Solve multi-step arithmetic problems.",
    "navigate": "Given a series of navigation instructions, determine whether one would end up back at the starting point.",
    "object_counting": "Questions that involve enumerating objects and asking the model to count them.",
    "penguins_in_a_table": "Answer questions about a table of penguins and their attributes.",
    "reasoning_about_colored_objects": "Answer extremely simple questions about the colors of objects on a surface.",
    "ruin_names": "Select the humorous edit that 'ruins' the input movie or musical artist name.",
    "salient_translation_error_detection": "Detect the type of error in an English translation of a German source sentence.",
    "snarks": "Determine which of two sentences is sarcastic.",
    "sports_understanding": "Determine whether an artificially constructed sentence relating to sports is plausible or not.",
    "temporal_sequences": "Answer questions about which times certain events could have occurred.",
    "tracking_shuffled_objects_five_objects": "A task requiring determining the final positions of a set of objects given their initial positions and a description of a sequence of swaps.",
    "tracking_shuffled_objects_seven_objects": "A task requiring determining the final positions of a set of objects given their initial positions and a description of a sequence of swaps.",
    "tracking_shuffled_objects_three_objects": "A task requiring determining the final positions of a set of objects given their initial positions and a description of a sequence of swaps.",
    "web_of_lies": "Evaluate a random boolean function expressed as a word problem.",
    "word_sorting": "Sort a list of words.",
}


@dataclass(frozen=True)
class Example:
    """What a template needs from one row."""

    fields: dict[str, str]
    choices: list[str] | None
    subtask: str | None
    target: str = ""


@dataclass(frozen=True)
class Format:
    """How one benchmark's prompt reads.

    ``instruction(subtask, style)`` is the task statement, ``body(example)`` the example itself,
    ``shot(example)`` a solved demonstration; ``prefix`` (English) opens the answer.
    """

    instruction: Callable[[str | None, str], str]
    body: Callable[[Example], str]
    prefix: str = "Answer:"
    cot_prefix: str = ""
    cot: str = EN_COT


# --- English ---------------------------------------------------------------------------------


def _gsm8k_instruction(subtask: str | None, style: str) -> str:
    if style == "cot":
        return "Solve the following grade-school math problem."
    return 'Solve the following grade-school math problem. End your answer with "#### " followed by the final number.'


def _mmlu_instruction(subtask: str | None, style: str) -> str:
    subject = (subtask or "general knowledge").replace("_", " ")
    text = f"The following are multiple choice questions (with answers) about {subject}."
    if style != "cot":
        text += " Answer with the letter (A, B, C or D) of the correct option."
    return text


def _letters_body(ex: Example, letters: Sequence[str]) -> str:
    choices = ex.choices or []
    lines = [ex.fields["question"].strip()]
    lines += [f"{letter}. {choice}" for letter, choice in zip(letters, choices, strict=False)]
    return "\n".join(lines)


def _bbh_instruction(subtask: str | None, style: str) -> str:
    text = BBH_DESCRIPTIONS.get(subtask or "", "Answer the following question.")
    if style == "cot":
        text += ' Think step by step, and finish with "So the answer is X." where X is the answer.'
    return text


def _bbh_body(ex: Example) -> str:
    text = "Q: " + ex.fields["question"]
    if ex.choices:
        text += "\nOptions:\n" + "\n".join(ex.choices)
    return text


IMDB_SCHEMA_TEXT = (
    "JSON format:\n"
    "{\n"
    '  "label": "<positive|negative>",\n'
    '  "confidence": <a number from 0.0 to 1.0>,\n'
    '  "reason": "<one short sentence>"\n'
    "}"
)


def _imdb_instruction(subtask: str | None, style: str) -> str:
    text = (
        "You are a strict grader. Classify the sentiment of the movie review as positive or "
        "negative.\n\nRules:\n"
        "- Clear satisfaction, praise or recommendation -> positive\n"
        "- Clear dissatisfaction, complaint or rejection -> negative"
    )
    if style == "cot":
        return text + (
            "\n- First think step by step about the evaluative phrases in the review, then end "
            "with the JSON object below and nothing after it."
        )
    return text + "\n- Output nothing but the JSON object below."


def _imdb_body(ex: Example) -> str:
    return "Review:\n```\n" + ex.fields["text"] + "\n```"


# --- Japanese (llm-jp-eval) ------------------------------------------------------------------

_NLI_JA = {
    "jamp": (
        "前提と仮説の関係をentailment、contradiction、neutralの中から回答してください。\n\n"
        "制約：\n- 前提から仮説が、時間関係上導出可能である場合はentailmentと出力\n"
        "- 前提と仮説が両立しえない場合はcontradictionと出力\n"
        "- そのいずれでもない場合はneutralと出力"
    ),
    "jnli": (
        "前提と仮説の関係をentailment、contradiction、neutralの中から回答してください。\n\n"
        "制約：\n- 前提から仮説が、論理的知識や常識的知識を用いて導出可能である場合はentailmentと出力\n"
        "- 前提と仮説が両立しえない場合はcontradictionと出力\n"
        "- そのいずれでもない場合はneutralと出力"
    ),
}

_JA_TASK = {
    "jsquad": "質問に対する回答を文章から一言で抽出してください。回答は名詞で答えてください。",
    "niilc": "質問に対する答えを出力してください。答えが複数の場合、コンマ（,）で繋げてください。",
    "jcommonsenseqa": (
        "質問と回答の選択肢を入力として受け取り、選択肢から回答を選択してください。"
        "なお、回答は選択肢の番号（例：0）でするものとします。"
    ),
}


def _ja_instruction(task: str) -> Callable[[str | None, str], str]:
    def instruction(subtask: str | None, style: str) -> str:
        # CoT needs room for reasoning, so the "nothing else" constraint is left out there.
        if task in _NLI_JA:
            first, rest = _NLI_JA[task].split("\n\n", 1)
            return f"{first}\n\n{rest}" if style == "cot" else f"{first}{JA_STRICT}\n\n{rest}"
        text = _JA_TASK[task]
        return text if style == "cot" else text + JA_STRICT

    return instruction


def _nli_body(ex: Example) -> str:
    return f"前提：{ex.fields['premise']}\n仮説：{ex.fields['hypothesis']}"


def _jsquad_body(ex: Example) -> str:
    return f"文章：{ex.fields['context']}\n質問：{ex.fields['question']}"


def _niilc_body(ex: Example) -> str:
    return f"質問：{ex.fields['question']}"


def _jcqa_body(ex: Example) -> str:
    choices = ",".join(f"{i}.{c}" for i, c in enumerate(ex.choices or []))
    return f"質問：{ex.fields['question']}\n選択肢：{choices}"


FORMATS: dict[str, Format] = {
    "gsm8k": Format(_gsm8k_instruction, lambda ex: "Question: " + ex.fields["question"]),
    "mmlu": Format(_mmlu_instruction, lambda ex: _letters_body(ex, "ABCD")),
    "bbh": Format(
        _bbh_instruction, _bbh_body, prefix="A:", cot_prefix="A: Let's think step by step.", cot=""
    ),
    "imdb": Format(_imdb_instruction, _imdb_body, prefix="Sentiment:", cot=""),
    "jamp": Format(_ja_instruction("jamp"), _nli_body),
    "jnli": Format(_ja_instruction("jnli"), _nli_body),
    "jsquad": Format(_ja_instruction("jsquad"), _jsquad_body),
    "niilc": Format(_ja_instruction("niilc"), _niilc_body),
    "jcommonsenseqa": Format(_ja_instruction("jcommonsenseqa"), _jcqa_body),
}


def _local_format(spec: BenchmarkSpec) -> Format:
    cfg = spec.local or {}
    labels = list(spec.labels or [])
    ja = spec.language == "japanese"
    colon = "：" if ja else ": "
    if cfg.get("instruction"):
        custom = str(cfg["instruction"]).strip()

        def instruction(subtask: str | None, style: str) -> str:
            return custom
    elif spec.task_type == "mc":

        def instruction(subtask: str | None, style: str) -> str:
            if ja:
                text = f"次の問題に対して、選択肢{'、'.join(labels)}の中から正しいものを1つ選んでください。"
                return text if style == "cot" else text + "回答は選択肢の記号のみとし、" + JA_STRICT
            text = f"Choose the correct option ({', '.join(labels)}) for the following question."
            return text if style == "cot" else text + " Answer with the option's label only."
    else:

        def instruction(subtask: str | None, style: str) -> str:
            if ja:
                text = f"次の入力を{'、'.join(labels)}のいずれかに分類してください。"
                return text if style == "cot" else text + "ラベルのみを回答し、" + JA_STRICT
            text = f"Classify the following input as one of: {', '.join(labels)}."
            return text if style == "cot" else text + " Answer with the label only."

    def body(ex: Example) -> str:
        # the config's field order, not the sorted order of the stored JSON
        order = [name for name in cfg.get("fields", {}) if name in ex.fields]
        order += [name for name in ex.fields if name not in order]
        lines = [f"{name}{colon}{ex.fields[name]}" for name in order]
        if ex.choices:
            lines.append("選択肢：" if ja else "Options:")
            lines += [
                f"{label}. {choice}" for label, choice in zip(labels, ex.choices, strict=False)
            ]
        return "\n".join(lines)

    return Format(instruction, body)


def format_for(spec: BenchmarkSpec) -> Format:
    """The prompt format of ``spec`` (built-in table, or derived from a local config)."""
    if spec.kind == "local":
        return _local_format(spec)
    return FORMATS[spec.name]


def render(spec: BenchmarkSpec, example: Example, shots: Sequence[Example], *, style: str) -> str:
    """One prompt text.

    Parameters
    ----------
    spec : the benchmark.
    example : the example to ask about.
    shots : solved demonstrations (used by ``few_shot`` only).
    style : zero_shot | few_shot | cot.

    Returns
    -------
    str
    """
    fmt = format_for(spec)
    instruction = fmt.instruction(example.subtask, style)
    body = fmt.body(example)
    shots = list(shots) if style == "few_shot" else []
    if spec.language == "japanese":
        head = f"{JA_HEADER}\n\n### 指示:\n{instruction}"
        if style == "cot":
            head += "\n" + JA_COT
        demos = "".join(f"\n\n### 入力:\n{fmt.body(s)}\n\n### 応答:\n{s.target}" for s in shots)
        return f"{head}{demos}\n\n### 入力:\n{body}\n\n### 応答:\n"
    if spec.name == "imdb":
        demos = "".join(f"{fmt.body(s)}\n{fmt.prefix} {s.target}\n\n" for s in shots)
        intro = "Examples:\n\n" + demos if demos else ""
        return f"{instruction}\n\n{IMDB_SCHEMA_TEXT}\n\n{intro}{body}"
    demos = "".join(f"{fmt.body(s)}\n{fmt.prefix} {s.target}\n\n" for s in shots)
    if style == "cot":
        tail = fmt.cot_prefix or fmt.cot
        return f"{instruction}\n\n{body}\n{tail}"
    return f"{instruction}\n\n{demos}{body}\n{fmt.prefix}"


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
) -> list[str]:
    """One user-message text per row of a benchmark or perturbed frame.

    Few-shot demonstrations are chosen deterministically from ``fewshot`` (same subtask only;
    ordered by a hash of their ids, so every row of a subtask, original or perturbed, gets the
    same prefix) and never from ``rows``. A subtask missing from the pool gets no shots.

    Parameters
    ----------
    spec : the benchmark.
    rows : frame with ``example_id, fields`` (JSON text or dict), ``choices``, ``subtask``.
    fewshot : the few-shot pool (``data/benchmarks/{name}.fewshot.parquet``) or None.
    style : zero_shot | few_shot | cot.
    n_shots : demonstrations per prompt for ``few_shot`` (fewer when the pool is smaller).

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
    prompts = []
    for _, ex in items:
        shots: list[Example] = []
        if pool:
            if ex.subtask not in by_subtask:
                # Demonstrations never cross subtasks (a BBH date question gets date shots);
                # a subtask the pool lacks gets none.
                same = [s for _, s in pool if s.subtask == ex.subtask]
                by_subtask[ex.subtask] = same[:n_shots]
            shots = by_subtask[ex.subtask]
        prompts.append(render(spec, ex, shots, style=style))
    return prompts
