"""JGLUE's JCommonsenseQA, JNLI and JSQuAD in their raw schema: the publisher's files
(yahoojapan/JGLUE ``datasets/<task>-v<version>/{train,valid}-v<version>.json``) and the Hub
copies that keep that schema (``sbintuitions/JCommonsenseQA``, ``sbintuitions/JSQuAD``,
``zenless-lab/jnli``), through one mapper per task.

The mappers give exactly the examples the llm-jp-eval mappers in ``evalpipe.benchmarks.mapping``
give for the same question (llm-jp-eval evaluates JGLUE's valid set as its ``test`` split), so a
study may switch between the three sources when one of them is broken.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.mapping import NLI_LABELS
from evalpipe.benchmarks.readers.base import (
    PublisherFiles,
    RawSplit,
    Reader,
    digest,
    read_jsonl,
    read_text,
    require_keys,
    unpacked_root,
)
from evalpipe.benchmarks.rows import example, text_field
from evalpipe.errors import InputError

_VERSIONED = re.compile(r"(train|valid)-v(\d+(?:\.\d+)*)\.json")


# --- mappers (publisher rows and the raw-schema Hub copies) -----------------------------------


def jcommonsenseqa(
    row: Mapping[str, Any], *, config: str | None, where: str, **_: Any
) -> dict[str, Any]:
    """``{q_id, question, choice0..choice4, label: 0-4}`` -> five choices, gold ``"0"``-``"4"``."""
    # stripped like the llm-jp-eval path, which splits its input at the labels and strips
    question = text_field(row, "question", where).strip()
    choices = [text_field(row, f"choice{i}", where).strip() for i in range(5)]
    label = row.get("label")
    if isinstance(label, str) and label.strip().isdigit():
        label = int(label.strip())
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label <= 4:
        raise InputError(f'{where}: field "label": expected 0-4, got {label!r}')
    return example({"question": question}, ["question"], str(label), choices=choices)


def jnli(
    row: Mapping[str, Any],
    *,
    config: str | None,
    where: str,
    options: Mapping[str, Any] | None = None,
    **_: Any,
) -> dict[str, Any]:
    """``{sentence1, sentence2, label}`` (JGLUE) or ``{premise, hypothesis, label}`` (Hub copy).

    An integer label is looked up in ``options["label_names"]`` (the copy's ClassLabel names).
    """
    first = "sentence1" if "sentence1" in row else "premise"
    second = "sentence2" if "sentence2" in row else "hypothesis"
    premise, hypothesis = (
        text_field(row, first, where).strip(),
        text_field(row, second, where).strip(),
    )
    label = row.get("label")
    names = (options or {}).get("label_names")
    if isinstance(label, int) and not isinstance(label, bool) and names:
        if not 0 <= label < len(names):
            raise InputError(f'{where}: field "label": expected 0-{len(names) - 1}, got {label}')
        label = names[label]
    answer = unicodedata.normalize("NFKC", str(label if label is not None else "")).strip().lower()
    if answer not in NLI_LABELS:
        raise InputError(
            f'{where}: field "label": expected one of {", ".join(NLI_LABELS)}, got {label!r}'
        )
    return example(
        {"premise": premise, "hypothesis": hypothesis}, ["premise", "hypothesis"], answer
    )


def _answer_texts(answers: Any, where: str) -> list[str]:
    # the publisher's file: [{"text", "answer_start"}, ...]; the Hub copy: {"text": [...], ...}
    if isinstance(answers, Mapping):
        texts = answers.get("text")
    elif isinstance(answers, list):
        texts = [a.get("text") if isinstance(a, Mapping) else None for a in answers]
    else:
        texts = None
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise InputError(
            f'{where}: field "answers": expected a non-empty list of {{"text", "answer_start"}}'
        )
    return texts


def jsquad(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """``{title, context, question, answers}`` -> context ``title [SEP] text`` + question.

    JGLUE's context already starts with ``<title> [SEP] ``; a copy whose context lacks it gets
    it from ``title``. The gold is the first listed answer, as llm-jp-eval takes it, and it is
    protected from perturbation inside the context.
    """
    context = text_field(row, "context", where).strip()
    title = row.get("title")
    if "[SEP]" not in context and isinstance(title, str) and title.strip():
        context = f"{title} [SEP] {context}"
    question = text_field(row, "question", where).strip()
    answer = _answer_texts(row.get("answers"), where)[0].strip()
    if not answer:
        raise InputError(f'{where}: field "answers": the first answer text is empty')
    return example(
        {"context": context, "question": question},
        ["context", "question"],
        answer,
        protected=[answer],
    )


# --- publisher files --------------------------------------------------------------------------


def _versioned_files(folder: Path, task: str) -> tuple[Path, Path | None, str]:
    """(valid file, train file or None, version) of one JGLUE task folder (or the copy of
    JGLUE's ``datasets/<task>-v<version>/`` folder inside it)."""
    folder = unpacked_root(folder, "valid-v*.json", f"{task}-v*")
    if not folder.is_dir():
        raise InputError(
            f"{folder}: folder not found; expected JGLUE's valid-v1.1.json (and train-v1.1.json)"
        )
    found: dict[str, dict[str, Path]] = {"train": {}, "valid": {}}
    for path in sorted(folder.glob("*.json")):
        match = _VERSIONED.fullmatch(path.name)
        if match:
            found[match.group(1)][match.group(2)] = path
    valid = found["valid"]
    if not valid:
        raise InputError(
            f"{folder}: no valid-v<version>.json; expected the files of yahoojapan/JGLUE "
            f"datasets/{task}-v1.1/ (valid-v1.1.json, train-v1.1.json)"
        )
    if len(valid) > 1:
        names = ", ".join(valid[v].name for v in sorted(valid))
        raise InputError(
            f"{folder}: several JGLUE versions ({names}); keep the files of one version "
            f"(labels differ between versions, so a study must say which it used)"
        )
    ((version, valid_path),) = valid.items()
    return valid_path, found["train"].get(version), version


def _jsonl_task(folder: Path, task: str, keys: tuple[str, ...]) -> PublisherFiles:
    valid, train, version = _versioned_files(folder, task)
    expected = "{" + ", ".join(f'"{k}"' for k in keys) + "}"

    def split(path: Path, name: str) -> RawSplit:
        rows, locations = read_jsonl(path, expected=expected)
        for row, where in zip(rows, locations, strict=True):
            require_keys(row, keys, where, expected)
        return RawSplit(name, rows, locations)

    files = [valid, train] if train else [valid]
    return PublisherFiles(
        evaluated=split(valid, "test"),
        fewshot=split(train, "train") if train else None,
        version=f"JGLUE v{version} ({digest(files)})",
        missing=() if train else (f"train-v{version}.json",),
    )


def read_jcommonsenseqa(folder: Path) -> PublisherFiles:
    """JCommonsenseQA ``valid-v*.json`` (evaluated) and ``train-v*.json`` (few-shot), JSON lines.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/jcommonsenseqa``.

    Returns
    -------
    PublisherFiles
    """
    keys = ("q_id", "question", "choice0", "choice1", "choice2", "choice3", "choice4", "label")
    return _jsonl_task(folder, "jcommonsenseqa", keys)


def read_jnli(folder: Path) -> PublisherFiles:
    """JNLI ``valid-v*.json`` (evaluated) and ``train-v*.json`` (few-shot), JSON lines.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/jnli``.

    Returns
    -------
    PublisherFiles
    """
    return _jsonl_task(folder, "jnli", ("sentence_pair_id", "sentence1", "sentence2", "label"))


SQUAD_EXPECTED = (
    '{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question", '
    '"answers": [{"text", "answer_start"}]}]}]}]}'
)


def _squad_rows(path: Path) -> tuple[list[dict], list[str]]:
    """Flatten a SQuAD-style file into one row per question (articles, paragraphs, questions
    in file order, as llm-jp-eval does); a location is the question's JSON path."""
    text = read_text(path)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = ""
        if exc.msg == "Extra data":
            hint = " (this looks like JSON lines; JSQuAD's files are one SQuAD-style object)"
        raise InputError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}){hint}; expected {SQUAD_EXPECTED}"
        ) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
        raise InputError(f'{path}: expected one JSON object with a "data" list, {SQUAD_EXPECTED}')
    rows, locations = [], []
    for a, article in enumerate(obj["data"]):
        at = f"data[{a}]"
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise InputError(f'{path}: {at}: expected {{"title", "paragraphs": [...]}}')
        for p, paragraph in enumerate(article["paragraphs"]):
            pt = f"{at}.paragraphs[{p}]"
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("qas"), list):
                raise InputError(f'{path}: {pt}: expected {{"context", "qas": [...]}}')
            if not isinstance(paragraph.get("context"), str):
                raise InputError(f'{path}: {pt}: field "context" is missing; expected text')
            for q, qa in enumerate(paragraph["qas"]):
                qt = f"{pt}.qas[{q}]"
                if not isinstance(qa, dict):
                    raise InputError(f'{path}: {qt}: expected {{"id", "question", "answers"}}')
                rows.append(
                    {
                        "id": qa.get("id"),
                        "title": article.get("title"),
                        "context": paragraph["context"],
                        "question": qa.get("question"),
                        "answers": qa.get("answers"),
                        "is_impossible": qa.get("is_impossible", False),
                    }
                )
                locations.append(f"{path}: {qt}")
    return rows, locations


