"""The readouts study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def metrics(paths: ProjectPaths, model: str) -> Path:
    """``scoring.calibration``'s figures (docs/scoring.md "Calibration under typos"); written
    only for a model with log-likelihood views, beside the headline files."""
    return paths.model_metrics(model) / "readouts.json"
