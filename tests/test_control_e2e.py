"""The matched-control arm and the token counts end to end: `dvc repro impact` in a temporary Git
+ DVC copy of the project with tiny-random on one benchmark, then the report built from it; and
the perturb stage's default output untouched by the option."""

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
from evalpipe.perturb import Probabilities, perturb_frame
from evalpipe.words import word_list
from tests.conftest import TEST_PARAMS

REPO = Path(__file__).resolve().parents[1]
M = "tiny-random"
KEY = ["view", "example_id", "variant", "word_rank", "draw"]


def _params(root: Path, **perturb) -> None:
    path = root / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["benchmarks"]["suites"] = {"gsm8k": "english"}
    params["benchmarks"]["max_samples"] = 8
    params["perturb"].update(perturb)
    params["model_defaults"].update(max_model_len=1024, gpu_memory_utilization=0.1)
    path.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _run(root: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    proc = subprocess.run([sys.executable, "-m", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_the_perturb_stage_writes_the_same_bytes_without_the_option_and_a_control_arm_with_it(
    tmp_path: Path,
) -> None:
    examples, _ = load_benchmark(get_spec("gsm8k"), source="sample", max_samples=6)
    atomic.write_parquet(tmp_path / "data" / "benchmarks" / "gsm8k.parquet", examples)
    words = word_list("english", "wordfreq", raw_dir=tmp_path / "none", top_n=10, min_length=2)
    atomic.write_parquet(tmp_path / "data" / "words" / "english.parquet", words)
    (tmp_path / "params.yaml").write_text(TEST_PARAMS.read_text(encoding="utf-8"))
    _params(tmp_path)
    _run(tmp_path, "stages.perturb", "--name", "gsm8k")
    out = tmp_path / "data" / "perturbed" / "gsm8k.parquet"
    plain = out.read_bytes()
    expected = perturb_frame(
        examples, words, probabilities=Probabilities(0.2, 0.2, 0.2), seed=42
    ).table
    atomic.write_parquet(tmp_path / "expected.parquet", expected)
    assert plain == (tmp_path / "expected.parquet").read_bytes()
    assert "control_match" not in pq.read_schema(out).names

    _params(tmp_path, control=True)
    _run(tmp_path, "stages.perturb", "--name", "gsm8k")
    table = pd.read_parquet(out)
    assert set(table["condition"]) == {"typo", "control"}
    typo = table.loc[table["condition"] == "typo"].drop(columns=["control_match"])
    pd.testing.assert_frame_equal(typo.reset_index(drop=True), expected.to_pandas())
    summary = json.loads((tmp_path / "data" / "perturbed" / "gsm8k.summary.json").read_text())
    control = table.loc[(table["condition"] == "control") & (table["variant"] != "original")]
    assert summary["control"]["matched"] == len(control) > 0
    assert summary["control"]["rows"] == int((typo["variant"] != "original").sum())


@pytest.mark.vllm
@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_control_arm_travels_through_generate_and_score_into_the_word_table(project) -> None:
    root = project.root
    _params(root, control=True)
    project.commit("matched control on gsm8k")
    project.dvc("repro", "impact")

    outputs = pd.read_parquet(root / "data" / "outputs" / M / "gsm8k.parquet")
    assert set(outputs["condition"]) == {"typo", "control"}
    edited = outputs.loc[outputs["variant"] != "original"]
    # tiny-random's tokenizer counted every edited word, per record and per row
    assert edited["tokens_before"].notna().all() and (edited["tokens_before"] >= 1).all()
    for row in edited.itertuples():
        assert len(row.edit_tokens_before) == len(row.perturbations) == row.n_typos
        assert sum(row.edit_tokens_after) == row.tokens_after
    generation = json.loads((root / "data" / "outputs" / M / "generation.json").read_text())
    tokens = generation["benchmarks"]["gsm8k"]["word_tokens"]
    assert tokens["counted"] == tokens["edits"] == int(edited["n_typos"].sum())

    pairs = pd.read_parquet(root / "data" / "scored" / M / "pairs.parquet")
    typo = pairs.loc[pairs["condition"] == "typo"]
    control = pairs.loc[pairs["condition"] == "control"]
    assert len(control) > 0 and typo["tokens_before"].notna().all()
    # each control pairs with its target's typo row by key, and has as many edits
    joined = control.merge(typo, on=KEY, suffixes=("_c", "_t"), validate="one_to_one")
    assert len(joined) == len(control)
    assert (joined["n_typos_c"] == joined["n_typos_t"]).all()
    # the control's clean answer is the clean prompt's answer
    assert (joined["correct_original_c"] == joined["correct_original_t"]).all()

    words = pd.read_parquet(root / "data" / "impact" / "words.parquet")
    pooled = words.loc[(words["scope"] == "pooled") & (words["control_n"] > 0)]
    assert len(pooled)
    for row in pooled.itertuples():
        mine = joined.loc[joined["word_rank"] == row.rank]
        assert row.harm_beyond_control == pytest.approx(
            mine["correct_perturbed_c"].mean() - mine["correct_perturbed_t"].mean(), abs=1e-9
        )
        assert row.control_unmatched == int((typo["word_rank"] == row.rank).sum()) - len(mine)
        assert row.harm_ci_low <= row.harm_beyond_control <= row.harm_ci_high
    # the typo arm's figures are those of the typo pairs alone
    assert (words["n"] > 0).all()
    split = pd.read_parquet(root / "data" / "impact" / "token_split.parquet")
    assert split.loc[split["scope"] == "pooled", "n"].sum() == len(typo)

    _run(root, "stages.report", "build", "--no-commit")
    html = (root / "reports" / "report.html").read_text(encoding="utf-8")
    assert "Harm beyond a matched random word" in html
    assert "Accuracy by tokenizer split" in html
    assert "harm beyond matched control" in html
