"""The readouts' figures: calibration of every log-likelihood view's choice probabilities, clean
against typo'd (:mod:`evalpipe.scoring.calibration`) -> metrics/<model>/readouts.json."""

from __future__ import annotations

from typing import Any

from evalpipe import atomic
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.calibration import calibration_pairs, calibration_summary
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.scoring.summaries import rounded

NAME = "readouts"


def _reserved(paths: ProjectPaths, slug: str):
    return paths.readouts_metrics(slug)


def scoring(params: dict) -> ScorePart:
    """The part of ``scoring.calibration``: written only for a model with log-likelihood views
    (``scoring.method: loglikelihood`` or ``both``), so generation-only runs have no file."""
    enabled = bool(params["scoring"]["calibration"])

    def figures(inputs: ScoreInputs) -> dict | None:
        if not enabled:
            return None
        table = calibration_pairs(inputs.pairs, inputs.scored)
        if table.empty:
            return None
        return {"calibration": calibration_summary(table, level=inputs.level)}

    def write(inputs: ScoreInputs, summary: Any) -> None:
        path = _reserved(inputs.paths, inputs.slug)
        if summary is not None:
            atomic.write_json(path, rounded(summary))
        elif path.exists():
            path.unlink()

    def lines(summary: Any) -> list[str]:
        return [
            f"calibration ({view}): ECE {f['ece_original']:.4f} -> {f['ece_perturbed']:.4f}, "
            f"Brier {f['brier_original']:.4f} -> {f['brier_perturbed']:.4f} over {f['n']} pairs"
            for view, f in sorted((summary or {}).get("calibration", {}).items())
            if f["ece_original"] is not None and f["brier_original"] is not None
        ]

    return ScorePart(NAME, reserved=_reserved, figures=figures, write=write, lines=lines)
