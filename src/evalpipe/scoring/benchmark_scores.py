"""One benchmark's outputs scored into its views: the generated answers parsed and scored, the
log-likelihood views where the benchmark has fixed choices, their agreement, and which views
take classification metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.inference.loglikelihood import not_applicable_reason
from evalpipe.scoring.loglikelihood import method_agreement, score_loglikelihood
from evalpipe.scoring.scorer import score_frame
from evalpipe.scoring.summaries import ClassificationSetup
from evalpipe.scoring.views import view_name


@dataclass
class BenchmarkScores:
    """A benchmark's scored views (``{view: frame}``), each view's classification setup, and
    the agreement of generated and log-likelihood answers (method ``both``)."""

    views: dict[str, pd.DataFrame] = field(default_factory=dict)
    classification: dict[str, ClassificationSetup] = field(default_factory=dict)
    agreement: dict[str, Any] | None = None


def score_benchmark(
    outputs: pd.DataFrame,
    spec: BenchmarkSpec,
    *,
    name: str,
    scoring: dict[str, Any],
    style: str,
    source: str,
) -> BenchmarkScores:
    """Score one benchmark's outputs under ``scoring`` (the params section: ``method`` and the
    answer types' scoring-time options, e.g. json_label's ``sentiment_strict``)."""
    method = str(scoring["method"])
    # log-likelihood views where the benchmark has fixed choices (generate wrote ll_* then);
    # the generated answers otherwise, and always with method generate or both
    by_ll = method != "generate" and not_applicable_reason(spec, style=style) is None
    out = BenchmarkScores()
    if method != "loglikelihood" or not by_ll:

        def parser_options(subtask: str | None) -> dict:
            return spec.parser_options(subtask, scoring=scoring)

        out.views[view_name(name, "generate")] = score_frame(
            outputs,
            parser=spec.parser,
            metric=spec.metric,
            parser_options=parser_options,
            source=source,
            progress=True,
        )
    if by_ll:
        for ll_method, normalised in (("loglikelihood", False), ("loglikelihood_norm", True)):
            out.views[view_name(name, ll_method)] = score_loglikelihood(
                outputs, spec, normalised=normalised, source=source, scoring=scoring
            )
        if name in out.views:  # both: how often the two ways of answering agree
            out.agreement = method_agreement(
                out.views[name], out.views[view_name(name, "loglikelihood")]
            )
    if spec.labels and spec.answer.classification:
        for view in out.views:
            out.classification[view] = ClassificationSetup(
                labels=list(spec.labels),
                explicit_invalid=spec.answer.has_invalid_class(
                    spec.parser_options(scoring=scoring)
                ),
            )
    return out
