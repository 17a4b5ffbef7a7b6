"""The names the scored tables share, declared once: row labels and the pairs table's columns.

Every module that reads a scored view, the pairs table (:mod:`evalpipe.scoring.pairs`) or an
impact table takes these from here, so a label means the same thing in every file.
"""

from __future__ import annotations

from evalpipe.arms import ORIGINAL, TYPO  # noqa: F401  (the row labels, declared in evalpipe.arms)

# ``op`` / ``script`` of a row whose edits are of several kinds.
MIXED = "mixed"
# ``scope`` of an impact row made of all of a language's benchmarks.
POOLED = "pooled"

# data/scored/<model>/pairs.parquet, in this order (docs/architecture.md, "Artifacts"): one row per
# (view, example_id, variant, word_rank, draw, condition); ``_original`` columns hold the clean
# prompt's answer, ``_perturbed`` the arm's.
PAIR_COLUMNS = [
    "model", "view", "method", "benchmark", "subtask", "language", "example_id", "cluster",
    "variant", "word_rank", "draw", "condition", "n_typos", "n_edited_chars", "op", "script",
    "occurrences", "perturbed_occurrences", "prompt_chars", "tokens_before", "tokens_after",
    "correct_original", "correct_perturbed", "score_original", "score_perturbed",
    "prediction_original", "prediction_perturbed", "parse_status_original",
    "parse_status_perturbed", "finish_reason_original", "finish_reason_perturbed",
]  # fmt: skip
