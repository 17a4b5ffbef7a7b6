"""Exports that are safe to open: every text cell that starts with ``=``, ``+``, ``-``, ``@``, tab or
CR is neutralised in the CSVs ``export --notes`` / ``--timings`` write (a leading ``'``) and in the
.xlsx template (a string cell marked quotePrefix, value unchanged); the JSONL stays exact."""

from __future__ import annotations

import csv
import json

from openpyxl import load_workbook

from evalpipe.annotation.schema import AXES, DialoguePair, read_annotations
from evalpipe.annotation.spreadsheet import read_filled, write_template
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import annotate_cli

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
PAYLOADS = [
    '=HYPERLINK("http://evil.example","click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
]


def hostile_tasks() -> list[DialoguePair]:
    return [
        # (an id's leading tab or CR would be stripped on import: those ids start plainly)
        DialoguePair(id=f"{p[0].strip()}id{i}", user=p, response=p, context=[])
        for i, p in enumerate(PAYLOADS)
    ] + [DialoguePair(id="plain", user="u", response="r", context=[])]


def test_notes_and_timings_csv_neutralise_formula_cells(tmp_path):
    db = tmp_path / "ann.sqlite"
    store = Store(db)
    tasks = hostile_tasks()
    store.load_tasks(tasks)
    store.add_annotator("ann_a")
    store.add_annotator("boss", admin=True)
    store.rebalance(overlap=1)
    for i, task in enumerate(tasks):
        store.save_rating("ann_a", task.id, dict.fromkeys(AXES, 3), dict.fromkeys(AXES, 1.0))
        text = PAYLOADS[i % len(PAYLOADS)] + " tail"
        store.save_note("ann_a", task.id, comment=text, flag=False)
    store.save_adjudication(
        "plain", "boss", dict.fromkeys(AXES, 2), dict.fromkeys(AXES, 1.0), note="=1+1 why"
    )
    notes, timings, out = tmp_path / "notes.csv", tmp_path / "timings.csv", tmp_path / "raw"
    proc = annotate_cli(
        "export", "--db", str(db), "--out-dir", str(out), "--notes", str(notes),
        "--timings", str(timings),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for path in (notes, timings):
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        cells = [c for row in rows[1:] for c in row]
        assert cells and not [c for c in cells if c.startswith(TRIGGERS)], path
    with notes.open(newline="", encoding="utf-8") as f:
        texts = {(r["id"], r["kind"]): r["text"] for r in csv.DictReader(f)}
    # The text is all there, behind one apostrophe.
    assert texts[("'=id0", "comment")] == "'" + PAYLOADS[0] + " tail"
    assert texts[("plain", "adjudication")] == "'=1+1 why"
    # The batch itself keeps the ids exactly (it is data, not a spreadsheet).
    records = read_annotations(out / "batch_001.jsonl")
    assert {r.id for r in records} == {t.id for t in tasks}


def test_the_xlsx_template_keeps_formula_like_text_as_text(tmp_path):
    tasks = hostile_tasks()
    path = tmp_path / "template.xlsx"
    write_template(tasks, path, context_window=7)
    wb = load_workbook(path)
    marked = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (ws.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and cell.value.startswith(TRIGGERS):
                    assert cell.quotePrefix, (ws.title, cell.coordinate, cell.value)
                marked += bool(cell.quotePrefix)
    # id, user and response of each hostile task (ids: not the tab and CR ones), nothing else.
    assert marked == 3 * len(PAYLOADS) - 2
    # Filled in and imported, the ids come back exactly.
    ws = wb["annotate"]
    header = [c.value for c in ws[1]]
    for r in range(2, ws.max_row + 1):
        for axis in AXES:
            ws.cell(row=r, column=header.index(axis) + 1, value=3)
            ws.cell(row=r, column=header.index(f"{axis}_confidence") + 1, value=0.8)
    wb.save(path)
    result = read_filled(
        path, annotator_id="ann_x", task_ids=[t.id for t in tasks], timestamp="2025-01-01T00:00:00Z"
    )
    assert sorted(r["id"] for r in result.records) == sorted(t.id for t in tasks)
    assert json.dumps(result.records)  # plain data
