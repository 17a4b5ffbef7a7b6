"""The benchmarks stage end to end: `dvc repro benchmarks@...` in a temporary Git + DVC copy,
byte-identical re-runs, `--list`, a local law-QA dataset through the stage, the hub source via
EVALPIPE_HUB_DIR, and bad input leaving nothing behind."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from evalpipe.benchmarks import EXAMPLE_COLUMNS, REGISTRY, sample_files
from evalpipe.benchmarks.loading import samples_root
from evalpipe.benchmarks.readers import load_files

# the hub-directory writer lives with the unit tests; tests/ is not a package, so load it by path
_spec = importlib.util.spec_from_file_location(
    "_benchmark_unit_tests", Path(__file__).with_name("test_benchmarks.py")
)
_unit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_unit)
_hub_repo, _jsonl = _unit._hub_repo, _unit._jsonl

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_dvc_repro_builds_benchmarks_offline_and_byte_identically(project) -> None:
    project.dvc("repro", "--glob", "benchmarks@*")
    data = project.root / "data" / "benchmarks"
    params = yaml.safe_load((project.root / "params.yaml").read_text(encoding="utf-8"))
    suites = params["benchmarks"]["suites"]
    assert {"lawqa", "ja_sentiment"} <= set(suites) <= set(REGISTRY)
    for name in suites:
        assert len(pd.read_parquet(data / f"{name}.parquet")) == 20
    digests = {}
    for name in ("gsm8k", "jcommonsenseqa"):
        examples = pd.read_parquet(data / f"{name}.parquet")
        fewshot = pd.read_parquet(data / f"{name}.fewshot.parquet")
        assert list(examples.columns) == EXAMPLE_COLUMNS == list(fewshot.columns)
        assert len(examples) == 20 and len(fewshot) > 0
        assert not set(examples["example_id"]) & set(fewshot["example_id"])
        digests[name] = (
            _digest(data / f"{name}.parquet"),
            _digest(data / f"{name}.fewshot.parquet"),
        )
    jcqa = pd.read_parquet(data / "jcommonsenseqa.parquet")
    assert set(jcqa["answer"]) <= {"0", "1", "2", "3", "4"} and jcqa["choices"].map(len).eq(5).all()
    status = project.dvc("status", "benchmarks@gsm8k", "benchmarks@jcommonsenseqa")
    assert "changed" not in status.stdout
    project.dvc("repro", "-f", "benchmarks@gsm8k", "benchmarks@jcommonsenseqa")
    for name, digest in digests.items():
        assert (
            _digest(data / f"{name}.parquet"),
            _digest(data / f"{name}.fewshot.parquet"),
        ) == digest


def test_list_shows_every_benchmark_with_type_language_source_and_size(project) -> None:
    out = project.run("python", "-m", "stages.benchmarks", "--list").stdout
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    params = yaml.safe_load((project.root / "params.yaml").read_text(encoding="utf-8"))
    suites = params["benchmarks"]["suites"]
    for name, spec in REGISTRY.items():
        if spec.sample.folder:  # the publisher's own file, read by its reader
            folder = samples_root() / spec.sample.folder
            size = len(load_files(spec, folder, reader=spec.files.reader).examples)
        else:
            size = len(_jsonl(sample_files(name)[0]))
        listed = "yes" if name in suites else "no"
        assert lines[name][3:] == ["sample", str(size), listed], lines[name]
    assert lines["jcommonsenseqa"][1:3] == ["mc", "japanese"]
    assert lines["my_mc"][1:] == ["mc", "japanese", "local", "8", "no"]


def _add_suite(project, name: str, language: str) -> None:
    params = project.root / "params.yaml"
    text = params.read_text(encoding="utf-8")
    anchor = "    jcommonsenseqa: japanese\n"
    assert anchor in text
    params.write_text(text.replace(anchor, f"{anchor}    {name}: {language}\n", 1), "utf-8")


def test_local_example_runs_through_dvc_when_added_to_the_suites(project) -> None:
    _add_suite(project, "my_mc", "japanese")
    out = project.dvc("repro", "benchmarks@my_mc").stdout
    assert "benchmarks@my_mc: 8 examples" in out
    examples = pd.read_parquet(project.root / "data" / "benchmarks" / "my_mc.parquet")
    assert list(examples["example_id"])[:2] == ["my_mc/q001", "my_mc/q002"]
    assert list(examples["answer"]) == ["a", "b", "b", "c", "b", "d", "b", "b"]
    assert all(list(p) == ["問題"] for p in examples["perturbable"])
    assert json.loads(examples.iloc[0]["fields"]) == {"問題": "民法上、成年に達する年齢は何歳か。"}
    meta = pq.read_schema(project.root / "data" / "benchmarks" / "my_mc.parquet").metadata
    assert meta[b"evalpipe.dataset_version"] == b"my_mc v1"


MINI_SPEC = """\
include: [english, local]
description: A two-question yes/no set (the worked example of docs/benchmarks.md).
task_type: classification
version: mini v1
labels: ["yes", "no"]
sources:
  files: {reader: json, test: [test.jsonl]}
