"""A model's generation run as typed objects: each benchmark's arms and requests
(:class:`BenchmarkPlan`), what a study adds to them (:class:`GenerationPart`), one batch per
request kind through the engine, and each benchmark's outputs table and counts.

The generate stage reads its inputs into :class:`BenchmarkInput`, asks :func:`plan_benchmark`
for the plans, :func:`run_plans` for the results and :func:`benchmark_outputs` for what it
writes. A study (:mod:`evalpipe.studies`) adds arms (rows with their prompts, e.g. a defence's
warned and corrected copies) and log-likelihood requests scored beside the answers (e.g. the
perplexity of the perturbable text) through its ``GenerationPart``; nothing here names one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from evalpipe.benchmarks import build_prompts
from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.errors import InputError
from evalpipe.inference.cache import cache_key
from evalpipe.inference.generate import (
    FIRST_TOKEN_COLUMN,
    answer_budget,
    first_token_column,
    generation_counts,
    make_requests,
    not_sent_counts,
    outputs_frame,
    outputs_table,
    sampling_settings,
    truncated_share,
)
from evalpipe.inference.loglikelihood import loglikelihood_columns, loglikelihood_requests
from evalpipe.inference.tiny import TINY_RANDOM_NOTE
from evalpipe.inference.types import (
    Generation,
    GenerationRequest,
    Loglikelihood,
    LoglikelihoodRequest,
)
from evalpipe.inference.word_tokens import (
    WordTokenCounter,
    edit_token_columns,
    token_arrays,
    uncounted_message,
)
from evalpipe.model_list import model_labels
from evalpipe.params_schema import default_of

log = logging.getLogger("stages.generate")
TRUNCATION_WARNING = 0.05  # warn when more of a benchmark's outputs than this hit their budget
RowRequests = list[list[LoglikelihoodRequest]]  # per prompt, its log-likelihood requests


@dataclass(frozen=True)
class BenchmarkInput:
    """One benchmark's perturbed rows and what its prompts are rendered with."""

    name: str
    path: Path  # the perturbed set (its Parquet schema types the outputs)
    rows: pd.DataFrame
    spec: BenchmarkSpec
    fewshot: pd.DataFrame | None
    style: str
    n_shots: int
    language: str  # as benchmarks.suites declares it

    def prompts(
        self, rows: pd.DataFrame, *, shots_draw: int = 0, template: str | None = None
    ) -> list[str]:
        """The user-message prompts of ``rows`` (these rows, or an arm's copy of them), with
        the ``shots_draw``-th selection of few-shot demonstrations and the instruction of the
        spec's template ``template`` (None: its own)."""
        return build_prompts(
            self.spec, rows, self.fewshot, style=self.style, n_shots=self.n_shots,
            shots_draw=shots_draw, template=template,
        )  # fmt: skip


@dataclass(frozen=True)
class Arm:
    """Rows generated beside the plain ones (their ``condition`` names the arm), with prompts;
    ``seed`` replaces the run's sampling seed for the arm's requests when ``reseeded``."""

    rows: pd.DataFrame
    prompts: list[str]
    seed: int | None = None
    reseeded: bool = False


@dataclass(frozen=True)
class Sampling:
    """The run's sampling settings (``sampling``, ``scoring.method``)."""

    temperature: float
    max_tokens: int | None  # overrides every benchmark's budget when set
    seed: int | None
    method: str  # generate | loglikelihood | both
    top_logprobs: int = default_of("scoring.top_logprobs")  # first-token top-k per answer

    @classmethod
    def of(cls, params: dict, *, source: str) -> Sampling:
        """The run's settings from params.yaml's ``sampling`` and ``scoring`` sections."""
        temperature, override, seed = sampling_settings(params["sampling"], source=source)
        scoring = params["scoring"]
        method, top_k = str(scoring["method"]), int(scoring["top_logprobs"])
        return cls(temperature, override, seed, method, top_logprobs=top_k)


def _no_arms(bench: BenchmarkInput, prompts: list[str]) -> list[Arm]:
    return []


