"""The targeting study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def metrics(paths: ProjectPaths, model: str) -> Path:
    """The attribution gaps and restoration rates (``perturb.targeting: importance``)."""
    return paths.model_metrics(model) / "targeting.json"
