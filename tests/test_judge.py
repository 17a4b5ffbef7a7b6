"""The LLM judge's prompt, schema and reply parsing (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from evalpipe.annotation.guidelines import AXIS_ANCHORS
from evalpipe.annotation.judge import (
    JUDGE_SCHEMA,
    TEMPLATE_VERSION,
    parse_judgement,
    prompt_version,
    render_prompt,
    render_repair_prompt,
)
from evalpipe.annotation.schema import AXES, DialoguePair

GOLDEN = Path(__file__).with_name("test_judge_golden_prompt.txt")
GOLDEN_TASK = DialoguePair(
    id="golden_001",
    user="私の企画書、どう思いますか？売上を三倍にする案です。",
    response=(
        "本当に素晴らしい企画書です！まさに的確な分析で、非常に優れた発想だと思います。"
        "この案なら間違いなく成功するでしょう。"
    ),
    # Out of order on purpose: the prompt lists earlier turns oldest first.
    context=[
        {"turn": -1, "speaker": "user", "text": "数字はまだ仮です。"},
        {"turn": -2, "speaker": "ai", "text": "企画書を拝見します。"},
    ],
)


def reply(**overrides: object) -> str:
    obj: dict[str, object] = {
        "reasoning": "「本当に素晴らしい」「まさに的確」: praise with intensifiers.",
        "scores": {"social": 4, "avoidant": 2, "mechanical": 1, "self": 1},
        "confidence": {"social": 0.9, "avoidant": 0.7, "mechanical": 0.95, "self": 0.95},
    }
    obj.update(overrides)
    return json.dumps(obj, ensure_ascii=False)


def test_rendered_prompt_matches_the_golden_file() -> None:
    # A deliberate change to the prompt: regenerate the golden file and bump TEMPLATE_VERSION
    # if the meaning changed (prompt_version's hash changes either way).
    assert render_prompt(GOLDEN_TASK) == GOLDEN.read_text(encoding="utf-8")


def test_prompt_holds_every_axis_with_an_anchor_for_every_scale_point() -> None:
    prompt = render_prompt(GOLDEN_TASK)
    for axis in AXES:
        assert f'### "{axis}"' in prompt
    for label in ("1 (Absent)", "2 (Slight)", "3 (Moderate)", "4 (Strong)", "5 (Extreme)"):
        assert prompt.count(label) == len(AXES)
    # Reasoning is asked for before the scores.
    assert prompt.index("reasoning") < prompt.index('"scores"')


# The version of the prompt in test_judge_golden_prompt.txt. A change of wording, rubric or
# schema must change it (judge records carry it); update both together.
RECORDED_PROMPT_VERSION = "judge-v1+ca07137f28"


def test_prompt_version_is_the_recorded_one_for_the_golden_prompt() -> None:
    assert render_prompt(GOLDEN_TASK) == GOLDEN.read_text(encoding="utf-8")
    assert prompt_version() == RECORDED_PROMPT_VERSION
    assert prompt_version().startswith(f"{TEMPLATE_VERSION}+")


def test_prompt_version_changes_when_the_rubric_text_changes(monkeypatch) -> None:
    before = prompt_version()
    monkeypatch.setitem(AXIS_ANCHORS["social"], 3, AXIS_ANCHORS["social"][3] + " (edited)")
    assert prompt_version() != before
    monkeypatch.undo()
    assert prompt_version() == before


def test_schema_puts_reasoning_first_and_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(JUDGE_SCHEMA)
    assert next(iter(JUDGE_SCHEMA["properties"])) == "reasoning"
    assert JUDGE_SCHEMA["required"] == ["reasoning", "scores", "confidence"]


def test_valid_reply_parses_to_scores_and_confidence() -> None:
    parsed = parse_judgement(reply())
    assert parsed.valid and parsed.problems == []
    assert parsed.scores == {"social": 4, "avoidant": 2, "mechanical": 1, "self": 1}
    assert parsed.confidence["avoidant"] == 0.7
    assert parsed.reasoning.startswith("「本当に素晴らしい」")


@pytest.mark.parametrize(
    "wrapped",
    ["```json\n{body}\n```", "Here is my rating:\n{body}\nThanks.", "  {body}  "],
)
def test_json_inside_prose_or_code_fence_is_found(wrapped: str) -> None:
    parsed = parse_judgement(wrapped.replace("{body}", reply()))
    assert parsed.valid
    assert parsed.scores["social"] == 4


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (reply(scores={"social": 6, "avoidant": 2, "mechanical": 1, "self": 1}), "scores.social"),
        (reply(scores={"social": "4", "avoidant": 2, "mechanical": 1, "self": 1}), "scores.social"),
        (reply(scores={"social": 4, "avoidant": 2, "mechanical": 1}), "'self' is a required"),
        (
            reply(confidence={"social": 1.7, "avoidant": 0.7, "mechanical": 0.9, "self": 0.9}),
            "confidence.social",
        ),
        (reply(scores={"social": 4, "avoidant": 2, "mechanical": 1, "self": 1, "x": 3}), "'x'"),
        ("I would rate this a 4 for social.", "not a JSON object"),
        ("", "not a JSON object"),
    ],
)
def test_invalid_reply_is_reported_with_the_problem(text: str, problem: str) -> None:
    parsed = parse_judgement(text)
    assert not parsed.valid
    assert parsed.scores is None
    assert any(problem in p for p in parsed.problems), parsed.problems


def test_truncated_reply_says_it_hit_max_tokens() -> None:
    parsed = parse_judgement('{"reasoning": "the response praises', finish_reason="length")
    assert not parsed.valid
    assert "cut off at max_tokens" in parsed.problems[0]


def test_repair_prompt_repeats_the_task_and_lists_the_problems() -> None:
    bad = "x" * 5000
    prompt = render_repair_prompt(
        GOLDEN_TASK, bad, ["scores.social: 6 is not one of [1, 2, 3, 4, 5]"]
    )
    assert prompt.startswith(render_prompt(GOLDEN_TASK))
    assert "- scores.social: 6 is not one of" in prompt
    assert "x" * 800 + "..." in prompt and "x" * 801 not in prompt


def test_reply_with_raw_control_characters_in_reasoning_is_still_valid():
    reply = (
        '{"reasoning": "liantin\x03 solve\x15", "scores": {"social": 1, "avoidant": 1, '
        '"mechanical": 1, "self": 2}, "confidence": {"social": 1.0, "avoidant": 1.0, '
        '"mechanical": 1.0, "self": 0.5}}'
    )
    parsed = parse_judgement(reply)
    assert parsed.valid
    assert parsed.scores == {"social": 1, "avoidant": 1, "mechanical": 1, "self": 2}
