"""Character-level perturbation: script classes, operations, hashed seeds, occurrence finders
(English regex tokens, Japanese UniDic tokens), typo models (uniform, keyboard: QWERTY and romaji
slips; transpositions; kana-kanji conversion slips) and the frame-level ``perturb_frame``, which
states each row's typo facts (``n_typos, n_edited_chars, op, script``) once."""

from evalpipe.perturb.attribution import MIXED, TypoFacts, edited_chars, typo_facts
from evalpipe.perturb.columns import CARRIED_COLUMNS, PERTURBATION_TYPE, TYPO_TYPES
from evalpipe.perturb.english import EnglishFinder
from evalpipe.perturb.frame import PerturbResult, perturb_frame
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
from evalpipe.perturb.scripts import INVENTORIES, SCRIPTS, char_class, edit_script
from evalpipe.perturb.targets import Target, read_targets

__all__ = [
    "CARRIED_COLUMNS",
    "INVENTORIES",
    "MIXED",
    "MODELS",
    "OPS",
    "PERTURBATION_TYPE",
    "RULES",
    "SCRIPTS",
    "TYPO_TYPES",
    "EnglishFinder",
    "JapaneseFinder",
    "Operation",
    "PerturbResult",
    "Probabilities",
    "Skipped",
    "Target",
    "Tokenizer",
    "TypoFacts",
    "char_class",
    "decide",
    "edit_script",
    "edited_chars",
    "occurrence_digest",
    "perturb_frame",
    "read_targets",
    "row_seed",
    "typo_facts",
    "validate_probabilities",
]
