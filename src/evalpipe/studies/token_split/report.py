"""The token-split section."""

from __future__ import annotations

from evalpipe.report.controls import token_split_section
from evalpipe.report.data import ReportData
from evalpipe.report.study import ReportPart, Section


def _sections(data: ReportData) -> list[Section]:
    return [("token-split", "Accuracy by tokenizer split", token_split_section(data.token_split))]


PART = ReportPart("token_split", "arms", _sections)
