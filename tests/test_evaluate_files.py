"""`evalpipe evaluate`: predictions made elsewhere, scored like the pipeline scores sentiment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from evalpipe.errors import InputError
from evalpipe.scoring.evaluate_files import (
    LABEL_SETS,
    align,
    evaluate_predictions,
    label_set,
    read_gold,
    read_predictions,
)

FIXTURES = Path(__file__).parent / "fixtures" / "sentiment_eval"
REPO = Path(__file__).resolve().parents[1]
LABELS3 = LABEL_SETS["3class"]


def _evaluate(mode: str) -> dict:
    gold = read_gold(FIXTURES / "sample_dev.jsonl", labels=LABELS3)
    preds = read_predictions(FIXTURES / "predictions.jsonl")
    pairs = align(gold, preds, gold_path="gold", pred_path="pred")
    return evaluate_predictions(pairs, labels=LABELS3, mode=mode)


def test_article_formats_parse_with_aliases_and_doubled_braces() -> None:
    report = _evaluate("strict")
    # doubled braces (line 1), prose + "neu" alias (2), confidence 1.7 clipped (3): all strict
    assert report["parse_status"] == {"strict": 4, "fallback": 0, "unparsed": 2}
    assert report["accuracy"] == pytest.approx(3 / 6)
    assert report["invalid"] == 2
    clipped = [e for e in report["errors"]["preview"] if e["gold_line"] == 3]
    assert clipped == []  # line 3 is right


def test_out_of_set_label_is_wrong_never_neutral() -> None:
    report = _evaluate("strict")
    mixed = next(e for e in report["errors"]["preview"] if e["gold_line"] == 5)
    assert mixed["pred"] is None and mixed["parse_status"] == "unparsed"
    assert mixed["text"] == "期待以上の仕上がりで満足しています。"
    # the article's script would have scored this as "neutral"; here neutral gets no credit
    assert report["confusion"]["positive"]["neutral"] == 0


def test_macro_figures_match_sklearn_in_strict_mode() -> None:
    report = _evaluate("strict")
    y_true = ["positive", "neutral", "negative", "neutral", "positive", "negative"]
    y_pred = ["positive", "neutral", "negative", "positive", "invalid", "invalid"]
    p, r, f, _ = precision_recall_fscore_support(
        y_true, y_pred, labels=list(LABELS3), average="macro", zero_division=0
    )
    assert report["precision_macro"] == pytest.approx(p)
    assert report["recall_macro"] == pytest.approx(r)
    assert report["f1_macro"] == pytest.approx(f)
    matrix = confusion_matrix(y_true, y_pred, labels=list(LABELS3))
    for i, actual in enumerate(LABELS3):
        for j, predicted in enumerate(LABELS3):
            assert report["confusion"][actual][predicted] == matrix[i, j]


def test_invalid_class_mode_accepts_prose_and_shows_invalid_column() -> None:
    report = _evaluate("invalid-class")
    assert report["parse_status"] == {"strict": 4, "fallback": 1, "unparsed": 1}
    assert report["accuracy"] == pytest.approx(4 / 6)
    assert report["confusion"]["positive"]["invalid"] == 1
    assert "invalid" in report["per_class"]


def test_lines_are_matched_by_id_when_both_files_have_ids(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        '{"id": 1, "text": "good", "label": "positive"}\n'
        '{"id": 2, "text": "bad", "label": "negative"}\n',
        encoding="utf-8",
    )
    pred = tmp_path / "pred.jsonl"
    pred.write_text(
        '{"id": 2, "text": "{\\"label\\": \\"negative\\"}"}\n'
        '{"id": 1, "text": "{\\"label\\": \\"positive\\"}"}\n',
        encoding="utf-8",
    )
    labels = LABEL_SETS["2class"]
    pairs = align(
        read_gold(gold, labels=labels), read_predictions(pred), gold_path="g", pred_path="p"
    )
    assert evaluate_predictions(pairs, labels=labels)["accuracy"] == 1.0


def test_raw_model_lines_are_accepted(tmp_path: Path) -> None:
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"label": "positive", "confidence": 0.9}\nnegative, I think\n', "utf-8")
    rows = read_predictions(pred)
    assert [r.output for r in rows] == [
        '{"label": "positive", "confidence": 0.9}',
        "negative, I think",
    ]


def test_bad_gold_label_names_file_line_and_expected_labels(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        '{"text": "a", "label": "positive"}\n{"text": "b", "label": "joy"}\n', encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"gold\.jsonl:2: field \"label\": 'joy' is not one of"):
        read_gold(gold, labels=LABEL_SETS["2class"])


def test_length_mismatch_is_an_error() -> None:
    gold = read_gold(FIXTURES / "sample_dev.jsonl", labels=LABELS3)
    preds = read_predictions(FIXTURES / "predictions.jsonl")[:5]
    with pytest.raises(InputError, match="5 prediction lines for 6 gold lines"):
        align(gold, preds, gold_path="g", pred_path="p")


def test_label_set_rejects_a_single_label() -> None:
    assert label_set("2class") == ("positive", "negative")
    with pytest.raises(InputError, match="--labels"):
        label_set("positive")


def test_command_prints_report_and_error_preview(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalpipe.cli",
            "evaluate",
            "--gold",
            str(FIXTURES / "sample_dev.jsonl"),
            "--pred",
            str(FIXTURES / "predictions.jsonl"),
            "--labels",
            "3class",
            "--output",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    head, _, tail = proc.stdout.partition("# Errors (first 3 of 3)")
    assert json.loads(head)["accuracy"] == pytest.approx(0.5)
    assert "説明書が分かりにくく" in tail  # the error's input text is shown
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["errors"]["count"] == 3


def test_command_exits_2_with_a_located_message(tmp_path: Path) -> None:
    bad = tmp_path / "gold.jsonl"
    bad.write_text('{"text": "a"}\n', encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli", "evaluate", "--gold", str(bad), "--pred", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert 'gold.jsonl:1: field "label": expected a string' in proc.stderr
