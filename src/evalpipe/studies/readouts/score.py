"""The readouts' figures: calibration of every log-likelihood view's choice probabilities, clean
against typo'd (:mod:`evalpipe.scoring.calibration`), and the first answer token's KL from the
backend's top-k log-probabilities (:mod:`evalpipe.scoring.first_token_kl`) ->
metrics/<model>/readouts.json."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.calibration import calibration_pairs, calibration_summary
from evalpipe.scoring.first_token_kl import (
    COLUMN,
    KEYS,
    first_token_pairs,
    first_token_summary,
)
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.scoring.summaries import rounded
from evalpipe.studies.readouts import paths as files

NAME = "readouts"


def _reserved(paths: ProjectPaths, slug: str):
    return files.metrics(paths, slug)


def _top_outputs(inputs: ScoreInputs) -> dict[str, pd.DataFrame]:
    """Every benchmark's outputs that carry the first-token top-k column."""
    out = {}
    for path in sorted(inputs.paths.outputs_dir(inputs.slug).glob("*.parquet")):
        names = pq.read_schema(path).names
        if COLUMN in names:
            wanted = [*KEYS, "condition", COLUMN]
            out[path.stem] = pd.read_parquet(path, columns=[c for c in wanted if c in names])
    return out


def scoring(params: dict) -> ScorePart:
    """The part of ``scoring.calibration`` (the ``calibration`` block, written for a model with
    log-likelihood views) and ``scoring.top_logprobs`` > 0 (the ``first_token_kl`` block, for
    its generated views): a run with neither block has no file."""
    calibration = bool(params["scoring"]["calibration"])
    top_k = int(params["scoring"]["top_logprobs"])

    def figures(inputs: ScoreInputs) -> dict | None:
        out: dict[str, Any] = {}
        if calibration:
            table = calibration_pairs(inputs.pairs, inputs.scored)
            if not table.empty:
                out["calibration"] = calibration_summary(table, level=inputs.level)
        if top_k:
            table = first_token_pairs(inputs.pairs, _top_outputs(inputs))
            if not table.empty:
                out["first_token_kl"] = first_token_summary(table, level=inputs.level)
        return out or None

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
        ] + [
            f"first-token KL ({view}): {f['first_token_kl']:.4f} nats over {f['n']} pairs "
            f"({f['n_unavailable']} without top-k log-probabilities)"
            if f["first_token_kl"] is not None
            else f"first-token KL ({view}): unavailable for all {f['n_unavailable']} pairs"
            for view, f in sorted((summary or {}).get("first_token_kl", {}).items())
        ]

    return ScorePart(NAME, reserved=_reserved, figures=figures, write=write, lines=lines)
