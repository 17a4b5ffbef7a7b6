"""The params stage: params.yaml may give any section in part (DVC reads the keys from the
completed data/params.yaml), and a benchmark removed from the suites leaves no file behind."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from evalpipe.params import load_params, resolved_text
from evalpipe.paths import ProjectPaths
from tests.conftest import REPO, TEST_PARAMS, project_env


def _write(path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def test_the_completed_file_holds_every_default_the_partial_file_leaves_out(tmp_path):
    path = tmp_path / "params.yaml"
    _write(path, "defences: {correctors: [spelling], warning_prompt: true}\n")
    resolved = yaml.safe_load(resolved_text(load_params(path)))
    assert resolved["defences"]["correctors"] == ["spelling"]
    assert resolved["defences"]["warning_prompt"] is True
    assert resolved["defences"]["llm_max_tokens"] == 512  # the schema's default
    assert resolved["perturb"]["delete_prob"] == 0.2 and resolved["seed"] == 42


def test_stale_suite_files_are_only_those_of_undeclared_benchmarks(tmp_path):
    paths = ProjectPaths(tmp_path)
    for name in ("gsm8k", "mmlu"):
        for path in paths.suite_files(name):
            path.parent.mkdir(parents=True, exist_ok=True)
            _write(path, "x")
    _write(tmp_path / "data" / "perturbed" / "notes.txt", "kept")
    stale = paths.stale_suite_files(["gsm8k"])
    assert stale == sorted(paths.suite_files("mmlu"))
    assert paths.stale_suite_files(["gsm8k", "mmlu"]) == []


def test_the_stage_writes_the_completed_file_and_removes_undeclared_suites(tmp_path):
    paths = ProjectPaths(tmp_path)
    for name in ("gsm8k", "imdb"):
        for path in paths.suite_files(name):
            path.parent.mkdir(parents=True, exist_ok=True)
            _write(path, "x")
    _write(tmp_path / "params.yaml", PARTIAL.replace(", imdb: english", ""))
    env = project_env()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env["PYTHONPATH"]])
    proc = subprocess.run(
        [sys.executable, "-m", "stages.params"],
        cwd=tmp_path, env=env, text=True, capture_output=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "removed 4 file(s) of suites no longer declared" in proc.stdout
    assert all(p.is_file() for p in paths.suite_files("gsm8k"))
    assert not any(p.exists() for p in paths.suite_files("imdb"))
    resolved = yaml.safe_load(paths.resolved_params.read_text(encoding="utf-8"))
    assert resolved["defences"]["llm_max_tokens"] == 512
    assert resolved["models"]["tiny-random"]["benchmarks"] == ["gsm8k"]


PARTIAL = """\
benchmarks:
  max_samples: 2
  suites: {gsm8k: english, imdb: english}
defences: {correctors: [spelling], warning_prompt: true}
models:
  tiny-random: {name: tiny-random, benchmarks: [gsm8k]}
"""


@pytest.mark.slow
@pytest.mark.e2e
def test_dvc_repro_runs_a_params_file_that_gives_sections_in_part(project):
    # what a user writes: a partial defences section, no perturb or annotation section at all;
    # defend's DVC params name defences.llm_max_tokens, which the file leaves out
    _write(project.root / "params.yaml", PARTIAL.replace(", imdb: english", ""))
    (project.root / "dvc.lock").unlink(missing_ok=True)
    project.commit("partial params")
    project.dvc("repro", "defend")
    lock = yaml.safe_load((project.root / "dvc.lock").read_text(encoding="utf-8"))
    params = lock["stages"]["defend"]["params"]["data/params.yaml"]
    assert params["defences.llm_max_tokens"] == 512
    assert params["defences.correctors"] == ["spelling"]
    # an edit re-runs the params stage first; a key no stage reads changes nothing downstream
    _write(project.root / "params.yaml", PARTIAL.replace(", imdb: english", "") + "seed: 42\n")
    out = project.dvc("repro", "defend").stdout
    assert "Running stage 'params'" in out and "Running stage 'defend'" not in out


def _defend_params(tmp_path, params: dict, monkeypatch) -> dict:
    """What DVC records for the defend stage's params after the params stage ran on ``params``."""
    from click.testing import CliRunner

    from stages.params import main

    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "params.yaml", yaml.safe_dump(params))
    result = CliRunner().invoke(main, ["--params", "params.yaml"])
    assert result.exit_code == 0, result.output
    resolved = yaml.safe_load(ProjectPaths(tmp_path).resolved_params.read_text(encoding="utf-8"))
    stage = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["defend"]
    (keys,) = (entry["data/params.yaml"] for entry in stage["params"])
    values = {}
    for key in keys:
        value = resolved
        for part in key.split("."):
            value = value[part]
        values[key] = value
    return values


def test_a_served_model_that_corrects_nothing_leaves_the_defend_stage_as_locked(
    tmp_path, monkeypatch
):
    # a user adds a served model and edits model_defaults with defences off: the defend stage
    # (no correctors, same outputs) must not re-run, or a failing generate@<slug> after it
    # leaves dvc.lock modified by defend's new entry
    shipped = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
    served = {
        **shipped,
        "models": {
            **shipped["models"],
            "standin-api": {
                "name": "standin",
                "backend": "openai",
                "base_urls": ["http://127.0.0.1:8000/v1"],
            },
        },
        "model_defaults": {**shipped["model_defaults"], "max_retries": 2},
    }
    before = _defend_params(tmp_path, shipped, monkeypatch)
    assert before["defences.corrector_models"] == {}
    assert _defend_params(tmp_path, served, monkeypatch) == before
    # a corrector that runs the served model does depend on its settings
    correcting = {**served, "defences": {**served["defences"], "correctors": ["llm:standin-api"]}}
    used = _defend_params(tmp_path, correcting, monkeypatch)["defences.corrector_models"]
    assert list(used) == ["standin-api"] and used["standin-api"]["max_retries"] == 2
    edited = {**correcting, "model_defaults": {**served["model_defaults"], "max_retries": 3}}
    assert _defend_params(tmp_path, edited, monkeypatch)["defences.corrector_models"] != used
