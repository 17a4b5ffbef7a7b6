"""The studies' report sections, in page order within each place (:mod:`evalpipe.report.study`)."""

from __future__ import annotations

from evalpipe.studies.continuation.report import PART as CONTINUATION
from evalpipe.studies.control.report import PART as CONTROL
from evalpipe.studies.defences.report import PART as DEFENCES
from evalpipe.studies.dose.report import PART as DOSE
from evalpipe.studies.formats.report import PART as FORMATS
from evalpipe.studies.ladder.report import PART as LADDER
from evalpipe.studies.perplexity.report import PART as PERPLEXITY
from evalpipe.studies.readouts.report import PART as READOUTS
from evalpipe.studies.repeats.report import PART as REPEATS
from evalpipe.studies.targeting.report import PART as TARGETING
from evalpipe.studies.token_split.report import PART as TOKEN_SPLIT

STUDIES = (
    DOSE,
    LADDER,
    PERPLEXITY,
    READOUTS,
    TARGETING,
    REPEATS,
    DEFENCES,
    CONTROL,
    TOKEN_SPLIT,
    FORMATS,
    CONTINUATION,
)
