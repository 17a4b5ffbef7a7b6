"""Format arms of choice benchmarks (option order, labels, the incorrect option): the variants and
their rows and prompts, parsing through the variant's labels, the figures against a hand
computation, the spread interval's coverage, and a planted model behind a real HTTP server whose
position bias and label effect the figures recover."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from evalpipe.arms import FORMAT_LABELS, original_choice, parse_format_variant
from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from evalpipe.benchmarks.formats import (
    ALL_CAP,
    example_fields,
    variant_fewshot,
    variant_rows,
    variant_spec,
    variants,
)
from evalpipe.errors import InputError
from evalpipe.inference.engine import make_engine
from evalpipe.inference.plan import BenchmarkInput, Sampling, plan_benchmark, run_plans
from evalpipe.params_schema.table import SCHEMA
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.benchmark_scores import score_benchmark
from evalpipe.scoring.formats import (
    COLUMNS,
    consistent,
    family_answers,
    format_table,
    simulate_spread,
    spread_interval,
)
from evalpipe.scoring.scorer import score_frame
from evalpipe.studies.formats.generate import generation
from tests.conftest import TEST_PARAMS
from tests.formats_server import DIGIT_DROP, POSITION, PlantedServer
from tests.test_inference_openai import _cfg

REPO = Path(__file__).resolve().parents[1]
CFG = {"orders": "cyclic", "labels": ["digits", "circled"], "incorrect": True}


def _rows(name: str, n: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, fewshot = load_benchmark(get_spec(name), source="sample", max_samples=n)
    return rows.assign(condition="typo", variant="original"), fewshot


def test_cyclic_orders_put_the_gold_at_every_position() -> None:
    spec = get_spec("mmlu")
    rows, _ = _rows("mmlu")
    found = variants(spec, {**CFG, "labels": []}, fields=example_fields(rows))
    orders = [v for v in found if v.family == "order"]
    assert len(orders) == 3  # with the plain prompt, the four positions
    for i, rec in enumerate(rows.to_dict("records")):
        positions = {"ABCD".index(rec["answer"])}
        for v in orders:
            shown = variant_rows(spec, rows, v).iloc[i]
            gold_text = rec["choices"]["ABCD".index(rec["answer"])]
            assert list(shown["choices"]).index(gold_text) == "ABCD".index(shown["answer"])
            positions.add("ABCD".index(shown["answer"]))
        assert positions == {0, 1, 2, 3}


def test_all_orders_are_capped_and_hashed_the_same_every_time() -> None:
    spec = get_spec("jcommonsenseqa")  # five options: 119 permutations besides the identity
    rows, _ = _rows("jcommonsenseqa")
    cfg = {"orders": "all", "labels": [], "incorrect": False}
    first = [v.order for v in variants(spec, cfg, fields=example_fields(rows))]
    again = [v.order for v in variants(spec, cfg, fields=example_fields(rows))]
    assert len(first) == ALL_CAP and first == again and tuple(range(5)) not in first
    assert len(variants(get_spec("mmlu"), cfg, fields={"question": "q"})) == 23  # 4! - 1


def test_label_arms_where_the_body_shows_labels_and_japanese_sets_for_japanese() -> None:
    mmlu, lawqa, jcqa = (get_spec(n) for n in ("mmlu", "lawqa", "jcommonsenseqa"))
    cfg = {"orders": "none", "labels": ["digits", "katakana", "circled"], "incorrect": False}
    names = lambda spec, rows: [v.name for v in variants(spec, cfg, fields=example_fields(rows))]  # noqa: E731
    assert names(mmlu, _rows("mmlu")[0]) == ["labels=digits"]
    assert names(lawqa, _rows("lawqa")[0]) == ["labels=digits", "labels=katakana", "labels=circled"]
    assert names(jcqa, _rows("jcommonsenseqa")[0]) == []  # its body numbers the options itself
    assert variants(get_spec("gsm8k"), CFG, fields={}) == []  # not a choice benchmark


def test_label_prompt_shows_the_labels_in_body_instruction_and_shots() -> None:
    spec = get_spec("mmlu")
    rows, fewshot = _rows("mmlu", 1)
    found = variants(spec, CFG, fields=example_fields(rows))
    variant = next(v for v in found if v.name == "labels=digits")
    shown = variant_rows(spec, rows, variant)
    prompt = build_prompts(
        variant_spec(spec, variant), shown, variant_fewshot(spec, fewshot, variant),
        style="few_shot", n_shots=1,
    )[0]  # fmt: skip
    assert "(1, 2, 3 or 4)" in prompt and "\n1. " in prompt and "\nA. " not in prompt
    shot_answer = prompt.split("Answer: ")[1][0]  # the demonstration's answer, relabelled
    assert shot_answer in "1234"
    assert shown["answer"].iloc[0] == "1234"["ABCD".index(rows["answer"].iloc[0])]


def test_incorrect_arm_accepts_every_other_option_and_says_so() -> None:
    spec = get_spec("lawqa")
    rows, _ = _rows("lawqa", 2)
    variant = variants(spec, CFG, fields=example_fields(rows))[-1]
    shown = variant_rows(spec, rows, variant)
    for gold, accepted in zip(rows["answer"], shown["answers"], strict=True):
        assert sorted(accepted) == sorted(set("abcd") - {gold})
    prompt = build_prompts(variant_spec(spec, variant), shown, None, style="zero_shot", n_shots=0)[
        0
    ]
    assert "正しくない選択肢を1つ選んで" in prompt


def test_a_gold_outside_the_labels_is_an_error_naming_the_row() -> None:
    spec = get_spec("mmlu")
    rows, _ = _rows("mmlu", 2)
    rows.loc[1, "answer"] = "Z"
    variant = variants(spec, CFG, fields=example_fields(rows))[0]
    with pytest.raises(InputError, match=r"mmlu, row 2 .*gold answer 'Z'"):
        variant_rows(spec, rows, variant)


def test_scorer_parses_a_label_arm_in_its_own_labels() -> None:
    frame = pd.DataFrame(
        {
            "benchmark": ["lawqa"] * 3,
            "example_id": ["1", "1", "1"],
            "variant": ["original"] * 3,
            "condition": ["typo", "format:labels=circled", "format:labels=digits"],
            "output": ["回答: b", "回答: ②", "2"],
            "answer": ["b", "②", "2"],
        }
    )
    options = get_spec("lawqa").parser_options(None)  # digits 1-4 stand for a-d there
    scored = score_frame(frame, parser="mc_letter", metric="exact_match", parser_options=options)
    assert scored["prediction"].tolist() == ["b", "②", "2"]  # digits read literally in its arm
    assert scored["correct"].all()


def _view() -> pd.DataFrame:
    """Three examples, gold A: the reference and two orders, by hand."""
    rows = []
    # (example, condition, prediction, correct)
    table = [
        ("e1", "typo", "A", True), ("e1", "format:order=1-2-3-0", "D", True),
        ("e1", "format:order=3-0-1-2", "B", True),
        ("e2", "typo", "A", True), ("e2", "format:order=1-2-3-0", "A", False),
        ("e2", "format:order=3-0-1-2", "B", True),
        ("e3", "typo", "C", False), ("e3", "format:order=1-2-3-0", None, False),
        ("e3", "format:order=3-0-1-2", "A", False),
        ("e1", "format:incorrect", "B", True), ("e2", "format:incorrect", "A", False),
        ("e3", "format:incorrect", "A", True),
    ]  # fmt: skip
    for example, condition, prediction, correct in table:
        rows.append(
            {"example_id": example, "condition": condition, "variant": "original",
             "prediction": prediction, "correct": correct}
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_consistency_worst_case_and_spread_match_a_hand_computation() -> None:
    families = {a.family: a for a in family_answers(_view(), list("ABCD"))}
    order = families["order"]
    assert order.variants == ["reference", "order=1-2-3-0", "order=3-0-1-2"]
    # e1 chose original option 0 everywhere; e2: 0, 1, 0; e3: 2, unparsed, 3
    assert order.choice.tolist() == [[0, 0, 0], [0, 1, 0], [2, -1, 3]]
    assert consistent(order).tolist() == [True, False, False]
    table = format_table({"mmlu": _view()}, model="m", labels_of=lambda v: list("ABCD"), level=0.95)
    assert list(table.columns) == list(COLUMNS)
    got = {(r.family, r.statistic, r.variant): r.estimate for r in table.itertuples(index=False)}
    assert got[("order", "accuracy", "reference")] == pytest.approx(2 / 3)
    assert got[("order", "accuracy", "order=1-2-3-0")] == pytest.approx(1 / 3)
    assert got[("order", "consistency", "all")] == pytest.approx(1 / 3)
    assert got[("order", "worst_case", "all")] == pytest.approx(1 / 3)  # e1 only
    assert got[("order", "spread", "all")] == pytest.approx(1 - (2 / 3 - 1 / 3))
    # incorrect: e1 names B (not its own A), e2 names A (its own answer), e3 A (not its own C)
    assert got[("incorrect", "consistency", "all")] == pytest.approx(2 / 3)
    assert got[("incorrect", "worst_case", "all")] == pytest.approx(1 / 3)
    assert (table["n"] == 3).all()
    assert ((table["ci_low"] <= table["estimate"]) & (table["estimate"] <= table["ci_high"])).all()


def test_original_choice_maps_back_through_order_and_labels() -> None:
    order = parse_format_variant("order=2-0-1")
    assert [original_choice(x, variant=order, labels="ABC") for x in "ABC"] == [2, 0, 1]
    circled = parse_format_variant("labels=circled")
    assert original_choice("③", variant=circled, labels="ABCD") == 2
    assert original_choice("C", variant=circled, labels="ABCD") is None


def test_spread_interval_covers_a_planted_truth_and_reaches_1_without_an_effect() -> None:
    for accuracies in ([0.8, 0.7, 0.6, 0.7], [0.7, 0.7, 0.7, 0.7]):
        sim = simulate_spread(
            examples=100, accuracies=accuracies, level=0.95, reps=60, seed=3, samples=300
        )
        assert sim["coverage"] >= 0.85, sim
    flat = np.ones((30, 3), dtype=bool)
    assert spread_interval(flat, level=0.95, seed=1) == (1.0, 1.0)


def test_params_label_choices_are_the_label_sets() -> None:
    labels = SCHEMA.keys["formats"].keys["labels"].item.choices
    assert tuple(labels) == tuple(FORMAT_LABELS)


@pytest.mark.server
def test_planted_position_bias_and_label_effect_are_recovered(tmp_path: Path) -> None:
    """160 made-up questions, the correct option first: arm ``order`` shift s shows it at
    position s, so each arm's accuracy estimates POSITION[s]; the digit-label arm estimates
    POSITION[0] - DIGIT_DROP. Each truth must lie in its interval, and so must the spreads."""
    spec = get_spec("mmlu")
    n = 160
    rows = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "example_id": [f"q{i:03d}" for i in range(n)],
            "variant": "original",
            "condition": "typo",
            "fields": [json.dumps({"question": f"Question number {i}?"}) for i in range(n)],
            "choices": [[f"right-{i}", f"wrong-{i}-1", f"wrong-{i}-2", f"wrong-{i}-3"] for i in range(n)],
            "answer": "A",
            "answers": None,
            "subtask": "elementary_mathematics",
        }
    )  # fmt: skip
    params = yaml.safe_load(TEST_PARAMS.read_text())
    params["formats"] = {"orders": "cyclic", "labels": ["digits"], "incorrect": True}
    params["scoring"]["method"] = "generate"
    part = generation(params, ProjectPaths(tmp_path), slug="planted", source="params.yaml")
    bench = BenchmarkInput(
        "mmlu", tmp_path / "mmlu.parquet", rows, spec, None, "zero_shot", 0, "english"
    )
    sampling = Sampling(temperature=0.0, max_tokens=None, seed=None, method="generate")
    plan = plan_benchmark(bench, sampling=sampling, studies=[part])
    with PlantedServer([f"right-{i}" for i in range(n)]) as url:
        engine = make_engine(_cfg(url, max_concurrency=8), cache_dir=tmp_path / "cache")
        (result,) = run_plans(engine, [plan], progress=False)
    outputs = plan.rows.assign(output=[g.output for g in result.generations])
    views = score_benchmark(
        outputs, spec, name="mmlu", scoring=params["scoring"], style="zero_shot", source="planted"
    ).views
    table = format_table(views, model="planted", labels_of=lambda v: spec.labels, level=0.95)
    truth = {
        ("order", "reference"): POSITION[0],
        ("order", "order=3-0-1-2"): POSITION[1],
        ("order", "order=2-3-0-1"): POSITION[2],
        ("order", "order=1-2-3-0"): POSITION[3],
        ("labels", "labels=digits"): POSITION[0] - DIGIT_DROP,
        ("incorrect", "incorrect"): 1.0,
    }
    acc = table.loc[table["statistic"] == "accuracy"].set_index(["family", "variant"])
    for key, value in truth.items():
        row = acc.loc[key]
        assert row["ci_low"] <= value <= row["ci_high"], (key, value, row.to_dict())
        assert row["n"] == n
    spreads = table.loc[table["statistic"] == "spread"].set_index("family")
    for family, value in (("order", 1 - (POSITION[0] - POSITION[3])), ("labels", 1 - DIGIT_DROP)):
        row = spreads.loc[family]
        assert row["ci_low"] <= value <= row["ci_high"], (family, row.to_dict())
        assert row["ci_high"] < 1.0  # the effect is seen
    # asked for an incorrect option it names the one after the correct one, which is its own
    # plain answer exactly when it missed there: consistent with probability POSITION[0]
    row = table.set_index(["family", "statistic"]).loc[("incorrect", "consistency")]
    assert row["ci_low"] <= POSITION[0] <= row["ci_high"]
    # every arm is a condition of the rows, paired on the example
    assert set(views["mmlu"]["condition"]) == {"typo"} | {
        f"format:{v}" for _, v in truth if v != "reference"
    }


def _run(root: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    proc = subprocess.run([sys.executable, "-m", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_stages_run_the_format_arms_into_pairs_tables_metrics_and_report(tmp_path: Path) -> None:
    """perturb, generate, score, impact on the MMLU sample with every format arm against the
    planted server; then off again, the format files go."""
    from evalpipe import atomic
    from evalpipe.report.formats import formats_section
    from evalpipe.words import word_list

    spec = get_spec("mmlu")
    examples, fewshot = load_benchmark(spec, source="sample", max_samples=24)
    atomic.write_parquet(tmp_path / "data" / "benchmarks" / "mmlu.parquet", examples)
    atomic.write_parquet(tmp_path / "data" / "benchmarks" / "mmlu.fewshot.parquet", fewshot)
    words = word_list("english", "wordfreq", raw_dir=tmp_path / "none", top_n=30, min_length=2)
    atomic.write_parquet(tmp_path / "data" / "words" / "english.parquet", words)
    correct = [
        c[spec.labels.index(a)]
        for c, a in zip(examples["choices"], examples["answer"], strict=True)
    ]
    params = yaml.safe_load(TEST_PARAMS.read_text())
    params["benchmarks"]["suites"] = {"mmlu": "english"}
    params["formats"] = {"orders": "cyclic", "labels": ["digits"], "incorrect": True}
    with PlantedServer(correct) as url:
        params["models"] = {"planted": _cfg(url, name="planted", family="planted", size="1B")}
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        _run(tmp_path, "stages.perturb", "--name", "mmlu")
        _run(tmp_path, "stages.generate", "--no-progress")
    out = _run(tmp_path, "stages.score")
    _run(tmp_path, "stages.impact")
    assert "formats (mmlu, order): 1 - (max - min)" in out
    arms = {"typo", "format:order=3-0-1-2", "format:order=2-3-0-1", "format:order=1-2-3-0",
            "format:labels=digits", "format:incorrect"}  # fmt: skip
    pairs = pd.read_parquet(tmp_path / "data" / "scored" / "planted" / "pairs.parquet")
    assert set(pairs["condition"]) == arms  # each arm's typo'd rows paired with its own clean row
    headline = json.loads((tmp_path / "metrics" / "planted" / "mmlu.json").read_text())
    scored = pd.read_parquet(tmp_path / "data" / "scored" / "planted" / "mmlu.parquet")
    typo_clean = scored.loc[(scored["condition"] == "typo") & (scored["variant"] == "original")]
    assert headline["n_all"] == len(typo_clean)  # the headline is the typo arm's alone
    table = pd.read_parquet(tmp_path / "data" / "impact" / "formats.parquet")
    assert list(table.columns) == list(COLUMNS)
    assert set(table["statistic"]) == {"accuracy", "consistency", "worst_case", "spread"}
    assert set(table["family"]) == {"order", "labels", "incorrect"} and (table["n"] == 24).all()
    metrics = json.loads((tmp_path / "metrics" / "planted" / "formats.json").read_text())
    assert set(metrics["mmlu"]) == {"order", "labels", "incorrect"}
    robustness = {"planted": json.loads(
        (tmp_path / "data" / "scored" / "planted" / "robustness_details.json").read_text()
    )}  # fmt: skip
    section = formats_section(table, robustness)
    assert section is not None and "typo effect" in section and "formats-rows" in section
    # off again: the format files go, the rows hold the typo arm only
    params["formats"] = {"orders": "none", "labels": [], "incorrect": False}
    with PlantedServer(correct) as url:
        params["models"]["planted"]["base_urls"] = [url]
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        _run(tmp_path, "stages.generate", "--no-progress")
    _run(tmp_path, "stages.score")
    _run(tmp_path, "stages.impact")
    assert not (tmp_path / "metrics" / "planted" / "formats.json").exists()
    assert not (tmp_path / "data" / "scored" / "planted" / "formats.json").exists()
    assert not (tmp_path / "data" / "impact" / "formats.parquet").exists()
    outputs = pd.read_parquet(tmp_path / "data" / "outputs" / "planted" / "mmlu.parquet")
    assert set(outputs["condition"]) == {"typo"}


def test_a_benchmark_with_fewer_options_than_labels_gets_no_arms(tmp_path: Path, caplog) -> None:
    spec = get_spec("mmlu")
    rows, _ = _rows("mmlu", 2)
    rows["choices"] = [list(c)[:3] for c in rows["choices"]]
    params = yaml.safe_load(TEST_PARAMS.read_text())
    params["formats"] = dict(CFG)
    part = generation(params, ProjectPaths(tmp_path), slug="m", source="params.yaml")
    bench = BenchmarkInput("mmlu", tmp_path / "x", rows, spec, None, "zero_shot", 0, "english")
    assert part.enabled and part.arms(bench, []) == []
    assert "rows hold [3] options for 4 labels" in caplog.text
