"""Turning stored ratings into raw annotation batches (JSONL, :mod:`evalpipe.annotation.schema`).

Every file written here names annotators by their pseudonym (``pseudonyms.pseudonymise_id``
with the campaign's salt), never by their login id: the login id stays in the database.

A database is one collection round and maps to one batch file: the first export takes the next
free ``batch_NNN.jsonl`` number and records it in the database; later exports rewrite that same
file. Re-exporting after edits therefore never puts the same (id, annotator) into two batches,
which the agreement stage would reject as a duplicate.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalpipe.annotation.pseudonyms import pseudonymise_id
from evalpipe.annotation.schema import Annotation, annotation_to_dict, validate_annotation
from evalpipe.annotation.spreadsheet import FORMULA_AFTER_BREAK, FORMULA_TRIGGERS
from evalpipe.annotation.web.store import Store, to_annotations
from evalpipe.errors import InputError

BATCH_RE = re.compile(r"^batch_(\d{3,})\.jsonl$")
_BATCH_META = "export_batch"


def _pid(annotator_id: str, salt: str | None) -> str:
    return annotator_id if salt is None else pseudonymise_id(annotator_id, salt)


def export_records(store: Store, *, salt: str | None = None) -> list[dict[str, Any]]:
    """Every rating as a spec record, sorted by (id, annotator_id), each checked by the validator.

    Records also carry the audit fields ``timestamp_start``, ``timestamp_end``,
    ``annotation_duration`` (seconds from opening the item to the last save) and ``is_modified``.
    With ``salt``, annotators are named by their pseudonym. Gold items are never exported.

    Raises
    ------
    InputError
        If a stored rating would not pass ``schema.validate_annotation`` (should never happen:
        the database's CHECK constraints hold the same ranges).
    """
    records = []
    stored = store.ratings()  # read once: the server may be writing meanwhile
    for rating, a in zip(stored, to_annotations(stored), strict=True):
        rec = annotation_to_dict(a)
        rec["annotator_id"] = _pid(a.annotator_id, salt)
        if rating.timestamp_start is not None:
            rec["timestamp_start"] = rating.timestamp_start
            rec["timestamp_end"] = rating.timestamp_end
            rec["annotation_duration"] = rating.annotation_duration
            rec["is_modified"] = rating.is_modified
        records.append(rec)
    records.sort(key=lambda r: (r["id"], r["annotator_id"]))
    problems = [
        p
        for i, rec in enumerate(records, 1)
        for p in validate_annotation(rec, where=f"{store.path}: rating {i}")
    ]
    if problems:
        raise InputError("stored ratings fail the annotation schema:\n  " + "\n  ".join(problems))
    return records


def to_jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def next_batch_path(directory: str | Path) -> Path:
    """``directory/batch_NNN.jsonl`` with NNN one above the highest existing number (001 first)."""
    directory = Path(directory)
    numbers = (
        [int(m.group(1)) for p in directory.glob("batch_*.jsonl") if (m := BATCH_RE.match(p.name))]
        if directory.exists()
        else []
    )
    return directory / f"batch_{max(numbers, default=0) + 1:03d}.jsonl"


def batch_path(store: Store, directory: str | Path) -> Path:
    """The batch file this database exports to: the one it used before, else the next free one."""
    directory = Path(directory)
    name = store.get_meta(_BATCH_META)
    if name:
        return directory / name
    return next_batch_path(directory)


def remember_batch(store: Store, path: Path) -> None:
    store.set_meta(_BATCH_META, path.name)


def csv_safe(value: Any) -> Any:
    r"""A text cell that a spreadsheet will not run as a formula: ``'`` in front of a leading
    ``=``, ``+``, ``-``, ``@``, tab or CR (OWASP "CSV injection"), and in front of such a
    character that begins a line inside the text (after CR or LF); other values unchanged.

    >>> csv_safe("=1+1"), csv_safe("-1 is wrong"), csv_safe("ok"), csv_safe(-1)
    ("'=1+1", "'-1 is wrong", 'ok', -1)
    >>> csv_safe("fine\r=cmd|' /C calc'!A0")
    "fine\r'=cmd|' /C calc'!A0"
    """
    if not isinstance(value, str):
        return value
    text = FORMULA_AFTER_BREAK.sub(r"\1'", value)
    return "'" + text if text.startswith(FORMULA_TRIGGERS) else text


def csv_field(value: Any) -> str:
    r"""One CSV field: quoted (RFC 4180) when it holds a comma, a quote, a CR or an LF.

    Python's csv module (and pandas) leave a field with a lone CR unquoted when the line ending
    is LF, and a reader then starts a new row inside it; this quotes every line break.

    >>> csv_field("a\rb"), csv_field("x,y"), csv_field(1.5), csv_field(None)
    ('"a\rb"', '"x,y"', '1.5', '')
    """
    text = "" if value is None else str(value)
    if any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """``rows`` as CSV text (header first, LF line endings), every text cell :func:`csv_safe`
    and every field through :func:`csv_field`; byte-deterministic."""
    lines = [",".join(csv_field(c) for c in columns)]
    lines += [",".join(csv_field(csv_safe(row.get(c))) for c in columns) for row in rows]
    return "\n".join(lines) + "\n"


def csv_safe_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every text cell of ``rows`` through :func:`csv_safe` (for any CSV the app writes)."""
    return [{k: csv_safe(v) for k, v in row.items()} for row in rows]


def timing_rows(store: Store, *, salt: str | None = None) -> list[dict[str, Any]]:
    """Time per item (visible, non-idle seconds) and edit count, for a CSV beside the batch
    (text cells made :func:`csv_safe`)."""
    return csv_safe_rows(
        [
            {
                "id": r.item_id,
                "annotator_id": _pid(r.annotator_id, salt),
                "active_seconds": round(r.active_ms / 1000, 1),
                "revisions": r.revisions,
            }
            for r in store.ratings()
        ]
    )


def adjudication_records(store: Store, *, salt: str | None = None) -> list[dict[str, Any]]:
    """Final ratings as spec records with ``annotator_id: adjudicated:<adjudicator>``, by item.

    The note is not part of the annotation record; :func:`adjudication_notes` carries it.
    """
    return [
        annotation_to_dict(
            Annotation(
                id=a.item_id,
                annotator_id=_pid(a.annotator_id, salt),
                timestamp=a.updated_at,
                annotations=dict(a.scores),
                confidence=dict(a.confidence),
            )
        )
        for a in store.adjudications()
    ]


def adjudication_path(batch: Path) -> Path:
    """Where a batch's adjudications go: ``batch_NNN.adjudicated.jsonl`` beside it."""
    return batch.with_name(batch.name.removesuffix(".jsonl") + ".adjudicated.jsonl")


def notes_rows(store: Store, *, salt: str | None = None) -> list[dict[str, Any]]:
    """Adjudication notes and annotators' comments and flags, one row each, for a CSV (text
    cells made :func:`csv_safe`: comments are free text, ``=HYPERLINK(...)`` included)."""
    rows = [
        {
            "id": a.item_id,
            "annotator_id": _pid(a.annotator_id, salt),
            "kind": "adjudication",
            "flag": False,
            "text": a.note,
        }
        for a in store.adjudications()
    ]
    rows += [
        {
            "id": n["item_id"],
            "annotator_id": _pid(n["annotator_id"], salt),
            "kind": "comment",
            "flag": n["flag"],
            "text": n["comment"],
        }
        for n in store.notes()
    ]
    return csv_safe_rows(sorted(rows, key=lambda r: (r["id"], r["kind"], r["annotator_id"])))


def qualification_records(store: Store, *, salt: str | None = None) -> list[dict[str, Any]]:
    """Every scored qualification attempt: annotator, attempt, pass, overall and per-axis kappa."""
    out = []
    for a in store.qual_attempts():
        res = a["result"]
        out.append(
            {
                "annotator_id": _pid(a["annotator_id"], salt),
                "attempt": a["attempt"],
                "finished_at": a["finished_at"],
                "passed": a["passed"],
                "overall": res.get("overall"),
                "threshold": res.get("threshold"),
                "axes": {
                    axis: {
                        "kappa": v.get("kappa"),
                        "n": v.get("n"),
                        "undefined_reason": v.get("undefined_reason"),
                    }
                    for axis, v in sorted(res.get("axes", {}).items())
                },
                "reason": res.get("reason"),
            }
        )
    return out
