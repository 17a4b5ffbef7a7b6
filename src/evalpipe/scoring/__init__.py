"""Answer parsing, scoring and robustness statistics (docs/scoring.md)."""

from evalpipe.scoring.metrics import (
    accuracy_score,
    best_score,
    char_f1,
    classification_report,
    exact_match,
)
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
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
from evalpipe.scoring.word_impact import ImpactSettings, build_impact, top_words

__all__ = [
    "PARSERS",
    "ImpactSettings",
    "ParseResult",
    "accuracy_by_rate",
    "accuracy_score",
    "benchmark_summary",
    "benjamini_hochberg",
    "best_score",
    "build_impact",
    "char_f1",
    "classification_report",
    "error_preview",
    "exact_match",
    "holm",
    "mcnemar_exact",
    "normalise_gold",
    "paired_stats",
    "parse_answer",
    "pdr",
    "score_frame",
    "top_words",
    "word_table",
]
