"""perturb.draws: 2 end to end: perturb -> generate (openai backend against the canned local
server) -> score -> impact, each stage run as its own process on a small working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from evalpipe import atomic
from evalpipe.benchmarks import get_spec, load_benchmark
from evalpipe.words import word_list
from tests.conftest import TEST_PARAMS
from tests.inference_servers import CannedServer
from tests.test_inference_openai import _cfg

pytestmark = [pytest.mark.server, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[1]


def _setup(root: Path, url: str) -> None:
    examples, fewshot = load_benchmark(get_spec("imdb"), source="sample", max_samples=8)
    atomic.write_parquet(root / "data" / "benchmarks" / "imdb.parquet", examples)
    atomic.write_parquet(root / "data" / "benchmarks" / "imdb.fewshot.parquet", fewshot)
    words = word_list("english", "wordfreq", raw_dir=root / "none", top_n=10, min_length=2)
    atomic.write_parquet(root / "data" / "words" / "english.parquet", words)
    params = yaml.safe_load(TEST_PARAMS.read_text())
    params["benchmarks"]["suites"] = {"imdb": "english"}
    params["models"] = {"canned": _cfg(url, name="canned", max_concurrency=2)}
    params["perturb"]["draws"] = 2
    (root / "params.yaml").write_text(yaml.safe_dump(params))


def _run(root: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    proc = subprocess.run([sys.executable, "-m", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_two_draws_are_generated_scored_and_counted_once_per_example(tmp_path: Path) -> None:
    with CannedServer(tmp_path / "log.jsonl") as server:
        _setup(tmp_path, server.url)
        _run(tmp_path, "stages.perturb", "--name", "imdb")
        _run(tmp_path, "stages.generate", "--no-progress")
        sent = server.requests()
    _run(tmp_path, "stages.score")
    _run(tmp_path, "stages.impact")

    perturbed = pd.read_parquet(tmp_path / "data" / "perturbed" / "imdb.parquet")
    assert set(perturbed["draw"]) == {0, 1}
    outputs = pd.read_parquet(tmp_path / "data" / "outputs" / "canned" / "imdb.parquet")
    key = ["example_id", "word_rank", "draw"]
    assert len(outputs) == len(perturbed) and not outputs.duplicated(key).any()
    assert outputs[key].values.tolist() == perturbed[key].values.tolist()
    # every row generated once; a prompt two rows share (two draws, same text) is sent once
    assert len(sent) == outputs["prompt"].nunique() <= len(outputs)
    # what perturb stated travels with the outputs, values and types unchanged
    carried = ["draw", "language", "n_typos", "n_edited_chars", "op", "script", "fields"]
    pd.testing.assert_frame_equal(outputs[carried], perturbed[carried])
    out_dir = tmp_path / "data" / "outputs" / "canned"
    edits = pq.read_table(out_dir / "imdb.parquet", columns=["perturbations"])
    assert edits.equals(
        pq.read_table(tmp_path / "data" / "perturbed" / "imdb.parquet", columns=["perturbations"])
    )
    typos = outputs.loc[outputs["word_rank"] != 0]
    assert typos["op"].notna().all() and (typos["n_typos"] == typos["perturbed_occurrences"]).all()
    assert (typos["n_edited_chars"] >= typos["n_typos"]).all()
    summary = json.loads((tmp_path / "data" / "perturbed" / "imdb.summary.json").read_text())
    assert json.loads((out_dir / "perturbation.json").read_text()) == {"imdb": summary}

    scored = pd.read_parquet(tmp_path / "data" / "scored" / "canned" / "imdb.parquet")
    assert (
        len(scored) == len(outputs) and scored[key].values.tolist() == outputs[key].values.tolist()
    )

    words = pd.read_parquet(tmp_path / "data" / "impact" / "words.parquet")
    pooled = words.loc[words["scope"] == "pooled"].set_index("rank")
    pert = perturbed.loc[perturbed["word_rank"] != 0]
    examples = pert.groupby("word_rank")["example_id"].nunique()
    pairs = pert.groupby("word_rank").size()
    assert pooled["n"].to_dict() == examples.to_dict()  # examples (clusters), not pairs
    assert (pairs > examples).any()  # some word has two draws of one example
    flips = scored.loc[scored["variant"] != "original"].merge(
        scored.loc[scored["variant"] == "original", ["example_id", "correct"]],
        on="example_id", suffixes=("", "_original"),
    )  # fmt: skip
    changed = flips.loc[flips["correct"] != flips["correct_original"]].groupby("word_rank").size()
    counted = (pooled["n_c2i"] + pooled["n_i2c"]).loc[lambda s: s > 0]
    assert counted.to_dict() == changed.to_dict()  # flips count pairs, one per draw
    summary = json.loads(
        (tmp_path / "data" / "scored" / "canned" / "robustness_details.json").read_text()
    )
    assert summary["imdb"]["n"] == len(pert)
