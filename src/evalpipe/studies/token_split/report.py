"""The token-split section."""

from __future__ import annotations

from evalpipe.report.controls import token_split_section
from evalpipe.report.data import ReportData
from evalpipe.report.study import ReportInput, ReportPart, Section
from evalpipe.studies.token_split import paths


def _sections(data: ReportData) -> list[Section]:
    body = token_split_section(data.study_inputs.get("token_split"))
    return [("token-split", "Accuracy by tokenizer split", body)]


# absent (an impact stage without the split): the section is left out
TABLE = ReportInput("token_split", "parquet", path=paths.table)
PART = ReportPart("token_split", "arms", _sections, inputs=(TABLE,))
