"""Readers for lawqa_jp (Japanese statute QA) and WRIME ver.2 (the 3-class sentiment task)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.benchmarks.readers import READERS, lawqa, wrime
from evalpipe.errors import InputError

LAWQA = Path(lawqa.__file__).resolve().parents[1] / "samples" / "lawqa"
AXES = ("Joy", "Sadness", "Anticipation", "Surprise", "Anger", "Fear", "Disgust", "Trust")
WRIME_HEADER = ["Sentence", "UserID", "Datetime", "Train/Dev/Test"] + [
    f"{who}_{what}"
    for who in ("Writer", "Reader1", "Reader2", "Reader3", "Avg. Readers")
    for what in (*AXES, "Sentiment")
]


def _mapped(files):
    return [
        lawqa.lawqa(r, config=None, where=loc)
        for r, loc in zip(files.rows, files.locations, strict=True)
    ]


def test_lawqa_reads_all_140_real_questions_with_four_choices() -> None:
    data = lawqa.read(LAWQA)
    rows = data.evaluated.rows + data.fewshot.rows
    assert len(rows) == 140
    examples = _mapped(data.evaluated) + _mapped(data.fewshot)
    assert all(len(e["choices"]) == 4 for e in examples)
    assert {e["answer"] for e in examples} == {"a", "b", "c", "d"}
    assert {e["subtask"] for e in examples} == {"金商法", "薬機法", "借地借家法"}
    assert all(e["perturbable"] == ["context", "question"] for e in examples)
    assert len(data.fewshot.rows) == 10  # held-out demonstrations, all three statutes
    assert {lawqa.law_of(r["ファイル名"]) for r in data.fewshot.rows} == {
        "金商法",
        "薬機法",
        "借地借家法",
    }


def test_lawqa_demonstrations_are_never_evaluated_questions_in_any_order() -> None:
    plain, orders = lawqa.read(LAWQA), lawqa.read_orders(LAWQA)
    for data in (plain, orders):
        shots = {r["ファイル名"] for r in data.fewshot.rows}
        evaluated = {r["ファイル名"] for r in data.evaluated.rows}
        assert shots and not shots & evaluated
    # the same questions are held out in both files
    in_both = {r["ファイル名"] for r in orders.evaluated.rows + orders.fewshot.rows}
    held_plain = {r["ファイル名"] for r in plain.fewshot.rows} & in_both
    assert held_plain == {r["ファイル名"] for r in orders.fewshot.rows}


def test_lawqa_orders_keep_each_order_as_its_own_example() -> None:
    orders = lawqa.read_orders(LAWQA)
    ids = [r["_id"] for r in orders.evaluated.rows]
    assert len(ids) == len(set(ids))
    by_question: dict[str, set[str]] = {}
    for row in orders.evaluated.rows:
        by_question.setdefault(row["ファイル名"], set()).add(row["_id"].rsplit("/", 1)[1])
    assert all(o == {"1", "2", "3", "4"} for o in by_question.values())
    # the gold letter follows the options: the right option text is the same in every order
    texts: dict[str, set[str]] = {}
    for row, ex in zip(orders.evaluated.rows, _mapped(orders.evaluated), strict=True):
        right = ex["choices"]["abcd".index(ex["answer"])]
        texts.setdefault(row["ファイル名"], set()).add(right)
    assert all(len(t) == 1 for t in texts.values())


def test_lawqa_options_accept_full_width_labels() -> None:
    assert lawqa.split_options("ａ　甲\nｂ 乙\nc. 丙\nd：丁", "x") == ["甲", "乙", "丙", "丁"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("a 甲\nb 乙\nc 丙", "found options a, b, c; expected exactly a, b, c and d"),
        ("甲\nb 乙", "does not start with an option label"),
        ("a 甲\na 乙\nc 丙\nd 丁", "option 'a' appears twice"),
    ],
)
def test_lawqa_bad_options_name_the_entry(tmp_path: Path, options: str, message: str) -> None:
    entry = json.loads((LAWQA / "selection.json").read_text(encoding="utf-8"))["samples"][0]
    entry["選択肢"] = options
    (tmp_path / "selection.json").write_text(
        json.dumps({"samples": [entry]}, ensure_ascii=False), encoding="utf-8"
    )
    data = lawqa.read(tmp_path)
    rows = data.evaluated.rows or data.fewshot.rows
    locs = data.evaluated.locations or data.fewshot.locations
    with pytest.raises(InputError, match=message) as err:
        lawqa.lawqa(rows[0], config=None, where=locs[0])
    assert 'selection.json: "samples"[0]: field "選択肢"' in str(err.value)


def test_lawqa_wrong_layout_is_explained(tmp_path: Path) -> None:
    (tmp_path / "selection.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match='top-level object with a "samples" list'):
        lawqa.read(tmp_path)
    with pytest.raises(InputError, match=r"selection_randomized\.json: file not found"):
        lawqa.read_orders(tmp_path)


def _wrime(tmp_path: Path, rows: list[tuple[str, str, str]]) -> Path:
    lines = ["\t".join(WRIME_HEADER)]
    for text, split, polarity in rows:
        cells = dict.fromkeys(WRIME_HEADER, "0")
        cells.update({"Sentence": text, "UserID": "1", "Datetime": "2020/1/1 0:00"})
        cells.update({"Train/Dev/Test": split, "Avg. Readers_Sentiment": polarity})
        lines.append("\t".join(cells[c] for c in WRIME_HEADER))
    (tmp_path / "wrime-ver2.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_wrime_polarity_sign_gives_three_classes_and_splits(tmp_path: Path) -> None:
    folder = _wrime(
        tmp_path,
        [
            ("楽しかった", "test", "2"),
            ("普通の日", "test", "0"),
            ("悲しい", "test", "-1"),
            ("嬉しい", "train", "1"),
            ("検証用", "dev", "0"),
        ],
    )
    data = READERS["wrime"].read(folder)
    labels = [wrime.wrime(r, config=None, where="x")["answer"] for r in data.evaluated.rows]
    assert labels == ["positive", "neutral", "negative"]
    assert [r["Sentence"] for r in data.fewshot.rows] == ["嬉しい"]
    assert data.version.startswith("WRIME ver.2 (")


def test_wrime_bad_polarity_and_header_name_file_and_line(tmp_path: Path) -> None:
    folder = _wrime(tmp_path, [("ok", "test", "0"), ("bad", "test", "very")])
    data = READERS["wrime"].read(folder)
    with pytest.raises(InputError, match=r"wrime-ver2.tsv:3: field \"Avg. Readers_Sentiment\""):
        wrime.wrime(data.evaluated.rows[1], config=None, where=data.evaluated.locations[1])
    (tmp_path / "wrime-ver2.tsv").write_text("Sentence\tLabel\nx\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"wrime-ver2.tsv:1: header lacks 'Train/Dev/Test'"):
        READERS["wrime"].read(tmp_path)
