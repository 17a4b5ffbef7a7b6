"""Answer parsing, scoring and robustness statistics (docs/scoring.md).

The names below load on first use (PEP 562): importing one submodule, such as
``evalpipe.scoring.answer_types`` from the benchmark specs, must not pull in scikit-learn and
SciPy (seconds per stage process; benchmarks/pipeline_wall.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "PARSERS": "parsers",
    "ImpactSettings": "word_impact",
    "ParseResult": "parsers",
    "accuracy_by_rate": "robustness",
    "accuracy_score": "metrics",
    "benchmark_summary": "robustness",
    "benjamini_hochberg": "multiple_testing",
    "best_score": "metrics",
    "build_impact": "word_impact",
    "char_f1": "metrics",
    "classification_report": "metrics",
    "error_preview": "scorer",
    "exact_match": "metrics",
    "holm": "multiple_testing",
    "mcnemar_exact": "robustness",
    "normalise_gold": "parsers",
    "paired_stats": "robustness",
    "parse_answer": "parsers",
    "pdr": "robustness",
    "score_frame": "scorer",
    "top_words": "word_impact",
    "word_table": "robustness",
}

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

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalpipe.scoring' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"evalpipe.scoring.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
