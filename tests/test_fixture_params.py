"""Tests run against their own params (tests/fixtures/params.yaml), never the project's
params.yaml: a user's project edits it (a served model, two suites) and `make test` must pass."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from evalpipe.params import load_params
from tests import conftest
from tests.conftest import REPO, TEST_PARAMS

# REPO / "params.yaml", Path(...).parents[1] / "params.yaml", shutil.copy(REPO / name) over
# a tuple naming params.yaml: every way a test has read the project's own file
READS_PROJECT_PARAMS = re.compile(
    r"""(REPO|repo|parents\[1\])\s*/\s*["']params\.yaml["']|for name in \([^)]*["']params\.yaml["']"""
)


def test_no_test_reads_the_projects_own_params_file():
    offenders = [
        f"{path.name}:{number}"
        for path in sorted(Path(conftest.__file__).parent.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if READS_PROJECT_PARAMS.search(line) and path.name != Path(__file__).name
    ]
    assert offenders == []


def test_a_project_copy_gets_the_test_params_whatever_the_user_put_in_params_yaml(
    tmp_path, monkeypatch
):
    user = tmp_path / "user"
    user.mkdir()
    (user / "params.yaml").write_text(
        "benchmarks: {suites: {gsm8k: english, jnli: japanese}}\n"
        "models: {standin-api: {name: standin, backend: openai, "
        "base_urls: ['http://127.0.0.1:9/v1']}}\n",
        encoding="utf-8",
    )
    (user / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n", encoding="utf-8")
    (user / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    # a user's project holds the sources: the params stage runs from the copy's own stages/
    for sources in ("src", "stages"):
        shutil.copytree(
            REPO / sources, user / sources, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.setattr(conftest, "REPO", user)
    copy = conftest.copy_project(tmp_path / "copy")
    assert (copy / "params.yaml").read_bytes() == TEST_PARAMS.read_bytes()
    assert not (copy / "dvc.lock").exists()
    params = load_params(copy / "params.yaml")
    assert "tiny-random" in params["models"] and "mmlu" in params["benchmarks"]["suites"]
