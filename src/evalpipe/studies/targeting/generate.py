"""Targeting's arms: importance first, then the targeted rows, per model.

For each benchmark, the model answers the plain arm's clean prompts (the same requests as the
plain rows', so the answers come from, and go to, the generation cache); then the engine scores
that answer after the clean prompt and after each one-word-typo prompt (log-likelihood requests,
cached like generations); the drops rank the words (:mod:`evalpipe.perturb.targeting`), and the
targeted and restored arms are perturbed in that order. An example whose clean answer is empty
or whose scores are missing (a server without prompt log-probabilities) gets no targeted rows:
counted under ``targeting`` in generation.json.
"""

from __future__ import annotations

from typing import Any

from evalpipe.errors import InputError
from evalpipe.inference.plan import Arm, BenchmarkInput, GenerationPart, Sampling, answer_requests
from evalpipe.inference.types import LoglikelihoodRequest
from evalpipe.paths import ProjectPaths
from evalpipe.perturb import validate_probabilities
from evalpipe.perturb.count import validate_counts
from evalpipe.perturb.eligibility import from_params as eligibility_from_params
from evalpipe.perturb.targeting import (
    candidate_edits,
    clean_rows,
    importances,
    occluded_fields,
    targeted_arms,
    validate_targeting,
)

NAME = "targeting"


def generation(params: dict, paths: ProjectPaths, *, slug: str, source: str) -> GenerationPart:
    """The part of ``perturb.targeting: importance`` (count design)."""
    cfg = params["perturb"]
    enabled = validate_targeting(cfg["targeting"], source=source) == "importance"
    if enabled and cfg["design"] != "count":
        raise InputError(
            f"{source}: perturb.targeting: importance ranks the words of the count design; "
            f"expected perturb.design: count, found {cfg['design']!r}"
        )
    if enabled and params["scoring"]["method"] == "loglikelihood":
        raise InputError(
            f"{source}: perturb.targeting: importance scores the model's own generated clean "
            "answer; expected scoring.method: generate or both, found loglikelihood"
        )
    counts: dict[str, dict[str, int]] = {}

    def model_arms(
        engine: Any, bench: BenchmarkInput, plain: list[str], sampling: Sampling
    ) -> list[Arm]:
        settings = dict(
            probabilities=validate_probabilities(cfg, source=source),
            seed=params["seed"],
            eligibility=eligibility_from_params(cfg, source=source),
            source=str(bench.path),
        )
        clean = clean_rows(bench.rows)
        candidates = candidate_edits(clean, **settings)
        prompts = bench.prompts(clean)
        answers = engine.generate(answer_requests(bench, prompts, sampling), progress=False)
        keys = list(zip(clean["benchmark"].astype(str), clean["example_id"].astype(str),
                        strict=True))  # fmt: skip
        occluded, owners = [], []
        for j, key in enumerate(keys):
            if answers[j].output.strip():
                for edit in candidates.get(key, ()):
                    occluded.append(occluded_fields(clean["fields"].iloc[j], edit))
                    owners.append(j)
        occluded_rows = clean.iloc[owners].assign(fields=occluded) if owners else clean.iloc[:0]
        occluded_prompts = bench.prompts(occluded_rows) if owners else []
        requests: list[LoglikelihoodRequest] = []
        spans: dict[tuple[str, str], tuple[int, int]] = {}
        at = 0
        for j, key in enumerate(keys):
            answer = answers[j].output
            if not answer.strip():
                continue
            n = len(candidates.get(key, ()))
            spans[key] = (len(requests), n)
            requests.append(LoglikelihoodRequest(prompts[j], answer))
            requests += [LoglikelihoodRequest(p, answer) for p in occluded_prompts[at : at + n]]
            at += n
        results = engine.loglikelihood(requests, progress=False, unsupported_ok=True)
        scores, unscored = {}, 0
        for key, (first, n) in spans.items():
            values = importances(
                results[first].logprob, [r.logprob for r in results[first + 1 : first + 1 + n]]
            )
            if values is None:
                unscored += 1
                continue
            edits = candidates[key]
            scores[key] = {(e.field, e.occurrence): v for e, v in zip(edits, values, strict=True)}
        counts[bench.name] = {
            "examples": len(keys),
            "empty_answer": len(keys) - len(spans),
            "unscored": unscored,
            "ranked": len(scores),
            "loglikelihood_requests": len(requests),
        }
        frames = targeted_arms(
            clean, scores, candidates,
            counts=validate_counts(cfg["counts"], source=source), **settings,
        )  # fmt: skip
        return [Arm(frame, bench.prompts(frame)) for frame in frames]

    def summary(engine: Any) -> dict:
        return {NAME: dict(sorted(counts.items()))}

    return GenerationPart(NAME, enabled=enabled, model_arms=model_arms, summary=summary)
