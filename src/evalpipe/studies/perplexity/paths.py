"""The perplexity study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def metrics(paths: ProjectPaths, model: str) -> Path:
    """``scoring.perplexity``'s figures (docs/scoring.md "Perplexity under typos"); written
    only when it is on, beside the headline files (the score stage's metrics directory)."""
    return paths.model_metrics(model) / "perplexity.json"
