"""Annotation tasks from model outputs: deterministic sampling, stable ids, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
import yaml

from evalpipe.annotation.schema import DialoguePair, read_tasks
from evalpipe.annotation.tasks import (
    combine_tasks,
    output_task_id,
    sample_output_tasks,
    trim_context,
)
from evalpipe.errors import InputError
from tests.conftest import REPO, project_env


def outputs_frame(n: int = 6) -> pd.DataFrame:
    rows = []
    for bench in ("gsm8k", "jnli"):
        for i in range(n):
            for variant in ("original", "the" if bench == "gsm8k" else "こと"):
                rows.append(
                    {
                        "benchmark": bench,
                        "example_id": f"{bench}-{i:03d}",
                        "variant": variant,
                        "prompt": f"question {i} ({variant})",
                        "output": f"answer {i} ({variant})",
                        "model": "tiny-random",
                    }
                )
    return pd.DataFrame(rows)


def test_same_seed_gives_the_same_tasks_in_the_same_order() -> None:
    frame = outputs_frame()
    first, _ = sample_output_tasks(frame, per_benchmark=3, seed=42)
    shuffled = frame.sample(frac=1.0, random_state=7).reset_index(drop=True)
    second, _ = sample_output_tasks(shuffled, per_benchmark=3, seed=42)
    assert [t.id for t in first] == [t.id for t in second]
    assert first == second


def test_another_seed_picks_another_sample() -> None:
    frame = outputs_frame(20)
    a, _ = sample_output_tasks(frame, per_benchmark=3, seed=1)
    b, _ = sample_output_tasks(frame, per_benchmark=3, seed=2)
    assert [t.id for t in a] != [t.id for t in b]


def test_raising_the_count_keeps_the_earlier_tasks() -> None:
    frame = outputs_frame(10)
    small, _ = sample_output_tasks(frame, per_benchmark=2, seed=42, benchmarks=["gsm8k"])
    large, _ = sample_output_tasks(frame, per_benchmark=5, seed=42, benchmarks=["gsm8k"])
    assert [t.id for t in large[:2]] == [t.id for t in small]


def test_task_carries_prompt_as_user_and_output_as_response_with_empty_context() -> None:
    tasks, stats = sample_output_tasks(outputs_frame(2), per_benchmark=None, seed=0)
    task = next(t for t in tasks if t.id == "out/gsm8k/gsm8k-001/original")
    assert task.user == "question 1 (original)"
    assert task.response == "answer 1 (original)"
    assert task.context == []
    assert stats.taken == {"gsm8k": 2, "jnli": 2}
    assert [t.id.split("/")[1] for t in tasks] == ["gsm8k", "gsm8k", "jnli", "jnli"]


@pytest.mark.parametrize(
    ("variants", "expected"),
    [
        ("original", {"original"}),
        ("perturbed", {"the", "こと"}),
        ("all", {"original", "the", "こと"}),
    ],
)
def test_variants_param_selects_which_outputs_become_tasks(variants: str, expected: set) -> None:
    tasks, _ = sample_output_tasks(outputs_frame(), per_benchmark=None, seed=0, variants=variants)
    assert {t.id.rsplit("/", 1)[1] for t in tasks} == expected


def test_blank_outputs_are_counted_not_sampled() -> None:
    frame = outputs_frame(3)
    frame.loc[frame["example_id"] == "gsm8k-000", "output"] = "  "
    tasks, stats = sample_output_tasks(frame, per_benchmark=None, seed=0, benchmarks=["gsm8k"])
    assert stats.blank == {"gsm8k": 1}
    assert stats.eligible == {"gsm8k": 2}
    assert all("gsm8k-000" not in t.id for t in tasks)


def test_missing_column_is_named() -> None:
    with pytest.raises(InputError, match=r"outs\.parquet: missing column\(s\) output"):
        sample_output_tasks(
            outputs_frame().drop(columns=["output"]), per_benchmark=1, seed=0, source="outs.parquet"
        )


def test_unknown_benchmark_and_variant_are_refused() -> None:
    with pytest.raises(InputError, match=r"annotation\.benchmarks: mmlu not in"):
        sample_output_tasks(outputs_frame(), per_benchmark=1, seed=0, benchmarks=["mmlu"])
    with pytest.raises(InputError, match=r"annotation\.variants"):
        sample_output_tasks(outputs_frame(), per_benchmark=1, seed=0, variants="typos")


def test_duplicate_id_across_sources_is_refused() -> None:
    task = DialoguePair(id="x", user="u", response="r", context=[])
    with pytest.raises(
        InputError, match=r"b\.jsonl: .*duplicate task id 'x' \(already in a\.jsonl\)"
    ):
        combine_tasks([task], [task], sources=["a.jsonl", "b.jsonl"])


def test_context_is_trimmed_to_the_window() -> None:
    context = [{"turn": -t, "speaker": "user", "text": str(t)} for t in range(1, 6)]
    task = DialoguePair(id="x", user="u", response="r", context=context)
    assert [t["turn"] for t in trim_context(task, context_window=7).context] == [-1, -2, -3]


def test_output_ids_are_stable_strings() -> None:
    assert output_task_id("jnli", "valid-12", "こと") == "out/jnli/valid-12/こと"


def _write_project(root: Path, *, tasks_per_benchmark: int, dialogues: list[str]) -> None:
    # two models: tasks come from the first unless annotation.model names another
    for slug in ("first", "second"):
        (root / "data" / "outputs" / slug).mkdir(parents=True)
        frame = outputs_frame(4 if slug == "first" else 2)
        for bench, part in frame.groupby("benchmark"):
            part.to_parquet(root / "data" / "outputs" / slug / f"{bench}.parquet", index=False)
    params = {
        "seed": 42,
        "models": {"first": {"name": "tiny-random"}, "second": {"name": "tiny-random"}},
        "annotation": {
            "tasks_per_benchmark": tasks_per_benchmark,
            "variants": "original",
            "benchmarks": None,
            "dialogues": dialogues,
            "context_window": 7,
        },
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")


def _run_stage(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stages.annotation_tasks"],
        cwd=root,
        env=project_env(PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
    )


def test_stage_writes_sample_dialogues_then_outputs_and_a_template(tmp_path: Path) -> None:
    (tmp_path / "mine.jsonl").write_text(
        json.dumps({"id": "my_1", "user": "u", "response": "r", "context": []}) + "\n"
    )
    _write_project(tmp_path, tasks_per_benchmark=2, dialogues=["sample", "mine.jsonl"])
    first = _run_stage(tmp_path)
    assert first.returncode == 0, first.stderr
    assert "2 model outputs" not in first.stdout and "4 model outputs" in first.stdout
    tasks_path = tmp_path / "data" / "annotation_tasks" / "tasks.jsonl"
    tasks = read_tasks(tasks_path)
    ids = [t.id for t in tasks]
    assert ids[0] == "sample_001" and "my_1" in ids
    assert [i for i in ids if i.startswith("out/")] == sorted(
        (i for i in ids if i.startswith("out/")), key=lambda i: i.split("/")[1]
    )
    assert len([i for i in ids if i.startswith("out/")]) == 4
    sheet = openpyxl.load_workbook(tmp_path / "data" / "annotation_tasks" / "template.xlsx").active
    sheet_ids = {row[0] for row in sheet.iter_rows(min_row=2, values_only=True) if row[0]}
    assert set(ids) <= sheet_ids
    before = (
        tasks_path.read_bytes(),
        (tmp_path / "data/annotation_tasks/template.xlsx").read_bytes(),
    )
    again = _run_stage(tmp_path)
    assert again.returncode == 0, again.stderr
    after = tasks_path.read_bytes(), (tmp_path / "data/annotation_tasks/template.xlsx").read_bytes()
    assert before == after


def test_annotation_model_picks_whose_outputs_become_tasks(tmp_path: Path) -> None:
    _write_project(tmp_path, tasks_per_benchmark=None, dialogues=[])
    params_path = tmp_path / "params.yaml"
    first = _run_stage(tmp_path)
    assert first.returncode == 0, first.stderr
    params = yaml.safe_load(params_path.read_text(encoding="utf-8"))
    params["annotation"]["model"] = "second"
    params_path.write_text(yaml.safe_dump(params), encoding="utf-8")
    second = _run_stage(tmp_path)
    assert second.returncode == 0, second.stderr
    counts = [int(re.search(r"(\d+) model outputs", p.stdout).group(1)) for p in (first, second)]
    originals = [int((outputs_frame(n)["variant"] == "original").sum()) for n in (4, 2)]
    assert counts == originals and counts[0] != counts[1]
    params["annotation"]["model"] = "third"
    params_path.write_text(yaml.safe_dump(params), encoding="utf-8")
    unknown = _run_stage(tmp_path)
    assert unknown.returncode == 2
    assert "annotation.model" in unknown.stderr and "first, second" in unknown.stderr


def test_stage_names_a_missing_dialogue_file(tmp_path: Path) -> None:
    _write_project(tmp_path, tasks_per_benchmark=1, dialogues=["nope.jsonl"])
    proc = _run_stage(tmp_path)
    assert proc.returncode == 2
    assert "annotation.dialogues" in proc.stderr and "nope.jsonl" in proc.stderr
    assert not (tmp_path / "data" / "annotation_tasks" / "tasks.jsonl").exists()
