"""Accuracy by number of edited words, paired per dose (one view per benchmark, the typo arm)
-> data/impact/dose.parquet and its pooled rows -> plots/dose_response.csv."""

from __future__ import annotations

from evalpipe import atomic
from evalpipe.scoring.names import POOLED
from evalpipe.scoring.study import ImpactInputs, ImpactPart
from evalpipe.scoring.summaries import rounded_frame
from evalpipe.scoring.transitions import DOSE_PAIR_COLUMNS, dose_response
from evalpipe.studies.dose import paths as files


def _write(inputs: ImpactInputs) -> None:
    dose = rounded_frame(dose_response(inputs.chosen, level=inputs.level))
    atomic.write_parquet(files.table(inputs.paths), dose)
    pooled = dose.loc[dose["scope"] == POOLED].drop(columns=["scope", "benchmark"])
    atomic.write_csv(
        files.plot(inputs.paths),
        pooled.assign(label=pooled["model"] + " (" + pooled["language"] + ")"),
    )


PART = ImpactPart("dose", columns=tuple(DOSE_PAIR_COLUMNS), write=_write)
