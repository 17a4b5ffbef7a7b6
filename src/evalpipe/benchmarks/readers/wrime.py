"""Japanese three-class sentiment from WRIME ver.2 as ids-cv/wrime distributes it:
``wrime-ver2.tsv``, tab-separated with a header row, one SNS post per row, columns including
``Sentence``, ``Train/Dev/Test`` (train | dev | test) and ``Avg. Readers_Sentiment`` (the readers'
mean polarity, -2 strong negative .. 2 strong positive).

Polarity maps to three classes by its sign: below 0 negative, 0 neutral, above 0 positive (the
three-class positive / neutral / negative task). The test rows are evaluated, the train
rows feed demonstrations. WRIME is CC BY-NC-ND 4.0: evalpipe reads the file, never bundles it.
"""

from __future__ import annotations

import math
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
from evalpipe.benchmarks.rows import example, text_field
from evalpipe.errors import InputError

FILE = "wrime-ver2.tsv"
SPLIT_COLUMN = "Train/Dev/Test"
POLARITY_COLUMN = "Avg. Readers_Sentiment"
REQUIRED = ("Sentence", SPLIT_COLUMN, POLARITY_COLUMN)
LABELS = ("positive", "neutral", "negative")


def polarity_label(value: str, where: str) -> str:
    """The readers' mean polarity -> positive / neutral / negative by its sign.

    >>> polarity_label("-1", "x"), polarity_label("0", "x"), polarity_label("0.33", "x")
    ('negative', 'neutral', 'positive')
    """
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if math.isnan(number) or not -2.0 <= number <= 2.0:
        raise InputError(
            f'{where}: field "{POLARITY_COLUMN}": expected a number from -2 to 2, got {value!r}'
        )
    return "negative" if number < 0 else "positive" if number > 0 else "neutral"


def wrime(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """A WRIME row -> a three-class sentiment example on the post's text."""
    label = polarity_label(str(row.get(POLARITY_COLUMN, "")).strip(), where)
    return example({"text": text_field(row, "Sentence", where).strip()}, ["text"], label)


def read(folder: Path) -> PublisherFiles:
    """Read ``wrime-ver2.tsv``: its test rows (evaluated) and train rows (few-shot pool).

    Parameters
    ----------
    folder : ``data/raw/benchmarks/ja_sentiment``.

    Returns
    -------
    PublisherFiles
    """
    path = require_file(folder, FILE, "wrime")
    lines = read_text(path).splitlines()
    if not lines:
        raise InputError(f"{path}: empty file; expected WRIME ver.2's header row and rows")
    header = lines[0].split("\t")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(
            f"{path}:1: header lacks {', '.join(repr(c) for c in missing)}; expected WRIME "
            f"ver.2's tab-separated columns ({', '.join(REQUIRED)}, ...)"
        )
    splits: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
        "test": ([], []),
        "train": ([], []),
    }
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise InputError(
                f"{path}:{number}: expected {len(header)} tab-separated columns, got {len(cells)}"
            )
        row = dict(zip(header, cells, strict=True))
        split = row[SPLIT_COLUMN].strip().lower()
        if split not in ("train", "dev", "test"):
            raise InputError(
                f'{path}:{number}: field "{SPLIT_COLUMN}": expected train, dev or test, '
                f"got {row[SPLIT_COLUMN]!r}"
            )
        if split in splits:
            splits[split][0].append(row)
            splits[split][1].append(f"{path}:{number}")
    if not splits["test"][0]:
        raise InputError(f'{path}: no row has "{SPLIT_COLUMN}" = test; expected WRIME ver.2')
    return PublisherFiles(
        evaluated=RawSplit("test", *splits["test"]),
        fewshot=RawSplit("train", *splits["train"]) if splits["train"][0] else None,
        version=f"WRIME ver.2 ({digest([path])})",
    )


READER = Reader(
    name="wrime",
    read=read,
    mapper=wrime,
    layout=(FILE,),
    origin="github.com/ids-cv/wrime (CC BY-NC-ND 4.0: read, never bundled)",
)
