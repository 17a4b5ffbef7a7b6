"""The studies the generate stage runs, in order: each ``generation(params, paths, *, slug,
source) -> GenerationPart`` (:mod:`evalpipe.inference.plan`); their arms follow the plain rows
in this order."""

from __future__ import annotations

from evalpipe.studies.continuation import generate as continuation
from evalpipe.studies.defences import generate as defences
from evalpipe.studies.formats import generate as formats
from evalpipe.studies.perplexity import generate as perplexity
from evalpipe.studies.repeats import generate as repeats
from evalpipe.studies.targeting import generate as targeting

STUDIES = (
    defences.generation,
    perplexity.generation,
    repeats.generation,
    formats.generation,
    targeting.generation,
    continuation.generation,
)
