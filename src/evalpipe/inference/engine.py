"""``make_engine``: one engine interface over the vLLM and OpenAI backends, with the generation
cache in front so that only misses reach a backend and a run with no misses never starts one."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tqdm import tqdm

from evalpipe.errors import InputError
from evalpipe.inference.backends import backend_kind
from evalpipe.inference.backends.base import int_setting
from evalpipe.inference.cache import CacheEntry, GenerationCache, cache_key, loglikelihood_key
from evalpipe.inference.engine_args import check_engine_args
from evalpipe.inference.tiny import TINY_RANDOM, TINY_RANDOM_NOTE
from evalpipe.inference.types import (
    NOT_SENT,
    Backend,
    Generation,
    GenerationRequest,
    Loglikelihood,
    LoglikelihoodRequest,
    ModelIdentity,
)
from evalpipe.params_schema import BACKENDS, default_of, engine_defaults

log = logging.getLogger(__name__)


@dataclass
class RunStats:
    """What one ``Engine.generate`` call did.

    ``to_dict`` (the counts) goes to data/outputs/<model>/generation.json; the wall-clock figures
    (``timings``) go to the stage's output only, so ``dvc metrics diff`` shows real changes.
    ``engine_start_seconds`` is the backend's start-up (for vLLM: importing vllm and loading the
    model); ``generation_seconds`` is the time inside the backend's generate calls without it,
    so ``tokens_per_s`` is the generation speed.
    """

    prompts: int = 0
    unique_prompts: int = 0
    cache_hits: int = 0
    misses: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    generation_seconds: float = 0.0
    engine_start_seconds: float = 0.0
    engine_started: bool = False

    TIMING_FIELDS = ("generation_seconds", "engine_start_seconds")

    @property
    def tokens_per_s(self) -> float:
        if self.generation_seconds <= 0:
            return 0.0
        return self.output_tokens / self.generation_seconds

    def to_dict(self) -> dict[str, Any]:
        """The counts, without wall-clock figures (those are in ``timings``)."""
        out = asdict(self)
        for key in self.TIMING_FIELDS:
            del out[key]
        return out

    def timings(self) -> dict[str, float]:
        """Wall-clock figures for logs: start-up, generation, output tokens per second."""
        return {
            "engine_start_seconds": round(self.engine_start_seconds, 3),
            "generation_seconds": round(self.generation_seconds, 3),
            "tokens_per_s": round(self.tokens_per_s, 2),
        }


class Engine:
    """A backend behind the generation cache.

    Parameters
    ----------
    backend:
        The model backend (started lazily, only when there are misses).
    cache:
        The generation cache, or None to always generate.
    checkpoint_every:
        Pending prompts per backend call; each call's results are checkpointed to the cache
        before the next starts, so a killed run loses at most one chunk (default: the params
        schema's ``model_defaults.checkpoint_every``).
    """

    def __init__(
        self,
        backend: Backend,
        cache: GenerationCache | None,
        *,
        checkpoint_every: int | None = None,
    ) -> None:
        if checkpoint_every is None:
            checkpoint_every = default_of("model_defaults.checkpoint_every")
        self.backend = backend
        self.cache = cache
        self.checkpoint_every = max(1, int(checkpoint_every))
        self.last_stats = RunStats()

    @property
    def identity(self) -> ModelIdentity:
        return self.backend.identity

    @property
    def is_smoke_test_model(self) -> bool:
        return self.identity.fields.get("name") == TINY_RANDOM

    def generate(
        self, requests: list[GenerationRequest], *, progress: bool = True
    ) -> list[Generation]:
        """Generate (or fetch from the cache) one result per request, in request order.

        Identical requests are generated once. Misses are sent in prompt order (so prompts that
        share a prefix run together) in chunks of ``checkpoint_every``.

        Parameters
        ----------
        requests:
            The requests; each is validated first (InputError names the bad one).
        progress:
            Show a tqdm bar over the pending prompts.

        Returns
        -------
        list[Generation]
            ``from_cache`` is True for results the cache already held.
        """
        for i, req in enumerate(requests):
            if not isinstance(req, GenerationRequest):
                raise InputError(
                    f"request {i}: expected a GenerationRequest, got {type(req).__name__}"
                )
            req.validate(i)
        stats = RunStats(prompts=len(requests))
        keys = [cache_key(self.identity, r) for r in requests]
        unique: dict[str, GenerationRequest] = {}
        for key, req in zip(keys, requests, strict=True):
            unique.setdefault(key, req)
        stats.unique_prompts = len(unique)
        found = self.cache.lookup(unique) if self.cache is not None else {}
        stats.cache_hits = len(found)
        pending = sorted(
            (k for k in unique if k not in found),
            key=lambda k: (unique[k].system or "", unique[k].prompt, k),
        )
        stats.misses = len(pending)
        generated: dict[str, Generation] = {}
        # a refusal that depends on a server's settings (not part of the identity) is not kept
        keep_refusals = bool(getattr(self.backend, "caches_refusals", True))
        if pending:
            if self.is_smoke_test_model:
                log.warning(TINY_RANDOM_NOTE)
            was_started = self.backend.started
            in_backend = 0.0  # cache writes between chunks are not generation time
            bar = tqdm(total=len(pending), desc="generate", unit="prompt", disable=not progress)
            chunks = self._chunks(pending)
            results = self._chunk_results("generate", [[unique[k] for k in c] for c in chunks])
            try:
                while True:
                    t0 = time.perf_counter()
                    step = next(results, None)
                    in_backend += time.perf_counter() - t0
                    if step is None:
                        break
                    chunk, outs = chunks[step[0]], step[1]
                    if self.cache is not None:
                        self.cache.add(
                            [
                                CacheEntry(k, self.identity.label, unique[k], g)
                                for k, g in zip(chunk, outs, strict=True)
                                if keep_refusals or g.finish_reason not in NOT_SENT
                            ]
                        )
                    for k, g in zip(chunk, outs, strict=True):
                        generated[k] = g
                        stats.prompt_tokens += g.prompt_tokens
                        stats.output_tokens += g.output_tokens
                    bar.update(len(chunk))
            finally:
                results.close()  # a backend with requests in flight stops them
                bar.close()
                if self.cache is not None:
                    self.cache.finish()
            stats.engine_started = True
            if not was_started:
                stats.engine_start_seconds = float(getattr(self.backend, "start_seconds", 0.0))
            stats.generation_seconds = max(0.0, in_backend - stats.engine_start_seconds)
        self.last_stats = stats
        return [found[k] if k in found else generated[k] for k in keys]

    def loglikelihood(
        self,
        requests: list[LoglikelihoodRequest],
        *,
        progress: bool = True,
        unsupported_ok: bool = False,
    ) -> list[Loglikelihood]:
        """Score (or fetch from the cache) each continuation's log-probability, in order.

        Scores share the generation cache: a row's ``prompt`` is the context, its ``output`` a
        JSON object ``{continuation, logprob, greedy}`` and its ``finish_reason``
        ``loglikelihood``, under a key that cannot collide with a generation's. Identical
        requests are scored once; misses go to the backend in chunks of ``checkpoint_every``.

        Parameters
        ----------
        requests:
            The requests; each is validated first.
        progress:
            Show a tqdm bar over the pending requests.
        unsupported_ok:
            A server without prompt log-probabilities gives NaN scores (not cached; counted in
            :attr:`unsupported`) instead of an EngineError: perplexity is optional, choice
            scores are not.

        Returns
        -------
        list[Loglikelihood]
        """
        for i, req in enumerate(requests):
            if not isinstance(req, LoglikelihoodRequest):
                raise InputError(
                    f"loglikelihood request {i}: expected a LoglikelihoodRequest, "
                    f"got {type(req).__name__}"
                )
            req.validate(i)
        keys = [loglikelihood_key(self.identity, r) for r in requests]
        unique: dict[str, LoglikelihoodRequest] = {}
        for key, req in zip(keys, requests, strict=True):
            unique.setdefault(key, req)
        found: dict[str, Loglikelihood] = {}
        if self.cache is not None:
            for key, gen in self.cache.lookup(unique).items():
                found[key] = _loglikelihood_from_cache(gen)
        pending = sorted(
            (k for k in unique if k not in found),
            key=lambda k: (unique[k].context, unique[k].continuation, k),
        )
        scored: dict[str, Loglikelihood] = {}
        keep_refusals = bool(getattr(self.backend, "caches_refusals", True))
        if pending:
            if self.is_smoke_test_model:
                log.warning(TINY_RANDOM_NOTE)
            bar = tqdm(total=len(pending), desc="loglikelihood", unit="req", disable=not progress)
            chunks = self._chunks(pending)
            try:
                for index, outs in self._chunk_results(
                    "loglikelihood",
                    [[unique[k] for k in c] for c in chunks],
                    unsupported_ok=unsupported_ok,
                ):
                    chunk = chunks[index]
                    if self.cache is not None:
                        self.cache.add(
                            [
                                CacheEntry(
                                    k,
                                    self.identity.label,
                                    GenerationRequest(prompt=unique[k].context, max_tokens=1),
                                    _loglikelihood_to_cache(unique[k], r),
                                )
                                for k, r in zip(chunk, outs, strict=True)
                                if keep_refusals or not math.isnan(r.logprob)
                            ]
                        )
                    scored.update(zip(chunk, outs, strict=True))
                    bar.update(len(chunk))
            finally:
                bar.close()
                if self.cache is not None:
                    self.cache.finish()
        return [found[k] if k in found else scored[k] for k in keys]

    def _chunks(self, pending: list[str]) -> list[list[str]]:
        every = self.checkpoint_every
        return [pending[start : start + every] for start in range(0, len(pending), every)]

    def _chunk_results(
        self, method: str, chunks: list[list[Any]], **kwargs: Any
    ) -> Generator[tuple[int, list[Any]], None, None]:
        """``(chunk index, results)`` per chunk: one after another through the backend, or, for
        a backend with ``map_chunks`` (data parallel, ``evalpipe.inference.ray_engine``), in the
        order its replicas finish them; each is checkpointed as it arrives. Generations go
        through ``generate_chunks``, so a backend that keeps requests in flight across the
        chunks' borders (the OpenAI-compatible one) does so; closing this generator stops them."""
        mapper = getattr(self.backend, "map_chunks", None)
        if mapper is not None:
            yield from mapper(method, chunks, **kwargs)
            return
        if method == "generate" and not kwargs and chunks:
            flat = [request for chunk in chunks for request in chunk]
            # every chunk but the last holds checkpoint_every requests (Engine._chunks)
            yield from enumerate(generate_chunks(self.backend, flat, len(chunks[0])))
            return
        call = getattr(self.backend, method)
        for index, chunk in enumerate(chunks):
            yield index, call(chunk, **kwargs)

    @property
    def unsupported(self) -> int:
        """Log-likelihood requests the backend could not score (a server without ``echo``)."""
        return int(getattr(self.backend, "unsupported", 0))

    def close(self) -> None:
        self.backend.close()


def generate_chunks(
    backend: Backend, requests: list[GenerationRequest], every: int
) -> Generator[list[Generation], None, None]:
    """The generations of each chunk of ``every`` requests, in order. A backend with a
    ``generate_chunks`` of its own (the OpenAI-compatible one) keeps requests in flight across
    the chunks' borders; any other gets one ``generate`` call per chunk."""
    own = getattr(backend, "generate_chunks", None)
    if own is not None:
        yield from own(requests, every)
        return
    for start in range(0, len(requests), every):
        yield backend.generate(requests[start : start + every])


def _loglikelihood_to_cache(request: LoglikelihoodRequest, result: Loglikelihood) -> Generation:
    # repr-exact floats through JSON: a cached score equals the computed one bit for bit
    payload = {
        "continuation": request.continuation,
        "logprob": result.logprob,
        "greedy": result.greedy,
    }
    return Generation(
        output=json.dumps(payload, ensure_ascii=False, sort_keys=True),
        finish_reason="loglikelihood",
        prompt_tokens=0,
        output_tokens=int(result.n_tokens),
    )


def _loglikelihood_from_cache(gen: Generation) -> Loglikelihood:
    payload = json.loads(gen.output)
    return Loglikelihood(
        logprob=float(payload["logprob"]),
        n_tokens=int(gen.output_tokens),
        greedy=bool(payload["greedy"]),
        from_cache=True,
    )


def make_backend(
    model_cfg: dict[str, Any], *, model_cache: str | os.PathLike[str] | None = None
) -> Backend:
    """The backend named by ``model_cfg['backend']`` (not started).

    Parameters
    ----------
    model_cfg:
        The ``model`` params section.
    model_cache:
        Where ``tiny-random`` is built.

    Returns
    -------
    Backend
        A ``VLLMBackend`` (a ``RayBackend`` of replicas of it when ``data_parallel_size`` is
        not 1) or an ``OpenAIBackend``.
    """
    if not isinstance(model_cfg, dict):
        raise InputError("params.yaml: model: expected a mapping")
    model_cfg = {**engine_defaults(), **model_cfg}
    backend = model_cfg["backend"]
    if backend not in BACKENDS:
        raise InputError(
            f"params.yaml: model.backend: unknown backend {backend!r}; expected one "
            f"of {', '.join(BACKENDS)}"
        )
    kind = backend_kind(backend)
    engine_args = check_engine_args(
        model_cfg.get("engine_args"), backend=backend, accepted=kind.engine_args
    )
    return kind.build(model_cfg, engine_args=engine_args, model_cache=model_cache)


def make_engine(
    model_cfg: dict[str, Any],
    *,
    cache_dir: str | os.PathLike[str] | None,
    model_cache: str | os.PathLike[str] | None = None,
    read_also: Sequence[str | os.PathLike[str]] = (),
) -> Engine:
    """An engine for ``model_cfg`` with the generation cache at ``cache_dir`` in front.

    Parameters
    ----------
    model_cfg:
        The ``model`` params section: ``name, backend`` and the backend's settings
        (see docs/inference.md).
    cache_dir:
        The generation-cache directory, or None for no cache.
    model_cache:
        Where ``tiny-random`` is built (None: ``$EVALPIPE_MODEL_CACHE`` or ``.cache/models``).
    read_also:
        Other generation caches to look up (never written), e.g. the other models' caches.

    Returns
    -------
    Engine
        Not started: the backend starts on the first cache miss.

    Examples
    --------
    >>> engine = make_engine({"name": "tiny-random", "backend": "vllm"},
    ...                      cache_dir="data/cache/generations")  # doctest: +SKIP
    >>> engine.generate([GenerationRequest("2+2=", max_tokens=8)])  # doctest: +SKIP
    """
    backend = make_backend(model_cfg, model_cache=model_cache)
    cache = GenerationCache(cache_dir, read_also=read_also) if cache_dir is not None else None
    every = int_setting(model_cfg, "checkpoint_every")
    if every < 1:
        raise InputError("params.yaml: model.checkpoint_every: expected an integer >= 1")
    return Engine(backend, cache, checkpoint_every=every)
