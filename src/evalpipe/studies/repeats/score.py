"""The run-to-run and wording spread beside the typo effect, per view ->
metrics/<model>/repeats.json, only when ``sampling.repeats`` or ``prompt.fewshot_draws`` is above
1 or ``prompt.templates`` selects templates (the default outputs stay as they are).

Per view and source (``typo``: every replicate's typo pairs, the headline's; ``repeat``: the clean
prompt at another seed against its first answer; ``fewshot_draw``: with other demonstrations;
``template:<name>``: under template <name>'s instruction against the spec's; ``templates``: every
template's pairs pooled, the mean effect of rewording):
the paired accuracy change with the headline's interval and the share of pairs whose answer
changed with a CR2 t interval, both clustered on the example (the replicates of one example are
one cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalpipe import atomic
from evalpipe.arms import FEWSHOT_DRAW, REPEAT, TEMPLATE, TYPO
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.robustness import paired_stats
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.scoring.summaries import rounded
from evalpipe.studies.repeats import paths as files

NAME = "repeats"
SOURCES = (TYPO, REPEAT, FEWSHOT_DRAW)
TEMPLATES = "templates"  # the source of every template arm's pairs pooled


def _reserved(paths: ProjectPaths, slug: str) -> Path:
    return files.metrics(paths, slug)


def source_figures(pairs: pd.DataFrame, *, level: float) -> dict[str, Any]:
    """One source's pairs: the accuracy change and the answer-change share, with intervals.

    Parameters
    ----------
    pairs : rows of the pairs table (``cluster, correct_*, prediction_*``).
    level : confidence level.

    Returns
    -------
    dict
        ``n`` (pairs), ``n_examples``, ``accuracy_original, accuracy_perturbed, delta, ci_low,
        ci_high, ci_method, design_effect`` (:func:`~evalpipe.scoring.robustness.paired_stats`)
        and ``answer_change, answer_change_low, answer_change_high``.

    Examples
    --------
    >>> pairs = pd.DataFrame({"cluster": [0, 0, 1, 2], "correct_original": [True] * 4,
    ...     "correct_perturbed": [True, False, True, True],
    ...     "prediction_original": ["A"] * 4, "prediction_perturbed": ["A", "B", "A", "A"]})
    >>> f = source_figures(pairs, level=0.95)
    >>> f["n"], f["n_examples"], f["delta"], f["answer_change"]
    (4, 3, -0.25, 0.25)
    """
    clusters = pairs["cluster"].to_numpy()
    stats = paired_stats(
        pairs["correct_original"].to_numpy(dtype=bool),
        pairs["correct_perturbed"].to_numpy(dtype=bool),
        clusters=clusters,
        level=level,
    )
    out: dict[str, Any] = {
        "n": stats.n,
        "n_examples": int(np.unique(clusters).size),
        "accuracy_original": stats.accuracy_original,
        "accuracy_perturbed": stats.accuracy_perturbed,
        "delta": stats.delta,
        "ci_low": stats.ci_low,
        "ci_high": stats.ci_high,
        "ci_method": stats.ci_method,
        "design_effect": stats.design_effect,
        "answer_change": None,
        "answer_change_low": None,
        "answer_change_high": None,
    }
    if stats.n:
        # the same rule as the transitions' answer_change: unparsed on one side only is a change
        o, p = pairs["prediction_original"], pairs["prediction_perturbed"]
        same = (o.isna() & p.isna()) | (o.notna() & p.notna() & (o.astype(str) == p.astype(str)))
        changed = (~same).to_numpy(dtype=float)
        out["answer_change"] = float(changed.mean())
        if stats.n > 1:
            interval = clustered_mean_interval(changed, clusters, level=level)
            if interval.low is not None and interval.high is not None:
                out["answer_change_low"] = max(0.0, float(interval.low))
                out["answer_change_high"] = min(1.0, float(interval.high))
    return out


def spread_figures(
    pairs: pd.DataFrame, *, level: float, repeats: int, fewshot_draws: int
) -> dict[str, Any]:
    """Per view, the typo effect beside the spread of each source of replicates it has.

    Returns
    -------
    dict
        ``{repeats, fewshot_draws, level, views: {view: {source: figures}}}`` with the sources
        of :data:`SOURCES` the view has pairs of (:func:`source_figures`).
    """
    out: dict[str, Any] = {
        "repeats": repeats,
        "fewshot_draws": fewshot_draws,
        "level": level,
        "views": {},
    }
    for view, rows in pairs.groupby("view", sort=True):
        figures = {}
        for source in SOURCES:
            chosen = rows.loc[rows["condition"] == source]
            if len(chosen):
                figures[source] = source_figures(chosen, level=level)
        worded = rows["condition"].astype(str).str.startswith(f"{TEMPLATE}:")
        for arm in sorted(rows.loc[worded, "condition"].unique()):
            figures[str(arm)] = source_figures(rows.loc[rows["condition"] == arm], level=level)
        if worded.any():
            # the pooled pairs of one example (one per template) form one cluster
            figures[TEMPLATES] = source_figures(rows.loc[worded], level=level)
        out["views"][str(view)] = figures
    return out


def scoring(params: dict) -> ScorePart:
    """The part of ``sampling.repeats``, ``prompt.fewshot_draws`` and ``prompt.templates``."""
    repeats = int(params["sampling"]["repeats"])
    draws = int(params["prompt"]["fewshot_draws"])
    enabled = repeats > 1 or draws > 1 or bool(params["prompt"]["templates"])

    def figures(inputs: ScoreInputs) -> dict | None:
        if not enabled:
            return None
        return spread_figures(
            inputs.pairs, level=inputs.level, repeats=repeats, fewshot_draws=draws
        )

    def write(inputs: ScoreInputs, summary: Any) -> None:
        path = _reserved(inputs.paths, inputs.slug)
        if summary is not None:
            atomic.write_json(path, rounded(summary))
        elif path.exists():
            path.unlink()

    def lines(summary: Any) -> list[str]:
        out = []
        for view, figures in sorted((summary or {}).get("views", {}).items()):
            parts = [
                f"{source} {f['delta']:+.3f} (answers changed {f['answer_change']:.3f})"
                for source, f in figures.items()
                if f["delta"] is not None and f["answer_change"] is not None
            ]
            if parts:
                out.append(f"repeats ({view}): " + ", ".join(parts))
        return out

    return ScorePart(NAME, reserved=_reserved, figures=figures, write=write, lines=lines)
