"""OpenAI-compatible backend: ``vllm serve``, llama.cpp's server, or any ``/v1/chat/completions``.

Requests spread round-robin over one or several base URLs with bounded concurrency; 429, 5xx,
timeouts and refused connections are retried with exponential backoff (on the next URL, so a dead
server in a fleet is routed around). The API key is read from the environment variable named in
params at call time; it is never stored in params, artifacts or the cache.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from evalpipe.inference.types import (
    EngineError,
    Generation,
    GenerationRequest,
    Loglikelihood,
    LoglikelihoodRequest,
    ModelIdentity,
)
from evalpipe.params_schema import default_of

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def quiet_request_logs() -> None:
    """Keep httpx's and httpcore's per-request lines out of INFO output.

    httpx logs one ``INFO HTTP Request: POST ...`` line per request (17,944 lines for one run,
    burying the progress bar). A logger the user left unset (NOTSET) is raised to WARNING, so
    per-request lines show only when someone asks for them by setting that logger to DEBUG.
    """
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


class OpenAIBackend:
    """Chat completions over HTTP.

    Parameters
    ----------
    base_urls:
        Server roots ending in ``/v1`` (e.g. ``http://127.0.0.1:8000/v1``).
    model:
        The model name the servers serve (sent as ``model``).
    identity:
        The model identity hashed into cache keys.
    api_key_env:
        Name of the environment variable holding the API key (may be unset for local servers).
    max_concurrency:
        Requests in flight at once, over all URLs.
    max_retries:
        Retries per request after the first attempt.
    timeout_s:
        Per-request timeout in seconds.
    backoff_s:
        First retry delay; doubles per attempt, capped at 30 s (a server's Retry-After wins).
    structured_outputs:
        Send ``response_format: json_schema`` when a request has a schema.
    """

    starts = 0

    def __init__(
        self,
        base_urls: list[str],
        model: str,
        identity: ModelIdentity,
        *,
        api_key_env: str | None = default_of("model_defaults.api_key_env"),
        max_concurrency: int = default_of("model_defaults.max_concurrency"),
        max_retries: int = default_of("model_defaults.max_retries"),
        timeout_s: float = default_of("model_defaults.request_timeout_s"),
        backoff_s: float = default_of("model_defaults.retry_backoff_s"),
        structured_outputs: bool = default_of("model_defaults.structured_outputs"),
    ) -> None:
        if not base_urls:
            raise EngineError(
                "params.yaml: model.base_urls: expected at least one server URL "
                "(e.g. http://127.0.0.1:8000/v1) for model.backend: openai"
            )
        for url in base_urls:
            if not str(url).startswith(("http://", "https://")):
                raise EngineError(f"params.yaml: model.base_urls: {url!r} is not an http(s) URL")
        if int(max_concurrency) < 1:
            raise EngineError(
                "params.yaml: model.max_concurrency: expected an integer >= 1, "
                f"got {max_concurrency!r}"
            )
        self.base_urls = [str(u).rstrip("/") for u in base_urls]
        self.model = model
        self.identity = identity
        self.api_key_env = api_key_env
        self.max_concurrency = int(max_concurrency)
        self.max_retries = int(max_retries)
        self.timeout_s = float(timeout_s)
        self.backoff_s = float(backoff_s)
        self.structured_outputs = structured_outputs
        self.started = False
        self.start_seconds = 0.0
        self.retries = 0
        self._next_url = itertools.cycle(range(len(self.base_urls)))
        quiet_request_logs()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _payload(self, req: GenerationRequest) -> dict[str, Any]:
        messages = []
        if req.system is not None:
            messages.append({"role": "system", "content": req.system})
        messages.append({"role": "user", "content": req.prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": int(req.max_tokens),
            "temperature": float(req.temperature),
        }
        if req.seed is not None:
            body["seed"] = int(req.seed)
        if req.stop:
            body["stop"] = list(req.stop)
        if req.json_schema is not None and self.structured_outputs:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": req.json_schema, "strict": True},
            }
        return body

    async def _one(
        self, client: httpx.AsyncClient, sem: asyncio.Semaphore, req: GenerationRequest
    ) -> Generation:
        return await self._post(client, sem, "/chat/completions", self._payload(req), _parse)

    async def _post(
        self,
        client: httpx.AsyncClient,
        sem: asyncio.Semaphore,
        path: str,
        body: dict[str, Any],
        parse: Callable[[httpx.Response, str], T],
    ) -> T:
        last = ""
        async with sem:
            for attempt in range(self.max_retries + 1):
                url = self.base_urls[next(self._next_url)] + path
                delay = min(self.backoff_s * (2**attempt), 30.0)
                try:
                    resp = await client.post(url, json=body, headers=self._headers())
                except (httpx.TimeoutException, httpx.TransportError) as exc:
                    last = f"{url}: {type(exc).__name__}: {exc or 'no response'}"
                else:
                    if resp.status_code == 200:
                        return parse(resp, url)
                    if resp.status_code not in RETRY_STATUS:
                        raise EngineError(f"{url}: HTTP {resp.status_code}: {resp.text[:500]}")
                    last = f"{url}: HTTP {resp.status_code}: {resp.text[:200]}"
                    retry_after = resp.headers.get("retry-after")
                    if retry_after and retry_after.replace(".", "", 1).isdigit():
                        delay = min(float(retry_after), 60.0)
                if attempt < self.max_retries:
                    self.retries += 1
                    log.warning("retrying in %.1fs after %s", delay, last)
                    await asyncio.sleep(delay)
        raise EngineError(
            f"model.base_urls {self.base_urls}: no answer after {self.max_retries + 1} attempts; "
            f"last error: {last}. Check that the servers are running and reachable "
            "(a refused connection means nothing listens at that host:port)"
        )

    async def _all(self, requests: list[GenerationRequest]) -> list[Generation]:
        sem = asyncio.Semaphore(self.max_concurrency)
        limits = httpx.Limits(max_connections=self.max_concurrency)
        async with httpx.AsyncClient(timeout=self.timeout_s, limits=limits) as client:
            return await _gather_or_cancel([self._one(client, sem, r) for r in requests])

    def generate(
        self, requests: list[GenerationRequest], *, progress: bool = False
    ) -> list[Generation]:
        """Send every request; results come back in request order."""
        if not requests:
            return []
        if not self.started:
            OpenAIBackend.starts += 1
            self.started = True
        t0 = time.perf_counter()
        out = asyncio.run(self._all(requests))
        log.debug("%d requests in %.1fs", len(requests), time.perf_counter() - t0)
        return out

    async def _all_loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[Loglikelihood]:
        sem = asyncio.Semaphore(self.max_concurrency)
        limits = httpx.Limits(max_connections=self.max_concurrency)
        async with httpx.AsyncClient(timeout=self.timeout_s, limits=limits) as client:
            return await _gather_or_cancel(
                [
                    self._post(
                        client,
                        sem,
                        "/completions",
                        self._loglikelihood_payload(r),
                        functools.partial(_parse_loglikelihood, context=r.context),
                    )
                    for r in requests
                ]
            )

    def _loglikelihood_payload(self, req: LoglikelihoodRequest) -> dict[str, Any]:
        # The completions endpoint echoes the prompt's own token log-probabilities; one new
        # token is asked for because some servers refuse max_tokens 0 with echo.
        return {
            "model": self.model,
            "prompt": req.context + req.continuation,
            "max_tokens": 1,
            "temperature": 0.0,
            "echo": True,
            "logprobs": 1,
        }

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[Loglikelihood]:
        """Score each continuation through ``/completions`` with ``echo`` and ``logprobs``.

        The continuation's tokens are the echoed prompt tokens that start at or after the
        context's last character (``text_offset``). A server that does not echo prompt
        log-probabilities (chat-only APIs, some proxies) is an EngineError saying so.
        """
        if not requests:
            return []
        if not self.started:
            OpenAIBackend.starts += 1
            self.started = True
        return asyncio.run(self._all_loglikelihood(requests))

    def close(self) -> None:
        self.started = False


def _parse(resp: httpx.Response, url: str) -> Generation:
    try:
        data = resp.json()
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        usage = data.get("usage") or {}
        return Generation(
            output=str(text),
            finish_reason=str(choice.get("finish_reason") or "unknown"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise EngineError(
            f"{url}: response is not an OpenAI chat completion "
            f"({type(exc).__name__}: {exc}): {resp.text[:300]}"
        ) from exc


def _parse_loglikelihood(resp: httpx.Response, url: str, *, context: str) -> Loglikelihood:
    unsupported = (
        f"{url}: the server did not return prompt log-probabilities (the completions endpoint "
        "with echo and logprobs); log-likelihood scoring needs a server that supports them, "
        "such as vLLM's OpenAI-compatible server, or scoring.method: generate"
    )
    try:
        data = resp.json()
        choice = data["choices"][0]
        logprobs = choice.get("logprobs")
        if not logprobs or not logprobs.get("token_logprobs"):
            raise EngineError(unsupported)
        tokens = list(logprobs["tokens"])
        values = list(logprobs["token_logprobs"])
        offsets = list(logprobs["text_offset"])
        tops = list(logprobs.get("top_logprobs") or [None] * len(tokens))
        n_prompt = int((data.get("usage") or {}).get("prompt_tokens") or 0)
    except EngineError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise EngineError(
            f"{url}: response is not an OpenAI completion with logprobs "
            f"({type(exc).__name__}: {exc}): {resp.text[:300]}"
        ) from exc
    if n_prompt <= 0 or n_prompt > len(tokens):
        # without the prompt's token count the echoed prompt cannot be told from the new token
        raise EngineError(unsupported)
    total, n, greedy = 0.0, 0, True
    for i in range(n_prompt):
        if offsets[i] < len(context):
            continue
        if values[i] is None:
            raise EngineError(unsupported)
        total += float(values[i])
        n += 1
        top = tops[i]
        if top:
            best = max(top.items(), key=lambda kv: kv[1])[0]
            greedy = greedy and best == tokens[i]
    if n == 0:
        raise EngineError(f"{url}: no echoed token starts inside the continuation")
    return Loglikelihood(total, n, greedy)


async def _gather_or_cancel(coros: list[Any]) -> list[Any]:
    """Run every request concurrently, results in order; on the first failure cancel the rest
    (a dead server must not leave hundreds of requests retrying in the background)."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
