"""The studies the score stage runs: each ``scoring(params) -> ScorePart``
(:mod:`evalpipe.scoring.study`)."""

from __future__ import annotations

from evalpipe.studies.continuation import score as continuation
from evalpipe.studies.defences import score as defences
from evalpipe.studies.formats import score as formats
from evalpipe.studies.perplexity import score as perplexity
from evalpipe.studies.readouts import score as readouts
from evalpipe.studies.repeats import score as repeats
from evalpipe.studies.targeting import score as targeting

STUDIES = (
    defences.scoring,
    perplexity.scoring,
    repeats.scoring,
    formats.scoring,
    readouts.scoring,
    targeting.scoring,
    continuation.scoring,
)
