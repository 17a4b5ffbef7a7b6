"""The model-ladder study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def table(paths: ProjectPaths) -> Path:
    """The ladder of models (the impact stage, two models or more with labels)."""
    return paths.impact("ladder")
