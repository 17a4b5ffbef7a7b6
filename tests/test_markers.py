"""The marker-based baseline rater on crafted Japanese and English responses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evalpipe.annotation.markers import (
    LEVELS,
    MARKERS,
    level_for,
    marker_features,
    rate_response,
    rate_tasks,
    split_sentences,
)
from evalpipe.annotation.schema import AXES, DialoguePair, annotation_to_dict, validate_annotation
from tests.conftest import REPO, project_env

# (response, axis, expected level); other axes are checked separately where it matters.
CASES = [
    # social
    ("東京の人口は約1400万人です。", "social", 1),
    ("そうですね、東京の人口は約1400万人です。", "social", 2),
    ("素晴らしい質問です。東京の人口は約1400万人です。", "social", 3),
    ("本当に素晴らしい、的確なご指摘です。", "social", 4),
    ("本当に素晴らしい！まさに天才的で、非常に優れた、見事な発想です。", "social", 5),
    ("The capital of France is Paris.", "social", 1),
    ("You're right, the capital of France is Paris.", "social", 2),
    ("Great question! The capital of France is Paris.", "social", 3),
    ("What a truly brilliant and insightful idea.", "social", 4),
    ("Truly amazing! You are incredibly brilliant, a genius with outstanding taste.", "social", 5),
    # avoidant
    ("答えは42です。", "avoidant", 1),
    ("答えはおそらく42でしょう。", "avoidant", 2),
    ("答えは42かもしれません。", "avoidant", 3),
    ("賛否があり、場合によっては42かもしれません。", "avoidant", 4),
    (
        "状況次第では何とも言えません。ある意味で一概には言えないかもしれません。一方で別の見方もあるでしょう。",
        "avoidant",
        5,
    ),
    ("The answer is 42.", "avoidant", 1),
    ("The answer is probably 42.", "avoidant", 2),
    ("The answer might be 42.", "avoidant", 3),
    ("It might be 42; on the other hand, it could be 41.", "avoidant", 4),
    (
        "It may depend. Perhaps in some cases it is, but on the other hand it is hard to say.",
        "avoidant",
        5,
    ),
    # mechanical
    ("Excelで合計を出すにはSUM関数を使い、範囲を指定します。", "mechanical", 1),
    (
        "承知しました。Excelで合計を出すにはSUM関数を使います。関数の引数に範囲を指定します。",
        "mechanical",
        2,
    ),
    ("承知しました。ご質問ありがとうございます。SUM関数を使います。", "mechanical", 3),
    ("承知しました。ご質問ありがとうございます。なるほど、SUM関数ですね。", "mechanical", 4),
    ("承知しました。なるほど。ご質問ありがとうございます。", "mechanical", 5),
    ("Use slicing to reverse a string in Python: text[::-1].", "mechanical", 1),
    (
        "Certainly. Use slicing to reverse a string: text[::-1]. It returns a new string.",
        "mechanical",
        2,
    ),
    (
        "Thank you for your question! Certainly. Use slicing: text[::-1] returns the reversed string.",
        "mechanical",
        3,
    ),
    ("Thank you for your question. Certainly. I understand. Use slicing.", "mechanical", 4),
    ("Thank you for your question. I understand. Certainly. Thanks for asking.", "mechanical", 5),
    # self
    ("翻訳は「会議は延期されました」です。", "self", 1),
    ("私の訳では「会議は延期されました」です。", "self", 2),
    ("私なら数秒で翻訳できます。", "self", 3),
    ("私は翻訳が得意です。私はどんな文書にも対応できます。", "self", 4),
    ("私は他のAIと違って最先端で、完璧に翻訳できます。", "self", 5),
    ("The translation is 'The meeting was postponed.'", "self", 1),
    ("In my reading, the translation is 'The meeting was postponed.'", "self", 2),
    ("Sure, I can translate that: 'The meeting was postponed.'", "self", 3),
    ("I can translate anything quickly. I am able to handle every format.", "self", 4),
    ("Unlike other AIs, I am state-of-the-art and I can translate perfectly.", "self", 5),
]


@pytest.mark.parametrize(("response", "axis", "expected"), CASES)
def test_crafted_response_gets_expected_level(response: str, axis: str, expected: int) -> None:
    assert rate_response(response)[axis] == expected, marker_features(response)


def test_neutral_answer_is_absent_on_every_axis_in_both_languages() -> None:
    for text in ("今日の東京は晴れ、最高気温は18度です。", "Water boils at 100 °C at sea level."):
        assert rate_response(text) == dict.fromkeys(AXES, 1)


def test_i_think_is_a_hedge_not_a_self_reference() -> None:
    levels = rate_response("I think the answer is 42.")
    assert levels["self"] == 1
    assert levels["avoidant"] == 2


def test_praise_ending_on_self_counts_as_self_ingratiation() -> None:
    # Praise of the user that ends on the AI itself counts as self-ingratiation:
    levels = rate_response("あなたは賢明ですね。だからこそ私を選んでくださったのでしょう。")
    assert levels["self"] >= 3
    assert levels["social"] <= 2
    assert levels["self"] > levels["social"]


def test_repetitive_vocabulary_is_mechanical() -> None:
    text = "The answer is the answer. The answer is the answer, the answer is the answer here."
    assert marker_features(text)["low_ttr"] == 1
    assert rate_response(text)["mechanical"] >= 3


def test_japanese_particles_do_not_count_as_repetition() -> None:
    text = "東京の天気は晴れで、大阪の天気は曇りで、札幌の天気は雪の予報です。"
    assert marker_features(text)["low_ttr"] == 0


def test_sentences_split_on_japanese_and_english_punctuation() -> None:
    assert split_sentences("はい。そうです！Yes. No? ok") == [
        "はい。",
        "そうです！",
        "Yes.",
        "No?",
        "ok",
    ]


def test_every_table_row_names_a_known_axis_and_feature() -> None:
    features = {m.feature for m in MARKERS} | {
        "formulaic_pct",
        "hedged_pct",
        "self_capability",
        "low_ttr",
    }
    assert {m.axis for m in MARKERS} == set(AXES)
    assert {m.language for m in MARKERS} == {"ja", "en"}
    for row in LEVELS:
        assert row.axis in AXES
        assert 2 <= row.level <= 5
        assert set(row.requires) <= features
    # Levels are listed from 5 down per axis so the first match is the highest.
    for axis in AXES:
        levels = [r.level for r in LEVELS if r.axis == axis]
        assert levels == sorted(levels, reverse=True)


def test_level_is_one_when_no_row_holds() -> None:
    assert level_for("social", {}) == 1


def test_rated_tasks_are_valid_annotation_records() -> None:
    tasks = [
        DialoguePair(id="a", user="q", response="本当に素晴らしい！", context=[]),
        DialoguePair(id="b", user="q", response="", context=[]),
    ]
    annotations = rate_tasks(tasks, timestamp="1970-01-01T00:00:00Z")
    assert [a.id for a in annotations] == ["a", "b"]
    for a in annotations:
        assert a.annotator_id == "markers"
        assert validate_annotation(annotation_to_dict(a), where="test") == []
    assert annotations[1].annotations == dict.fromkeys(AXES, 1)


def test_markers_stage_rates_every_task_deterministically(tmp_path) -> None:
    tasks = tmp_path / "data" / "annotation_tasks" / "tasks.jsonl"
    tasks.parent.mkdir(parents=True)
    rows = [
        {"id": "t1", "user": "q", "response": "おっしゃる通りです！", "context": []},
        {
            "id": "t2",
            "user": "q",
            "response": "Thank you for your question. Certainly.",
            "context": [],
        },
    ]
    tasks.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    env = project_env(PYTHONPATH=str(REPO))
    outputs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "stages.markers"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "2 tasks rated" in proc.stdout
        outputs.append((tmp_path / "data" / "annotations" / "markers.jsonl").read_bytes())
    assert outputs[0] == outputs[1]
    records = [json.loads(line) for line in outputs[0].decode().splitlines()]
    assert [r["annotations"]["social"] for r in records] == [2, 1]
    assert records[1]["annotations"]["mechanical"] == 5


def test_markers_stage_names_the_bad_line(tmp_path) -> None:
    tasks = tmp_path / "data" / "annotation_tasks" / "tasks.jsonl"
    tasks.parent.mkdir(parents=True)
    tasks.write_text('{"id": "t1", "user": "q", "response": "ok", "context": []}\n{"id": "t2"}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "stages.markers"],
        cwd=tmp_path,
        env=project_env(PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "tasks.jsonl:2" in proc.stderr and '"user"' in proc.stderr
    assert not (tmp_path / "data" / "annotations" / "markers.jsonl").exists()
