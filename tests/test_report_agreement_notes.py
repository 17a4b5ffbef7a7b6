"""The report's agreement figures say when they come from the bundled sample batches: checked on
the agreement run's real output over those batches (data/samples/annotations/)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from evalpipe import atomic
from evalpipe.annotation.batches import find_batches
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.schema import read_annotations, read_tasks, sample_tasks_path
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.report import ReportData, build_figures, build_report
from evalpipe.report.annotation import SAMPLE_BATCHES_NOTE
from evalpipe.report.compare import build_comparison
from tests.conftest import TEST_PARAMS
from tests.report_fixtures import section_body
from tests.test_report_stage import lay_out, run

REPO = Path(__file__).resolve().parents[1]


@functools.cache
def agreement_run(*, sample_batches: bool):
    """``(agreement.json, kappa_report.json)`` of the agreement run over the bundled batches,
    labelled as samples (what a fresh clone gets) or as a campaign's own batches."""
    params = load_params(TEST_PARAMS)
    settings = QualitySettings.from_params(
        {**section(params, "annotation"), "bootstrap_samples": 200}, seed=params["seed"]
    )
    tasks = read_tasks(sample_tasks_path())
    found = find_batches(
        REPO / "no-campaign-here", samples_dir=ProjectPaths(REPO).sample_annotations
    )
    assert found.samples and len(found.paths) == 3
    humans = read_annotations(list(found.paths), task_ids=[t.id for t in tasks])
    result = run_quality(humans, tasks, settings, sample_batches=sample_batches)
    # through JSON, as the stage writes and the report reads them
    return json.loads(json.dumps(result.metrics)), json.loads(json.dumps(result.kappa_report))


def _page(sample_batches: bool) -> tuple[str, dict[str, str]]:
    agreement, kappa = agreement_run(sample_batches=sample_batches)
    data = ReportData(agreement=agreement, kappa_report=kappa, rejected=[])
    return build_report(data), build_figures(data, languages=())


def test_agreement_from_the_sample_batches_says_so_in_its_section_and_figure():
    page, figures = _page(sample_batches=True)
    body = section_body(page, "annotation")
    assert body.startswith(
        '<h2>Annotation agreement</h2><div class="missing" id="agreement-data-notes">'
    )
    assert "bundled sample batches" in body and "data/samples/annotations/" in body
    assert body.count("illustrative_*") == 1  # the sample sentence covers the annotator ids
    assert "bundled sample batches" not in section_body(page, "answer")
    assert "kappa" in body  # the figures are still shown
    assert "bundled sample batches" in figures["agreement.svg"]


def test_a_campaigns_own_batches_carry_no_sample_note():
    page, figures = _page(sample_batches=False)
    body = section_body(page, "annotation")
    assert "bundled sample batches" not in body
    assert "bundled sample batches" not in figures["agreement.svg"]
    # the same files copied into the campaign folder still have illustrative annotator ids
    assert "annotators illustrative_*" in body and "not collected" in body


def test_the_stage_and_the_comparison_label_sample_batches(tmp_path):
    paths = lay_out(tmp_path)
    agreement, kappa = agreement_run(sample_batches=True)
    atomic.write_json(paths.quality_reports / "agreement.json", agreement)
    atomic.write_json(paths.quality_reports / "kappa_report.json", kappa)
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 0, out
    page = paths.report_html.read_text(encoding="utf-8")
    assert SAMPLE_BATCHES_NOTE.split(":")[0] in section_body(page, "annotation")
    assert "bundled sample batches" in (paths.report_figures / "agreement.svg").read_text()

    real, real_kappa = agreement_run(sample_batches=False)
    before = ReportData(agreement=agreement, kappa_report=kappa)
    after = ReportData(agreement=real, kappa_report=real_kappa)
    compare = build_comparison(
        before, after, label_a="main", label_b="campaign", metrics_diff={}, diff_source="test"
    )
    body = section_body(compare, "annotation")
    assert "Sample data in main:" in body and "campaign:" not in body
    assert 'id="compare-agreement"' in body
