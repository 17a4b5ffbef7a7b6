"""The model-ladder section (two models or more with labels)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.ladder import ladder_section
from evalpipe.report.study import ReportPart, Section


def _sections(data: ReportData) -> list[Section]:
    body = ladder_section(data)
    return [("ladder", "Model ladder: which variant loses most under typos", body)]


PART = ReportPart("ladder", "figures", _sections)
