"""`dvc repro` end to end in a temporary Git + DVC repository with tiny-random on the vLLM CPU
build: one benchmark, ``scoring.perplexity: true`` and a two-rung ladder (tiny-random and its
``revision: seed1`` sibling, labelled) -> perplexity in the metrics, the ladder table, and both
report sections."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

pytestmark = [pytest.mark.vllm, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]


def test_dvc_repro_writes_perplexity_and_the_ladder_into_metrics_and_report(project) -> None:
    root = project.root
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["benchmarks"]["suites"] = {"gsm8k": "english"}
    params["benchmarks"]["max_samples"] = 6
    params["words"]["top_n"] = 5
    params["model_defaults"].update(max_model_len=1024, gpu_memory_utilization=0.1)
    params["models"] = {
        "tiny-random": {"name": "tiny-random", "family": "tiny", "size": "2M", "quantisation": "none"},
        "tiny-seed1": {"name": "tiny-random", "revision": "seed1", "family": "tiny", "size": "2M",
                       "quantisation": "q-test"},
    }  # fmt: skip
    params["scoring"]["perplexity"] = True
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    project.commit("perplexity and a ladder")

    project.dvc("repro")
    for slug in ("tiny-random", "tiny-seed1"):
        figures = json.loads((root / "metrics" / slug / "perplexity.json").read_text())
        gsm8k = figures["benchmarks"]["gsm8k"]
        assert gsm8k["n"] > 0 and gsm8k["n_unscored"] == 0
        assert gsm8k["ci_low"] <= gsm8k["ratio"] <= gsm8k["ci_high"]
        assert figures["pooled"]["english"]["ratio"] == gsm8k["ratio"]
        scored = pd.read_parquet(root / "data" / "scored" / slug / "gsm8k.parquet")
        assert scored["ppl_logprob"].notna().all() and (scored["ppl_tokens"] > 0).all()
    # different random weights, different log-likelihoods of the same text
    a = pd.read_parquet(root / "data" / "outputs" / "tiny-random" / "gsm8k.parquet")
    b = pd.read_parquet(root / "data" / "outputs" / "tiny-seed1" / "gsm8k.parquet")
    assert a["ppl_tokens"].tolist() == b["ppl_tokens"].tolist()
    assert a["ppl_logprob"].tolist() != b["ppl_logprob"].tolist()

    ladder = pd.read_parquet(root / "data" / "impact" / "ladder.parquet")
    row = ladder.loc[(ladder["model"] == "tiny-seed1") & (ladder["scope"] == "pooled")].iloc[0]
    assert row["reference"] == "tiny-random" and row["loss_rank"] == 1
    assert row["diff_n"] == row["n"]  # the same typo'd prompts in both models
    report = (root / "reports" / "report.html").read_text()
    assert 'id="ladder"' in report and 'id="perplexity"' in report
    assert "tiny-seed1" in report

    again = project.dvc("repro")
    assert "Data and pipelines are up to date" in again.stdout
