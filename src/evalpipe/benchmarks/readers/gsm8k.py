"""GSM8K as openai/grade-school-math distributes it: ``grade_school_math/data/test.jsonl`` and
``train.jsonl``, one ``{"question", "answer"}`` object per line, the answer ending in
``#### <number>``. The rows already have the Hub schema, so the Hub mapper applies unchanged."""

from __future__ import annotations

from pathlib import Path

from evalpipe.benchmarks import mapping
from evalpipe.benchmarks.readers.base import (
    PublisherFiles,
    RawSplit,
    Reader,
    digest,
    read_jsonl,
    require_file,
    require_keys,
)

EXPECTED = '{"question": ..., "answer": "...\\n#### <number>"}'


def _split(path: Path, split: str) -> RawSplit:
    rows, locations = read_jsonl(path, expected=EXPECTED)
    for row, where in zip(rows, locations, strict=True):
        require_keys(row, ("question", "answer"), where, EXPECTED)
    return RawSplit(split, rows, locations)


def read(folder: Path) -> PublisherFiles:
    """Read ``test.jsonl`` (evaluated) and, when present, ``train.jsonl`` (few-shot pool).

    Parameters
    ----------
    folder : ``data/raw/benchmarks/gsm8k``.

    Returns
    -------
    PublisherFiles
    """
    test = require_file(folder, "test.jsonl", "gsm8k")
    train = folder / "train.jsonl"
    files = [test, train] if train.is_file() else [test]
    return PublisherFiles(
        evaluated=_split(test, "test"),
        fewshot=_split(train, "train") if train.is_file() else None,
        version=f"openai/grade-school-math ({digest(files)})",
        missing=() if train.is_file() else ("train.jsonl",),
    )


READER = Reader(
    name="gsm8k",
    read=read,
    mapper=mapping.gsm8k,
    layout=("test.jsonl", "train.jsonl (optional: few-shot)"),
    origin="github.com/openai/grade-school-math, grade_school_math/data/",
)
