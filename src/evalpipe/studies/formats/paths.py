"""The formats study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def scored(paths: ProjectPaths, model: str) -> Path:
    """The format arms' table of the model (the impact stage gathers every model's into
    :func:`table`)."""
    return paths.scored_dir(model) / "formats.json"


def metrics(paths: ProjectPaths, model: str) -> Path:
    """The format arms' spread, consistency and worst case per view and family, written only
    when ``formats`` asks for an arm."""
    return paths.model_metrics(model) / "formats.json"


def table(paths: ProjectPaths) -> Path:
    """Every model's format figures (the impact stage, only when a format arm ran)."""
    return paths.impact("formats")
