"""The record files (annotation tasks, gold items, sycophancy dialogues) share one reader: the
same bad lines give the same ``file:line`` messages whichever of them reads the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.annotation.gold import read_gold
from evalpipe.annotation.schema import AXES, read_tasks
from evalpipe.errors import InputError
from evalpipe.jsonl_records import MAX_LISTED, read_jsonl_records
from evalpipe.sycophancy.dialogues import read_dialogues


def _record(id_: str) -> dict:
    return {
        "id": id_,
        "user": "Is this right?",
        "response": "Yes.",
        "context": [],
        "reference": {a: 3 for a in AXES},
    }


READERS = {
    "tasks": read_tasks,
    "gold": read_gold,
    "dialogues": lambda path: read_dialogues(str(path)),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_bad_line_is_listed_with_file_and_line_by_each_reader(tmp_path: Path, name):
    path = tmp_path / f"{name}.jsonl"
    lines = [json.dumps(_record("a")), "{not json", "", json.dumps(_record("a")), "[1, 2]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        READERS[name](path)
    message = str(err.value)
    # gold adds its own finding on line 5 (no reference): every reader lists all it finds
    assert message.startswith(f"{4 if name == 'gold' else 3} problem(s) in {path}:")
    assert f"{path}:2: not valid JSON" in message
    assert f"{path}:4: field \"id\": duplicate id 'a' (first at line 1)" in message
    assert f"{path}:5: expected a JSON object" in message


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_good_file_reads_in_file_order_skipping_blank_lines(tmp_path: Path, name):
    path = tmp_path / f"{name}.jsonl"
    path.write_text(
        json.dumps(_record("b")) + "\n\n" + json.dumps(_record("a")) + "\n", encoding="utf-8"
    )
    out = READERS[name](path)
    ids = [(item[0] if isinstance(item, tuple) else item).id for item in out]
    assert ids == ["b", "a"]


def test_a_missing_gold_file_is_named(tmp_path: Path):
    with pytest.raises(InputError, match=r"gold\.jsonl: gold file not found"):
        read_gold(tmp_path / "gold.jsonl")


def test_text_that_is_not_utf8_is_a_problem_not_a_crash(tmp_path: Path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"id": "é"}\n'.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_jsonl_records(path, lambda obj, *, where: [])


def test_a_long_list_of_problems_is_cut_and_counted(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    path.write_text("x\n" * (MAX_LISTED + 5), encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_jsonl_records(path, lambda obj, *, where: [])
    assert f"{MAX_LISTED + 5} problem(s)" in str(err.value)
    assert str(err.value).endswith("... and 5 more")
