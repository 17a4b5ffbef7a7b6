"""The offline round trip: template out (text-safe, dropdowns, guidelines), filled sheet back in
(every cell checked, every bad cell reported by sheet/row/column, nothing written on error)."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from openpyxl import load_workbook

from evalpipe.annotation.pseudonyms import is_pseudonym
from evalpipe.annotation.schema import AXES, DialoguePair, read_annotations, validate_annotation
from evalpipe.annotation.spreadsheet import (
    COLUMNS,
    GUIDE_SHEET,
    SHEET,
    read_filled,
    write_template,
)
from evalpipe.errors import InputError
from tests.annotation_harness import annotate_cli

FORMULA_LIKE = [
    "=1+2",
    '=HYPERLINK("http://evil.example","click")',
    "+SUM(A1:A3)",
    "-2+3",
    "@cmd",
    "=cmd|' /C calc'!A0",
]


def tasks() -> list[DialoguePair]:
    out = [
        DialoguePair(
            id=f"d{i}",
            user=f"ユーザー {i}",
            response=text,
            context=[
                {"turn": -2, "speaker": "user", "text": "前の質問"},
                {"turn": -1, "speaker": "ai", "text": "=AI turn"},
            ],
        )
        for i, text in enumerate(FORMULA_LIKE, start=1)
    ]
    out.append(DialoguePair(id="d7", user="=1/0", response="普通の応答です。", context=[]))
    return out


@pytest.fixture
def template(tmp_path: Path) -> Path:
    return write_template(tasks(), tmp_path / "template.xlsx", context_window=7)


def col(name: str) -> int:
    return COLUMNS.index(name) + 1


def fill(path: Path, rows: dict[int, dict[str, object]], out: Path) -> Path:
    wb = load_workbook(path)
    ws = wb[SHEET]
    for row, values in rows.items():
        for name, value in values.items():
            ws.cell(row=row, column=col(name), value=value)
    wb.save(out)
    return out


def full(score: object = 3, conf: object = 0.8) -> dict[str, object]:
    values: dict[str, object] = {}
    for axis in AXES:
        values[axis] = score
        values[f"{axis}_confidence"] = conf
    return values


def test_formula_like_model_text_stays_text(template: Path):
    wb = load_workbook(template)
    ws = wb[SHEET]
    for row, task in enumerate(tasks(), start=2):
        for name, expected in (("response", task.response), ("user", task.user)):
            cell = ws.cell(row=row, column=col(name))
            assert cell.data_type == "s", (row, name)
            assert cell.value == expected
    assert ws.cell(row=2, column=col("context")).value == "User (-2): 前の質問\nAI (-1): =AI turn"
    with zipfile.ZipFile(template) as z:
        sheet_xml = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in sheet_xml


def test_template_has_dropdowns_frozen_header_wrapping_and_guidelines(template: Path):
    wb = load_workbook(template)
    ws = wb[SHEET]
    assert [c.value for c in ws[1]] == list(COLUMNS)
    assert ws.freeze_panes == "B2"
    assert ws.cell(row=2, column=col("response")).alignment.wrap_text
    validations = {dv.type: dv for dv in ws.data_validations.dataValidation}
    assert validations["list"].formula1 == '"1,2,3,4,5"'
    assert str(validations["list"].sqref).split() == [
        f"{ws.cell(row=2, column=col(a)).column_letter}2:{ws.cell(row=2, column=col(a)).column_letter}8"
        for a in AXES
    ]
    assert (validations["decimal"].formula1, validations["decimal"].formula2) == ("0", "1")
    guide = wb[GUIDE_SHEET]
    text = "\n".join(str(c.value) for row in guide.iter_rows() for c in row if c.value)
    for axis in AXES:
        assert axis in text
    assert "Extreme" in text and "社会的迎合" in text


def test_template_is_byte_identical_on_rerun(tmp_path: Path):
    a = write_template(tasks(), tmp_path / "a.xlsx")
    b = write_template(tasks(), tmp_path / "b.xlsx")
    assert a.read_bytes() == b.read_bytes()


def test_filled_sheet_round_trips_to_valid_records(template: Path, tmp_path: Path):
    rows = {
        2: full(1, 0.9),
        3: dict(full(2, 1), social="4", social_confidence="0.5"),  # typed as text
        4: dict(full(5, 0), avoidant=3.0, mechanical=" ５ "),  # float and full-width digit
        5: {},  # left empty: skipped, not an error
    }
    filled = fill(template, rows, tmp_path / "filled.xlsx")
    result = read_filled(
        filled,
        annotator_id="ann_x",
        task_ids=[t.id for t in tasks()],
        timestamp="2025-01-01T10:00:00Z",
    )
    by_id = {r["id"]: r for r in result.records}
    assert sorted(by_id) == ["d1", "d2", "d3"]
    assert by_id["d2"]["annotations"]["social"] == 4 and by_id["d2"]["confidence"]["social"] == 0.5
    assert by_id["d3"]["annotations"] == {"social": 5, "avoidant": 3, "mechanical": 5, "self": 5}
    assert by_id["d1"]["confidence"] == dict.fromkeys(AXES, 0.9)
    assert all(validate_annotation(r, where="x") == [] for r in result.records)
    assert set(result.skipped_rows) == {5, 6, 7, 8}


def test_every_bad_cell_is_reported_by_sheet_row_and_column(template: Path, tmp_path: Path):
    rows = {
        2: dict(full(), social=6),  # out of range
        3: dict(full(), avoidant=0, mechanical=3.5),  # out of range, not an integer
        4: dict(full(), self="abc", social_confidence=1.5),  # text, confidence > 1
        5: dict(full(), mechanical="=1+2", avoidant_confidence=-0.1),  # formula, negative
        6: dict(full(), social=True, self_confidence="high"),  # boolean, text confidence
        7: dict(full(), mechanical_confidence=None),  # partial row
    }
    filled = fill(template, rows, tmp_path / "bad.xlsx")
    wb = load_workbook(filled)
    wb[SHEET].cell(row=8, column=col("id"), value="not_a_task")
    wb[SHEET].cell(row=9, column=col("id"), value="d1")  # duplicate of row 2
    wb[SHEET].cell(row=10, column=col("id"), value=None)  # ratings without an id
    for r in (8, 9, 10):
        for name, value in full().items():
            wb[SHEET].cell(row=r, column=col(name), value=value)
    wb.save(filled)
    with pytest.raises(InputError) as err:
        read_filled(filled, annotator_id="ann_x", task_ids=[t.id for t in tasks()])
    msg = str(err.value)
    expected = [
        (2, "social", "score 6 outside 1-5"),
        (3, "avoidant", "score 0 outside 1-5"),
        (3, "mechanical", "expected an integer 1-5, got 3.5"),
        (4, "self", "expected an integer 1-5, got 'abc'"),
        (4, "social_confidence", "confidence 1.5 outside 0-1"),
        (5, "mechanical", "a formula is not allowed"),
        (5, "avoidant_confidence", "confidence -0.1 outside 0-1"),
        (6, "social", "expected an integer 1-5, got True"),
        (6, "self_confidence", "expected a number 0-1, got 'high'"),
        (7, "mechanical_confidence", "empty (expected a number 0-1"),
        (8, "id", "'not_a_task' is not in the task set"),
        (10, "id", "missing id on a row with ratings"),
    ]
    for row, name, problem in expected:
        letter = load_workbook(template)[SHEET].cell(row=1, column=col(name)).column_letter
        loc = f"sheet '{SHEET}', row {row}, column {letter} ({name}): {problem}"
        assert loc in msg, loc
    assert f"sheet '{SHEET}', row 9, column A (id): duplicate id 'd1' (first at row 2)" in msg
    assert msg.startswith("13 bad cell(s); nothing was written")


def test_wrong_sheet_or_missing_column_is_a_clear_error(template: Path, tmp_path: Path):
    wb = load_workbook(template)
    wb[SHEET].title = "Sheet1"
    wb.save(tmp_path / "renamed.xlsx")
    with pytest.raises(InputError, match="no sheet named 'annotate'"):
        read_filled(tmp_path / "renamed.xlsx", annotator_id="a")
    wb = load_workbook(template)
    wb[SHEET].cell(row=1, column=col("self_confidence"), value="conf")
    wb.save(tmp_path / "header.xlsx")
    with pytest.raises(InputError, match="row 1: missing column\\(s\\) self_confidence"):
        read_filled(tmp_path / "header.xlsx", annotator_id="a")
    (tmp_path / "not.xlsx").write_text("hello")
    with pytest.raises(InputError, match=r"not a readable \.xlsx"):
        read_filled(tmp_path / "not.xlsx", annotator_id="a")


def test_import_command_writes_a_batch_only_when_every_cell_is_good(tmp_path: Path):
    tasks_path = tmp_path / "tasks.jsonl"
    tasks_path.write_text(
        "".join(
            json.dumps(
                {"id": t.id, "user": t.user, "response": t.response, "context": t.context},
                ensure_ascii=False,
            )
            + "\n"
            for t in tasks()
        ),
        encoding="utf-8",
    )
    xlsx = tmp_path / "template.xlsx"
    made = annotate_cli("template", "--tasks", str(tasks_path), "--output", str(xlsx))
    assert made.returncode == 0, made.stderr
    out = tmp_path / "raw"
    out.mkdir()
    (out / "batch_001.jsonl").write_text("", encoding="utf-8")

    bad = fill(xlsx, {2: full(), 3: dict(full(), self=7)}, tmp_path / "bad.xlsx")
    proc = annotate_cli(
        "import",
        str(bad),
        "--annotator",
        "ann_sheet",
        "--tasks",
        str(tasks_path),
        "--out-dir",
        str(out),
    )
    assert proc.returncode == 2
    assert "row 3, column K (self): score 7 outside 1-5" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["batch_001.jsonl"]

    good = fill(xlsx, {2: full(2, 0.7), 3: full(4, 1)}, tmp_path / "good.xlsx")
    proc = annotate_cli(
        "import",
        str(good),
        "--annotator",
        "ann_sheet",
        "--tasks",
        str(tasks_path),
        "--out-dir",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    records = read_annotations(out / "batch_002.jsonl", task_ids=[t.id for t in tasks()])
    assert [(r.id, r.annotations["social"]) for r in records] == [("d1", 2), ("d2", 4)]
    # a written batch carries the rater's pseudonym, never the login id
    assert len({r.annotator_id for r in records}) == 1
    assert is_pseudonym(records[0].annotator_id)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", records[0].timestamp)

    # The same sheet imported twice would duplicate (id, annotator): refused, nothing written.
    again = annotate_cli(
        "import",
        str(good),
        "--annotator",
        "ann_sheet",
        "--tasks",
        str(tasks_path),
        "--out-dir",
        str(out),
    )
    assert again.returncode == 2 and "already in batch_002.jsonl" in again.stderr
    assert not (out / "batch_003.jsonl").exists()


def test_control_characters_in_model_output_are_shown_escaped_and_round_trip(tmp_path: Path):
    garbled = DialoguePair(id="g1", user="hi\x00", response="えて\x15ナ\x08u\tok\n", context=[])
    path = write_template([garbled], tmp_path / "template.xlsx", context_window=7)
    ws = load_workbook(path)[SHEET]
    assert ws.cell(row=2, column=col("response")).value == "えて\\x15ナ\\x08u\tok\n"
    assert ws.cell(row=2, column=col("user")).value == "hi\\x00"
    filled = fill(path, {2: full()}, tmp_path / "filled.xlsx")
    result = read_filled(filled, annotator_id="ann_009", task_ids={"g1"})
    assert [r["id"] for r in result.records] == ["g1"]
    assert result.records[0]["annotations"] == dict.fromkeys(AXES, 3)
