"""End to end: the agreement stage and the kappa/merge commands in a temporary Git+DVC repo."""

from __future__ import annotations

import json
import shutil

import pytest

from evalpipe.annotation.schema import AXES, sample_tasks_path

pytestmark = [pytest.mark.e2e]

SUMMARY = "data/annotations/quality_reports/agreement.json"
OUTPUTS = (
    "data/annotations/consensus.jsonl",
    "data/annotations/for_reannotation.jsonl",
    "data/annotations/quality_reports/kappa_report.json",
    "data/annotations/quality_reports/outlier_report.json",
    "data/annotations/rejected/low_agreement.jsonl",
    "data/annotations/quality_reports/agreement.json",
    *(f"metrics/agreement/{axis}.json" for axis in AXES),
    "plots/agreement.csv",
    "data/annotations/quality_reports/gate.json",
    "data/annotations/quality_reports/agreement_over_time.csv",
    "plots/agreement_weekly.csv",
)


RAW = "data/raw/annotations"
SAMPLES = "data/samples/annotations"


def _campaign_from_samples(project, *names: str) -> None:
    """Put copies of sample batches into the campaign folder, as if a campaign had made them."""
    for name in names or ("batch_001.jsonl", "batch_002.jsonl", "batch_003.jsonl"):
        shutil.copy(project.root / SAMPLES / name, project.root / RAW / name)


def _snapshot(root):
    return {name: (root / name).read_bytes() for name in OUTPUTS}


def _write_batch(project, name: str, annotator: str, source: str, bump: set[str]) -> None:
    """A new annotator's batch: a copy of ``source`` that rates the ``bump`` items one higher."""
    lines = (project.root / SAMPLES / source).read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        row = json.loads(line)
        row["annotator_id"] = annotator
        if row["id"] in bump:
            row["annotations"] = {a: min(5, s + 1) for a, s in row["annotations"].items()}
        out.append(json.dumps(row, ensure_ascii=False))
    (project.root / "data/raw/annotations" / name).write_text(
        "\n".join(out) + "\n", encoding="utf-8"
    )


def test_agreement_stage_runs_on_the_bundled_batches_and_reruns_byte_identically(project):
    assert not list((project.root / RAW).glob("*.jsonl"))  # a campaign starts clean
    proc = project.run("python", "-m", "stages.agreement")
    assert proc.stdout.startswith("agreement: 3 SAMPLE batches, 3 annotators")
    assert "using the SAMPLE batches" in proc.stderr
    assert "bundled sample tasks" in proc.stderr  # no data/annotation_tasks/tasks.jsonl yet
    metrics = json.loads((project.root / SUMMARY).read_text())
    assert set(metrics["confidence_split"]) == set(AXES)
    for axis in AXES:
        assert set(metrics[axis]) == {
            "kappa",
            "alpha",
            "ac2",
            "n",
            "judge_kappa",
            "markers_kappa",
            "judge_macro_f1",
            "judge_mae",
            "markers_macro_f1",
            "markers_mae",
        }
        assert metrics[axis]["kappa"] >= 0.6 and metrics[axis]["n"] == 30
        # The DVC metric: the headline figures of the summary, the same keys per axis, with
        # the sample label, so `dvc metrics show` says on every row that these are samples.
        headline = json.loads((project.root / f"metrics/agreement/{axis}.json").read_text())
        assert headline == {k: metrics[axis][k] for k in ("n", "kappa", "alpha")} | {
            "sample_batches": True
        }
    assert sorted(p.name for p in (project.root / "metrics/agreement").iterdir()) == sorted(
        f"{axis}.json" for axis in AXES
    )
    assert not (project.root / "metrics/agreement.json").exists()
    rejected = (project.root / "data/annotations/rejected/low_agreement.jsonl").read_text()
    assert metrics["rejected_items"] == len(rejected.splitlines()) >= 1
    consensus = (project.root / "data/annotations/consensus.jsonl").read_text().splitlines()
    assert all(json.loads(c)["annotator_id"] == "consensus" for c in consensus)
    header = (project.root / "plots/agreement.csv").read_text().splitlines()[0]
    assert header.startswith("axis,kappa,") and header.endswith(",sample_batches")
    over_time = project.root / "data/annotations/quality_reports/agreement_over_time.csv"
    assert over_time.read_text().splitlines()[0].endswith(",sample_batches")
    assert metrics["gate"]["status"] == "pass"
    assert metrics["data_notes"]["illustrative_humans"] is True
    assert metrics["data_notes"]["sample_batches"] is True
    report = json.loads(
        (project.root / "data/annotations/quality_reports/kappa_report.json").read_text()
    )
    assert report["data_notes"][0].startswith("SAMPLE DATA")
    gate = json.loads((project.root / "data/annotations/quality_reports/gate.json").read_text())
    assert gate["sample_batches"] is True
    check = project.run("python", "-m", "stages.annotation", "check")
    assert check.stdout.startswith("SAMPLE DATA:") and "3 SAMPLE file(s)" in check.stdout
    weekly = (project.root / "plots/agreement_weekly.csv").read_text().splitlines()
    assert weekly[0] == "window_start,n_items,social,avoidant,mechanical,self,sample_batches"
    assert all(w.endswith(",True") for w in weekly[1:])
    assert [w.split(",")[0] for w in weekly[1:]] == ["2025-01-06", "2025-01-13"]
    first = _snapshot(project.root)
    project.run("python", "-m", "stages.agreement")
    assert _snapshot(project.root) == first