@dataclass(frozen=True)
class GenerationPart:
    """What one study adds to generation once its settings are read.

    Attributes
    ----------
    name : the study's name (keys its requests and counts).
    enabled : whether the study is on in this run.
    arms : ``arms(bench, plain_prompts) -> [Arm, ...]``: rows generated after the plain ones.
    requests : ``requests(bench, plain_prompts, prompts) -> RowRequests``: log-likelihood
        requests per prompt of every arm (``[]`` for a prompt it does not score), scored
        through the engine with ``unsupported_ok`` (a server without prompt log-probabilities
        leaves them unscored, counted).
    columns : ``columns(requests, results) -> (DataFrame, counts)``: the columns its requests
        add to the outputs, and the benchmark's counts under its name in generation.json.
    summary : ``summary(engine) -> dict``: keys it adds to generation.json.
    model_arms : ``model_arms(engine, bench, plain_prompts, sampling) -> [Arm, ...]``: arms
        that depend on the model's own answers (e.g. words ranked by their importance to it),
        built before the batch; every request it sends goes through the engine's cache.
    finish : ``finish(names)`` after every benchmark is written (files it passes on).
    follow : ``follow(engine, results, progress=...)`` after every benchmark is written: requests
        that depend on the plain answers (a continuation of them), sent through the same engine.
    """

    name: str
    enabled: bool = True
    arms: Callable[[BenchmarkInput, list[str]], list[Arm]] = _no_arms
    requests: Callable[[BenchmarkInput, list[str], list[str]], RowRequests] | None = None
    columns: Callable[[RowRequests, list[Loglikelihood]], tuple[pd.DataFrame, dict]] | None = None
    summary: Callable[[Any], dict] | None = None
    finish: Callable[[list[str]], None] | None = None
    model_arms: Callable[[Any, BenchmarkInput, list[str], Sampling], list[Arm]] | None = None
    follow: Callable[..., None] | None = None


@dataclass
class BenchmarkPlan:
    """Every request of one benchmark, aligned with its rows (the plain rows, then each arm's)."""

    bench: BenchmarkInput
    rows: pd.DataFrame
    prompts: list[str]
    generate: list[GenerationRequest]
    loglikelihood: RowRequests | None  # choice scores (scoring.method loglikelihood / both)
    loglikelihood_reason: str
    studies: dict[str, RowRequests] = field(default_factory=dict)


@dataclass
class BenchmarkResult:
    """What the engine returned for one plan, aligned with its requests."""

    plan: BenchmarkPlan
    generations: list[Generation]
    loglikelihood: list[Loglikelihood]
    studies: dict[str, list[Loglikelihood]]


def choice_lists(column: list | None) -> list | None:
    """The rows' choice texts as plain lists (None for rows without choices, e.g. NLI).

    >>> choice_lists([["a", "b"], None, []])
    [['a', 'b'], None, None]
    """
    if column is None:
        return None
    out: list[list[str] | None] = []
    for value in column:
        if value is None or (isinstance(value, float) and value != value):
            out.append(None)
        else:
            out.append([str(v) for v in value] if len(value) else None)
    return out if any(v is not None for v in out) else None


def answer_requests(
    bench: BenchmarkInput, prompts: list[str], sampling: Sampling, *, seed: Any = None
) -> list[GenerationRequest]:
    """The generation requests of ``prompts`` of one benchmark (its budget, schema and stops),
    at ``seed`` when given (a reseeded arm), else at ``sampling.seed``."""
    spec, style = bench.spec, bench.style
    return make_requests(
        prompts,
        max_tokens=answer_budget(spec.max_tokens(style), override=sampling.max_tokens),
        temperature=sampling.temperature,
        json_schema=spec.json_schema,
        seed=sampling.seed if seed is None else seed,
        stop=spec.stop(style),
        top_logprobs=sampling.top_logprobs,
    )


