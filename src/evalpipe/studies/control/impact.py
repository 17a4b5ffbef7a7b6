"""The control arm's columns of the per-word table: harm beyond a matched random word, per word
(:mod:`evalpipe.scoring.controls`), when the pairs hold the control arm."""

from __future__ import annotations

import pandas as pd

from evalpipe.arms import CONTROL
from evalpipe.scoring.controls import control_effect, with_control
from evalpipe.scoring.study import ImpactInputs, ImpactPart
from evalpipe.scoring.word_impact import select_pairs


def _words(inputs: ImpactInputs, table: pd.DataFrame) -> pd.DataFrame:
    control, _ = select_pairs(inputs.pairs, inputs.n_base, condition=CONTROL)
    if not len(control):
        return table
    return with_control(table, control_effect(inputs.chosen, control, level=inputs.level))


PART = ImpactPart("control", words=_words)
