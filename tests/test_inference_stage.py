"""`dvc repro` of the generate stage in a temporary Git + DVC repository, offline, with
tiny-random on the vLLM CPU build (one engine start, in the stage's own process)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from evalpipe import atomic
from evalpipe.benchmarks import get_spec, load_benchmark
from tests.conftest import TEST_PARAMS
from tests.perturbed_sets import write_unperturbed

pytestmark = [pytest.mark.vllm, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

# the declared suites: generate reads exactly these
SUITES = tuple(yaml.safe_load(TEST_PARAMS.read_text("utf-8"))["benchmarks"]["suites"])


M = "tiny-random"  # the default params' model slug


def _write_inputs(root, n: int = 2) -> int:
    """Original-only perturbed sets from the bundled samples (the perturb stage is tested
    elsewhere; generate only needs its columns and summaries)."""
    total = 0
    for name in SUITES:
        examples, fewshot = load_benchmark(get_spec(name), source="sample", max_samples=n)
        total += write_unperturbed(root, name, examples)
        atomic.write_parquet(root / "data" / "benchmarks" / f"{name}.fewshot.parquet", fewshot)
    return total


def test_dvc_repro_generates_offline_and_a_rerun_never_starts_the_engine(project) -> None:
    root = project.root
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["model_defaults"].update(max_model_len=1024, gpu_memory_utilization=0.1)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    total = _write_inputs(root)
    project.commit("small generate run")

    # generate reads data/defended: the defend stage writes it (a no-op without correctors)
    project.dvc("repro", "--single-item", "defend")
    project.dvc("repro", "--single-item", f"generate@{M}")
    metrics = json.loads((root / "data" / "outputs" / M / "generation.json").read_text())
    assert metrics["prompts"] == total and metrics["misses"] == metrics["unique_prompts"]
    assert metrics["engine_started"] is True and metrics["smoke_test_model"] is True
    assert "chance" in metrics["note"] and metrics["model_id"].startswith("tiny-random@")
    imdb = pd.read_parquet(root / "data" / "outputs" / M / "imdb.parquet")
    assert metrics["benchmarks"]["imdb"]["structured_output"] is True
    assert {"prompt_hash", "output", "answer", "labels", "from_cache"} <= set(imdb.columns)
    assert len(list((root / "data" / "cache" / "generations" / M).glob("seg-*.parquet"))) == 1
    # every benchmark's outputs carry draw and what perturb stated; its summaries come along
    for name in SUITES:
        outputs = pd.read_parquet(root / "data" / "outputs" / M / f"{name}.parquet")
        perturbed = pd.read_parquet(root / "data" / "perturbed" / f"{name}.parquet")
        carried = ["draw", "language", "n_typos", "n_edited_chars", "op", "script", "fields"]
        pd.testing.assert_frame_equal(outputs[carried], perturbed[carried])
        assert str(outputs["draw"].dtype) == "int32" and (outputs["draw"] == 0).all()
    summaries = json.loads((root / "data" / "outputs" / M / "perturbation.json").read_text())
    assert summaries == {
        name: json.loads((root / "data" / "perturbed" / f"{name}.summary.json").read_text())
        for name in SUITES
    }

    second = project.dvc("repro", "--single-item", f"generate@{M}")
    assert "didn't change" in second.stdout

    forced = project.dvc("repro", "--single-item", "--force", f"generate@{M}")
    metrics = json.loads((root / "data" / "outputs" / M / "generation.json").read_text())
    assert metrics["engine_started"] is False and metrics["cache_hits"] == metrics["unique_prompts"]
    assert "engine not started" in forced.stdout
    assert pd.read_parquet(root / "data" / "outputs" / M / "imdb.parquet")["from_cache"].all()
    # (no wall-clock bound: on a loaded machine it measures the load; not starting the engine
    # is what makes the rerun fast, and that is asserted above)
