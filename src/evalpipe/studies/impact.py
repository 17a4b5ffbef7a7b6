"""The studies the impact stage runs, in order: each an ``ImpactPart``
(:mod:`evalpipe.scoring.study`) grouping every model's pairs."""

from __future__ import annotations

from evalpipe.studies.continuation.impact import PART as CONTINUATION
from evalpipe.studies.control.impact import PART as CONTROL
from evalpipe.studies.dose.impact import PART as DOSE
from evalpipe.studies.formats.impact import PART as FORMATS
from evalpipe.studies.ladder.impact import PART as LADDER
from evalpipe.studies.token_split.impact import PART as TOKEN_SPLIT

STUDIES = (CONTROL, DOSE, TOKEN_SPLIT, LADDER, FORMATS, CONTINUATION)
