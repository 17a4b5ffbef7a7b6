"""Raw dataset rows -> the common example schema (docs/architecture.md, "Artifacts").

Each mapper takes one raw row as the dataset ships it (the Hub schema; the bundled samples use
the same schema) and returns the schema's per-example parts: ``fields`` ({name: text}),
``perturbable`` (field names that may get typos), ``choices`` (never perturbed), ``answer``,
``answers``, ``subtask`` and ``target`` (the answer text shown in few-shot demonstrations).
Answer options and field labels such as 前提： are never part of a field, so no perturbation
can touch them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from evalpipe.benchmarks.rows import Mapper, example, text_field
from evalpipe.errors import InputError

_GSM8K_GOLD = re.compile(r"####\s*(.+?)\s*$", re.S)


def gsm8k(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """``{question, answer: "...reasoning...\\n#### 72"}`` -> gold "72" (commas removed)."""
    question = text_field(row, "question", where)
    solution = text_field(row, "answer", where)
    match = _GSM8K_GOLD.search(solution)
    if not match:
        raise InputError(f'{where}: field "answer" has no "#### <number>" line')
    gold = match.group(1).replace(",", "").replace("$", "").strip()
    if not re.fullmatch(r"-?\d+(\.\d+)?", gold):
        raise InputError(f'{where}: field "answer": expected a number after "####", got {gold!r}')
    return example({"question": question}, ["question"], gold, target=solution.strip())


_OPTIONS = re.compile(r"\n\s*Options:\s*\n")


def bbh(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """``{input, target}``; an ``Options:`` block goes to ``choices`` (verbatim lines).

    The subtask is the dataset config on the Hub; the bundled sample file carries it in a
    ``subtask`` column because one file holds several subtasks.
    """
    subtask = config or row.get("subtask")
    if not subtask:
        raise InputError(f'{where}: field "subtask" is missing; expected a BBH subtask name')
    text = text_field(row, "input", where)
    target = text_field(row, "target", where).strip()
    parts = _OPTIONS.split(text, maxsplit=1)
    choices = None
    if len(parts) == 2:
        text = parts[0]
        choices = [line.strip() for line in parts[1].splitlines() if line.strip()]
    return example({"question": text}, ["question"], target, choices=choices, subtask=str(subtask))


MMLU_LETTERS = ("A", "B", "C", "D")


def mmlu(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """``{question, subject, choices[4], answer: 0-3}`` -> gold letter A-D."""
    question = text_field(row, "question", where)
    subject = row.get("subject") or config
    if not subject or subject == "all":
        raise InputError(f'{where}: field "subject" is missing; expected an MMLU subject')
    choices = row.get("choices")
    if not isinstance(choices, list | tuple) or len(choices) != 4:
        raise InputError(f'{where}: field "choices": expected a list of 4 options')
    answer = row.get("answer")
    if isinstance(answer, str) and answer.strip() in MMLU_LETTERS:
        answer = MMLU_LETTERS.index(answer.strip())
    if not isinstance(answer, int) or not 0 <= answer < 4:
        raise InputError(f'{where}: field "answer": expected 0-3, got {answer!r}')
    letter = MMLU_LETTERS[answer]
    return example(
        {"question": question},
        ["question"],
        letter,
        choices=[str(c) for c in choices],
        subtask=str(subject),
    )


def imdb(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """``{text, label: 0 neg | 1 pos}`` -> "negative" / "positive"."""
    text = text_field(row, "text", where)
    label = row.get("label")
    if label not in (0, 1):
        raise InputError(
            f'{where}: field "label": expected 0 (negative) or 1 (positive), got {label!r}'
        )
    answer = "positive" if label == 1 else "negative"
    return example({"text": text}, ["text"], answer)


SENTIMENT3 = ("positive", "neutral", "negative")


def ja_sentiment(
    row: Mapping[str, Any], *, config: str | None, where: str, **_: Any
) -> dict[str, Any]:
    """``{text, label: positive | neutral | negative}`` (a sentiment dev-set line) -> an example."""
    text = text_field(row, "text", where)
    label = unicodedata.normalize("NFKC", text_field(row, "label", where)).strip().lower()
    if label not in SENTIMENT3:
        raise InputError(
            f'{where}: field "label": expected one of {", ".join(SENTIMENT3)}, got {label!r}'
        )
    return example({"text": text}, ["text"], label)


def _split_labelled(text: str, labels: tuple[str, ...], where: str) -> list[str]:
    """Split ``前提：A\\n仮説：B`` style input into its parts, in order, without the labels."""
    pattern = "|".join(re.escape(label) for label in labels)
    pieces = re.split(rf"(?:^|\n)({pattern})[：:]", text)
    # re.split with a capture group gives ["", label1, body1, label2, body2, ...]
    found = dict(zip(pieces[1::2], pieces[2::2], strict=True))
    if pieces[0].strip() or list(found) != list(labels):
        raise InputError(
            f'{where}: field "input": expected the llm-jp-eval layout '
            + "\\n".join(f"{label}：..." for label in labels)
        )
    return [found[label].strip() for label in labels]


NLI_LABELS = ("entailment", "contradiction", "neutral")


def llm_jp_nli(
    row: Mapping[str, Any], *, config: str | None, where: str, **_: Any
) -> dict[str, Any]:
    """llm-jp-eval NLI ``{input: "前提：..\\n仮説：..", output: label}`` (Jamp, JNLI)."""
    premise, hypothesis = _split_labelled(text_field(row, "input", where), ("前提", "仮説"), where)
    answer = unicodedata.normalize("NFKC", text_field(row, "output", where)).strip().lower()
    if answer not in NLI_LABELS:
        raise InputError(
            f'{where}: field "output": expected one of {", ".join(NLI_LABELS)}, got {answer!r}'
        )
    return example(
        {"premise": premise, "hypothesis": hypothesis}, ["premise", "hypothesis"], answer
    )


def jsquad(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """llm-jp-eval JSQuAD ``{input: "文章：title [SEP] text\\n質問：..", output: answer}``.

    The spec's ``protected: [answers]`` keeps the answer span free of typos.
    """
    context, question = _split_labelled(text_field(row, "input", where), ("文章", "質問"), where)
    answer = text_field(row, "output", where).strip()
    return example({"context": context, "question": question}, ["context", "question"], answer)


def niilc(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """llm-jp-eval NIILC ``{input: "質問：..", output: "a,b"}``: every listed answer is accepted."""
    text = text_field(row, "input", where)
    question = re.sub(r"^\s*質問[：:]", "", text).strip()
    output = text_field(row, "output", where).strip()
    answers = [a.strip() for a in re.split(r"[,、，]", output) if a.strip()]
    return example({"question": question}, ["question"], answers[0], answers=answers, target=output)


_JCQA_CHOICE = re.compile(r"(?:^|,)\s*([0-4])\.")


def jcommonsenseqa(
    row: Mapping[str, Any], *, config: str | None, where: str, **_: Any
) -> dict[str, Any]:
    """llm-jp-eval JCommonsenseQA ``{input: "質問：..\\n選択肢：0.a,1.b,2.c,3.d,4.e", output: "0"-"4"}``.

    The five choices go to ``choices`` (never perturbed); the upstream study's regex did not
    match the ``0.``..``4.`` numbering and perturbed them too.
    """
    question, options = _split_labelled(text_field(row, "input", where), ("質問", "選択肢"), where)
    marks = list(_JCQA_CHOICE.finditer(options))
    if [m.group(1) for m in marks] != ["0", "1", "2", "3", "4"]:
        raise InputError(
            f'{where}: field "input": expected choices "0.…,1.…,2.…,3.…,4.…" after 選択肢：'
        )
    choices = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(options)
        choices.append(options[m.end() : end].strip())
    answer = unicodedata.normalize("NFKC", text_field(row, "output", where)).strip()
    if answer not in {"0", "1", "2", "3", "4"}:
        raise InputError(f'{where}: field "output": expected "0"-"4", got {answer!r}')
    return example({"question": question}, ["question"], answer, choices=choices)


def local(
    row: Mapping[str, Any], *, config: str | None, where: str, options: Mapping[str, Any], **_: Any
) -> dict[str, Any]:
    """A user's row mapped by the spec's declarative ``mapping`` (fields, choices, answer).

    ``options`` holds the spec's ``mapping`` plus ``labels``, ``task_type``, ``perturbable`` and
    ``digit_map`` (1-based digits that stand for the labels, or None).
    """
    fields = {name: text_field(row, key, where) for name, key in options["fields"].items()}
    labels = [str(label) for label in options["labels"]]
    raw_answer = row.get(options["answer"])
    if raw_answer is None or str(raw_answer).strip() == "":
        raise InputError(f'{where}: field "{options["answer"]}" (the answer) is missing or empty')
    answer = unicodedata.normalize("NFKC", str(raw_answer)).strip()
    digit_map = options.get("digit_map") or {}
    choices = None
    if options["task_type"] == "mc":
        spec_choices = options["choices"]
        if isinstance(spec_choices, str):
            value = row.get(spec_choices)
            if not isinstance(value, list | tuple):
                raise InputError(
                    f'{where}: field "{spec_choices}": expected a list of answer choices'
                )
            choices = [str(c) for c in value]
        else:
            choices = [text_field(row, key, where) for key in spec_choices]
        if len(choices) != len(labels):
            raise InputError(
                f'{where}: field "{spec_choices}": expected {len(labels)} choices '
                f"(one per label {labels}), got {len(choices)}"
            )
        if answer not in labels:
            answer = str(digit_map.get(answer, answer))
        if answer not in labels and answer.lower() in labels:
            answer = answer.lower()
        if answer not in labels and answer.upper() in labels:
            answer = answer.upper()
    if answer not in labels:
        raise InputError(
            f'{where}: field "{options["answer"]}": answer {raw_answer!r} is not one of '
            f"the labels {labels}"
        )
    return example(fields, list(options["perturbable"]), answer, choices=choices)


LOCAL_TASK_TYPES = ("mc", "classification")


def check_local_mapping(config: Mapping[str, Any], task_type: Any, *, where: str) -> None:
    """Check a spec's declarative ``mapping`` (``fields``, ``answer``, ``choices`` for mc, ``id``).

    Raises
    ------
    InputError
        Naming the spec key and what was expected.
    """
    if task_type not in LOCAL_TASK_TYPES:
        raise InputError(
            f"{where}: the declarative mapping needs task_type one of "
            f"{', '.join(LOCAL_TASK_TYPES)}, got {task_type!r}"
        )
    fields = config.get("fields")
    if (
        not isinstance(fields, Mapping)
        or not fields
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())
    ):
        raise InputError(f"{where}.fields: expected a mapping {{field name: key in the file}}")
    if not isinstance(config.get("answer"), str) or not config["answer"]:
        raise InputError(f"{where}: missing key 'answer' (the key holding the gold answer)")
    choices = config.get("choices")
    if task_type == "mc" and not (
        isinstance(choices, str)
        or (isinstance(choices, list) and choices and all(isinstance(c, str) for c in choices))
    ):
        raise InputError(
            f"{where}: missing key 'choices' (required for task_type mc): a key holding a list, "
            "or a list of keys"
        )
    unknown = sorted(set(config) - {"fields", "answer", "choices", "id"})
    if unknown:
        raise InputError(f"{where}: unknown key(s) {unknown}; expected fields, answer, choices, id")


MAPPERS: dict[str, Mapper] = {
    "gsm8k": gsm8k,
    "bbh": bbh,
    "mmlu": mmlu,
    "imdb": imdb,
    "ja_sentiment": ja_sentiment,
    "llm_jp_nli": llm_jp_nli,
    "jsquad": jsquad,
    "niilc": niilc,
    "jcommonsenseqa": jcommonsenseqa,
    "local": local,
}
