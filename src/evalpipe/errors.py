"""One exception family for input users can fix.

Messages name the file, the line or row, the field and what was expected, so a stage can print
the message as it is and exit non-zero.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input: a missing file, a malformed row, a value out of range, an unknown name."""


def where(
    path: object,
    *,
    line: int | None = None,
    row: int | None = None,
    column: str | None = None,
    field: str | None = None,
) -> str:
    """Format a location as ``file:line`` / ``file, row N, column C``.

    >>> where("a.jsonl", line=3, field="score")
    'a.jsonl:3: field "score"'
    """
    text = str(path)
    if line is not None:
        text += f":{line}"
    if row is not None:
        text += f", row {row}"
    if column is not None:
        text += f", column {column!r}"
    if field is not None:
        text += f': field "{field}"'
    return text
