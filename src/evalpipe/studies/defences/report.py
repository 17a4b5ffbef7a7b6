"""The defences section (a warning or correctors configured)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.defences import TITLE, defences_section
from evalpipe.report.study import ReportInput, ReportPart, Section
from evalpipe.studies.defences import paths


def _sections(data: ReportData) -> list[Section]:
    return [("defences", TITLE, defences_section(data.study_inputs.get("defences", {})))]


# absent, or without arms: the model ran no defence (not a missing input)
FIGURES = ReportInput("defences", "json", model_path=paths.scored)
PART = ReportPart("defences", "arms", _sections, inputs=(FIGURES,))
