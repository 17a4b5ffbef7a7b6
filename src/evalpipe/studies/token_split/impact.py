"""Accuracy change by how many tokens the typos added to their words (the model's tokenizer)
-> data/impact/token_split.parquet and its pooled rows -> plots/token_split.csv."""

from __future__ import annotations

from evalpipe import atomic
from evalpipe.scoring.controls import TOKEN_PAIR_COLUMNS, token_split
from evalpipe.scoring.names import POOLED
from evalpipe.scoring.study import ImpactInputs, ImpactPart
from evalpipe.scoring.summaries import rounded_frame
from evalpipe.studies.token_split import paths as files


def _write(inputs: ImpactInputs) -> None:
    split = rounded_frame(token_split(inputs.chosen, level=inputs.level))
    atomic.write_parquet(files.table(inputs.paths), split)
    pooled = split.loc[split["scope"] == POOLED].drop(columns=["scope", "benchmark"])
    label = (
        pooled["model"] + " (" + pooled["language"] + "): " + pooled["extra_tokens"]
        + " extra tokens"
    )  # fmt: skip
    atomic.write_csv(files.plot(inputs.paths), pooled.assign(label=label))


PART = ImpactPart("token_split", columns=tuple(TOKEN_PAIR_COLUMNS), write=_write)
