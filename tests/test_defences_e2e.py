"""Defences end to end: `dvc repro` in a temporary Git + DVC repository with tiny-random on the
vLLM CPU build, two benchmarks, the spelling and llm:tiny-random correctors and the typo warning:
every arm is generated, paired, measured and shown in the report; the plain arm's headline
metrics are those of the plain rows alone."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

pytestmark = [pytest.mark.vllm, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1800)]
M = "tiny-random"
ARMS = {"typo", "warned", "corrected:spelling", f"corrected:llm:{M}"}


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+", text)


def test_dvc_repro_runs_every_defence_arm_and_reports_it(project) -> None:
    root = project.root
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    params["benchmarks"]["suites"] = {"gsm8k": "english", "jnli": "japanese"}
    params["benchmarks"]["max_samples"] = 3
    params["sampling"]["max_tokens"] = 8
    params["model_defaults"].update(max_model_len=1024, gpu_memory_utilization=0.1)
    params["defences"].update(correctors=["spelling", f"llm:{M}"], warning_prompt=True)
    params["defences"]["llm_max_tokens"] = 32
    (root / "params.yaml").write_text(
        yaml.safe_dump(params, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    project.commit("defences on")

    out = project.dvc("repro", f"score@{M}").stdout
    assert "defend: spelling: restored" in out

    for name, language in (("gsm8k", "english"), ("jnli", "japanese")):
        perturbed = pd.read_parquet(root / "data" / "perturbed" / f"{name}.parquet")
        outputs = pd.read_parquet(root / "data" / "outputs" / M / f"{name}.parquet")
        assert set(outputs["condition"]) == ARMS
        assert (outputs.groupby("condition").size() == len(perturbed)).all()
        warned = outputs.loc[outputs["condition"] == "warned", "prompt"]
        assert warned.str.startswith(params["defences"]["warning_text"][language]).all()

        defended = pd.read_parquet(root / "data" / "defended" / f"{name}.parquet")
        assert set(defended["condition"]) == {"corrected:spelling", f"corrected:llm:{M}"}
        for condition, arm in defended.groupby("condition"):
            assert arm["example_id"].tolist() == perturbed["example_id"].tolist()
            for before, after, edits in zip(
                perturbed["fields"], arm["fields"], arm["corrections"], strict=True
            ):
                old, new = json.loads(before), json.loads(after)
                for field in old:  # whitespace and numbers never change, nor other fields
                    assert re.findall(r"\s+", new[field]) == re.findall(r"\s+", old[field])
                    assert _numbers(new[field]) == _numbers(old[field])
                if language == "japanese" and condition == "corrected:spelling":
                    assert new == old and len(edits) == 0  # unsupported: left unchanged

    figures = json.loads((root / "metrics" / M / "defences.json").read_text())
    assert figures["arms"] == sorted(ARMS - {"typo"})
    english = figures["pooled"]["english"]["corrected:spelling"]
    assert 0.0 <= english["restoration"] <= 1.0 and english["overcorrection"] >= 0.0
    assert english["corrector_tokens_per_prompt"] == 0.0
    llm = figures["pooled"]["japanese"][f"corrected:llm:{M}"]
    assert llm["corrector_tokens_per_prompt"] > 0  # the corrector model's prompt + output tokens
    japanese = figures["pooled"]["japanese"]["corrected:spelling"]
    assert japanese["unsupported_prompts"] > 0 and japanese["restoration"] == 0.0
    warned = figures["views"]["gsm8k"]["warned"]
    assert warned["extra_prompt_tokens_per_prompt"] > 0 and len(warned["delta_defended_ci"]) == 2

    # the plain arm's headline counts only the plain typo'd rows
    headline = json.loads((root / "metrics" / M / "gsm8k.json").read_text())
    perturbed = pd.read_parquet(root / "data" / "perturbed" / "gsm8k.parquet")
    assert headline["n"] == int((perturbed["variant"] != "original").sum())

    project.dvc("repro", "--single-item", "impact")
    project.run("python", "-m", "stages.report", "build")
    page = (root / "reports" / "report.html").read_text(encoding="utf-8")
    assert 'id="defences"' in page and f"corrected:llm:{M}" in page

    again = project.dvc("repro", f"score@{M}").stdout
    assert "didn't change" in again and "Running stage 'defend'" not in again
