"""Perplexity's figures: each typo pair's perturbable-text log-likelihood, original against
perturbed (:mod:`evalpipe.scoring.perplexity`) -> metrics/<model>/perplexity.json."""

from __future__ import annotations

from typing import Any

from evalpipe import atomic
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.perplexity import perplexity_pairs, perplexity_summary
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.scoring.summaries import rounded
from evalpipe.studies.perplexity import paths as files

NAME = "perplexity"


def _reserved(paths: ProjectPaths, slug: str):
    return files.metrics(paths, slug)


def scoring(params: dict) -> ScorePart:
    """The part of ``scoring.perplexity``."""
    enabled = bool(params["scoring"]["perplexity"])

    def figures(inputs: ScoreInputs) -> dict | None:
        if not enabled:
            return None
        source = str(inputs.paths.outputs_dir(inputs.slug))
        table = perplexity_pairs(inputs.pairs, inputs.scored, source=source)
        return perplexity_summary(table, level=inputs.level)

    def write(inputs: ScoreInputs, summary: Any) -> None:
        if summary is not None:
            atomic.write_json(_reserved(inputs.paths, inputs.slug), rounded(summary))

    def lines(summary: Any) -> list[str]:
        return [
            f"perplexity ({name}): perturbed / original {figures['ratio']:.4f} "
            f"over {figures['n']} pairs"
            for name, figures in sorted((summary or {}).get("pooled", {}).items())
            if figures["ratio"] is not None
        ]

    return ScorePart(NAME, reserved=_reserved, figures=figures, write=write, lines=lines)
