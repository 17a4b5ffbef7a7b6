"""The judge stage without vLLM: `python -m stages.judge` against a canned OpenAI-compatible
server (a real HTTP server process) whose replies are JSON but not ratings. (The vLLM judge with
tiny-random is tests/test_judge_vllm.py, a slow test.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from evalpipe.annotation.schema import read_tasks, sample_tasks_path
from evalpipe.paths import ProjectPaths
from tests.conftest import TEST_PARAMS
from tests.inference_servers import CannedServer

REPO = Path(__file__).resolve().parents[1]


def _judge(root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]),
        EVALPIPE_TEST_KEY="sk-judge-test",
    )
    return subprocess.run(
        [sys.executable, "-m", "stages.judge"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_judge_stage_counts_every_task_and_rates_none_from_replies_that_are_not_ratings(
    tmp_path: Path,
) -> None:
    paths = ProjectPaths(tmp_path)
    paths.annotation_tasks.parent.mkdir(parents=True)
    shutil.copy(sample_tasks_path(), paths.annotation_tasks)
    tasks = read_tasks(paths.annotation_tasks)
    with CannedServer(tmp_path / "requests.jsonl") as server:
        params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
        params["judge"].update(
            model="canned",
            backend="openai",
            base_urls=[server.url],
            api_key_env="EVALPIPE_TEST_KEY",
            max_concurrency=4,
        )
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
        proc = _judge(tmp_path)
        sent = server.requests()
    assert proc.returncode == 0, proc.stderr
    assert f"judge: 0/{len(tasks)} tasks rated by llm:canned" in proc.stdout

    summary = json.loads(paths.judge_summary.read_text(encoding="utf-8"))
    assert (summary["tasks"], summary["rated"], summary["unrated"]) == (len(tasks), 0, len(tasks))
    assert (summary["backend"], summary["model"]) == ("openai", "canned")
    assert sorted(summary["unrated_ids"]) == sorted(t.id for t in tasks)
    assert paths.judge_annotations.read_text(encoding="utf-8") == ""
    details = [json.loads(x) for x in paths.judge_details.read_text(encoding="utf-8").splitlines()]
    assert [d["status"] for d in details] == ["unrated"] * len(tasks)

    # one first prompt with the rating schema and one repair retry per task
    assert len(sent) == 2 * len(tasks)
    assert all(r["authorization"] == "Bearer sk-judge-test" for r in sent)
    assert all("response_format" in r["body"] for r in sent)
    prompts = [r["body"]["messages"][-1]["content"] for r in sent]
    assert all(any(t.response in p for p in prompts) for t in tasks)
