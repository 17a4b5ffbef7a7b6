"""The ladder table -> data/impact/ladder.parquet, for two models or more with labels (the labels
generation.json records, from the same params entries); nothing is written otherwise, so a
single model's outputs stay as they are."""

from __future__ import annotations

from evalpipe import atomic
from evalpipe.scoring.ladder import has_ladder, ladder_table
from evalpipe.scoring.study import ImpactInputs, ImpactPart
from evalpipe.scoring.summaries import rounded_frame
from evalpipe.studies.ladder import paths as files


def _write(inputs: ImpactInputs) -> None:
    path = files.table(inputs.paths)
    if has_ladder(inputs.models, inputs.labels):
        ladder = ladder_table(
            inputs.chosen, inputs.labels, models=inputs.models, level=inputs.level
        )
        atomic.write_parquet(path, rounded_frame(ladder))
    elif path.exists():
        path.unlink()  # a ladder no longer declared (run by hand, outside DVC)


PART = ImpactPart("ladder", write=_write)
