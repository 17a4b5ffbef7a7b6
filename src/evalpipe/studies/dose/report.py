"""The dose-response section (count design)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.dose import dose_section
from evalpipe.report.study import ReportInput, ReportPart, Section
from evalpipe.studies.dose import paths


def _sections(data: ReportData) -> list[Section]:
    body = dose_section(data.study_inputs.get("dose"), data.perturb_summaries)
    return [("dose", "Dose-response: accuracy by number of typo'd words", body)]


def _count_design(data: ReportData) -> bool:
    return any(s.get("design") == "count" for s in data.perturb_summaries.values())


# read (and missed when absent) only when a benchmark was perturbed with the count design
TABLE = ReportInput(
    "dose", "parquet", path=paths.table, needed="written by `dvc repro impact`", when=_count_design
)
PART = ReportPart("dose", "effects", _sections, inputs=(TABLE,))
