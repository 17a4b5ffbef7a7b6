"""String equality of the normalised prediction and gold (1.0 or 0.0)."""

from __future__ import annotations

from evalpipe.answers.metrics.base import AnswerMetric


def exact_match(prediction: str | None, gold: str | None) -> bool:
    """String equality of already-normalised prediction and gold; None never matches.

    >>> exact_match("b", "b"), exact_match(None, "b"), exact_match("", "")
    (True, False, False)
    """
    return prediction is not None and gold is not None and prediction != "" and prediction == gold


METRIC = AnswerMetric(score=exact_match)
