"""llm-jp-eval's char_f1: ``fuzz.token_sort_ratio(pred, gold) / 100`` (lowercase, non-word
characters to spaces, tokens sorted, Indel similarity). It is not a bag-of-characters F1. We use
rapidfuzz with ``processor=rapidfuzz.utils.default_process``, which reproduces fuzzywuzzy's
preprocessing; unlike fuzzywuzzy the ratio is not rounded to an integer (about 0.7% of random pairs
differ from fuzzywuzzy by that rounding, by at most 0.005).
"""

from __future__ import annotations

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from evalpipe.answers.metrics.base import AnswerMetric


def char_f1(prediction: str | None, gold: str | None) -> float:
    """llm-jp-eval's char_f1: token-sort similarity in [0, 1].

    Parameters
    ----------
    prediction, gold : strings (None or empty prediction scores 0).

    Returns
    -------
    float

    Examples
    --------
    >>> char_f1("Tokyo", "tokyo")
    1.0
    >>> char_f1("徳川家康。", "徳川家康")
    1.0
    """
    if not prediction or gold is None:
        return 0.0
    return float(fuzz.token_sort_ratio(prediction, gold, processor=default_process)) / 100.0


METRIC = AnswerMetric(score=char_f1)
