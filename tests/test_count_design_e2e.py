"""`dvc exp run -S perturb.design=count` end to end in a real Git + DVC copy of the project, with a
planted model (the canned OpenAI-compatible server on 127.0.0.1 in oracle mode: right on every
clean prompt, wrong once a prompt carries as many typo'd words as the example tolerates), so the
dose-response table and the report must show accuracy falling with k, by the amounts the planted
rule gives."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from tests.conftest import Project, copy_project, project_env
from tests.inference_servers import CannedServer, oracle_answer
from tests.test_inference_openai import _cfg

pytestmark = [pytest.mark.server, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1200)]
SUITES = {"gsm8k": "english", "jnli": "japanese"}
SAMPLES = 12


def _oracle() -> list[list[str]]:
    """``[clean prompt, right answer, wrong answer]`` of every example the pipeline will run."""
    entries = []
    for name in SUITES:
        spec = get_spec(name)
        rows, fewshot = load_benchmark(spec, source="sample", max_samples=SAMPLES)
        prompts = build_prompts(spec, rows, fewshot, style="zero_shot", n_shots=3)
        for prompt, row in zip(prompts, rows.to_dict("records"), strict=True):
            if name == "gsm8k":
                entries.append([prompt, f"#### {row['answer']}", "#### -1"])
            else:
                wrong = next(label for label in row["labels"] if label != row["answer"])
                entries.append([prompt, row["answer"], wrong])
    return entries


def _project(root: Path, url: str) -> Project:
    copy_project(root)
    proj = Project(root)
    proj.env = project_env(EVALPIPE_TEST_KEY="planted")
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    params["benchmarks"]["suites"] = SUITES
    params["benchmarks"]["max_samples"] = SAMPLES
    params["words"]["top_n"] = 3
    params["models"] = {"planted": _cfg(url, name="planted", max_concurrency=2)}
    (root / "params.yaml").write_text(
        yaml.safe_dump(params, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    proj.git("init", "-q", "-b", "main")
    proj.git("config", "user.email", "test@example.invalid")
    proj.git("config", "user.name", "evalpipe tests")
    if not (root / ".dvc").exists():
        proj.dvc("init", "-q")
    proj.dvc("config", "core.analytics", "false")
    proj.commit("initial")
    return proj


def test_dvc_exp_run_count_design_shows_accuracy_falling_with_k(tmp_path: Path) -> None:
    oracle = _oracle()
    (tmp_path / "oracle.json").write_text(json.dumps(oracle, ensure_ascii=False), "utf-8")
    root = tmp_path / "repo"
    with CannedServer(tmp_path / "log.jsonl", oracle=tmp_path / "oracle.json") as server:
        proj = _project(root, server.url)
        proj.dvc("exp", "run", "-S", "perturb.design=count", "impact", timeout=1100)
    proj.run("python", "-m", "stages.report", "build")

    perturbed = pd.read_parquet(root / "data" / "perturbed" / "gsm8k.parquet")
    assert set(perturbed["variant"]) == {"original", "k=1", "k=2", "k=4", "k=8"}
    summary = json.loads((root / "data" / "perturbed" / "jnli.summary.json").read_text("utf-8"))
    assert summary["design"] == "count" and summary["targeting"]["share"] == 1.0
    assert summary["shortfall"]["1"] == 0

    # What the planted model answered, replayed on the prompts the pipeline sent.
    right = {clean: r for clean, r, _ in oracle}
    expected = {}
    for name in SUITES:
        out = pd.read_parquet(root / "data" / "outputs" / "planted" / f"{name}.parquet")
        clean = out.loc[out["variant"] == "original"].set_index("example_id")["prompt"]
        typo = out.loc[out["variant"] != "original"]
        assert (typo["n_typos"] == typo["word_rank"]).all()
        hits = [
            oracle_answer(p, oracle) == right[clean[e]]
            for p, e in zip(typo["prompt"], typo["example_id"], strict=True)
        ]
        for k, acc in typo.assign(hit=hits).groupby("word_rank")["hit"].mean().items():
            expected[(name, int(k))] = acc

    dose = pd.read_parquet(root / "data" / "impact" / "dose.parquet")
    per_benchmark = dose.loc[dose["scope"] == "benchmark"]
    for row in per_benchmark.loc[per_benchmark["n_typos"] > 0].itertuples():
        assert row.accuracy_perturbed == pytest.approx(expected[(row.benchmark, row.n_typos)],
                                                       abs=1e-4)  # fmt: skip
        assert row.accuracy_original == 1.0 and row.ci_low <= row.delta <= row.ci_high
    pooled = dose.loc[dose["scope"] == "pooled"]
    assert set(pooled["language"]) == {"english", "japanese"}
    for _, curve in pooled.groupby("language"):
        acc = curve.sort_values("n_typos")["accuracy_perturbed"].tolist()
        assert curve.sort_values("n_typos")["n_typos"].tolist() == [0, 1, 2, 4, 8]
        assert all(a >= b for a, b in itertools.pairwise(acc)) and acc[-1] < acc[0]
        assert curve["ci_high"].dropna().iloc[-1] < 0  # eight typos: a drop the interval shows

    words = pd.read_parquet(root / "data" / "impact" / "words.parquet")
    assert words.empty and {"word", "delta", "ci_low"} <= set(words.columns)
    page = (root / "reports" / "report.html").read_text("utf-8")
    assert 'id="dose"' in page and 'id="transitions"' in page and 'id="dose-shortfall"' in page
    eight = pooled.loc[(pooled["language"] == "english") & (pooled["n_typos"] == 8)].iloc[0]
    assert f"{eight['accuracy_perturbed']:.3f}" in page
    shown = subprocess.run(["dvc", "exp", "show", "--no-pager", "--csv"], cwd=root,
                           env=proj.env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "count" in shown  # the experiment records perturb.design=count
