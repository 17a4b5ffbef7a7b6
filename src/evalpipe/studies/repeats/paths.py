"""The repeats study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def metrics(paths: ProjectPaths, model: str) -> Path:
    """The run-to-run spread beside the typo effect (``sampling.repeats``,
    ``prompt.fewshot_draws``, ``prompt.templates``); written only when one asks for it."""
    return paths.model_metrics(model) / "repeats.json"
