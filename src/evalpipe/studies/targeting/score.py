"""Targeting's figures: the attribution-vs-random gaps, their fidelity and the restoration-order
rates (:mod:`evalpipe.scoring.targeting`) -> metrics/<model>/targeting.json, written only when
the pairs hold targeted rows (``perturb.targeting: importance``; the default outputs stay as
they are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalpipe import atomic
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.scoring.summaries import rounded
from evalpipe.scoring.targeting import targeting_summary
from evalpipe.studies.targeting import paths as files

NAME = "targeting"


def _reserved(paths: ProjectPaths, slug: str) -> Path:
    return files.metrics(paths, slug)


def _figures(inputs: ScoreInputs) -> dict | None:
    return targeting_summary(inputs.pairs, level=inputs.level)


def _write(inputs: ScoreInputs, figures: Any) -> None:
    path = _reserved(inputs.paths, inputs.slug)
    if figures is not None:
        atomic.write_json(path, rounded(figures))
    elif path.exists():  # an earlier run's figures, now off
        path.unlink()


def _lines(figures: Any) -> list[str]:
    return [
        f"targeting ({row['view']}, {row['order']}-{row['k']} vs random-{row['k']}): "
        f"accuracy gap {row['gap']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
        for row in (figures or {}).get("attribution", [])
        if row["ci_low"] is not None
    ]


def scoring(params: dict) -> ScorePart:
    """The part of ``perturb.targeting: importance`` (whatever targeted rows the pairs hold)."""
    return ScorePart(NAME, reserved=_reserved, figures=_figures, write=_write, lines=_lines)
