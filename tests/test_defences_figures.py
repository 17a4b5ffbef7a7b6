"""The defences figures: pairs are made within a condition, the headline figures keep only the
plain typo'd arm, and a defence's accuracy change, interval, share won back and corrector counts
come out of the one pairs table."""

from __future__ import annotations

import pandas as pd
import pytest

from evalpipe.arms import typo_rows
from evalpipe.scoring.defences import defence_figures, usage_table
from evalpipe.scoring.intervals import paired_interval
from evalpipe.scoring.pairs import build_pairs


def _view(correct: dict[str, list[bool]]) -> pd.DataFrame:
    """Ten examples, one typo'd row each, under every condition of ``correct`` ({condition:
    [clean correct x10, typo'd correct x10]})."""
    rows = []
    for condition, values in correct.items():
        for i in range(10):
            for variant, rank, ok in (("original", 0, values[i]), ("the", 1, values[10 + i])):
                rows.append(
                    {"benchmark": "b", "example_id": str(i), "variant": variant,
                     "word_rank": rank, "draw": 0, "condition": condition, "subtask": None,
                     "language": "english", "n_typos": rank, "n_edited_chars": rank,
                     "op": "replace" if rank else None, "script": "latin" if rank else None,
                     "occurrences": 1, "perturbed_occurrences": rank,
                     "prompt": ("WARN " if condition == "warned" else "") + f"Q{i}?",
                     "correct": ok, "score": float(ok), "prediction": "A" if ok else "B",
                     "parse_status": "strict", "finish_reason": "stop",
                     "prompt_tokens": 5 + (3 if condition == "warned" else 0), "output_tokens": 1}
                )  # fmt: skip
    return pd.DataFrame(rows)


CLEAN = [True] * 8 + [False] * 2
TYPO = [True] * 4 + [False] * 6  # typos cost 4 of 8 right answers
DEFENDED = [True] * 7 + [False] * 3  # the defence wins 3 of them back


@pytest.fixture
def pairs() -> tuple[pd.DataFrame, pd.DataFrame]:
    view = _view(
        {
            "typo": CLEAN + TYPO,
            "corrected:spelling": CLEAN + DEFENDED,
            "warned": [True] * 7 + [False] * 3 + TYPO,
        }
    )
    return view, build_pairs({"b": view}, model="m")


def test_each_row_pairs_with_the_original_of_its_own_condition(pairs):
    _view_rows, table = pairs
    assert sorted(table["condition"].unique()) == ["corrected:spelling", "typo", "warned"]
    warned = table.loc[table["condition"] == "warned"]
    assert warned["correct_original"].sum() == 7  # the warned clean prompt, not the plain one
    assert typo_rows(table)["condition"].eq("typo").all() and len(typo_rows(table)) == 10


def test_defended_vs_clean_joins_the_arm_with_the_plain_clean_answer(pairs):
    view, table = pairs
    corrections = {
        "b": {"spelling": {"prompts": 20, "clean_prompts": 10, "typo_prompts": 10,
                           "unsupported_prompts": 0, "edited_words": 10, "restored_words": 6,
                           "clean_words_changed": 2, "typo_words_changed": 7,
                           "false_changes": 1, "chars_read": 200, "corrector_tokens": 0}}
    }  # fmt: skip
    figures = defence_figures(
        table, usage=usage_table({"b": view}), corrections=corrections, level=0.95
    )
    assert figures["arms"] == ["corrected:spelling", "warned"]
    spelling = figures["views"]["b"]["corrected:spelling"]
    assert (spelling["acc_clean"], spelling["acc_typo"], spelling["acc_defended"]) == (
        0.8,
        0.4,
        0.7,
    )
    assert spelling["delta_typo"] == pytest.approx(-0.4)
    assert spelling["delta_defended"] == pytest.approx(-0.1)
    assert spelling["recovered"] == pytest.approx(0.75)  # 3 of the 4 answers lost
    low, high, _ = paired_interval(CLEAN, DEFENDED, clusters=list(range(10)), level=0.95)
    assert spelling["delta_defended_ci"] == [round(low, 4), round(high, 4)]
    assert spelling["restoration"] == 0.6 and spelling["overcorrection"] == 0.2
    warned = figures["pooled"]["english"]["warned"]
    assert warned["delta_defended_clean"] == pytest.approx(-0.1)  # the warning costs on clean text
    assert warned["recovered"] == 0.0
    assert warned["extra_prompt_tokens_per_prompt"] == 3.0
    assert "restoration" not in warned


def test_no_defence_no_figures(pairs):
    view, _ = pairs
    table = build_pairs({"b": view.loc[view["condition"] == "typo"]}, model="m")
    assert defence_figures(table, usage=usage_table({}), corrections={}, level=0.95)["arms"] == []
