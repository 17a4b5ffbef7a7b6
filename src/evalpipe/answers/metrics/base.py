"""What an answer metric is (:class:`AnswerMetric`); the metrics are the modules beside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerMetric:
    """``score(prediction, gold) -> float`` in [0, 1] (an unparsed prediction is None; so is a
    missing gold); a row scores its best over the accepted golds."""

    score: Callable[[str | None, str | None], float]

    def best(self, prediction: str | None, golds: Sequence[str | None]) -> float:
        """The best score of ``prediction`` over all accepted gold answers (0 without golds)."""
        return max((float(self.score(prediction, g)) for g in golds), default=0.0)
