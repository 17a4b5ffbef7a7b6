"""Prompt rendering: golden texts for one example of every benchmark in every style, plus the
layout facts each template must keep (lm-evaluation-harness / llm-jp-eval formats, choices
rendered from ``choices``, perturbed rows rendered with their perturbed fields).

Regenerate the golden file after an intended template change with
``EVALPIPE_UPDATE_GOLDEN=1 pytest tests/test_benchmarks_prompts.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from evalpipe.benchmarks import REGISTRY, STYLES, build_prompts, get_spec, load_benchmark
from evalpipe.errors import InputError

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).with_name("test_benchmarks_golden.json")
LOCAL = REPO / "data" / "raw" / "benchmarks"  # holds my_mc/spec.yaml, a local benchmark
NAMES = [*REGISTRY, "my_mc"]


@pytest.fixture(scope="module")
def sets() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    return {
        name: load_benchmark(get_spec(name, LOCAL), source="sample", max_samples=20, seed=42)
        for name in NAMES
    }


def _render(sets, name: str, style: str, row: int = 0) -> str:
    examples, fewshot = sets[name]
    spec = get_spec(name, LOCAL)
    return build_prompts(spec, examples.iloc[row : row + 1], fewshot, style=style, n_shots=3)[0]


def _golden_key(name: str, style: str) -> str:
    return f"{name}/{style}"


def test_golden_prompts_for_every_benchmark_and_style(sets) -> None:
    rendered = {_golden_key(n, s): _render(sets, n, s) for n in NAMES for s in STYLES}
    # BBH: also an example with an Options block (row 0 is a boolean expression)
    rendered.update(
        {_golden_key("bbh[options]", s): _render(sets, "bbh", s, row=3) for s in STYLES}
    )
    if os.environ.get("EVALPIPE_UPDATE_GOLDEN"):
        GOLDEN.write_text(
            json.dumps(rendered, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
            encoding="utf-8",
        )
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(golden) == sorted(rendered)
    for key, text in rendered.items():
        assert text == golden[key], key


def test_english_templates_follow_lm_eval_layouts(sets) -> None:
    mmlu = _render(sets, "mmlu", "zero_shot")
    assert mmlu.startswith(
        "The following are multiple choice questions (with answers) about elementary mathematics."
    )
    assert mmlu.endswith(
        "What is the value of 3/4 + 1/8?\nA. 4/12\nB. 7/8\nC. 1/2\nD. 5/8\nAnswer:"
    )
    few = _render(sets, "mmlu", "few_shot")
    assert "What is 15% of 200?\nA. 15\nB. 30\nC. 20\nD. 35\nAnswer: B\n\n" in few
    gsm = _render(sets, "gsm8k", "few_shot")
    assert gsm.count("Question: ") == 4 and gsm.count("#### ") == 4  # 3 worked shots + instruction
    assert gsm.endswith(
        "How much money did the bakery make from muffins on those two days?\nAnswer:"
    )
    bbh = _render(sets, "bbh", "zero_shot", row=3)
    assert bbh.endswith(
        "Options:\n(A) The chef burned the soup\n(B) The waiter burned the soup\n(C) Ambiguous\nA:"
    )
    assert _render(sets, "bbh", "cot", row=3).endswith("A: Let's think step by step.")


def test_cot_asks_for_reasoning_then_a_final_answer_line(sets) -> None:
    for name in ("gsm8k", "mmlu"):
        assert (
            'Think step by step, then write your final answer on the last line as "Answer: X".'
            in _render(sets, name, "cot")
        )
    assert "So the answer is X." in _render(sets, "bbh", "cot")
    for name in ("jamp", "jnli", "niilc", "jsquad", "jcommonsenseqa", "my_mc"):
        cot = _render(sets, name, "cot")
        assert "最後の行には「回答: X」の形式で" in cot
        assert "それ以外には何も含めないことを厳守してください" not in cot
    imdb = _render(sets, "imdb", "cot")
    assert "think step by step" in imdb and "end with the JSON object below" in imdb


def test_japanese_templates_follow_llm_jp_eval_layouts(sets) -> None:
    jnli = _render(sets, "jnli", "zero_shot")
    assert jnli.startswith("以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。")
    assert jnli.endswith(
        "### 入力:\n前提：男性がスケートボードに乗って坂道を下っている。\n"
        "仮説：人がスケートボードに乗っている。\n\n### 応答:\n"
    )
    jcqa = _render(sets, "jcommonsenseqa", "zero_shot")
    assert "質問：雨が降っているときに差すものは？\n選択肢：0.傘,1.帽子,2.手袋,3.靴,4.眼鏡" in jcqa
    jsquad = _render(sets, "jsquad", "zero_shot")
    assert "文章：富士山 [SEP] 富士山は静岡県と山梨県にまたがる活火山である。" in jsquad
    assert "\n質問：富士山の標高は何メートルか。\n\n### 応答:\n" in jsquad
    few = _render(sets, "jamp", "few_shot")
    assert few.count("### 入力:") == 4 and few.count("### 応答:") == 4
    assert "\n\n### 応答:\nentailment\n\n### 入力:\n" in few or "\n\n### 応答:\nneutral\n\n" in few


def test_imdb_prompt_asks_for_the_json_label_schema(sets) -> None:
    zero = _render(sets, "imdb", "zero_shot")
    assert (
        '"label": "<positive|negative>"' in zero and '"confidence"' in zero and '"reason"' in zero
    )
    few = _render(sets, "imdb", "few_shot")
    assert few.count("Review:\n```") == 4 and few.count("Sentiment: ") == 3


def test_perturbed_rows_render_their_perturbed_fields_with_choices_intact(sets) -> None:
    examples, fewshot = sets["jcommonsenseqa"]
    row = examples.iloc[:1].copy()
    row["fields"] = [
        json.dumps({"question": "雨が振っているときに差すものは？"}, ensure_ascii=False)
    ]
    row["variant"] = ["降る"]
    row["word_rank"] = [3]
    row["perturbations"] = [[{"field": "question", "original": "降", "perturbed": "振"}]]
    prompt = build_prompts(get_spec("jcommonsenseqa"), row, fewshot, style="zero_shot", n_shots=0)[
        0
    ]
    assert (
        "質問：雨が振っているときに差すものは？\n選択肢：0.傘,1.帽子,2.手袋,3.靴,4.眼鏡" in prompt
    )


def test_original_and_perturbed_variants_share_the_few_shot_prefix(sets) -> None:
    examples, fewshot = sets["mmlu"]
    rows = pd.concat([examples.iloc[:1], examples.iloc[:1]], ignore_index=True)
    rows.loc[1, "fields"] = json.dumps({"question": "What is teh value of 3/4 + 1/8?"})
    a, b = build_prompts(get_spec("mmlu"), rows, fewshot, style="few_shot", n_shots=1)
    assert a.split("What is the value")[0] == b.split("What is teh value")[0]


def test_bbh_demonstrations_come_from_the_same_subtask_only(sets) -> None:
    examples, fewshot = sets["bbh"]
    spec = get_spec("bbh")
    for i, rec in enumerate(examples.to_dict("records")):
        prompt = build_prompts(
            spec, examples.iloc[i : i + 1], fewshot, style="few_shot", n_shots=3
        )[0]
        same = fewshot[fewshot["subtask"] == rec["subtask"]]
        assert prompt.count("\nA: ") == len(same[:3]) and prompt.count("Q: ") == len(same[:3]) + 1


def test_unknown_style_and_negative_shots_are_rejected(sets) -> None:
    examples, fewshot = sets["gsm8k"]
    with pytest.raises(
        InputError, match=r"prompt\.style: expected one of zero_shot, few_shot, cot"
    ):
        build_prompts(get_spec("gsm8k"), examples, fewshot, style="two_shot", n_shots=2)
    with pytest.raises(InputError, match="n_shots"):
        build_prompts(get_spec("gsm8k"), examples, fewshot, style="few_shot", n_shots=-1)
