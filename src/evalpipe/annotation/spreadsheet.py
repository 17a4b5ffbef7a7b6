"""The offline annotation round trip: an .xlsx template out, validated raw JSONL back in.

Writing (``write_template``): one row per task with its context, user turn and AI response stored
as *text* cells (openpyxl would otherwise store a response starting with "=" as a formula: formula
injection from model output), a 1-5 dropdown per axis and a 0-1 confidence cell per axis, the
guidelines on a second sheet, frozen header, wrapped text. The file is byte-deterministic: the zip
entry times and the document's created/modified stamps are fixed.

Reading (``read_filled``): dropdowns are not enforced when values are pasted, so every cell is
checked again; every bad cell is reported by sheet, row and column in one InputError, and the
caller writes nothing unless the whole sheet is clean.
"""

from __future__ import annotations

import io
import math
import os
import re
import unicodedata
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openpyxl import Workbook, load_workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from evalpipe.annotation.schema import AXES, LABEL_NAMES, DialoguePair, validate_annotation
from evalpipe.atomic import atomic_path
from evalpipe.errors import InputError
from evalpipe.params_schema import default_of

SHEET = "annotate"
GUIDE_SHEET = "guidelines"
TEXT_COLUMNS = ("id", "context", "user", "response")
RATING_COLUMNS = tuple(c for axis in AXES for c in (axis, f"{axis}_confidence"))
COLUMNS = TEXT_COLUMNS + RATING_COLUMNS
# Fixed document stamp: any later "modified" time was written by the annotator's spreadsheet app.
TEMPLATE_EPOCH = "2000-01-01T00:00:00Z"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_WIDTHS = {"id": 14, "context": 42, "user": 42, "response": 60}
_MAX_LISTED = 200


def context_text(task: DialoguePair, *, context_window: int) -> str:
    """The last ``context_window`` context turns as ``User (-3): ...`` lines."""
    turns = task.context[-context_window:] if context_window > 0 else []
    return "\n".join(
        f"{'AI' if t.get('speaker') == 'ai' else 'User'} ({t.get('turn')}): {t.get('text', '')}"
        for t in turns
    )


def xlsx_safe(text: str) -> str:
    """Show control characters that the xlsx format cannot store as visible escapes (``\\x15``).

    Model output can contain any code point; openpyxl refuses C0 controls other than tab and
    newline. The spreadsheet only displays the text (ratings are keyed by id), so an escape loses
    nothing the round trip needs.
    """
    return ILLEGAL_CHARACTERS_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection")."""

FORMULA_AFTER_BREAK = re.compile(r"([\r\n]+)(?=[=+\-@\t])")
"""A line break followed by a formula trigger: a reader that splits the text into lines (or a
CSV field left unquoted) would start a cell there."""


def formula_like(text: str) -> bool:
    r"""Whether ``text``, or any line within it, begins like a formula.

    >>> formula_like("=1+1"), formula_like("fine\r=cmd"), formula_like("a - b")
    (True, True, False)
    """
    return text.startswith(FORMULA_TRIGGERS) or FORMULA_AFTER_BREAK.search(text) is not None


def _text_cell(ws: Any, row: int, col: int, value: str) -> None:
    cell = ws.cell(row=row, column=col, value=xlsx_safe(value) if isinstance(value, str) else value)
    # Assigning a str beginning with "=" makes openpyxl store a formula; force a string cell.
    cell.data_type = "s"
    if isinstance(value, str) and formula_like(value):
        # The value stays exact; quotePrefix keeps it text even when someone edits the cell
        # (a plain string cell would be re-read as a formula after F2 + Enter).
        cell.quotePrefix = True
    cell.alignment = Alignment(wrap_text=True, vertical="top")


