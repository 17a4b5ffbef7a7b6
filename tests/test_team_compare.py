"""Comparing runs as a team, end to end: two branches with different perturbation params, and a
queued two-point sweep (`dvc exp run --queue` + `dvc queue start`) whose experiments wrote
different perturbation summaries. The summary is a plain DVC output (not a metric: it would
widen `dvc metrics show`), read at any revision with `dvc get --rev`."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:
    from conftest import Project

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

TARGET = "perturb@gsm8k"
SUMMARY = "data/perturbed/gsm8k.summary.json"


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _summary_at(project: Project, rev: str) -> dict[str, Any]:
    """The perturbation summary as committed at ``rev`` (from the DVC cache), as a user reads it."""
    out = project.root / "out" / f"{rev}.json"
    project.dvc("get", ".", SUMMARY, "--rev", rev, "-o", str(out), "--force")
    return json.loads(out.read_text())


def _set_params(project: Project, **perturb: float) -> None:
    """Edit the perturb section of params.yaml, as a user would on a branch."""
    path = project.root / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["perturb"].update(perturb)
    path.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))


def test_branches_with_different_typo_params_differ_in_their_perturbation_summary(
    project: Project,
) -> None:
    project.dvc("repro", TARGET)
    project.commit("default typo probabilities")
    noisy = _flatten(json.loads((project.root / SUMMARY).read_text()))

    project.git("checkout", "-q", "-b", "no-typos")
    _set_params(project, replace_prob=0.0, insert_prob=0.0, delete_prob=0.0)
    project.dvc("repro", TARGET)
    project.commit("no typos at all")
    clean = _flatten(json.loads((project.root / SUMMARY).read_text()))
    assert noisy["perturbed_occurrences"] > 0 == clean["perturbed_occurrences"]

    params = json.loads(project.dvc("params", "diff", "main", "no-typos", "--json").stdout)
    assert params["params.yaml"]["perturb.delete_prob"]["new"] == 0.0
    changed = json.loads(project.dvc("diff", "main", "no-typos", "--json").stdout)["modified"]
    assert {SUMMARY, "data/perturbed/gsm8k.parquet"} <= {m["path"] for m in changed}
    # Both revisions' summaries come back from the cache, without checking either branch out.
    assert _flatten(_summary_at(project, "main")) == noisy
    assert _flatten(_summary_at(project, "no-typos")) == clean
    # Not a metric: `dvc metrics show` stays narrow and does not list it.
    assert "perturb" not in project.dvc("metrics", "show", "--all-branches").stdout


def _experiments(project: Project) -> list[dict[str, Any]]:
    shown = json.loads(project.dvc("exp", "show", "--json").stdout)
    return [exp["revs"][0] for commit in shown for exp in commit.get("experiments") or []]


def test_queued_sweep_runs_two_experiments_with_different_summaries(project: Project) -> None:
    # Only Git-tracked files reach the queue's temporary workspaces: build the baseline and
    # commit dvc.lock first, so the experiments reuse the cached words and benchmark.
    project.dvc("repro", TARGET)
    project.commit("baseline")

    project.dvc(
        "exp",
        "run",
        "--queue",
        "-S",
        "perturb.delete_prob=0.0,0.6",
        "-S",
        "perturb.replace_prob=0.0",
        "-S",
        "perturb.insert_prob=0.0",
        TARGET,
    )
    try:
        project.dvc("queue", "start", "-j", "1")
        deadline = time.monotonic() + 420
        while True:
            status = project.dvc("queue", "status").stdout
            if "Queued" not in status and "Running" not in status:
                break
            assert time.monotonic() < deadline, status
            time.sleep(2)
    finally:
        project.dvc("queue", "stop", check=False)
    assert status.count("Success") == 2, status

    results = {}
    for exp in _experiments(project):
        params = exp["data"]["params"]["params.yaml"]["data"]["perturb"]
        summary = _summary_at(project, exp["rev"])
        results[params["delete_prob"]] = summary["perturbed_occurrences"]
    assert set(results) == {0.0, 0.6}, results
    assert results[0.0] == 0 < results[0.6]

    table = project.dvc("exp", "show", "--only-changed", "--md").stdout
    assert "perturb.delete_prob" in table