def test_a_bad_batch_fails_with_file_and_line_and_leaves_outputs_alone(project):
    project.run("python", "-m", "stages.agreement")
    before = _snapshot(project.root)
    bad = project.root / "data/raw/annotations/batch_009.jsonl"
    bad.write_text(
        '{"id": "sample_001", "annotator_id": "ann_009", "timestamp": "2025-01-01T00:00:00Z", '
        '"annotations": {"social": 7, "avoidant": 1, "mechanical": 1, "self": 1}, '
        '"confidence": {"social": 0.9, "avoidant": 0.9, "mechanical": 0.9, "self": 0.9}}\n'
        '{"id": "no_such_task", "annotator_id": "ann_009", "timestamp": "2025-01-01T00:00:00Z", '
        '"annotations": {"social": 1, "avoidant": 1, "mechanical": 1, "self": 1}, '
        '"confidence": {"social": 0.9, "avoidant": 0.9, "mechanical": 0.9, "self": 0.9}}\n',
        encoding="utf-8",
    )
    proc = project.run("python", "-m", "stages.agreement", check=False)
    assert proc.returncode == 2
    assert 'batch_009.jsonl:1: field "annotations.social": score 7 outside 1-5' in proc.stderr
    assert "batch_009.jsonl:2: field \"id\": 'no_such_task' is not in the task set" in proc.stderr
    assert _snapshot(project.root) == before


def test_kappa_and_merge_commands_reproduce_the_spec_usage(project):
    kappa = project.run(
        "bash",
        "-c",
        "python -m evalpipe.cli quality kappa --input data/samples/annotations/batch_001.jsonl "
        "--input data/samples/annotations/batch_002.jsonl --output out/kappa_report.json",
    )
    assert "2 file(s), 30 items" in kappa.stdout
    report = json.loads((project.root / "out/kappa_report.json").read_text())
    assert report["annotators"] == ["illustrative_001", "illustrative_002"]
    merge = project.run(
        "bash",
        "-c",
        # Unquoted glob: the shell expands it to several files after one --input.
        "python -m evalpipe.cli quality merge --input data/samples/annotations/*.jsonl "
        "--method weighted_average --min_kappa 0.60 --output out/consensus.jsonl",
    )
    assert merge.stdout.startswith("merge: 3 file(s), ")
    merged = (project.root / "out/consensus.jsonl").read_bytes()
    project.run("python", "-m", "stages.agreement")
    assert merged == (project.root / "data/annotations/consensus.jsonl").read_bytes()
    median = project.run(
        "python",
        "-m",
        "evalpipe.cli",
        "quality",
        "merge",
        "--input",
        "data/samples/annotations/*.jsonl",
        "--method",
        "median",
        "--output",
        "out/median.jsonl",
    )
    assert "(median)" in median.stdout
    bad = project.run(
        "python",
        "-m",
        "evalpipe.cli",
        "quality",
        "merge",
        "--input",
        "nothing/*.jsonl",
        "--output",
        "out/x.jsonl",
        check=False,
    )
    assert bad.returncode == 2 and "nothing/*.jsonl: no file matches" in bad.stderr


