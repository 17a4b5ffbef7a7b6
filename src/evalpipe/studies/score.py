"""The studies the score stage runs: each ``scoring(params) -> ScorePart``
(:mod:`evalpipe.scoring.study`)."""

from __future__ import annotations

from evalpipe.studies.continuation import score as continuation
from evalpipe.studies.defences import score as defences
from evalpipe.studies.perplexity import score as perplexity

STUDIES = (defences.scoring, perplexity.scoring, continuation.scoring)
