"""The filtering protocol's raw CSV input: ``dialogue_id, annotator_id, social, avoidant,
mechanical, self, timestamp``, one rating per row.

Each row becomes an annotation record of the spec's format. The CSV carries no confidence, so
every axis gets ``confidence`` (default 1.0, "sure": the rating votes in the consensus); optional
``<axis>_confidence`` columns override it. Problems are reported like the JSONL readers', as
``file:row: field "...": expectation``.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_CONFIDENCE = 1.0


def _number(text: str) -> Any:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def csv_records(
    path: str | os.PathLike[str],
    *,
    axes: Sequence[str] = ("social", "avoidant", "mechanical", "self"),
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[tuple[int, dict[str, Any] | str]]:
    """The rows of a raw CSV as ``(row number, record)``, or ``(row number, problem)``.

    Records are unvalidated annotation objects (``schema.validate_annotation`` checks them);
    row numbers count the header as row 1. ``axes``: the schema's axes (the CSV's columns).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d, "r.csv")
    ...     _ = p.write_text("dialogue_id,annotator_id,social,avoidant,mechanical,self,timestamp\\n"
    ...                      "dialogue_001,ann_001,3,2,1,1,2025-01-01T10:00:00Z\\n")
    ...     row, rec = csv_records(p)[0]
    >>> row, rec["id"], rec["annotations"]["social"], rec["confidence"]["self"]
    (2, 'dialogue_001', 3, 1.0)
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    columns = ("dialogue_id", "annotator_id", *axes, "timestamp")
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        expected = ", ".join(columns)
        return [(1, f"header: missing column(s) {', '.join(missing)} (expected {expected})")]
    out: list[tuple[int, dict[str, Any] | str]] = []
    for rowno, row in enumerate(reader, start=2):
        if not any((v or "").strip() for v in row.values()):
            continue
        conf = {
            a: _number(row[f"{a}_confidence"])
            if (row.get(f"{a}_confidence") or "").strip()
            else confidence
            for a in axes
        }
        out.append(
            (
                rowno,
                {
                    "id": (row["dialogue_id"] or "").strip(),
                    "annotator_id": (row["annotator_id"] or "").strip(),
                    "timestamp": (row["timestamp"] or "").strip(),
                    "annotations": {a: _number(row[a] or "") for a in axes},
                    "confidence": conf,
                },
            )
        )
    return out