@pytest.mark.slow
def test_dvc_repro_agreement_and_metrics_diff_after_a_new_batch(project):
    # Upstream stages (generate -> annotation_tasks -> judge) need the model; give the agreement
    # stage their outputs directly: the sample task set, the real marker stage, and a judge file.
    tasks = project.root / "data/annotation_tasks/tasks.jsonl"
    tasks.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(sample_tasks_path(), tasks)
    _campaign_from_samples(project)
    if (project.root / "stages/markers.py").exists():
        project.dvc("repro", "--single-item", "markers")
    else:
        pytest.skip("the markers stage is not in this checkout")
    judge = project.root / "data/annotations/judge.jsonl"
    rows = [
        json.loads(x) for x in (project.root / RAW / "batch_003.jsonl").read_text().splitlines()
    ]
    judge.write_text("".join(json.dumps({**r, "annotator_id": "llm:fixture"}) + "\n" for r in rows))

    project.dvc("repro", "--single-item", "agreement")
    metrics = json.loads((project.root / SUMMARY).read_text())
    assert metrics["judge"] == "llm:fixture"
    assert all(metrics[a]["judge_kappa"] is not None for a in AXES)
    assert all(metrics[a]["markers_kappa"] is not None for a in AXES)
    project.commit("agreement on three batches")

    _write_batch(
        project,
        "batch_004.jsonl",
        "ann_004",
        "batch_002.jsonl",
        bump={f"sample_{i:03d}" for i in range(1, 31, 3)},
    )
    status = project.dvc("status", "agreement")
    assert "data/raw/annotations" in status.stdout
    project.dvc("repro", "--single-item", "agreement")
    assert json.loads((project.root / SUMMARY).read_text())["annotators"] == 4
    # One row per axis file; only headline keys, so a changed kappa shows as `kappa` of its axis
    # (the sample label stays False: it changes only when the samples give way to a campaign).
    diff = json.loads(project.dvc("metrics", "diff", "--json").stdout)
    assert set(diff) <= {f"metrics/agreement/{axis}.json" for axis in AXES}
    assert any(diff[f]["kappa"]["diff"] != 0 for f in diff if "kappa" in diff[f])
    assert all(set(changes) <= {"n", "kappa", "alpha"} for changes in diff.values())
    # (the other stages' metrics files were never written here: DVC lists them as errors)
    shown = json.loads(project.dvc("metrics", "show", "--json", "metrics/agreement").stdout)
    files = shown[""]["data"]
    assert set(files) == {f"metrics/agreement/{axis}.json" for axis in AXES}
    for axis in AXES:
        data = files[f"metrics/agreement/{axis}.json"]["data"]
        assert set(data) == {"n", "kappa", "alpha", "sample_batches"}
        assert data["sample_batches"] is False  # a real campaign's batches
    # The table fits a terminal: path, n, kappa, alpha and the sample label per axis.
    table = project.dvc("metrics", "show", "metrics/agreement").stdout.splitlines()
    assert table[0].split() == ["Path", "alpha", "kappa", "n", "sample_batches"], table
    assert len(table) == 1 + len(AXES) and max(map(len, table)) <= 80, table


def test_a_batch_below_threshold_fails_the_gate_in_metrics_and_check_and_adjudication_merges(
    project,
):
    # A fourth annotator who rates at random on every task drags every axis below 0.60.
    rows = [
        json.loads(x) for x in (project.root / SAMPLES / "batch_001.jsonl").read_text().splitlines()
    ]
    _campaign_from_samples(project, "batch_001.jsonl")
    out = []
    for i, r in enumerate(rows):
        scores = {a: 1 + (i * 7 + k * 3) % 5 for k, a in enumerate(AXES)}
        out.append(json.dumps({**r, "annotator_id": "ann_random", "annotations": scores}))
    (project.root / "data/raw/annotations/batch_004.jsonl").write_text("\n".join(out) + "\n")
    project.run("python", "-m", "stages.agreement")
    metrics = json.loads((project.root / SUMMARY).read_text())
    assert metrics["gate"]["status"] == "fail" and metrics["gate"]["kappa"] == "fail"
    check = project.run("python", "-m", "evalpipe.cli", "quality", "check", check=False)
    assert check.returncode == 1
    assert check.stdout.count("FAIL [kappa]") == 4
    gate = json.loads((project.root / "data/annotations/quality_reports/gate.json").read_text())
    assert gate["n_failures"] == metrics["gate"]["failures"] >= 4

    # An adjudication of one item: merge takes it, agreement ignores it.
    adjudicated = {
        **json.loads(out[0]),
        "annotator_id": "adjudicated:kim",
        "annotations": {"social": 2, "avoidant": 2, "mechanical": 2, "self": 2},
    }
    (project.root / "data/raw/annotations/adjudicated.jsonl").write_text(
        json.dumps(adjudicated) + "\n"
    )
    project.run(
        "python",
        "-m",
        "evalpipe.cli",
        "quality",
        "merge",
        "--input",
        "data/raw/annotations/*.jsonl",
        "--output",
        "out/consensus.jsonl",
    )
    merged = [
        json.loads(x) for x in (project.root / "out/consensus.jsonl").read_text().splitlines()
    ]
    by_id = {m["id"]: m for m in merged}
    assert by_id[adjudicated["id"]]["adjudicated"] is True
    assert by_id[adjudicated["id"]]["annotations"] == adjudicated["annotations"]
    project.run("python", "-m", "stages.agreement")
    again = json.loads((project.root / SUMMARY).read_text())
    assert again["annotators"] == 2 and again["adjudicated_items"] == 1
    assert all(again[a]["kappa"] == metrics[a]["kappa"] for a in AXES)


def test_the_first_real_batch_replaces_the_samples_entirely(project):
    project.run("python", "-m", "stages.agreement")
    _write_batch(project, "batch_001.jsonl", "ann_101", "batch_002.jsonl", bump=set())
    _write_batch(project, "batch_002.jsonl", "ann_102", "batch_002.jsonl", bump={"sample_001"})
    proc = project.run("python", "-m", "stages.agreement")
    assert proc.stdout.startswith("agreement: 2 batches, 2 annotators")
    assert "SAMPLE" not in proc.stdout + proc.stderr
    metrics = json.loads((project.root / SUMMARY).read_text())
    assert metrics["annotators"] == 2
    assert metrics["data_notes"] == {
        "sample_batches": False,
        "illustrative_humans": False,
        "markers_in_sample": False,
    }
    check = project.run("python", "-m", "stages.annotation", "check", check=False)
    assert "SAMPLE" not in check.stdout and "2 file(s)" in check.stdout
