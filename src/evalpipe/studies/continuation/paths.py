"""The continuation study's files, on :class:`evalpipe.paths.ProjectPaths`' folders."""

from __future__ import annotations

from pathlib import Path

from evalpipe.paths import ProjectPaths


def outputs(paths: ProjectPaths, model: str) -> Path:
    """The continuation designs' cells per benchmark (``<benchmark>.parquet``), written only
    when ``continuation.designs`` is set (docs/perturbation.md "Continuation designs")."""
    return paths.outputs_dir(model) / "continuation"


def scored(paths: ProjectPaths, model: str) -> Path:
    """Every continuation cell of the model with its answer and whether it restored."""
    return paths.scored_dir(model) / "continuation.parquet"


def metrics(paths: ProjectPaths, model: str) -> Path:
    """The continuation designs' restoration rates, written only when they run."""
    return paths.model_metrics(model) / "continuation.json"


def table(paths: ProjectPaths) -> Path:
    """Every model's restoration rates (the impact stage, only when a design ran)."""
    return paths.impact("continuation")


def plot(paths: ProjectPaths) -> Path:
    """Restoration by clean-prefix budget (the impact stage, only when the scan ran)."""
    return paths.data / "impact" / "continuation_by_budget.csv"
