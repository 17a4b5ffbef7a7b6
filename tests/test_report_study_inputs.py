"""The report reads each study's declared files (its part's ``inputs``) into
``data.study_inputs``: per model or one file, hashed into the provenance, left out or named
missing when absent as the part says."""

from __future__ import annotations

import pytest

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.report.inputs import load_report_data, workspace_reader
from evalpipe.report.study import ReportInput
from evalpipe.studies.defences import paths as defences_paths
from evalpipe.studies.dose import paths as dose_paths
from evalpipe.studies.perplexity import paths as perplexity_paths
from tests.test_report_dose import COUNT_SUMMARY, _dose
from tests.test_report_stage import M, lay_out


def test_declared_files_are_read_per_model_and_hashed(tmp_path):
    paths = lay_out(tmp_path)
    atomic.write_json(perplexity_paths.metrics(paths, M), {"enabled": True})
    atomic.write_json(defences_paths.scored(paths, M), {"arms": []})
    data = load_report_data(*workspace_reader(tmp_path), paths)
    assert data.study_inputs["perplexity"] == {M: {"enabled": True}}
    assert data.study_inputs["defences"] == {M: {"arms": []}}
    assert data.study_inputs["repeats"] == {}  # no file: no model, and nothing missing
    assert "ladder" not in data.study_inputs and "dose" not in data.study_inputs
    hashed = data.provenance["inputs"]
    assert f"metrics/{M}/perplexity.json" in hashed and f"data/scored/{M}/defences.json" in hashed
    assert not any("perplexity" in name or "ladder" in name for name in data.missing)


def test_the_dose_table_is_needed_only_for_the_count_design(tmp_path):
    paths = lay_out(tmp_path)
    atomic.write_parquet(dose_paths.table(paths), _dose())
    words = load_report_data(*workspace_reader(tmp_path), paths)
    assert "dose" not in words.study_inputs  # the words design: not read at all
    atomic.write_json(paths.scored_perturbation(M), {"gsm8k": COUNT_SUMMARY})
    count = load_report_data(*workspace_reader(tmp_path), paths)
    assert len(count.study_inputs["dose"]) == len(_dose())
    dose_paths.table(paths).unlink()
    absent = load_report_data(*workspace_reader(tmp_path), paths)
    assert absent.missing["data/impact/dose.parquet"] == "written by `dvc repro impact`"


def test_a_damaged_declared_file_names_itself(tmp_path):
    paths = lay_out(tmp_path)
    perplexity_paths.metrics(paths, M).write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match=f"metrics/{M}/perplexity.json"):
        load_report_data(*workspace_reader(tmp_path), paths)


def test_an_input_names_one_file_or_one_per_model():
    with pytest.raises(ValueError, match="exactly one of path and model_path"):
        ReportInput("x", "json")
    with pytest.raises(ValueError, match="format"):
        ReportInput("x", "csv", path=dose_paths.table)
