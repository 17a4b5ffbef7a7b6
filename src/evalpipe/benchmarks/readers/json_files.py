"""The generic ``json`` reader: JSON or JSON-lines files that a spec lists, for local benchmarks
and any publisher whose files are plain JSON (``sources: files: {reader: json, test: [...]}``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.readers.base import ListedFilesReader, expand, read_json_rows


def read_json_files(
    folder: Path, patterns: Sequence[str], *, options: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The ``json`` reader: JSON/JSONL files (see :func:`read_json_rows`), rows in file order."""
    rows: list[dict[str, Any]] = []
    for path in expand(folder, patterns):
        rows.extend(read_json_rows(path, json_field=options.get("json_field")))
    return rows


READER = ListedFilesReader(name="json", read=read_json_files)
