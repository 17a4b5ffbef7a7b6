"""Perplexity's requests: the plain arm's perturbable text in its prompt context, scored by the
engine's log-likelihood path (:mod:`evalpipe.inference.perplexity`); a server without prompt
log-probabilities leaves its rows unscored (counted), it does not stop the run."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalpipe.inference.perplexity import perplexity_columns, perplexity_requests, perturbable_spans
from evalpipe.inference.plan import BenchmarkInput, GenerationPart, RowRequests
from evalpipe.inference.types import Loglikelihood
from evalpipe.paths import ProjectPaths

NAME = "perplexity"


def _requests(bench: BenchmarkInput, plain: list[str], prompts: list[str]) -> RowRequests:
    # the defence arms' prompts follow the plain ones: not scored
    spans = perturbable_spans(
        bench.spec, bench.rows, plain, bench.fewshot, style=bench.style, n_shots=bench.n_shots
    )
    return perplexity_requests(prompts, [*spans, *[None] * (len(prompts) - len(plain))])


def _columns(requests: RowRequests, results: list[Loglikelihood]) -> tuple[pd.DataFrame, dict]:
    columns = perplexity_columns(requests, results)
    counts = {
        "requests": sum(len(row) for row in requests),
        "rows_scored": int(columns["ppl_logprob"].notna().sum()),
        "rows_unscored": int(columns["ppl_logprob"].isna().sum()),
    }
    return columns, counts


def _summary(engine: Any) -> dict:
    # requests a server answered without prompt log-probabilities (no echo): not scored
    return {"perplexity_unsupported": engine.unsupported}


def generation(params: dict, paths: ProjectPaths, *, slug: str, source: str) -> GenerationPart:
    """The part of ``scoring.perplexity``."""
    return GenerationPart(
        NAME,
        enabled=bool(params["scoring"]["perplexity"]),
        requests=_requests,
        columns=_columns,
        summary=_summary,
    )
