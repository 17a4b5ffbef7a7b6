"""Every model's continuation cells (data/scored/<model>/continuation.parquet) -> restoration
rates per (model, scope / benchmark, design, cell or budget) in data/impact/continuation.parquet,
and the clean-prefix scan's rates by budget -> data/impact/continuation_by_budget.csv (the DVC
plot "restoration by prefix budget"). Neither is written when no model ran the designs."""

from __future__ import annotations

import pandas as pd

from evalpipe import atomic
from evalpipe.answers import continuation_cells as cd
from evalpipe.errors import InputError
from evalpipe.scoring.restoration import restoration
from evalpipe.scoring.study import ImpactInputs, ImpactPart
from evalpipe.scoring.summaries import rounded_frame
from evalpipe.studies.continuation import paths as files

NAME = "continuation"
PLOT_COLUMNS = ["model", "scope", "benchmark", "language", "unit", "prefix_budget", "label"]
PLOT_COLUMNS += ["n", "restored", "rate", "ci_low", "ci_high"]


def impact_table(inputs: ImpactInputs) -> pd.DataFrame | None:
    """Every model's restoration rates, or None when no model has continuation cells."""
    frames = []
    for slug in inputs.models:
        path = files.scored(inputs.paths, slug)
        if not path.exists():
            continue
        try:
            cells = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from exc
        frames.append(restoration(cells, level=inputs.level).assign(model=slug))
    if not frames:
        return None
    table = pd.concat(frames, ignore_index=True)
    columns = ["model", *[c for c in table.columns if c != "model"]]
    return rounded_frame(table[columns])


def by_budget(table: pd.DataFrame) -> pd.DataFrame:
    """The scan's rows with a numeric budget and a label per (model, scope, unit)."""
    scan = table.loc[table["design"] == cd.PREFIX_SCAN].copy()
    if scan.empty:
        return pd.DataFrame(columns=PLOT_COLUMNS)
    scan["budget"] = scan["budget"].astype(str)
    share = scan["budget"].str.contains(".", regex=False)
    scan["unit"] = share.map({True: "share", False: "tokens"})
    scan["prefix_budget"] = scan["budget"].astype(float)
    scan["label"] = scan["model"] + " (" + scan["benchmark"] + ", " + scan["unit"] + ")"
    order = ["model", "scope", "benchmark", "unit", "prefix_budget"]
    return scan.sort_values(order, kind="stable")[PLOT_COLUMNS]


def _write(inputs: ImpactInputs) -> None:
    table = impact_table(inputs)
    outputs = (files.table(inputs.paths), files.plot(inputs.paths))
    if table is None:
        for path in outputs:
            path.unlink(missing_ok=True)
        return
    atomic.write_parquet(outputs[0], table)
    atomic.write_csv(outputs[1], by_budget(table))


PART = ImpactPart(NAME, write=_write)
