"""The perplexity section (``scoring.perplexity``)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.ladder import perplexity_section
from evalpipe.report.study import ReportPart, Section


def _sections(data: ReportData) -> list[Section]:
    return [("perplexity", "Perplexity under typos", perplexity_section(data))]


PART = ReportPart("perplexity", "figures", _sections)
