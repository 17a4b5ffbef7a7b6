"""The format arms' figures per view and family (:func:`evalpipe.scoring.formats.format_table`)
-> data/scored/<model>/formats.json (every row) and metrics/<model>/formats.json (spread,
consistency and worst case), only when ``formats`` asks for an arm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evalpipe import atomic
from evalpipe.benchmarks import get_spec
from evalpipe.benchmarks.formats import applies, enabled
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.formats import format_table
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.scoring.summaries import rounded
from evalpipe.scoring.views import parse_view
from evalpipe.studies.formats import paths as files

NAME = "formats"


def _reserved(paths: ProjectPaths, slug: str) -> Path:
    return files.metrics(paths, slug)


def metrics(table: pd.DataFrame) -> dict[str, Any]:
    """``{view: {family: {statistic: estimate, ..., n}}}``: one short row per view and family
    in ``dvc metrics show`` (the intervals are in data/scored/<model>/formats.json)."""
    out: dict[str, Any] = {}
    summary = table.loc[table["variant"] == "all"]
    for row in summary.itertuples(index=False):
        entry = out.setdefault(row.benchmark, {}).setdefault(row.family, {})
        entry[row.statistic] = row.estimate
        entry["n"] = int(row.n)
    return out


def scoring(params: dict) -> ScorePart:
    """The part of ``formats``."""
    on = enabled(params["formats"])

    def figures(inputs: ScoreInputs) -> pd.DataFrame | None:
        if not on:
            return None

        def labels_of(view: str) -> list[str] | None:
            spec = get_spec(parse_view(view)[0], inputs.paths.raw_benchmarks)
            return list(spec.labels or []) if applies(spec) else None

        return format_table(
            inputs.scored, model=inputs.slug, labels_of=labels_of, level=inputs.level
        )

    def write(inputs: ScoreInputs, table: Any) -> None:
        scored = files.scored(inputs.paths, inputs.slug)
        if table is not None and len(table):
            atomic.write_json(scored, rounded(table.to_dict("records")))
            atomic.write_json(_reserved(inputs.paths, inputs.slug), rounded(metrics(table)))
        elif scored.exists():
            scored.unlink()

    def lines(table: Any) -> list[str]:
        if table is None:
            return []
        spread = table.loc[table["statistic"] == "spread"]
        return [
            f"formats ({row.benchmark}, {row.family}): 1 - (max - min) {row.estimate:.3f} "
            f"[{row.ci_low:.3f}, {row.ci_high:.3f}] over {row.n} examples"
            for row in spread.itertuples(index=False)
        ]

    return ScorePart(NAME, reserved=_reserved, figures=figures, write=write, lines=lines)