def read_jsquad(folder: Path) -> PublisherFiles:
    """JSQuAD ``valid-v*.json`` (evaluated) and ``train-v*.json`` (few-shot), SQuAD-style JSON.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/jsquad``.

    Returns
    -------
    PublisherFiles
    """
    valid, train, version = _versioned_files(folder, "jsquad")
    files = [valid, train] if train else [valid]
    rows, locations = _squad_rows(valid)
    fewshot = None
    if train:
        fewshot = RawSplit("train", *_squad_rows(train))
    return PublisherFiles(
        evaluated=RawSplit("test", rows, locations),
        fewshot=fewshot,
        version=f"JGLUE v{version} ({digest(files)})",
        missing=() if train else (f"train-v{version}.json",),
    )


JCOMMONSENSEQA = Reader(
    name="jcommonsenseqa",
    read=read_jcommonsenseqa,
    mapper=jcommonsenseqa,
    layout=("valid-v1.1.json", "train-v1.1.json (optional: few-shot)"),
    origin="github.com/yahoojapan/JGLUE, datasets/jcommonsenseqa-v1.1/",
)
JNLI = Reader(
    name="jnli",
    read=read_jnli,
    mapper=jnli,
    layout=("valid-v1.1.json", "train-v1.1.json (optional: few-shot)"),
    origin="github.com/yahoojapan/JGLUE, datasets/jnli-v1.1/",
)
JSQUAD = Reader(
    name="jsquad",
    read=read_jsquad,
    mapper=jsquad,
    layout=("valid-v1.1.json", "train-v1.1.json (optional: few-shot)"),
    origin="github.com/yahoojapan/JGLUE, datasets/jsquad-v1.1/",
)
