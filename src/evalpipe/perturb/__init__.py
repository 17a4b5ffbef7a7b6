"""Character-level perturbation: script classes, operations, hashed seeds, occurrence finders
(English regex tokens, Japanese UniDic tokens), typo models (uniform, keyboard: QWERTY and romaji
slips; transpositions; kana-kanji conversion slips) and the frame-level ``perturb_frame``."""

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
    MODELS,
    OPS,
    RULES,
    Operation,
    Probabilities,
    Skipped,
    decide,
    occurrence_digest,
    row_seed,
    validate_probabilities,
)
from evalpipe.perturb.scripts import INVENTORIES, char_class

__all__ = [
    "CARRIED_COLUMNS",
    "INVENTORIES",
    "MODELS",
    "OPS",
    "PERTURBATION_TYPE",
    "RULES",
    "EnglishFinder",
    "JapaneseFinder",
    "Operation",
    "PerturbResult",
    "Probabilities",
    "Skipped",
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
