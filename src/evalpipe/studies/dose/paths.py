"""The dose-response study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def table(paths: ProjectPaths) -> Path:
    """Accuracy by number of typo'd words (the impact stage, count design only)."""
    return paths.impact("dose")


def plot(paths: ProjectPaths) -> Path:
    """The pooled accuracy change by number of edited words (impact stage)."""
    return paths.plots / "dose_response.csv"
