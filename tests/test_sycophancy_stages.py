"""The sycophancy stages end to end without vLLM: a real OpenAI-compatible server process (the
canned server) answers the dialogues and, as the judge, replies with JSON that is not a rating;
the stages count every such reply, mark the human estimators unavailable with the reason, use
people's ratings once they exist, and refuse a batch that rates a reply not in the tasks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from evalpipe.annotation.schema import sample_tasks_path
from evalpipe.paths import ProjectPaths
from tests.conftest import TEST_PARAMS
from tests.inference_servers import CannedServer

REPO = Path(__file__).resolve().parents[1]


def _stage(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]),
        EVALPIPE_TEST_KEY="sk-syco-test",
    )
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _batch(path: Path, ids: list[str], annotator: str, score: int) -> None:
    lines = [
        json.dumps(
            {
                "id": i,
                "annotator_id": annotator,
                "timestamp": "2026-01-01T10:00:00Z",
                "annotations": {a: score for a in ("social", "avoidant", "mechanical", "self")},
                "confidence": {a: 0.9 for a in ("social", "avoidant", "mechanical", "self")},
            }
        )
        for i in ids
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_sycophancy_stages_count_bad_judge_replies_and_use_people_once_they_rate(tmp_path):
    paths = ProjectPaths(tmp_path)
    shutil.copytree(REPO / "data" / "samples", tmp_path / "data" / "samples")
    with CannedServer(tmp_path / "requests.jsonl") as server:
        params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
        server_settings = {
            "backend": "openai",
            "base_urls": [server.url],
            "api_key_env": "EVALPIPE_TEST_KEY",
            "max_concurrency": 4,
        }
        params["models"] = {"canned": {"name": "canned", **server_settings}}
        params["judge"].update(model="canned", **server_settings)
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")

        out = _ok(
            _stage(tmp_path, "stages.sycophancy_replies", "--model", "canned", "--no-progress")
        )
        assert "30 replies" in out
        out = _ok(_stage(tmp_path, "stages.sycophancy_sample"))
        assert "6 of 30 dialogues" in out
        human_tasks = (paths.sycophancy / "human_tasks.jsonl").read_text(encoding="utf-8")
        sampled = [json.loads(x)["id"] for x in human_tasks.splitlines()]
        assert len(sampled) == 6 and all(i.startswith("syc/") for i in sampled)
        # the annotation tasks: the sample tasks plus the sampled replies (as annotation_tasks
        # assembles them)
        paths.annotation_tasks.parent.mkdir(parents=True)
        paths.annotation_tasks.write_text(
            sample_tasks_path().read_text(encoding="utf-8") + human_tasks, encoding="utf-8"
        )
        out = _ok(_stage(tmp_path, "stages.sycophancy_judge"))
        sent = server.requests()

    # the canned judge answers JSON outside the rating schema: every task unrated, counted
    runs = json.loads((paths.sycophancy / "judge_runs.json").read_text(encoding="utf-8"))
    assert runs["canned"]["tasks"] == 60 and runs["canned"]["unrated"] == 60
    assert runs["canned"]["replies_unrated"] == 30
    details = (paths.sycophancy / "judge_details.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(details) == 60 and all(json.loads(d)["problems"] for d in details)
    assert pd.read_parquet(paths.sycophancy / "ratings.parquet").empty
    # 30 replies, then per task one rating prompt and one repair prompt
    assert len(sent) == 30 + 2 * 60
    prompts = [r["body"]["messages"][-1]["content"] for r in sent]
    # the judge's first prompts never name the model (the repairs echo the judge's own reply)
    assert not any("canned" in p for p in prompts[30:90])

    out = _ok(_stage(tmp_path, "stages.sycophancy"))
    assert "[illustrative sample batches]" in out
    est = pd.read_parquet(paths.sycophancy / "estimates.parquet")
    assert len(est) == 4 * 2 * 3 and not est["available"].any()
    judge_rows = est[est.estimator == "judge"]
    assert (judge_rows["reason"] == "no judge rating").all()
    assert est[est.estimator == "ppi"]["reason"].str.contains("have not rated").all()
    metrics = json.loads((paths.metrics / "sycophancy" / "canned.json").read_text("utf-8"))
    assert metrics["social"]["estimator"] == "none" and metrics["social"]["mean"] is None
    assert metrics["n_judged"] == 0
    validity = json.loads((paths.sycophancy / "judge_validity.json").read_text("utf-8"))
    assert validity["canned"]["self_grading"] == {"canned": "self"}
    assert validity["canned"]["illustrative"] is True

    # people rate the sampled replies: the humans-only estimate appears (PPI still needs the
    # judge's ratings, and says so)
    raw = paths.raw_annotations
    raw.mkdir(parents=True)
    _batch(raw / "batch_001.jsonl", sampled, "rater_a", 2)
    _batch(raw / "batch_002.jsonl", sampled, "rater_b", 3)
    out = _ok(_stage(tmp_path, "stages.sycophancy"))
    assert "illustrative" not in out
    est = pd.read_parquet(paths.sycophancy / "estimates.parquet")
    human = est[(est.estimator == "human") & (est.statistic == "mean")]
    assert human["available"].all() and (human["estimate"] == 2.5).all()
    assert (human["n_human"] == 6).all()

    # a batch rating a reply that is not among the tasks: a clear error, nothing dropped
    _batch(raw / "batch_003.jsonl", ["syc/0000000000000000"], "rater_c", 1)
    proc = _stage(tmp_path, "stages.sycophancy")
    assert proc.returncode == 2
    assert "batch_003.jsonl:1" in proc.stderr and "syc/0000000000000000" in proc.stderr


def test_a_dialogue_file_without_a_user_turn_stops_the_replies_stage(tmp_path):
    bad = tmp_path / "mine.jsonl"
    bad.write_text(json.dumps({"id": "x", "response": "", "context": []}) + "\n", "utf-8")
    params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
    params["sycophancy"]["dialogues"] = [str(bad)]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    proc = _stage(tmp_path, "stages.sycophancy_replies", "--model", "tiny-random")
    assert proc.returncode == 2
    assert f"{bad}:1" in proc.stderr and 'field "user"' in proc.stderr
    assert not (tmp_path / "data" / "sycophancy").exists()
