"""The judge end to end on the vLLM CPU build with tiny-random (one engine start for the module).

tiny-random's ratings are noise; what is real here is the path: prompts through the generation
cache and structured outputs, schema validation of every reply, the repair retry, the count of
unrated tasks, and the stage's artifacts.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from evalpipe.annotation.judge import judge_tasks, parse_judgement, prompt_version
from evalpipe.annotation.schema import (
    AXES,
    annotation_to_dict,
    read_annotations,
    read_tasks,
    task_to_dict,
    validate_annotation,
)
from evalpipe.inference.engine import Engine, make_engine
from evalpipe.inference.tiny import default_model_cache
from evalpipe.inference.vllm_engine import VLLMBackend
from stages import judge as judge_stage
from tests.conftest import REPO

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(900)]

JUDGE_PARAMS = {
    "model": "tiny-random",
    "backend": "vllm",
    "dtype": "auto",
    "max_model_len": 4096,
    "gpu_memory_utilization": 0.1,
    "temperature": 0.0,
    "max_tokens": 384,
}
TIMESTAMP = "1970-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project-like folder: params.yaml, tasks.jsonl, and the judge's cache location."""
    root = tmp_path_factory.mktemp("judge")
    tasks = read_tasks(REPO / "src/evalpipe/annotation/samples/tasks.jsonl")[:3]
    path = root / "data" / "annotation_tasks" / "tasks.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        "".join(json.dumps(task_to_dict(t), ensure_ascii=False) + "\n" for t in tasks), "utf-8"
    )
    (root / "params.yaml").write_text(yaml.safe_dump({"judge": JUDGE_PARAMS}), "utf-8")
    return root


@pytest.fixture(scope="module")
def engine(workdir: Path) -> Iterator[Engine]:
    """The module's one engine, on the cache directory the judge stage uses."""
    cfg = judge_stage.judge_model_config(JUDGE_PARAMS, where="test")
    eng = make_engine(
        cfg,
        cache_dir=workdir / "data" / "cache" / "judge_generations",
        model_cache=default_model_cache(REPO),
    )
    yield eng
    eng.close()
    VLLMBackend.shutdown_all()
    gc.collect()


@pytest.fixture(scope="module")
def judged(workdir: Path, engine: Engine):
    tasks = read_tasks(workdir / "data" / "annotation_tasks" / "tasks.jsonl")
    run = judge_tasks(
        tasks,
        engine,
        model="tiny-random",
        timestamp=TIMESTAMP,
        temperature=0.0,
        max_tokens=JUDGE_PARAMS["max_tokens"],
    )
    return tasks, run


def test_every_task_is_rated_or_counted_as_unrated(judged) -> None:
    tasks, run = judged
    counts = run.counts()
    assert counts["tasks"] == len(tasks) == len(run.outcomes)
    assert counts["rated"] + counts["unrated"] == len(tasks)
    assert [o.id for o in run.outcomes] == [t.id for t in tasks]
    rated_ids = {a.id for a in run.annotations}
    for outcome in run.outcomes:
        if outcome.status == "unrated":
            assert outcome.problems and outcome.output
            assert outcome.id not in rated_ids
        else:
            assert outcome.id in rated_ids


def test_judge_records_are_valid_annotations_from_llm_annotator(judged) -> None:
    _, run = judged
    for a in run.annotations:
        assert a.annotator_id == "llm:tiny-random"
        assert a.timestamp == TIMESTAMP
        assert validate_annotation(annotation_to_dict(a), where="judge") == []
        assert set(a.annotations) == set(AXES)


def test_cut_off_replies_get_a_repair_retry_and_are_counted_unrated(workdir, engine) -> None:
    tasks = read_tasks(workdir / "data" / "annotation_tasks" / "tasks.jsonl")
    # Four tokens cannot hold the JSON object: both the first and the repair reply are cut off.
    run = judge_tasks(tasks, engine, model="tiny-random", timestamp=TIMESTAMP, max_tokens=4)
    assert run.annotations == []
    assert run.counts() == {"tasks": 3, "rated": 0, "repaired": 0, "unrated": 3}
    for outcome in run.outcomes:
        assert any(p.startswith("first answer:") for p in outcome.problems)
        assert any(p.startswith("repair answer:") for p in outcome.problems)
        assert not parse_judgement(outcome.output).valid


def test_judge_stage_reruns_from_the_cache_without_starting_an_engine(
    workdir, judged, monkeypatch
) -> None:
    _, run = judged
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("EVALPIPE_MODEL_CACHE", str(default_model_cache(REPO)))
    starts = VLLMBackend.starts
    result = CliRunner().invoke(judge_stage.main, [])
    assert result.exit_code == 0, result.output
    assert VLLMBackend.starts == starts  # every prompt was a cache hit
    assert "tasks rated by llm:tiny-random" in result.output
    out = workdir / "data" / "annotations"
    records = read_annotations(out / "judge.jsonl")
    assert [annotation_to_dict(a) for a in records] == [
        annotation_to_dict(a) for a in run.annotations
    ]
    summary = json.loads((out / "judge_summary.json").read_text())
    assert summary["prompt_version"] == prompt_version()
    assert summary["tasks"] == 3 and summary["rated"] + summary["unrated"] == 3
    assert summary["unrated_ids"] == [o.id for o in run.outcomes if o.status == "unrated"]
    details = [json.loads(line) for line in (out / "judge_details.jsonl").read_text().splitlines()]
    assert [d["status"] for d in details] == [o.status for o in run.outcomes]
    first_bytes = (out / "judge.jsonl").read_bytes(), (out / "judge_summary.json").read_bytes()
    assert CliRunner().invoke(judge_stage.main, []).exit_code == 0
    assert first_bytes == (
        (out / "judge.jsonl").read_bytes(),
        (out / "judge_summary.json").read_bytes(),
    )
