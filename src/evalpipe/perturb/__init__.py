"""Character-level perturbation: script classes, operations, hashed seeds, occurrence finders
(English regex tokens, Japanese UniDic tokens) and the frame-level ``perturb_frame``."""

from evalpipe.perturb.english import EnglishFinder
from evalpipe.perturb.frame import (
    CARRIED_COLUMNS,
    PERTURBATION_TYPE,
    PerturbResult,
    Target,
    perturb_frame,
    read_targets,
)
from evalpipe.perturb.japanese import JapaneseFinder, Tokenizer
from evalpipe.perturb.ops import (
    OPS,
    Operation,
    Probabilities,
    decide,
    occurrence_digest,
    row_seed,
    validate_probabilities,
)
from evalpipe.perturb.scripts import INVENTORIES, char_class

__all__ = [
    "CARRIED_COLUMNS",
    "INVENTORIES",
    "OPS",
    "PERTURBATION_TYPE",
    "EnglishFinder",
    "JapaneseFinder",
    "Operation",
    "PerturbResult",
    "Probabilities",
    "Target",
    "Tokenizer",
    "char_class",
    "decide",
    "occurrence_digest",
    "perturb_frame",
    "read_targets",
    "row_seed",
    "validate_probabilities",
]
