"""The generate stage's run summary (data/outputs/<model>/generation.json) holds counts only; the
stage prints its timings instead."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from evalpipe.inference.engine import RunStats
from tests.inference_servers import CannedServer
from tests.test_inference_openai import _stage_project

REPO = Path(__file__).resolve().parents[1]


def test_run_stats_dict_has_no_wall_clock_figures():
    stats = RunStats(output_tokens=100, generation_seconds=0.5, engine_start_seconds=7.0)
    assert (
        stats.to_dict()
        .keys()
        .isdisjoint({"generation_seconds", "engine_start_seconds", "tokens_per_s"})
    )
    assert stats.timings() == {
        "engine_start_seconds": 7.0,
        "generation_seconds": 0.5,
        "tokens_per_s": 200.0,
    }


def test_generate_stage_metrics_are_identical_across_runs_and_timings_are_printed(tmp_path):
    # before: generation_seconds, engine_start_seconds and tokens_per_s were in the metrics file,
    # so two runs of the same work always differed
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'src'}{os.pathsep}{REPO}")
    texts = []
    with CannedServer(tmp_path / "log.jsonl") as server:
        root = _stage_project(tmp_path, server.url)
        for _ in range(2):
            for cache in (root / "data" / "cache").glob("**/seg-*.parquet"):
                cache.unlink()  # generate again, do not read the cache
            proc = subprocess.run(
                [sys.executable, "-m", "stages.generate", "--no-progress"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr
            assert re.search(
                r"tokens in \d+\.\d+ s, \d+ tokens/s\), engine started in", proc.stdout
            )
            texts.append((root / "data" / "outputs" / "canned" / "generation.json").read_text())
    assert texts[0] == texts[1]
    metrics = json.loads(texts[0])
    assert not [k for k in metrics if "seconds" in k or k.endswith("_per_s")]
    assert metrics["misses"] == 20 and metrics["engine_started"] is True


def _per_benchmark(root: Path, env: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "stages.generate", "--no-progress"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    path = root / "data" / "outputs" / "canned" / "generation.json"
    return json.loads(path.read_text())["benchmarks"]


def test_per_benchmark_counts_add_up_and_generated_is_what_the_engine_was_sent(tmp_path):
    # before: a benchmark with 10 prompts sent reported generated 59 and from_cache 49
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'src'}{os.pathsep}{REPO}")
    with CannedServer(tmp_path / "log.jsonl") as server:
        root = _stage_project(tmp_path, server.url)
        runs = [_per_benchmark(root, env)]
        sent_first = len(server.requests())
        (segment,) = (root / "data" / "cache").glob("**/seg-*.parquet")
        table = pq.read_table(segment)
        pq.write_table(table.slice(0, 13), segment)  # forget 7 answers: only those are sent again
        runs.append(_per_benchmark(root, env))
        sent_second = len(server.requests()) - sent_first
    for per in runs:
        for name, c in per.items():
            assert c["requests"] == c["cached"] + c["generated"] + c["repeated"], name
            assert c["requests"] == c["prompts"], name
    first, second = runs
    assert sum(c["generated"] for c in first.values()) == sent_first == 20
    assert sum(c["cached"] for c in first.values()) == 0
    assert sum(c["generated"] for c in second.values()) == sent_second
    assert 0 < sent_second < 20
    assert sum(c["cached"] for c in second.values()) == 20 - sent_second


def test_a_deliberate_one_token_budget_is_a_note_and_prompts_without_answer_a_warning(caplog):
    from evalpipe.inference.plan import log_output_notes
    from evalpipe.inference.types import Generation, GenerationRequest

    requests = [GenerationRequest(prompt=f"q{i}", max_tokens=1) for i in range(4)]
    cut = [Generation("A", "length", 5, 1) for _ in requests]
    with caplog.at_level("INFO", logger="stages.generate"):
        log_output_notes("jcommonsenseqa", cut, requests)
    assert [r.levelname for r in caplog.records] == ["INFO"]
    assert "1-token budget" in caplog.records[0].getMessage()

    caplog.clear()
    refused = [Generation("", "rejected", 0, 0) for _ in requests]
    with caplog.at_level("INFO", logger="stages.generate"):
        log_output_notes("gsm8k", refused, requests)
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "4 prompts got no answer" in caplog.records[0].getMessage()
