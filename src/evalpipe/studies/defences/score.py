"""The defences' figures per view and pooled per language, per arm
(:func:`evalpipe.scoring.defences.defence_figures`) -> data/scored/<model>/defences.json and
metrics/<model>/defences.json, only when a defence ran (the default outputs stay as they are)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.defences import defence_figures, usage_table
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.studies.defences import paths as files

NAME = "defences"


def _reserved(paths: ProjectPaths, slug: str) -> Path:
    return files.metrics(paths, slug)


def _figures(inputs: ScoreInputs) -> dict:
    return defence_figures(
        inputs.pairs,
        usage=usage_table(inputs.scored) if inputs.usage is None else inputs.usage,
        corrections=_corrections(inputs.paths.outputs_corrections(inputs.slug)),
        level=inputs.level,
    )


def _write(inputs: ScoreInputs, figures: Any) -> None:
    scored = files.scored(inputs.paths, inputs.slug)
    if figures["arms"]:
        atomic.write_json(scored, figures)
        atomic.write_json(_reserved(inputs.paths, inputs.slug), figures)
    elif scored.exists():
        scored.unlink()


def _corrections(path: Path) -> dict:
    """generate's copy of the defend stage's counts (``{benchmark: {corrector: counts}}``)."""
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}); rerun generate") from None


def scoring(params: dict) -> ScorePart:
    """The part of the ``defences`` arms (whatever arms the pairs hold)."""
    return ScorePart(NAME, reserved=_reserved, figures=_figures, write=_write)
