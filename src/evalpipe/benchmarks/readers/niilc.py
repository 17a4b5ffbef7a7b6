"""NIILC as mynlp/niilc-qa distributes it: ``data/NIILC-ECQA2015_test.xml`` (evaluated) and
``data/NIILC-ECQA2015_dev.xml`` (few-shot): ``<questions><question id=...><text>...</text>
<answers><answer>...</answer>...</answers><meta>...</meta></question>...``.

Every non-empty ``<answer>`` is an accepted gold. The demonstration text (``target``) joins them
with "," as llm-jp-eval's output does.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.readers.base import PublisherFiles, RawSplit, Reader, digest, read_text
from evalpipe.benchmarks.rows import example, text_field
from evalpipe.errors import InputError

EXPECTED = "<question id=...><text>...</text><answers><answer>...</answer></answers></question>"


def niilc(row: Mapping[str, Any], *, config: str | None, where: str, **_: Any) -> dict[str, Any]:
    """``{id, text, answers: [..]}`` -> question + every accepted answer."""
    question = text_field(row, "text", where).strip()
    raw = row.get("answers")
    answers = [a.strip() for a in raw if isinstance(a, str) and a.strip()] if raw else []
    if not answers:
        raise InputError(f"{where}: no non-empty <answer>; expected at least one answer")
    return example(
        {"question": question}, ["question"], answers[0], answers=answers, target=",".join(answers)
    )


def _line_of(text: str, question_id: str | None) -> str:
    if not question_id:
        return ""
    at = text.find(f'id="{question_id}"')
    return f":{text.count(chr(10), 0, at) + 1}" if at >= 0 else ""


def read_xml(path: Path, split: str) -> RawSplit:
    """Questions of one NIILC XML file as ``{id, text, answers}`` rows.

    Parameters
    ----------
    path : ``NIILC-ECQA2015_test.xml`` or ``NIILC-ECQA2015_dev.xml``.
    split : the id split name.

    Returns
    -------
    RawSplit
    """
    text = read_text(path)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line = exc.position[0] if exc.position else "?"
        raise InputError(
            f"{path}:{line}: not well-formed XML ({exc}); expected {EXPECTED}"
        ) from None
    if root.tag != "questions":
        raise InputError(f"{path}: root element <{root.tag}>; expected <questions> of {EXPECTED}")
    rows, locations = [], []
    for number, question in enumerate(root.findall("question"), start=1):
        qid = question.get("id")
        where = f"{path}{_line_of(text, qid)}: question {qid or f'#{number}'}"
        body = question.find("text")
        answers = question.find("answers")
        if body is None or answers is None:
            raise InputError(f"{where}: expected {EXPECTED}")
        rows.append(
            {
                "id": qid,
                "text": body.text or "",
                "answers": [a.text or "" for a in answers.findall("answer")],
            }
        )
        locations.append(where)
    if not rows:
        raise InputError(f"{path}: no <question> elements; expected {EXPECTED}")
    return RawSplit(split, rows, locations)


def read(folder: Path) -> PublisherFiles:
    """Read ``NIILC-ECQA2015_test.xml`` and, when present, ``NIILC-ECQA2015_dev.xml``.

    Parameters
    ----------
    folder : ``data/raw/benchmarks/niilc``.

    Returns
    -------
    PublisherFiles
    """
    test = folder / "NIILC-ECQA2015_test.xml"
    if not test.is_file():
        raise InputError(
            f"{test}: file not found; the niilc reader expects the publisher's "
            f"NIILC-ECQA2015_test.xml (mynlp/niilc-qa data/) in {folder}"
        )
    dev = folder / "NIILC-ECQA2015_dev.xml"
    files = [test, dev] if dev.is_file() else [test]
    return PublisherFiles(
        evaluated=read_xml(test, "test"),
        fewshot=read_xml(dev, "dev") if dev.is_file() else None,
        version=f"NIILC-ECQA2015 ({digest(files)})",
        missing=() if dev.is_file() else ("NIILC-ECQA2015_dev.xml",),
    )


READER = Reader(
    name="niilc",
    read=read,
    mapper=niilc,
    layout=("NIILC-ECQA2015_test.xml", "NIILC-ECQA2015_dev.xml (optional: few-shot)"),
    origin="github.com/mynlp/niilc-qa, data/",
)
