"""The dose-response section (count design)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.dose import dose_section
from evalpipe.report.study import ReportPart, Section


def _sections(data: ReportData) -> list[Section]:
    body = dose_section(data.dose, data.perturb_summaries)
    return [("dose", "Dose-response: accuracy by number of typo'd words", body)]


PART = ReportPart("dose", "effects", _sections)
