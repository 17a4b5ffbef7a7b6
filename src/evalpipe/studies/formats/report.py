"""The formats section: each view's format spread, consistency and worst case beside its typo
effect (``formats``)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.formats import TITLE, formats_section
from evalpipe.report.study import ReportInput, ReportPart, Section
from evalpipe.studies.formats import paths


def _sections(data: ReportData) -> list[Section]:
    return [("formats", TITLE, formats_section(data.study_inputs.get("formats"), data.robustness))]


PART = ReportPart(
    "formats", "arms", _sections, inputs=(ReportInput("formats", "parquet", path=paths.table),)
)
