"""The annotation quality gate: the verdict in the quality run, and `evalpipe quality check`'s exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evalpipe.annotation.gate import CHECKS, quality_gate
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.schema import (
    AXES,
    Annotation,
    annotation_to_dict,
    read_annotations,
    read_tasks,
    sample_tasks_path,
)
from tests.conftest import TEST_PARAMS

REPO = Path(__file__).resolve().parents[1]
BATCHES = sorted((REPO / "data" / "samples" / "annotations").glob("batch_*.jsonl"))


def random_batch(annotator: str, seed: int) -> list[Annotation]:
    """A batch on the sample tasks whose scores ignore the text: agreement near chance."""
    rng = np.random.default_rng(seed)
    return [
        Annotation(
            t.id,
            annotator,
            "2025-02-03T10:00:00Z",
            {a: int(rng.choice([1, 1, 2, 3, 4, 5])) for a in AXES},
            dict.fromkeys(AXES, 0.9),
        )
        for t in read_tasks(sample_tasks_path())
    ]


def write_batch(path: Path, records: list[Annotation], extra_lines: tuple[str, ...] = ()) -> Path:
    lines = [json.dumps(annotation_to_dict(a), ensure_ascii=False) for a in records]
    path.write_text("\n".join([*lines, *extra_lines]) + "\n", encoding="utf-8")
    return path


# The bundled tasks the sample batches rate: a checkout where `dvc repro` has written
# data/annotation_tasks/tasks.jsonl (other tasks) must give the same verdicts.
SAMPLE_TASKS = REPO / "src" / "evalpipe" / "annotation" / "samples" / "tasks.jsonl"


def run_check(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    if "--tasks" not in args:
        args = (*args, "--tasks", str(SAMPLE_TASKS))
    if "--params" not in args:
        args = (*args, "--params", str(TEST_PARAMS))
    return subprocess.run(
        [sys.executable, "-m", "evalpipe.cli", "quality", "check", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_bundled_batches_pass_and_the_metrics_say_so():
    result = run_quality(
        read_annotations(BATCHES),
        read_tasks(sample_tasks_path()),
        QualitySettings(bootstrap_samples=100),
    )
    assert result.gate["status"] == "pass" and result.gate["failures"] == []
    assert result.metrics["gate"] == {
        "status": "pass",
        "failures": 0,
        **dict.fromkeys(CHECKS, "pass"),
    }


def test_a_batch_below_threshold_fails_every_axis_with_its_interval():
    tasks = read_tasks(sample_tasks_path())
    noisy = random_batch("r1", 1) + random_batch("r2", 2) + random_batch("r3", 3)
    result = run_quality(noisy, tasks, QualitySettings(bootstrap_samples=200))
    gate = result.gate
    assert gate["status"] == "fail"
    kappa_failures = [f for f in gate["failures"] if f["check"] == "kappa"]
    assert {f["axis"] for f in kappa_failures} == set(AXES)
    for f in kappa_failures:
        assert f["kappa"] < 0.6
        lo, hi = f["kappa_ci"]
        assert lo <= f["kappa"] <= hi
        assert f"(95% CI {lo:.3f} to {hi:.3f}) below min_kappa 0.60" in f["message"]
    assert result.metrics["gate"]["kappa"] == "fail"
    assert result.metrics["gate"]["failures"] == gate["n_failures"]


def test_every_check_reports_its_own_failures():
    tasks = read_tasks(sample_tasks_path())
    humans = read_annotations(BATCHES)
    report = run_quality(humans, tasks, QualitySettings(bootstrap_samples=0))
    gate = quality_gate(
        validation_problems=[
            'b.jsonl:3: field "timestamp": missing (expected a non-empty string)',
            'b.jsonl:4: field "annotations.social": score 7 outside 1-5',
            'b.jsonl:5: field "annotations.tone": unknown axis (expected one of ...)',
        ],
        humans=humans,
        tasks=tasks,
        kappa_report=report.kappa_report,
        outlier_report={
            "consistency": [
                {"id": "sample_023", "annotator_id": "illustrative_003", "rules": ["x"]},
                {"id": "sample_001", "annotator_id": "llm:judge", "rules": ["x"]},  # not human
            ],
            "annotators": [
                {
                    "annotator_id": "illustrative_002",
                    "kind": "bias",
                    "axis": "self",
                    "value": 0.8,
                    "n": 30,
                }
            ],
        },
        min_kappa=0.95,
        overlap=3,
        max_consistency_rate=0.0,
    )
    by_check = {c: [f for f in gate["failures"] if f["check"] == c] for c in CHECKS}
    assert len(by_check["format"]) == 2  # missing field, unknown axis
    assert len(by_check["range"]) == 1
    assert {f["axis"] for f in by_check["kappa"]} == {"social", "mechanical", "self"}  # < 0.95
    (short,) = by_check["completeness"]
    assert short["ids"] == ["sample_019", "sample_024"]  # batch_003 skips two tasks
    assert "2 of 30 tasks have fewer than 3 human ratings" in short["message"]
    (cons,) = by_check["consistency"]
    assert cons["rate"] == round(1 / 88, 4)
    assert by_check["outliers"][0]["annotator_id"] == "illustrative_002"
    assert [f["check"] for f in gate["failures"]] == sorted(
        (f["check"] for f in gate["failures"]), key=CHECKS.index
    )
    assert all(not gate["checks"][c]["passed"] for c in CHECKS)


def test_check_exits_nonzero_on_a_batch_below_threshold_and_lists_failures(tmp_path):
    batch = write_batch(
        tmp_path / "noisy.jsonl",
        random_batch("r1", 1) + random_batch("r2", 2) + random_batch("r3", 3),
    )
    out = tmp_path / "gate.json"
    proc = run_check("--input", str(batch), "--output", str(out))
    assert proc.returncode == 1, proc.stderr
    for axis in AXES:
        assert f"FAIL [kappa] {axis}: weighted kappa " in proc.stdout
    assert "FAIL with" in proc.stdout and "kappa FAIL" in proc.stdout
    verdict = json.loads(out.read_text())
    assert verdict["status"] == "fail" and verdict["checks"]["kappa"]["passed"] is False


def test_check_lists_format_and_range_errors_with_the_other_checks(tmp_path):
    good = write_batch(tmp_path / "a.jsonl", read_annotations(BATCHES[:1]))
    bad_record = annotation_to_dict(read_annotations(BATCHES[1:2])[0])
    bad_record["annotations"]["social"] = 7
    missing = dict(bad_record, id="sample_002")
    del missing["timestamp"]
    bad = write_batch(
        tmp_path / "b.jsonl",
        read_annotations(BATCHES[1:2])[2:],
        (json.dumps(bad_record), json.dumps(missing), "{not json"),
    )
    proc = run_check("--input", str(good), "--input", str(bad))
    assert proc.returncode == 1, proc.stderr
    assert f'FAIL [range] {bad}:29: field "annotations.social": score 7 outside 1-5' in proc.stdout
    assert f'FAIL [format] {bad}:30: field "timestamp": missing' in proc.stdout
    assert f"FAIL [format] {bad}:31: not valid JSON" in proc.stdout
    # The valid records were still checked: two tasks lack a second rating.
    assert "FAIL [completeness] 2 of 30 tasks have fewer than 2 human ratings" in proc.stdout


def test_check_passes_on_the_bundled_batches_and_bad_usage_is_exit_2(tmp_path):
    proc = run_check()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS with 0 failure(s)" in proc.stdout
    missing = run_check("--tasks", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and "task file not found" in missing.stderr


@pytest.mark.parametrize("rate, expected", [(0.0, "fail"), (0.5, "pass")])
def test_consistency_threshold_is_a_param(rate, expected):
    result = run_quality(
        read_annotations(BATCHES),
        read_tasks(sample_tasks_path()),
        QualitySettings(bootstrap_samples=0, max_consistency_rate=rate),
    )
    assert result.metrics["gate"]["consistency"] == expected
