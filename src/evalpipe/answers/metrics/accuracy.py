"""A classification answer's correctness: exact match on the label (1.0 or 0.0)."""

from __future__ import annotations

from evalpipe.answers.metrics.base import AnswerMetric
from evalpipe.answers.metrics.exact_match import exact_match

METRIC = AnswerMetric(score=exact_match)
