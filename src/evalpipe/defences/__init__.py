"""Defences against typos (docs/defences.md): input correctors (``spelling``, ``llm:<slug>``) that
rewrite the perturbable text word by word before the model reads it, and the typo warning
preamble. Each defence is one more arm (``condition``) of the outputs and the pairs table."""

from evalpipe.defences.correct import (
    CORRECTED_PREFIX,
    LLM_PREFIX,
    SPELLING,
    WARNED,
    Correction,
    SpellingCorrector,
    aligned_corrections,
    allowed,
    apply,
    condition_of,
    llm_prompt,
)
from evalpipe.defences.frame import (
    CORRECTION_TYPE,
    COUNT_KEYS,
    FieldText,
    add_counts,
    correction_counts,
    defended_rows,
    defended_table,
    field_texts,
    kept_corrections,
    restored,
    typo_spans,
)

__all__ = [
    "CORRECTED_PREFIX",
    "CORRECTION_TYPE",
    "COUNT_KEYS",
    "LLM_PREFIX",
    "SPELLING",
    "WARNED",
    "Correction",
    "FieldText",
    "SpellingCorrector",
    "add_counts",
    "aligned_corrections",
    "allowed",
    "apply",
    "condition_of",
    "correction_counts",
    "defended_rows",
    "defended_table",
    "field_texts",
    "kept_corrections",
    "llm_prompt",
    "restored",
    "typo_spans",
]
