"""The model-ladder section (two models or more with labels)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.ladder import ladder_section
from evalpipe.report.study import ReportInput, ReportPart, Section
from evalpipe.studies.ladder import paths


def _sections(data: ReportData) -> list[Section]:
    body = ladder_section(data.study_inputs.get("ladder"))
    return [("ladder", "Model ladder: which variant loses most under typos", body)]


PART = ReportPart(
    "ladder", "figures", _sections, inputs=(ReportInput("ladder", "parquet", path=paths.table),)
)