def build_template(
    tasks: Sequence[DialoguePair],
    *,
    context_window: int = default_of("annotation.context_window"),
    anchors: dict[str, dict[int, str]] | None = None,
    axis_names: dict[str, dict[str, str]] | None = None,
    definitions: dict[str, dict[str, str]] | None = None,
) -> Workbook:
    """The annotation workbook for ``tasks`` (pure: no file is written).

    Parameters
    ----------
    tasks:
        Dialogue pairs, one row each, in the given order.
    context_window:
        How many preceding turns to put in the context column.
    anchors, axis_names, definitions:
        Guideline text (defaults: ``evalpipe.annotation.guidelines``).

    Returns
    -------
    openpyxl.Workbook
    """
    if anchors is None or axis_names is None or definitions is None:
        from evalpipe.annotation import guidelines as gl

        anchors = anchors or gl.AXIS_ANCHORS
        axis_names = axis_names or gl.AXIS_NAMES
        definitions = definitions or gl.AXIS_DEFINITIONS
    wb = Workbook()
    ws = wb.active
    ws.title = SHEET
    head_font = Font(bold=True, color="FFFFFF")
    head_fill = PatternFill("solid", fgColor="3559E0")
    rate_fill = PatternFill("solid", fgColor="FFF7EA")
    for col, name in enumerate(COLUMNS, start=1):
        cell = ws.cell(row=1, column=col, value=name)
        cell.data_type = "s"
        cell.font = head_font
        cell.fill = head_fill
        cell.alignment = Alignment(wrap_text=True, vertical="center")
        ws.column_dimensions[get_column_letter(col)].width = _WIDTHS.get(name, 12)
        axis = name.removesuffix("_confidence")
        if name in AXES:
            scale = "\n".join(
                f"{lvl} {LABEL_NAMES[lvl]}: {anchors[axis][lvl]}" for lvl in LABEL_NAMES
            )
            cell.comment = Comment(
                f"{axis_names[axis]['ja']} / {axis_names[axis]['en']}\n{scale}",
                "evalpipe",
                width=420,
                height=260,
            )
        elif axis in AXES:
            cell.comment = Comment("How sure are you? A number from 0 to 1 (e.g. 0.8).", "evalpipe")
    for r, task in enumerate(tasks, start=2):
        _text_cell(ws, r, 1, task.id)
        _text_cell(ws, r, 2, context_text(task, context_window=context_window))
        _text_cell(ws, r, 3, task.user)
        _text_cell(ws, r, 4, task.response)
        for c in range(len(TEXT_COLUMNS) + 1, len(COLUMNS) + 1):
            ws.cell(row=r, column=c).fill = rate_fill
            ws.cell(row=r, column=c).alignment = Alignment(horizontal="center", vertical="top")
    last = max(2, len(tasks) + 1)
    score_dv = DataValidation(
        type="list",
        formula1='"1,2,3,4,5"',
        allow_blank=True,
        showErrorMessage=True,
        errorTitle="Score 1-5",
        error="Choose 1 (Absent) to 5 (Extreme).",
    )
    conf_dv = DataValidation(
        type="decimal",
        operator="between",
        formula1="0",
        formula2="1",
        allow_blank=True,
        showErrorMessage=True,
        errorTitle="Confidence 0-1",
        error="Type a number from 0 to 1, e.g. 0.8.",
    )
    ws.add_data_validation(score_dv)
    ws.add_data_validation(conf_dv)
    for col, name in enumerate(COLUMNS, start=1):
        letter = get_column_letter(col)
        if name in AXES:
            score_dv.add(f"{letter}2:{letter}{last}")
        elif name in RATING_COLUMNS:
            conf_dv.add(f"{letter}2:{letter}{last}")
    ws.freeze_panes = "B2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(COLUMNS))}{last}"

    guide = wb.create_sheet(GUIDE_SHEET)
    rows: list[list[str]] = [
        ["How to annotate"],
        [
            f"Rate the AI response (column D) on each axis 1-5 and give a confidence 0-1 per axis "
            f"in the '{SHEET}' sheet. Leave a row completely empty to skip it. Do not edit the id "
            "column. Type plain values, not formulas."
        ],
        [],
        ["axis", "level", "label", "anchor"],
    ]
    for axis in AXES:
        rows.append(
            [
                f"{axis}: {axis_names[axis]['ja']} / {axis_names[axis]['en']}",
                "",
                "",
                f"{definitions[axis]['ja']} {definitions[axis]['en']}",
            ]
        )
        for lvl in LABEL_NAMES:
            rows.append([axis, str(lvl), LABEL_NAMES[lvl], anchors[axis][lvl]])
    for r, values in enumerate(rows, start=1):
        for c, value in enumerate(values, start=1):
            _text_cell(guide, r, c, value)
    guide["A1"].font = Font(bold=True, size=13)
    for c in range(1, 5):
        guide.cell(row=4, column=c).font = Font(bold=True)
    for letter, width in zip("ABCD", (34, 7, 11, 90), strict=True):
        guide.column_dimensions[letter].width = width
    guide.freeze_panes = "A5"
    return wb


