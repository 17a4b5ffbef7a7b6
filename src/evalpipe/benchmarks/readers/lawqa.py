"""Japanese statute QA as digital-go-jp/lawqa_jp distributes it (``data/``, Public Data License
1.0): ``selection.json`` holds ``{"samples": [...]}``, 140 four-choice questions with the fields
``ファイル名`` (question id), ``コンテキスト`` (statute excerpt), ``指示`` (instruction), ``問題文``
(question), ``選択肢`` (one string, a line per option ``"a ..."`` .. ``"d ..."``) and ``output``
(the gold letter). ``selection_randomized.json`` holds each question in four option orders
(``回答オーダーマップ番号`` 1-4): benchmark ``lawqa_orders`` reads it, so that order sensitivity
can be measured on the same questions.

The publisher has no train split: about 8% of the questions, chosen by a hash of their id alone
(so the same questions in both files and in any excerpt), are held out as the few-shot pool with
all their option orders, so a demonstration is never the evaluated question in another order.
On the full files that is 10 of 140 questions, from all three statutes.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.readers.base import (
    PublisherFiles,
    RawSplit,
    Reader,
    digest,
    read_text,
    require_file,
)
from evalpipe.benchmarks.rows import example, hash_key, text_field
from evalpipe.errors import InputError

LABELS = ("a", "b", "c", "d")
EXPECTED = (
    '{"samples": [{"ファイル名", "コンテキスト", "指示", "問題文", '
    '"選択肢": "a ...\\nb ...\\nc ...\\nd ...", "output": "a"-"d"}, ...]}'
)
REQUIRED = ("ファイル名", "コンテキスト", "指示", "問題文", "選択肢", "output")
HOLDOUT_PERCENT = 8  # share of questions held out as demonstrations (no train split exists)
FEWSHOT_ORDER = "1"  # the option order a held-out question is shown in as a demonstration
# "a 本文" per line; NFKC first, so full-width ａ and ideographic spaces are accepted too
_OPTION = re.compile(r"^([a-d])[\s.:：．、)）]\s*(.+)$")


def split_options(text: str, where: str) -> list[str]:
    """``"a 甲\\nb 乙\\nc 丙\\nd 丁"`` -> ``["甲", "乙", "丙", "丁"]``, in label order.

    >>> split_options("a 甲\\nb 乙\\nc 丙\\nd 丁", "x")
    ['甲', '乙', '丙', '丁']
    """
    options: dict[str, str] = {}
    for line in text.strip().splitlines():
        norm = unicodedata.normalize("NFKC", line).strip()
        if not norm:
            continue
        m = _OPTION.match(norm)
        if not m:
            if not options:
                raise InputError(
                    f'{where}: field "選択肢": line {line!r} does not start with an option label '
                    "a-d; expected four lines 'a ...' to 'd ...'"
                )
            # an option's text that runs over a line break belongs to the option before it
            last = list(options)[-1]
            options[last] += "\n" + line.strip()
            continue
        label, body = m.group(1), m.group(2).strip()
        if label in options:
            raise InputError(f'{where}: field "選択肢": option {label!r} appears twice')
        options[label] = body
    if tuple(options) != LABELS:
        raise InputError(
            f'{where}: field "選択肢": found options {", ".join(options) or "none"}; expected '
            "exactly a, b, c and d in that order"
        )
    return [options[label] for label in LABELS]


def law_of(question_id: str) -> str:
    """The statute a question is on: the first part of its id (``金商法_第2章_...`` -> 金商法)."""
    return question_id.split("_", 1)[0]


def lawqa(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """A lawqa_jp entry -> a four-choice example (choices a-d never perturbed)."""
    answer = unicodedata.normalize("NFKC", text_field(row, "output", where)).strip().lower()
    if answer not in LABELS:
        raise InputError(f'{where}: field "output": expected one of a, b, c, d, got {answer!r}')
    fields = {
        "context": text_field(row, "コンテキスト", where).strip(),
        "question": text_field(row, "問題文", where).strip(),
    }
    return example(
        fields,
        ["context", "question"],
        answer,
        choices=split_options(text_field(row, "選択肢", where), where),
        subtask=law_of(text_field(row, "ファイル名", where)),
    )


def _samples(path: Path) -> RawSplit:
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); expected {EXPECTED}"
        ) from None
    samples = data.get("samples") if isinstance(data, dict) else None
    if not isinstance(samples, list):
        raise InputError(f'{path}: expected a top-level object with a "samples" list: {EXPECTED}')
    rows, locations = [], []
    for i, entry in enumerate(samples, start=1):
        where = f'{path}: "samples"[{i - 1}]'
        if not isinstance(entry, dict):
            raise InputError(f"{where}: expected an object, got {type(entry).__name__}")
        missing = [k for k in REQUIRED if k not in entry]
        if missing:
            raise InputError(f"{where}: missing {', '.join(missing)}; expected {EXPECTED}")
        row = dict(entry)
        order = entry.get("回答オーダーマップ番号")
        qid = str(entry["ファイル名"]).strip()
        row["_id"] = f"{qid}/{str(order).strip()}" if order is not None else qid
        rows.append(row)
        locations.append(where)
    return RawSplit("test", rows, locations)


def held_out(question_id: str) -> bool:
    """Whether a question is a demonstration: its id's hash bucket (0-99) < HOLDOUT_PERCENT."""
    return int(hash_key("lawqa-holdout", question_id)[:8], 16) % 100 < HOLDOUT_PERCENT


def _read(folder: Path, name: str, reader: str) -> PublisherFiles:
    path = require_file(folder, name, reader)
    data = _samples(path)
    keep = [not held_out(str(r["ファイル名"]).strip()) for r in data.rows]
    shot = [
        not k and str(r.get("回答オーダーマップ番号", FEWSHOT_ORDER)).strip() == FEWSHOT_ORDER
        for r, k in zip(data.rows, keep, strict=True)
    ]

    def subset(mask: list[bool], split: str) -> RawSplit:
        pairs = [(r, loc) for r, loc, m in zip(data.rows, data.locations, mask, strict=True) if m]
        return RawSplit(split, [r for r, _ in pairs], [loc for _, loc in pairs])

    return PublisherFiles(
        evaluated=subset(keep, "test"),
        fewshot=subset(shot, "fewshot"),
        version=f"digital-go-jp/lawqa_jp {name} ({digest([path])})",
        id_key="_id",
    )


def read(folder: Path) -> PublisherFiles:
    """Read ``selection.json`` (140 questions)."""
    return _read(folder, "selection.json", "lawqa")


def read_orders(folder: Path) -> PublisherFiles:
    """Read ``selection_randomized.json`` (each question in four option orders)."""
    return _read(folder, "selection_randomized.json", "lawqa_orders")


_ORIGIN = "github.com/digital-go-jp/lawqa_jp, data/ (Public Data License 1.0)"
READER = Reader(name="lawqa", read=read, mapper=lawqa, layout=("selection.json",), origin=_ORIGIN)
ORDERS_READER = Reader(
    name="lawqa_orders",
    read=read_orders,
    mapper=lawqa,
    layout=("selection_randomized.json",),
    origin=_ORIGIN,
)
