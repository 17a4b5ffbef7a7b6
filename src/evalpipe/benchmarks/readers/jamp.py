"""Jamp as tomo-ut/temporalNLI_dataset distributes it: ``dataset/test_2.tsv`` (evaluated) and
``dataset/train_all.tsv`` (few-shot), tab-separated with a header row
``num, premise, hypothesis, gold_label, template_num, time_format, time_span, category``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.mapping import NLI_LABELS
from evalpipe.benchmarks.readers.base import PublisherFiles, RawSplit, Reader, digest, read_text
from evalpipe.benchmarks.rows import example, text_field
from evalpipe.errors import InputError

REQUIRED = ("premise", "hypothesis", "gold_label")


def jamp(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """``{premise, hypothesis, gold_label}`` -> the NLI example llm-jp-eval's Jamp gives."""
    premise = text_field(row, "premise", where).strip()
    hypothesis = text_field(row, "hypothesis", where).strip()
    answer = unicodedata.normalize("NFKC", text_field(row, "gold_label", where)).strip().lower()
    if answer not in NLI_LABELS:
        raise InputError(
            f'{where}: field "gold_label": expected one of {", ".join(NLI_LABELS)}, '
            f"got {row.get('gold_label')!r}"
        )
    return example(
        {"premise": premise, "hypothesis": hypothesis}, ["premise", "hypothesis"], answer
    )


def read_tsv(path: Path, split: str) -> RawSplit:
    """Rows of a Jamp TSV file keyed by its header, with ``file:line`` locations.

    Parameters
    ----------
    path : ``test_2.tsv`` or ``train_all.tsv``.
    split : the id split name.

    Returns
    -------
    RawSplit
    """
    lines = read_text(path).splitlines()
    if not lines:
        raise InputError(f"{path}: empty file; expected a header row and tab-separated rows")
    header = lines[0].split("\t")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(
            f"{path}:1: header {header} lacks {missing}; expected the Jamp columns "
            "num, premise, hypothesis, gold_label, ... separated by tabs"
        )
    rows, locations = [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise InputError(
                f"{path}:{number}: expected {len(header)} tab-separated columns "
                f"({', '.join(header)}), got {len(cells)}"
            )
        rows.append(dict(zip(header, cells, strict=True)))
        locations.append(f"{path}:{number}")
    return RawSplit(split, rows, locations)


def read(folder: Path) -> PublisherFiles:
    """Read ``test_2.tsv`` and, when present, ``train_all.tsv``.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/jamp``.

    Returns
    -------
    PublisherFiles
    """
    test = folder / "test_2.tsv"
    if not test.is_file():
        raise InputError(
            f"{test}: file not found; the jamp reader expects the publisher's test_2.tsv "
            f"(tomo-ut/temporalNLI_dataset dataset/) in {folder}"
        )
    train = folder / "train_all.tsv"
    files = [test, train] if train.is_file() else [test]
    return PublisherFiles(
        evaluated=read_tsv(test, "test"),
        fewshot=read_tsv(train, "train") if train.is_file() else None,
        version=f"Jamp test_2 ({digest(files)})",
        missing=() if train.is_file() else ("train_all.tsv",),
    )


READER = Reader(
    name="jamp",
    read=read,
    mapper=jamp,
    layout=("test_2.tsv", "train_all.tsv (optional: few-shot)"),
    origin="github.com/tomo-ut/temporalNLI_dataset, dataset/",
)
