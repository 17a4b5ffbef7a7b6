"""The token-split study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def table(paths: ProjectPaths) -> Path:
    """Accuracy change by extra tokens of the typo'd words (impact stage)."""
    return paths.impact("token_split")


def plot(paths: ProjectPaths) -> Path:
    """The pooled accuracy change by extra tokens of the typo'd words (impact stage)."""
    return paths.plots / "token_split.csv"
