"""The defences study's files, on :class:`evalpipe.paths.ProjectPaths`' folders (the defend
stage's own, data/defended/, are the core's: :meth:`evalpipe.paths.ProjectPaths.defended`)."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def scored(paths: ProjectPaths, model: str) -> Path:
    """Every defence figure of the model (the report reads it; :func:`metrics` holds the
    same)."""
    return paths.scored_dir(model) / "defences.json"


def metrics(paths: ProjectPaths, model: str) -> Path:
    """The defences metrics, written only when a defence is configured."""
    return paths.model_metrics(model) / "defences.json"