def plan_benchmark(
    bench: BenchmarkInput,
    *,
    sampling: Sampling,
    studies: Sequence[GenerationPart],
    engine: Any = None,
) -> BenchmarkPlan:
    """The arms and every request of one benchmark (``engine``: for the studies whose arms
    depend on the model's answers, ``GenerationPart.model_arms``)."""
    spec, style = bench.spec, bench.style
    plain = bench.prompts(bench.rows)
    arms = [Arm(bench.rows, plain)]
    for study in studies:
        arms += study.arms(bench, plain)
        if study.model_arms is not None:
            arms += study.model_arms(engine, bench, plain, sampling)
    rows = pd.concat([arm.rows for arm in arms], ignore_index=True)
    prompts = [p for arm in arms for p in arm.prompts]
    requests = [
        request
        for arm in arms
        for request in answer_requests(
            bench, arm.prompts, sampling, seed=arm.seed if arm.reseeded else None
        )
    ]
    ll_requests, ll_reason = None, "scoring.method is generate"
    if sampling.method != "generate":
        choices = rows["choices"].tolist() if "choices" in rows.columns else None
        ll_requests, ll_reason = loglikelihood_requests(
            spec, prompts, style=style, choices=choice_lists(choices)
        )
    if sampling.method == "loglikelihood" and ll_requests is not None:
        requests = []  # scored by log-likelihood only: nothing to generate
    plan = BenchmarkPlan(bench, rows, prompts, requests, ll_requests, ll_reason)
    for study in studies:
        if study.requests is not None:
            plan.studies[study.name] = study.requests(bench, plain, prompts)
    return plan


