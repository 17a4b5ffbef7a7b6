"""Every model's format table (data/scored/<model>/formats.json) gathered into
data/impact/formats.parquet (removed when no model ran a format arm)."""

from __future__ import annotations

import json

import pandas as pd

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.scoring.formats import COLUMNS
from evalpipe.scoring.study import ImpactInputs, ImpactPart
from evalpipe.studies.formats import paths as files


def _write(inputs: ImpactInputs) -> None:
    frames = []
    for slug in inputs.models:
        path = files.scored(inputs.paths, slug)
        if not path.exists():
            continue
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not JSON ({exc.msg}); rerun score@{slug}") from None
        frames.append(pd.DataFrame(records, columns=list(COLUMNS)))
    out = files.table(inputs.paths)
    if not frames:
        if out.exists():
            out.unlink()
        return
    table = pd.concat(frames, ignore_index=True).sort_values(
        ["model", "benchmark", "family", "statistic", "variant"], kind="stable"
    )
    table["n"] = table["n"].astype("int64")
    atomic.write_parquet(out, table.reset_index(drop=True))


PART = ImpactPart("formats", write=_write)
