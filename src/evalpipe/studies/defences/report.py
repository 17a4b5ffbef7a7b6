"""The defences section (a warning or correctors configured)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.defences import TITLE, defences_section
from evalpipe.report.study import ReportPart, Section


def _sections(data: ReportData) -> list[Section]:
    return [("defences", TITLE, defences_section(data.defences))]


PART = ReportPart("defences", "arms", _sections)