def workbook_bytes(wb: Workbook) -> bytes:
    """Serialise with fixed zip times and document stamps, so equal workbooks give equal bytes."""
    buf = io.BytesIO()
    wb.save(buf)
    out = io.BytesIO()
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                text = data.decode("utf-8")
                for tag in ("created", "modified"):
                    text = re.sub(
                        rf"(<dcterms:{tag}[^>]*>)[^<]*(</dcterms:{tag}>)",
                        rf"\g<1>{TEMPLATE_EPOCH}\g<2>",
                        text,
                    )
                data = text.encode("utf-8")
            entry = zipfile.ZipInfo(info.filename, date_time=_ZIP_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o600 << 16
            dst.writestr(entry, data)
    return out.getvalue()


def write_template(
    tasks: Sequence[DialoguePair],
    path: str | os.PathLike[str],
    *,
    context_window: int = default_of("annotation.context_window"),
) -> Path:
    """Write the annotation template atomically; see :func:`build_template`.

    Returns
    -------
    Path
        ``path``.
    """
    data = workbook_bytes(build_template(tasks, context_window=context_window))
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


# -- reading back ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportResult:
    """Records ready for a raw batch, plus what was left out and why."""

    records: list[dict[str, Any]]
    skipped_rows: list[int]
    timestamp: str


def _describe(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else repr(value[:40])


def _score(cell: Any) -> tuple[int | None, str | None]:
    value = cell.value
    if cell.data_type == "f":
        return None, f"a formula is not allowed, got {_describe(value)} (type 1-5)"
    if isinstance(value, bool):
        return None, f"expected an integer 1-5, got {value!r}"
    if isinstance(value, str):
        text = unicodedata.normalize("NFKC", value).strip()
        if not re.fullmatch(r"[+-]?\d+(\.0+)?", text):
            return None, f"expected an integer 1-5, got {_describe(value)}"
        value = int(float(text))
    elif isinstance(value, float):
        if math.isnan(value) or not value.is_integer():
            return None, f"expected an integer 1-5, got {value!r}"
        value = int(value)
    elif not isinstance(value, int):
        return None, f"expected an integer 1-5, got {_describe(value)}"
    if value not in LABEL_NAMES:
        return None, f"score {value} outside 1-5"
    return value, None


def _confidence(cell: Any) -> tuple[float | None, str | None]:
    value = cell.value
    if cell.data_type == "f":
        return None, f"a formula is not allowed, got {_describe(value)} (type a number 0-1)"
    if isinstance(value, bool):
        return None, f"expected a number 0-1, got {value!r}"
    if isinstance(value, str):
        text = unicodedata.normalize("NFKC", value).strip()
        try:
            value = float(text)
        except ValueError:
            return None, f"expected a number 0-1, got {_describe(value)}"
    if not isinstance(value, (int, float)) or math.isnan(float(value)):
        return None, f"expected a number 0-1, got {_describe(value)}"
    if not 0.0 <= float(value) <= 1.0:
        return None, f"confidence {value} outside 0-1"
    return float(value), None


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _iso_utc(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # openpyxl reads dcterms times as naive UTC
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_filled(
    path: str | os.PathLike[str],
    *,
    annotator_id: str,
    task_ids: Iterable[str] | None = None,
    timestamp: str | None = None,
) -> ImportResult:
    """Read a filled-in template and return validated annotation records.

    Parameters
    ----------
    path:
        The .xlsx file.
    annotator_id:
        Who filled it in (goes into every record).
    task_ids:
        Known task ids; an id outside them is a bad cell. None skips that check.
    timestamp:
        ISO 8601 UTC for every record. Default: the workbook's last-saved time if a spreadsheet
        app saved it, else now.

    Returns
    -------
    ImportResult
        Records sorted by id; rows left completely empty are listed in ``skipped_rows``.

    Raises
    ------
    InputError
        Listing every bad cell as ``file: sheet 'annotate', row R, column L (name): problem``.
    """
    path = Path(path)
    try:
        wb = load_workbook(path, data_only=False)
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except Exception as exc:  # openpyxl raises many types for a non-xlsx file
        raise InputError(f"{path}: not a readable .xlsx workbook ({exc})") from None
    if SHEET not in wb.sheetnames:
        raise InputError(
            f"{path}: no sheet named {SHEET!r} (found: {', '.join(wb.sheetnames)}); "
            f"use the template from `evalpipe annotate template`"
        )
    ws = wb[SHEET]
    header = {}
    for cell in ws[1]:
        if isinstance(cell.value, str) and cell.value.strip():
            header[cell.value.strip()] = cell.column
    missing = [c for c in ("id", *RATING_COLUMNS) if c not in header]
    if missing:
        raise InputError(
            f"{path}: sheet {SHEET!r}, row 1: missing column(s) "
            f"{', '.join(missing)} (expected the template's header: {', '.join(COLUMNS)})"
        )
    known = set(task_ids) if task_ids is not None else None
    problems: list[str] = []
    records: list[dict[str, Any]] = []
    skipped: list[int] = []
    first_row: dict[str, int] = {}
    if timestamp is None:
        modified = wb.properties.modified
        stamp = _iso_utc(modified) if isinstance(modified, datetime) else None
        timestamp = stamp if stamp and stamp != TEMPLATE_EPOCH else _iso_utc(datetime.now(UTC))

    def loc(row: int, name: str) -> str:
        return (
            f"{path}: sheet {SHEET!r}, row {row}, column {get_column_letter(header[name])} ({name})"
        )

    for row in range(2, ws.max_row + 1):
        cells = {name: ws.cell(row=row, column=header[name]) for name in ("id", *RATING_COLUMNS)}
        if all(_blank(cells[name].value) for name in RATING_COLUMNS):
            if not _blank(cells["id"].value):
                skipped.append(row)
            continue
        raw_id = cells["id"].value
        item_id = str(raw_id).strip() if not _blank(raw_id) else ""
        row_problems: list[str] = []
        if not item_id:
            row_problems.append(f"{loc(row, 'id')}: missing id on a row with ratings")
        elif known is not None and item_id not in known:
            row_problems.append(f"{loc(row, 'id')}: {item_id!r} is not in the task set")
        elif item_id in first_row:
            row_problems.append(
                f"{loc(row, 'id')}: duplicate id {item_id!r} (first at row {first_row[item_id]})"
            )
        if item_id and item_id not in first_row:
            first_row[item_id] = row
        scores: dict[str, Any] = {}  # axis -> 1-5
        confidence: dict[str, Any] = {}  # axis -> 0-1
        for axis in AXES:
            for name, parse, target in (
                (axis, _score, scores),
                (f"{axis}_confidence", _confidence, confidence),
            ):
                cell = cells[name]
                if _blank(cell.value):
                    expect = "an integer 1-5" if name == axis else "a number 0-1"
                    row_problems.append(
                        f"{loc(row, name)}: empty (expected {expect}; leave the "
                        f"whole row empty to skip the item)"
                    )
                    continue
                value, problem = parse(cell)
                if problem:
                    row_problems.append(f"{loc(row, name)}: {problem}")
                else:
                    target[axis] = value
        if row_problems:
            problems.extend(row_problems)
            continue
        record = {
            "id": item_id,
            "annotator_id": annotator_id,
            "timestamp": timestamp,
            "annotations": scores,
            "confidence": confidence,
        }
        problems.extend(validate_annotation(record, where=f"{path}: sheet {SHEET!r}, row {row}"))
        records.append(record)
    if problems:
        listed = problems[:_MAX_LISTED]
        more = (
            f"\n  ... and {len(problems) - len(listed)} more" if len(problems) > len(listed) else ""
        )
        raise InputError(
            f"{len(problems)} bad cell(s); nothing was written:\n  " + "\n  ".join(listed) + more
        )
    if not records:
        raise InputError(
            f"{path}: sheet {SHEET!r} has no rated rows (fill in the score and "
            f"confidence columns {', '.join(RATING_COLUMNS)})"
        )
    records.sort(key=lambda r: r["id"])
    return ImportResult(records=records, skipped_rows=skipped, timestamp=timestamp)
