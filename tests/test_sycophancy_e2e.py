"""The sycophancy stages through DVC in a temporary Git + DVC copy: the DAG links them where the
study needs it, and `dvc repro` runs the replies and the human sample against a real
OpenAI-compatible server (the canned one)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.inference_servers import CannedServer

pytestmark = [pytest.mark.server, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]


def test_dvc_runs_the_replies_and_the_sample_and_links_the_study(project, tmp_path) -> None:
    dag = project.dvc("dag", "--md", "report").stdout
    for edge in (
        "sycophancy_replies@tiny-random --> sycophancy_sample",
        "sycophancy_sample --> annotation_tasks",
        "annotation_tasks --> sycophancy_judge",
        "sycophancy_judge --> sycophancy",
        "sycophancy --> report",
    ):
        src, dst = edge.split(" --> ")
        assert f'"{src}"' in dag and f'"{dst}"' in dag, dag
    with CannedServer(tmp_path / "requests.jsonl") as server:
        params_path = project.root / "params.yaml"
        params = yaml.safe_load(params_path.read_text(encoding="utf-8"))
        params["models"] = {
            "canned": {"name": "canned", "backend": "openai", "base_urls": [server.url]}
        }
        params["sycophancy"]["human_sample"] = 4
        params_path.write_text(yaml.safe_dump(params, allow_unicode=True), encoding="utf-8")
        env = {**project.env, "OPENAI_API_KEY": "sk-e2e"}
        targets = ("sycophancy_replies@canned", "sycophancy_sample")
        # the edited params reach data/params.yaml, which every stage's DVC params name
        project.run("dvc", "repro", "--single-item", "params", env=env)
        project.run("dvc", "repro", "--single-item", *targets, env=env)
        sent = server.requests()
    assert len(sent) == 30  # one reply per sample dialogue
    tasks = (project.root / "data/sycophancy/human_tasks.jsonl").read_text("utf-8").splitlines()
    assert len(tasks) == 4
    assert all(json.loads(t)["response"].startswith("echo ") for t in tasks)
    lock = yaml.safe_load((project.root / "dvc.lock").read_text(encoding="utf-8"))
    assert {"sycophancy_replies@canned", "sycophancy_sample"} <= set(lock["stages"])
