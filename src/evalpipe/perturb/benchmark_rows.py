"""Reading benchmark rows for perturbation: the frame-level checks (columns, one language,
unique ids) and each row's fields, perturbable field names and protected spans."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES
from evalpipe.perturb.columns import CARRIED_COLUMNS

REQUIRED_COLUMNS = ("benchmark", "example_id", "language", "fields", "perturbable")


def check_benchmark(benchmark: pd.DataFrame, *, source: str) -> str:
    """Check the benchmark frame as a whole; return its one language.

    Raises
    ------
    InputError for a missing column, no rows, not exactly one known language, or a duplicate
    ``example_id``.
    """
    missing = [c for c in (*REQUIRED_COLUMNS, *CARRIED_COLUMNS) if c not in benchmark.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {sorted(set(missing))}; expected the "
            "benchmark columns of docs/architecture.md"
        )
    if benchmark.empty:
        raise InputError(f"{source}: no examples")
    languages = sorted({str(v) for v in benchmark["language"].tolist()})
    if len(languages) != 1 or languages[0] not in LANGUAGES:
        raise InputError(
            f"{source}, column 'language': expected one of {list(LANGUAGES)} for "
            f"every row, found {languages}"
        )
    ids = benchmark["example_id"].astype(str).tolist()
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise InputError(f"{source}, column 'example_id': duplicate id {dup!r}; ids must be unique")
    return languages[0]


def parse_fields(value: Any, *, source: str, row: int) -> dict[str, Any]:
    """A row's ``fields``: the JSON object of named texts (a dict is taken as it is)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{source}, row {row}, column 'fields': expected a JSON object of "
                f"named texts, found invalid JSON ({exc.msg})"
            ) from None
    else:
        parsed = value
    if not isinstance(parsed, dict):
        raise InputError(
            f"{source}, row {row}, column 'fields': expected a JSON object of named "
            f"texts, found {type(parsed).__name__}"
        )
    return parsed


def perturbable_fields(value: Any, fields: dict[str, Any], *, source: str, row: int) -> list[str]:
    """A row's ``perturbable`` names, each a text field of ``fields``; sorted, unique."""
    if value is None or isinstance(value, str):
        raise InputError(
            f"{source}, row {row}, column 'perturbable': expected a list of field "
            f"names, found {value!r}"
        )
    names = [str(v) for v in list(value)]
    for name in names:
        if name not in fields:
            raise InputError(
                f"{source}, row {row}, column 'perturbable': field {name!r} is not "
                f"in 'fields' (which has {sorted(fields)})"
            )
        if not isinstance(fields[name], str):
            raise InputError(
                f"{source}, row {row}, column 'fields': field {name!r} must be "
                f"text, found {type(fields[name]).__name__}"
            )
    return sorted(set(names))  # order-independent: the seed key names the field


def protected_strings(value: Any, *, source: str, row: int) -> list[str]:
    """A row's ``protected`` strings (none when the column is absent or null), empty ones left out."""
    if value is None or (isinstance(value, float) and value != value):
        return []
    if isinstance(value, str):
        raise InputError(
            f"{source}, row {row}, column 'protected': expected a list of strings, found {value!r}"
        )
    return [str(v) for v in list(value) if v]


def protected_spans(text: str, protected: list[str]) -> list[tuple[int, int]]:
    """Every place in ``text`` where a protected string occurs (overlaps included)."""
    spans = []
    for needle in protected:
        at = text.find(needle)
        while at >= 0:
            spans.append((at, at + len(needle)))
            at = text.find(needle, at + 1)
    return spans
