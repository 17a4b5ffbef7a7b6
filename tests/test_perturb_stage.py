"""End to end: `dvc repro perturb@...` in a temporary Git + DVC copy of the project."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def _set_param(project, key: str, value) -> None:
    path = project.root / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    section, name = key.split(".")
    params[section][name] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True), encoding="utf-8")


@pytest.mark.slow
def test_dvc_repro_perturbs_two_benchmarks_and_reruns_only_perturb_on_a_param_change(project):
    project.dvc("repro", "perturb@gsm8k", "perturb@jcommonsenseqa")
    root = project.root
    for name, language in (("gsm8k", "english"), ("jcommonsenseqa", "japanese")):
        bench = pd.read_parquet(root / "data" / "benchmarks" / f"{name}.parquet")
        out = pd.read_parquet(root / "data" / "perturbed" / f"{name}.parquet")
        summary = json.loads((root / "data" / "perturbed" / f"{name}.summary.json").read_text())
        assert summary["examples"] == len(bench) == (out["variant"] == "original").sum()
        assert summary["rows"] == len(out) and summary["language"] == language
        assert summary["perturbed_rows"] >= 1, summary
        assert summary["perturbed_occurrences"] <= summary["occurrences"]
        gold = bench.set_index("example_id")
        for row in out.itertuples():
            src = gold.loc[row.example_id]
            before, after = json.loads(src["fields"]), json.loads(row.fields)
            assert set(before) == set(after)
            for field in before:
                if field not in set(src["perturbable"]):
                    assert after[field] == before[field]
            assert row.answer == src["answer"]
            if src["choices"] is not None:  # JCommonsenseQA's five choices never change
                assert list(row.choices) == list(src["choices"])
            for p in row.perturbations:
                assert before[p["field"]][p["start"] : p["end"]] == p["original"]
            # the typo facts perturb states once per row
            assert row.n_typos == row.perturbed_occurrences == len(row.perturbations)
            assert row.n_edited_chars >= row.n_typos
            kinds = {p["op"] for p in row.perturbations}
            expected = None if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"
            assert row.op == expected if expected else pd.isna(row.op)
            assert pd.isna(row.script) == (row.word_rank == 0)
        assert (
            str(
                pq.read_schema(root / "data" / "perturbed" / f"{name}.parquet")
                .field("n_typos")
                .type
            )
            == "int32"
        )
    first = (root / "data" / "perturbed" / "gsm8k.parquet").read_bytes()

    # A forced re-run gives the same bytes.
    project.dvc("repro", "-f", "-s", "perturb@gsm8k")
    assert (root / "data" / "perturbed" / "gsm8k.parquet").read_bytes() == first

    # Changing delete_prob re-runs the perturb stages and nothing upstream of them.
    _set_param(project, "perturb.delete_prob", 0.1)
    proc = project.dvc("repro", "perturb@gsm8k", "perturb@jcommonsenseqa")
    log = proc.stdout + proc.stderr
    assert "Running stage 'perturb@gsm8k'" in log
    assert "Running stage 'perturb@jcommonsenseqa'" in log
    for stage in (
        "words@english",
        "words@japanese",
        "benchmarks@gsm8k",
        "benchmarks@jcommonsenseqa",
    ):
        assert f"Running stage '{stage}'" not in log
    summary = json.loads((root / "data" / "perturbed" / "gsm8k.summary.json").read_text())
    assert summary["delete_prob"] == 0.1
    assert (root / "data" / "perturbed" / "gsm8k.parquet").read_bytes() != first


def test_the_stage_rejects_bad_probabilities_and_writes_nothing(project):
    project.dvc("repro", "perturb@gsm8k")
    out = project.root / "data" / "perturbed" / "gsm8k.parquet"
    before = out.read_bytes()
    _set_param(project, "perturb.replace_prob", 0.7)  # 0.7 + 0.2 + 0.2 > 1
    proc = project.run("python", "-m", "stages.perturb", "--name", "gsm8k", check=False)
    assert proc.returncode == 2
    assert "params.yaml" in proc.stderr and "must be at most 1" in proc.stderr
    assert out.read_bytes() == before
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_dvc_exp_run_with_the_keyboard_model_reruns_only_what_depends_on_perturb(project):
    project.dvc("repro", "perturb@gsm8k", "perturb@jcommonsenseqa")
    project.commit("perturbed with the default (uniform) model")
    root = project.root
    before = (root / "data" / "perturbed" / "gsm8k.parquet").read_bytes()
    proc = project.dvc(
        "exp", "run", "-S", "perturb.model=keyboard", "-S", "perturb.transpose_prob=0.1",
        "-S", "perturb.conversion_prob=0.05", "perturb@gsm8k", "perturb@jcommonsenseqa",
    )  # fmt: skip
    log = proc.stdout + proc.stderr
    assert "Running stage 'perturb@gsm8k'" in log
    assert "Running stage 'perturb@jcommonsenseqa'" in log
    for stage in ("words@english", "words@japanese", "benchmarks@gsm8k"):
        assert f"Running stage '{stage}'" not in log
    assert (root / "data" / "perturbed" / "gsm8k.parquet").read_bytes() != before
    for name in ("gsm8k", "jcommonsenseqa"):
        summary = json.loads((root / "data" / "perturbed" / f"{name}.summary.json").read_text())
        assert summary["model"] == "keyboard" and summary["transpose_prob"] == 0.1
        assert summary["drawn"]["transpose"] > 0  # made, or skipped: one-kana particles
    ja = json.loads((root / "data" / "perturbed" / "jcommonsenseqa.summary.json").read_text())
    assert ja["operations_by_rule"]["replace"].get("romaji", 0) > 0
    assert sum(ja["skipped"]["conversion"].values()) + ja["operations"]["conversion"] > 0
    rows = pd.read_parquet(root / "data" / "perturbed" / "gsm8k.parquet")
    ops = [p for ps in rows["perturbations"] for p in ps]
    assert {p["rule"] for p in ops if p["op"] == "replace"} == {"qwerty"}
