"""MMLU as the hendrycks/test archive (``data.tar``) distributes it: ``test/<subject>_test.csv``
and ``dev/<subject>_dev.csv``, headerless CSV rows ``question,A,B,C,D,answer-letter``.

Subjects are read in alphabetical order and rows in file order, which is the order of the Hub's
``cais/mmlu`` ``all`` config, so example ids (``mmlu/test/<subject>/<n>``) agree across sources.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from evalpipe.benchmarks import mapping
from evalpipe.benchmarks.readers.base import (
    PublisherFiles,
    RawSplit,
    Reader,
    digest,
    read_text,
    unpacked_root,
)
from evalpipe.errors import InputError

EXPECTED = "headerless rows question,A,B,C,D,answer (answer one of A, B, C, D)"
LETTERS = ("A", "B", "C", "D")


def read_csv(path: Path, subject: str) -> tuple[list[dict], list[str]]:
    """Rows of one subject file as ``{question, subject, choices, answer}`` with their lines.

    Parameters
    ----------
    path : ``<subject>_test.csv`` or ``<subject>_dev.csv``.
    subject : the subject name (the row's subtask).

    Returns
    -------
    (rows, locations)
    """
    handle = io.StringIO(read_text(path), newline="")
    reader = csv.reader(handle)
    rows, locations = [], []
    start = 1
    for record in reader:
        line = start
        start = reader.line_num + 1  # a quoted field may span lines: the next record starts here
        if not record or all(not cell.strip() for cell in record):
            continue
        if line == 1 and [c.strip().lower() for c in record[1:5]] in (
            ["a", "b", "c", "d"],
            ["choice0", "choice1", "choice2", "choice3"],
        ):
            raise InputError(
                f"{path}:1: this file has a header row {record}; expected the archive's "
                f"{EXPECTED} (a converted copy is not the publisher's file)"
            )
        if len(record) != 6:
            raise InputError(f"{path}:{line}: expected 6 columns ({EXPECTED}), got {len(record)}")
        answer = record[5].strip()
        if answer not in LETTERS:
            raise InputError(
                f"{path}:{line}: column 6 (answer): expected one of A, B, C, D, got {answer!r}"
            )
        rows.append(
            {"question": record[0], "subject": subject, "choices": record[1:5], "answer": answer}
        )
        locations.append(f"{path}:{line}")
    return rows, locations


def _folder_files(folder: Path, kind: str, subjects: tuple[str, ...]) -> list[tuple[str, Path]]:
    known = set(subjects)
    files = []
    for path in sorted(folder.glob(f"*_{kind}.csv")):
        subject = path.name[: -len(f"_{kind}.csv")]
        if subject not in known:
            raise InputError(
                f"{path}: not an MMLU subject file; expected <subject>_{kind}.csv for one of "
                f"the 57 subjects (e.g. abstract_algebra_{kind}.csv)"
            )
        files.append((subject, path))
    return files


def _split(files: list[tuple[str, Path]], split: str) -> RawSplit:
    rows: list[dict] = []
    locations: list[str] = []
    for subject, path in files:
        sub_rows, sub_locations = read_csv(path, subject)
        rows += sub_rows
        locations += sub_locations
    return RawSplit(split, rows, locations)


def read(folder: Path, subjects: tuple[str, ...]) -> PublisherFiles:
    """Read ``test/*_test.csv`` (evaluated) and ``dev/*_dev.csv`` (few-shot, when present).

    Parameters
    ----------
    folder : ``data/raw/benchmarks/mmlu``: the archive's ``data/`` folder, or the archive
        unpacked into it (``mmlu/data/test/...``).
    subjects : the 57 subjects the mmlu spec lists (``evalpipe.benchmarks.MMLU_SUBJECTS``).

    Returns
    -------
    PublisherFiles
    """
    folder = unpacked_root(folder, "test", "data")
    test_files = (
        _folder_files(folder / "test", "test", subjects) if (folder / "test").is_dir() else []
    )
    if not test_files:
        raise InputError(
            f"{folder / 'test'}: no <subject>_test.csv files; expected the data/ folder of the "
            f"hendrycks/test archive (test/abstract_algebra_test.csv, ...)"
        )
    dev_files = _folder_files(folder / "dev", "dev", subjects) if (folder / "dev").is_dir() else []
    present = {s for s, _ in test_files}
    missing = [f"test/{s}_test.csv" for s in subjects if s not in present]
    if not dev_files:
        missing.append("dev/<subject>_dev.csv")
    return PublisherFiles(
        evaluated=_split(test_files, "test"),
        fewshot=_split(dev_files, "dev") if dev_files else None,
        version=f"hendrycks/test data ({digest(p for _, p in test_files + dev_files)})",
        missing=tuple(missing),
    )


READER = Reader(
    name="mmlu",
    read=read,
    per_subtask=True,
    mapper=mapping.mmlu,
    layout=("test/<subject>_test.csv", "dev/<subject>_dev.csv (optional: few-shot)"),
    origin="people.eecs.berkeley.edu/~hendrycks/data.tar (linked from github.com/hendrycks/test)",
)
