"""Answer metrics: how a parsed prediction is compared with a benchmark's gold answers (a spec's
``metric``).

One module per metric, named as registered in
:data:`evalpipe.registries.ANSWER_METRICS`, holding ``METRIC = AnswerMetric(...)``.
Adding a metric is its module and its name in the registry (docs/extending.md).
"""

from __future__ import annotations

import functools
from importlib import import_module

from evalpipe.answers.metrics.base import AnswerMetric
from evalpipe.registries import ANSWER_METRICS


@functools.cache
def answer_metric(name: str) -> AnswerMetric:
    """The registered answer metric ``name``.

    >>> answer_metric(ANSWER_METRICS.names[0]).best("b", ["a", "b"])
    1.0
    """
    ANSWER_METRICS.check(name, where="metric")
    return import_module(f"evalpipe.answers.metrics.{name}").METRIC
