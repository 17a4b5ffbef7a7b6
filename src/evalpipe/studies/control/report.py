"""The matched-control section (``perturb.control``)."""

from __future__ import annotations

from evalpipe.report.controls import control_section
from evalpipe.report.data import ReportData
from evalpipe.report.study import ReportPart, Section


def _sections(data: ReportData) -> list[Section]:
    body = control_section(data.words, data.perturb_summaries)
    return [("controls", "Harm beyond a matched random word", body)]


PART = ReportPart("control", "arms", _sections)
