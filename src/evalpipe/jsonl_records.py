"""Record files in JSON lines, read with every bad line listed.

A record file (annotation tasks, gold items, sycophancy dialogues) holds one JSON object per
line, each with a unique ``id``; blank lines are skipped. Reading one collects every problem as
``file:line: ...`` (a missing file, text that is not UTF-8, a line that is not JSON, a record its
validator refuses, a repeated id) and raises one InputError listing them, so a file is fixed in
one pass rather than one error per run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from evalpipe.errors import InputError, where

MAX_LISTED = 200
"""Problems listed in one error message; the rest are counted."""


class Validator(Protocol):
    """Every problem with one parsed line, each starting with its location ``where``."""

    def __call__(self, obj: Any, *, where: str) -> list[str]: ...


def iter_json_lines(
    path: str | os.PathLike[str], problems: list[str], *, what: str = "file"
) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` of each non-blank line that is JSON.

    A missing file (``what`` names it in the message), text that is not UTF-8 and lines that
    are not JSON are appended to ``problems`` rather than raised, so a caller can list them with
    its own findings.

    >>> problems = []
    >>> list(iter_json_lines("no/such.jsonl", problems, what="gold file"))
    []
    >>> problems
    ['no/such.jsonl: gold file not found']
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problems.append(f"{path}: {what} not found")
        return
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 text ({exc})")
        return
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where(path, line=lineno)}: not valid JSON ({exc.msg})")


def raise_problems(problems: list[str], what: str) -> None:
    """Raise one InputError listing ``problems`` (the first :data:`MAX_LISTED`); none: return.

    >>> raise_problems(["a.jsonl:2: not valid JSON"], "a.jsonl")
    Traceback (most recent call last):
    ...
    evalpipe.errors.InputError: 1 problem(s) in a.jsonl:
      a.jsonl:2: not valid JSON
    """
    if not problems:
        return
    listed = problems[:MAX_LISTED]
    more = len(problems) - len(listed)
    tail = f"\n  ... and {more} more" if more else ""
    raise InputError(f"{len(problems)} problem(s) in {what}:\n  " + "\n  ".join(listed) + tail)


def read_jsonl_records(
    path: str | os.PathLike[str],
    validate: Validator | Callable[..., list[str]],
    *,
    what: str = "file",
) -> list[tuple[int, dict[str, Any]]]:
    """The valid records of a JSON-lines file with unique ids, in file order.

    Parameters
    ----------
    path:
        The file.
    validate:
        ``validate(obj, where="file:line")``: every problem with one parsed line (an empty list
        when it is a valid record, which must then be an object with a string ``id``).
    what:
        What the file is, for the message when it is missing (``gold file``).

    Returns
    -------
    list[tuple[int, dict]]
        ``(line number, record)`` for each line.

    Raises
    ------
    InputError
        Listing every problem as ``file:line: ...``, a repeated id with the line it first
        appeared on.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "t.jsonl").write_text('{"id": "a"}\\n\\n{"id": "b"}\\n', encoding="utf-8")
    25
    >>> read_jsonl_records(folder / "t.jsonl", lambda obj, *, where: [])
    [(1, {'id': 'a'}), (3, {'id': 'b'})]
    """
    path = Path(path)
    problems: list[str] = []
    records: list[tuple[int, dict[str, Any]]] = []
    first_line: dict[str, int] = {}
    for lineno, obj in iter_json_lines(path, problems, what=what):
        loc = where(path, line=lineno)
        found = validate(obj, where=loc)
        if found:
            problems.extend(found)
            continue
        key = obj["id"]
        if key in first_line:
            problems.append(
                f'{loc}: field "id": duplicate id {key!r} (first at line {first_line[key]})'
            )
            continue
        first_line[key] = lineno
        records.append((lineno, obj))
    raise_problems(problems, str(path))
    return records
