"""Answer parsing, scoring and robustness statistics (docs/scoring.md)."""

from evalpipe.scoring.metrics import (
    accuracy_score,
    best_score,
    char_f1,
    classification_report,
    exact_match,
)
from evalpipe.scoring.parsers import PARSERS, ParseResult, normalise_gold, parse_answer
from evalpipe.scoring.robustness import (
    accuracy_by_rate,
    benchmark_summary,
    mcnemar_exact,
    paired_stats,
    pdr,
    word_table,
)
from evalpipe.scoring.scorer import error_preview, score_frame

__all__ = [
    "PARSERS",
    "ParseResult",
    "accuracy_by_rate",
    "accuracy_score",
    "benchmark_summary",
    "best_score",
    "char_f1",
    "classification_report",
    "error_preview",
    "exact_match",
    "mcnemar_exact",
    "normalise_gold",
    "paired_stats",
    "parse_answer",
    "pdr",
    "score_frame",
    "word_table",
]
