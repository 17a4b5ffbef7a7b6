"""The perplexity section (``scoring.perplexity``)."""

from __future__ import annotations

from evalpipe.report.data import ReportData
from evalpipe.report.ladder import perplexity_section
from evalpipe.report.study import ReportInput, ReportPart, Section
from evalpipe.studies.perplexity import paths


def _sections(data: ReportData) -> list[Section]:
    body = perplexity_section(data.study_inputs.get("perplexity", {}))
    return [("perplexity", "Perplexity under typos", body)]


PART = ReportPart(
    "perplexity",
    "figures",
    _sections,
    inputs=(ReportInput("perplexity", "json", model_path=paths.metrics),),
)