mapping:
  fields: {Question: q}
  answer: a
answer: {type: label}
"""


def test_adding_a_benchmark_is_one_spec_file_and_one_params_line(project) -> None:
    """No Python and no dvc.yaml edit: the stages and generate's inputs follow the params line."""
    folder = project.root / "data" / "raw" / "benchmarks" / "mini"
    folder.mkdir()
    (folder / "spec.yaml").write_text(MINI_SPEC, encoding="utf-8")
    rows = [{"q": "Is the sky blue on a clear day?", "a": "yes"}, {"q": "Is ice hot?", "a": "no"}]
    (folder / "test.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    assert "mini" not in project.dvc("status").stdout
    _add_suite(project, "mini", "english")
    project.commit("add mini")
    status = project.dvc("status").stdout
    assert "benchmarks@mini:" in status and "perturb@mini:" in status
    dag = project.dvc("dag", "generate").stdout
    assert "perturb@mini" in dag and "benchmarks@mini" in dag
    out = project.dvc("repro", "perturb@mini").stdout
    assert "benchmarks@mini: 2 examples" in out and "perturb@mini (uniform):" in out
    assert "changed" not in project.dvc("status", "perturb@mini").stdout
    # generate's inputs now include the new set (a directory dependency on data/perturbed)
    assert "data/perturbed" in project.dvc("status", "generate").stdout
    # removing the params line takes the benchmark out of the pipeline again
    params = project.root / "params.yaml"
    params.write_text(params.read_text("utf-8").replace("    mini: english\n", ""), "utf-8")
    assert "mini" not in project.dvc("status").stdout


def test_suites_must_match_the_specs_language(project) -> None:
    _add_suite(project, "my_mc", "english")
    proc = project.run("python", "-m", "stages.generate", check=False)
    assert proc.returncode == 2
    assert "benchmarks.suites.my_mc: english, but its spec" in proc.stderr


def test_stage_rejects_a_bad_local_file_naming_the_row_and_writes_nothing(project) -> None:
    raw = project.root / "data" / "raw" / "benchmarks"
    bad = raw / "bad"
    bad.mkdir()
    (bad / "spec.yaml").write_text((raw / "my_mc" / "spec.yaml").read_text("utf-8"), "utf-8")
    rows = _jsonl(raw / "my_mc" / "test.jsonl")
    rows[4]["answer"] = "e"
    (bad / "test.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    proc = project.run("python", "-m", "stages.benchmarks", "--name", "bad", check=False)
    assert proc.returncode == 2
    assert "test.jsonl, row 5: field \"answer\": answer 'e' is not one of the labels" in proc.stderr
    assert not (project.root / "data" / "benchmarks" / "bad.parquet").exists()
    proc = project.run("python", "-m", "stages.benchmarks", "--name", "gsm9k", check=False)
    assert proc.returncode == 2 and "known benchmarks: gsm8k, bbh, mmlu" in proc.stderr


def test_switching_to_the_hub_source_needs_no_code_change(project, tmp_path) -> None:
    test, train = (_jsonl(p) for p in sample_files("gsm8k"))
    _hub_repo(tmp_path, "openai/gsm8k", {"main": {"test": test + test[:5], "train": train}})
    params = yaml.safe_load((project.root / "params.yaml").read_text(encoding="utf-8"))
    params["benchmarks"]["source"] = "hub"
    params["benchmarks"]["max_samples"] = 10
    (project.root / "params.yaml").write_text(
        yaml.safe_dump(params, allow_unicode=True), encoding="utf-8"
    )
    env = dict(project.env, EVALPIPE_HUB_DIR=str(tmp_path))
    out = project.run("python", "-m", "stages.benchmarks", "--name", "gsm8k", env=env).stdout
    assert "benchmarks@gsm8k: 10 examples + 4 few-shot" in out and "from hub" in out
    examples = pd.read_parquet(project.root / "data" / "benchmarks" / "gsm8k.parquet")
    assert examples["example_id"].str.startswith("gsm8k/test/").all() and len(examples) == 10