def _split(results: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    out, at = [], 0
    for n in sizes:
        out.append(list(results[at : at + n]))
        at += n
    return out


def run_plans(
    engine: Any, plans: Sequence[BenchmarkPlan], *, progress: bool
) -> list[BenchmarkResult]:
    """Every plan's requests through ``engine``, one batch per kind over all benchmarks (the
    answers, the choice scores, then each study's scores), so the engine sees every miss at once.
    """
    generations = engine.generate([r for p in plans for r in p.generate], progress=progress)
    sizes = [len(p.generate) for p in plans]
    gens = _split(generations, sizes)
    ll_flat = [r for p in plans if p.loglikelihood for row in p.loglikelihood for r in row]
    ll = engine.loglikelihood(ll_flat, progress=progress) if ll_flat else []
    ll_sizes = [sum(len(row) for row in p.loglikelihood or ()) for p in plans]
    lls = _split(ll, ll_sizes)
    studies: list[dict[str, list[Loglikelihood]]] = [{} for _ in plans]
    names = list(dict.fromkeys(name for p in plans for name in p.studies))
    for name in names:
        flat = [r for p in plans for row in p.studies.get(name, ()) for r in row]
        scored = engine.loglikelihood(flat, progress=progress, unsupported_ok=True) if flat else []
        sizes = [sum(len(row) for row in p.studies.get(name, ())) for p in plans]
        for i, part in enumerate(_split(scored, sizes)):
            studies[i][name] = part
    return [BenchmarkResult(p, gens[i], lls[i], studies[i]) for i, p in enumerate(plans)]


def benchmark_outputs(
    result: BenchmarkResult,
    *,
    slug: str,
    identity: Any,
    schema: pa.Schema,
    counter: WordTokenCounter,
    studies: Sequence[GenerationPart],
    seen: set[str],
) -> tuple[pa.Table, dict[str, Any]]:
    """One benchmark's outputs table and its counts in generation.json (``seen``: the cache
    keys counted for earlier benchmarks, updated: a repeated request is generated once)."""
    plan = result.plan
    requests = plan.generate
    if requests:
        gens = result.generations
    else:  # log-likelihood only: the rows carry no generated answer
        gens = [Generation("", "not_generated", 0, 0)] * len(plan.prompts)
    frame = outputs_frame(plan.rows, plan.prompts, gens, model=slug, model_id=identity.label)
    if any(r.top_logprobs for r in requests):
        frame[FIRST_TOKEN_COLUMN] = first_token_column(gens)
    if plan.loglikelihood is not None:
        ll = loglikelihood_columns(plan.bench.spec, plan.loglikelihood, result.loglikelihood)
        frame = pd.concat([frame, ll], axis=1)
    study_counts = {}
    for study in studies:
        if study.name in plan.studies and study.columns is not None:
            columns, counts = study.columns(plan.studies[study.name], result.studies[study.name])
            frame = pd.concat([frame, columns], axis=1)
            study_counts[study.name] = counts
    table = outputs_table(frame, schema)
    tokens, token_counts = edit_token_columns(plan.rows, counter)
    if message := uncounted_message(plan.bench.name, token_counts):
        log.warning(message)
    for column, values in token_arrays(tokens).items():
        table = table.append_column(column, values)
    log_output_notes(plan.bench.name, gens, requests)
    not_sent = not_sent_counts(gens)
    counts = {
        "prompts": len(plan.prompts),
        **generation_counts(
            [cache_key(identity, r) for r in requests], gens if requests else [], seen=seen
        ),
        "max_tokens": requests[0].max_tokens if requests else 0,
        "stop": list(requests[0].stop) if requests else [],
        "truncated": truncated_share(gens)[0],
        **not_sent,
        "structured_output": bool(requests and requests[0].json_schema),
        "loglikelihood_requests": sum(len(r) for r in plan.loglikelihood)
        if plan.loglikelihood
        else 0,
        "loglikelihood": "scored" if plan.loglikelihood is not None else plan.loglikelihood_reason,
        **study_counts,
        "word_tokens": token_counts,
    }
    return table, counts


def log_output_notes(
    name: str, gens: Sequence[Generation], requests: Sequence[GenerationRequest]
) -> None:
    """Log how many outputs hit their budget (a note) and how many got no answer (a warning)."""
    truncated, share = truncated_share(gens)
    if share > TRUNCATION_WARNING:
        # Only a note: a spec may set a one-token budget on purpose (a choice label), and only
        # the score stage knows whether a cut answer went unparsed; it warns when one did.
        log.info(
            "%s: %d of %d outputs (%.0f%%) stopped at the %d-token budget (the score stage "
            "warns if that left answers unparsed)",
            name,
            truncated,
            len(gens),
            100 * share,
            requests[0].max_tokens,
        )
    not_sent = not_sent_counts(gens)
    if any(not_sent.values()):
        log.warning(
            "%s: %s prompts got no answer (%s); they are scored as unparsed",
            name,
            sum(not_sent.values()),
            ", ".join(f"{k} {v}" for k, v in not_sent.items()),
        )


def read_summary(path: Path, name: str) -> dict:
    """perturb@<name>'s summary (data/perturbed/<name>.summary.json), passed on by generate."""
    if not path.exists():
        raise InputError(f"{path}: not found (run `dvc repro perturb@{name}`)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not a JSON object ({exc.msg}); rerun perturb@{name}") from None


def generation_summary(
    engine: Any,
    *,
    slug: str,
    model_cfg: dict,
    style: str,
    benchmarks: dict[str, dict],
    studies: Sequence[GenerationPart],
) -> dict[str, Any]:
    """data/outputs/<model>/generation.json: the run's counts (never its timings), the model's
    identity and labels, each benchmark's counts and what the studies add."""
    smoke = engine.is_smoke_test_model
    out = {
        **engine.last_stats.to_dict(),
        "model": slug,
        "model_id": engine.identity.label,
        "backend": model_cfg["backend"],
        "labels": model_labels(model_cfg),
        "engine_args": dict(model_cfg.get("engine_args") or {}),
        "smoke_test_model": smoke,
        "note": TINY_RANDOM_NOTE if smoke else "",
        "prompt_style": style,
        "benchmarks": benchmarks,
    }
    for study in studies:
        out.update(study.summary(engine) if study.summary else {})
    return out


def run_line(engine: Any, *, slug: str, benchmarks: int, out: object) -> str:
    """The stage's one-line summary of a run, with its wall-clock figures (never written)."""
    stats, smoke = engine.last_stats, engine.is_smoke_test_model
    started = f"started in {stats.engine_start_seconds:.1f} s" if stats.engine_started else ""
    return (
        f"generate@{slug}: {stats.prompts} prompts ({stats.unique_prompts} unique) over "
        f"{benchmarks} benchmarks, {stats.cache_hits} cache hits, {stats.misses} generated "
        f"({stats.output_tokens} tokens in {stats.generation_seconds:.2f} s, "
        f"{stats.tokens_per_s:.0f} tokens/s), engine {started or 'not started'}, "
        f"model {engine.identity.label}"
        f"{' (smoke test: chance accuracy)' if smoke else ''} -> {out}"
    )
