"""OpenAI-compatible backend: ``vllm serve``, llama.cpp's server, or any ``/v1/chat/completions``.

Requests spread round-robin over one or several base URLs with bounded concurrency; 429, 5xx,
timeouts, dropped and refused connections are retried with exponential backoff, each retry on the
URL after the one that failed (so a dead server in a fleet is routed around). A prompt the server
refuses with a client error that retrying cannot fix (400, 413, 422: a prompt over the context
length, a request it cannot take) is recorded with finish_reason ``prompt_too_long`` or
``rejected`` and counted, as the offline engine records an over-long prompt; the run goes on. The
API key is read from the environment variable named in params at call time; it is never stored in
params, artifacts or the cache.

Log-likelihoods are scored on token ids, as lm-evaluation-harness does: the context and the
continuation are tokenized (the server's ``/tokenize``, or the model's own tokenizer when the
model is a local folder or tiny-random), sent as one token-id prompt to ``/v1/completions`` with
``echo`` and ``logprobs``, and the continuation's score is the sum of the echoed log-probabilities
at its positions. Character offsets are never used: byte-fallback tokens (Japanese) echo as empty
strings sharing one ``text_offset``.

Requests are sent by ``max_concurrency`` worker tasks, each taking the next request when its
previous one is answered, over keep-alive connections (:mod:`evalpipe.inference.http_client`,
on uvloop when it is installed): the client's cost per request does not grow with the
concurrency (docs/inference.md has the figures).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import math
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from evalpipe.inference.http_client import Client, Reply, TransportError
from evalpipe.inference.inflight import OrderedWorkers, bounded_map
from evalpipe.inference.types import (
    PROMPT_TOO_LONG,
    REJECTED,
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
PER_REQUEST_STATUS = {400, 413, 422}
"""Client errors about one request (its prompt or its settings), recorded rather than fatal; other
4xx (401, 403, 404, ...) concern every request (key, URL, model name) and stop the run."""
_CONTEXT_WORDS = (
    "context length",
    "context window",
    "maximum context",
    "max_model_len",
    "too long",
)
_TOKEN_ID = "token_id:"


class UnsupportedLogprobs(EngineError):
    """The server answered without the prompt's log-probabilities (no ``echo`` support)."""


@dataclass(frozen=True)
class Refusal:
    """A server's client error about one request: retrying cannot fix it."""

    url: str
    status: int
    message: str

    @property
    def reason(self) -> str:
        """``prompt_too_long`` when the server says the context is exceeded, else ``rejected``."""
        text = self.message.lower()
        return PROMPT_TOO_LONG if any(w in text for w in _CONTEXT_WORDS) else REJECTED


def _error_message(resp: Reply) -> str:
    """The server's own error message (OpenAI's ``{"error": {"message": ...}}``) or the body."""
    try:
        error = resp.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:500]
    except (ValueError, AttributeError):
        pass
    return resp.text[:500]


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (less client CPU per request than asyncio's)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


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
    tokenizer_dir:
        A local model folder whose tokenizer is the served model's (log-likelihood requests are
        then tokenized here), or a function finding it on first use; None: the server's
        ``/tokenize``.
    """

    starts = 0
    caches_refusals = False
    """A refusal depends on the server's settings (context length), which are not part of the
    model identity: refused prompts are not cached, and a re-run asks again."""

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
        tokenizer_dir: Path | Callable[[], Path | None] | None = None,
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
        self.failures: Counter[str] = Counter()
        """Failed attempts per endpoint URL in the current run (logged once, then summed)."""
        self._last_failure: dict[str, str] = {}
        self.refused: Counter[str] = Counter()
        self.unsupported = 0
        """Log-likelihood requests answered without prompt log-probabilities (not scored)."""
        self.max_model_len: int | None = None
        self._limits_read = False
        self._tokenizer_dir = tokenizer_dir
        self._local_tokenizer: Any = None
        self._next_url = itertools.cycle(range(len(self.base_urls)))
        self._client: Client | None = None

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _payload(self, req: GenerationRequest) -> dict[str, Any]:
        messages = []
        if req.system is not None:
            messages.append({"role": "system", "content": req.system})
        messages.append({"role": "user", "content": req.prompt})
        if req.prefix:
            messages.append({"role": "assistant", "content": req.prefix})
        max_tokens = int(req.max_tokens)
        if self.max_model_len:
            # vLLM refuses a budget above the context outright; it clamps a smaller one to the
            # room the prompt leaves, as the offline engine does
            max_tokens = min(max_tokens, self.max_model_len)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": float(req.temperature),
        }
        if req.prefix:
            # vLLM's (and SGLang's) chat options: render the last assistant message open-ended
            # rather than start a new turn after it
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        if req.seed is not None:
            body["seed"] = int(req.seed)
        if req.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = int(req.top_logprobs)
        if req.stop:
            body["stop"] = list(req.stop)
        if req.json_schema is not None and self.structured_outputs:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": req.json_schema, "strict": True},
            }
        return body

    async def _one(self, req: GenerationRequest) -> Generation:
        result = await self._post("/chat/completions", self._payload(req), _parse)
        if isinstance(result, Refusal) and req.prefix and result.reason == REJECTED:
            result = await self._continue_on_completions(req, result)
        if isinstance(result, Refusal):
            return Generation("", self._refused(result), 0, 0)
        return result

    async def _continue_on_completions(
        self, req: GenerationRequest, refusal: Refusal
    ) -> Generation | Refusal:
        """A prefix the chat endpoint refused, continued on ``/completions`` over the prompt the
        model's own chat template renders; an EngineError when there is no local template."""
        rendered = self._rendered_continuation(req)
        if rendered is None:
            raise EngineError(
                f"{refusal.url}: the server refused a request continuing an assistant prefix "
                f"(HTTP {refusal.status}: {refusal.message[:200]}). Continuation arms need a "
                "server whose chat endpoint accepts continue_final_message and "
                "add_generation_prompt (vLLM's and SGLang's servers do), or a local model folder "
                "as model.name whose chat template renders the prompt for /completions"
            )
        body = {k: v for k, v in self._payload(req).items() if k not in _CHAT_ONLY}
        body["prompt"] = rendered
        if req.top_logprobs:  # the completions endpoint takes the count as ``logprobs``
            body["logprobs"] = int(body.pop("top_logprobs"))
        return await self._post("/completions", body, _parse_text)

    def _rendered_continuation(self, req: GenerationRequest) -> str | None:
        """The prompt and prefix through the local tokenizer's chat template, left open."""
        if self.tokenizer_dir is None:
            return None
        self._local_ids("", special=False)  # loads the tokenizer once
        tok = self._local_tokenizer
        messages = [{"role": "system", "content": req.system}] if req.system is not None else []
        messages += [
            {"role": "user", "content": req.prompt},
            {"role": "assistant", "content": req.prefix},
        ]
        if not getattr(tok, "chat_template", None):
            return None
        return str(
            tok.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=False, continue_final_message=True
            )
        )

    def _refused(self, refusal: Refusal) -> str:
        reason = refusal.reason
        if not self.refused[reason]:
            log.warning(
                "%s: HTTP %d: %s (recorded as finish_reason %s; later ones are counted)",
                refusal.url,
                refusal.status,
                refusal.message,
                reason,
            )
        self.refused[reason] += 1
        return reason

    async def _read_limits(self) -> None:
        """The served model's ``max_model_len`` from ``/models``, where the server publishes it
        (vLLM does); without it, over-long prompts are found by the server's refusals."""
        if self._limits_read:
            return
        self._limits_read = True
        assert self._client is not None
        try:
            data = (await self._client.request("GET", self.base_urls[0] + "/models")).json()
            for entry in data.get("data") or []:
                if entry.get("id") == self.model and entry.get("max_model_len"):
                    self.max_model_len = int(entry["max_model_len"])
        except (TransportError, ValueError, AttributeError, TypeError):
            return  # the requests themselves say what is wrong with the server

    async def _post(
        self,
        path: str,
        body: dict[str, Any],
        parse: Callable[[Reply, str], T],
        *,
        refusable: bool = True,
        root: bool = False,
    ) -> T | Refusal:
        """POST with retries. A per-request client error comes back as a :class:`Refusal`
        (``refusable``) or raises; ``root``: ``path`` is under the server root, not ``/v1``."""
        assert self._client is not None
        data = json.dumps(body).encode()
        last = ""
        # The round-robin picks this request's first server only; its retries walk on from
        # there, so a retry never lands on the server that just failed it (a shared cycle let
        # requests retrying in lock-step take the dead server's turn again and again).
        first = next(self._next_url)
        for attempt in range(self.max_retries + 1):
            base = self.base_urls[(first + attempt) % len(self.base_urls)]
            if root and base.endswith("/v1"):
                base = base[: -len("/v1")]
            url = base + path
            delay = min(self.backoff_s * (2**attempt), 30.0)
            try:
                resp = await self._client.request("POST", url, data)
            except TransportError as exc:
                last = f"{url}: {exc}"
                self._failed(url, str(exc))
            else:
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("POST %s: HTTP %d", url, resp.status)
                if resp.status == 200:
                    return parse(resp, url)
                if refusable and resp.status in PER_REQUEST_STATUS:
                    return Refusal(url, resp.status, _error_message(resp))
                if resp.status not in RETRY_STATUS:
                    raise EngineError(f"{url}: HTTP {resp.status}: {_error_message(resp)}")
                last = f"{url}: HTTP {resp.status}: {resp.text[:200]}"
                self._failed(url, f"HTTP {resp.status}")
                retry_after = resp.headers.get("retry-after")
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    delay = min(float(retry_after), 60.0)
            if attempt < self.max_retries:
                self.retries += 1
                log.debug("retrying in %.1fs after %s", delay, last)
                await asyncio.sleep(delay)
        raise EngineError(
            f"model.base_urls {self.base_urls}: a request got no answer in "
            f"{_attempts(self.max_retries + 1)}; last error: {last}. Check that the servers "
            "are running and reachable (a refused connection means nothing listens at that "
            "host:port)"
        )

    def _failed(self, url: str, error: str) -> None:
        """Count a failed attempt at ``url``. The first one per endpoint is a warning; the
        rest go to DEBUG (every request in flight retries the same dead server, which would
        print a line per request and attempt) and are summed up when the run ends."""
        if not self.failures[url]:
            log.warning(
                "%s: %s (up to %s per request; further failures at this address are counted)",
                url,
                error,
                _attempts(self.max_retries + 1),
            )
        self.failures[url] += 1
        self._last_failure[url] = error

    def _summarise_failures(self) -> None:
        if self.failures:
            log.warning(
                "failed attempts: %s",
                "; ".join(
                    f"{url}: {n} (last: {self._last_failure[url]})"
                    for url, n in sorted(self.failures.items())
                ),
            )
        self.failures.clear()
        self._last_failure.clear()

    async def _open(self) -> None:
        # the API key as the environment has it now
        self._client = Client(self._headers(), timeout_s=self.timeout_s)
        await self._read_limits()

    async def _close(self) -> None:
        self._summarise_failures()
        if self._client is not None:
            self._client.close()
            self._client = None

    async def _map(self, items: Sequence[T], fn: Callable[[T], Awaitable[Any]]) -> list[Any]:
        await self._open()
        try:
            return await bounded_map(items, fn, workers=self.max_concurrency)
        finally:
            await self._close()

    def _mark_started(self) -> None:
        if not self.started:
            OpenAIBackend.starts += 1
            self.started = True

    def generate(
        self, requests: list[GenerationRequest], *, progress: bool = False
    ) -> list[Generation]:
        """Send every request; results come back in request order."""
        if not requests:
            return []
        self._mark_started()
        t0 = time.perf_counter()
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            out = runner.run(self._map(requests, self._one))
        log.debug("%d requests in %.1fs", len(requests), time.perf_counter() - t0)
        return out

    def generate_chunks(
        self, requests: list[GenerationRequest], every: int
    ) -> Iterator[list[Generation]]:
        """Each chunk of ``every`` requests' results, in order, while the next chunk's requests
        are already in flight: the server is never left idle at a chunk's end nor while the
        caller checkpoints it. A run killed at any point loses at most one chunk plus
        ``max_concurrency`` answers."""
        if not requests:
            return
        self._mark_started()
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(self._open())
            run = OrderedWorkers(
                requests,
                self._one,
                workers=self.max_concurrency,
                every=every,
                lookahead=self.max_concurrency,
            )
            try:
                runner.run(run.__aenter__())
                for k in range(run.n_chunks):
                    # between two chunks the loop stands still: the requests in flight go on
                    # at the server, and their answers wait in the socket
                    yield runner.run(run.chunk(k))
            finally:
                runner.run(run.__aexit__(None, None, None))
                runner.run(self._close())

    async def _token_ids(
        self,
        memo: dict[tuple[str, bool], asyncio.Future[list[int]]],
        text: str,
        *,
        special: bool,
    ) -> list[int]:
        """``text``'s token ids (``special``: with the tokenizer's special tokens, e.g. BOS), as
        the offline engine tokenizes a context and a continuation; each text once per call."""
        key = (text, special)
        if key not in memo:
            if self.tokenizer_dir is not None:
                future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
                future.set_result(self._local_ids(text, special=special))
                memo[key] = future
            else:
                memo[key] = asyncio.ensure_future(self._server_ids(text, special))
        return await memo[key]

    @property
    def tokenizer_dir(self) -> Path | None:
        """The local tokenizer's folder, or None (the server's ``/tokenize``)."""
        if callable(self._tokenizer_dir):
            self._tokenizer_dir = self._tokenizer_dir()
        return self._tokenizer_dir

    def _local_ids(self, text: str, *, special: bool) -> list[int]:
        if self._local_tokenizer is None:
            from transformers import AutoTokenizer

            self._local_tokenizer = AutoTokenizer.from_pretrained(str(self.tokenizer_dir))
        return list(self._local_tokenizer.encode(text, add_special_tokens=special))

    async def _server_ids(self, text: str, special: bool) -> list[int]:
        body = {"model": self.model, "prompt": text, "add_special_tokens": special}
        try:
            ids = await self._post("/tokenize", body, _parse_tokens, refusable=False, root=True)
        except EngineError as exc:
            raise EngineError(
                f"{exc}. Log-likelihood over a server needs the prompt's token ids: from the "
                "server's /tokenize (vLLM's server has it), or from the model's own tokenizer "
                "when model.name is the local model folder the server serves"
            ) from exc
        assert isinstance(ids, list)
        return ids

    async def _score(
        self,
        memo: dict[tuple[str, bool], asyncio.Future[list[int]]],
        req: LoglikelihoodRequest,
        unsupported_ok: bool,
    ) -> Loglikelihood:
        context = await self._token_ids(memo, req.context, special=True)
        continuation = await self._token_ids(memo, req.continuation, special=False)
        if not continuation:
            raise EngineError(f"continuation {req.continuation!r} has no tokens")
        ids = context + continuation
        unscored = Loglikelihood(math.nan, len(continuation), False)
        if self.max_model_len and len(ids) + 1 > self.max_model_len:
            self.refused[PROMPT_TOO_LONG] += 1  # as the offline engine: not sent, NaN
            return unscored
        try:
            result = await self._post(
                "/completions",
                self._loglikelihood_payload(ids),
                functools.partial(_parse_loglikelihood, ids=ids, n_continuation=len(continuation)),
            )
        except UnsupportedLogprobs:
            if not unsupported_ok:
                raise
            self.unsupported += 1  # counted, not scored (NaN), never cached
            return unscored
        if isinstance(result, Refusal):
            self._refused(result)
            return unscored
        return result

    def _loglikelihood_payload(self, ids: list[int]) -> dict[str, Any]:
        # The completions endpoint echoes the prompt's own token log-probabilities; one new
        # token is asked for because some servers refuse max_tokens 0 with echo. Tokens come
        # back as "token_id:<id>" (vLLM), so each position is checked against the id sent.
        return {
            "model": self.model,
            "prompt": ids,
            "max_tokens": 1,
            "temperature": 0.0,
            "echo": True,
            "logprobs": 1,
            "return_tokens_as_token_ids": True,
        }

    def loglikelihood(
        self, requests: list[LoglikelihoodRequest], *, unsupported_ok: bool = False
    ) -> list[Loglikelihood]:
        """Score each continuation on token ids through ``/completions`` (``echo``, ``logprobs``).

        A context plus continuation longer than the server's ``max_model_len`` is not sent, and
        one the server refuses is not scored: both get a NaN log-probability (the row is then
        scored unparsed), as on the offline engine. A server that does not echo prompt
        log-probabilities (chat-only APIs, some proxies) is an EngineError saying so, or, with
        ``unsupported_ok`` (perplexity), a NaN counted in :attr:`unsupported`.
        """
        if not requests:
            return []
        self._mark_started()
        before = self.refused.total()
        memo: dict[tuple[str, bool], asyncio.Future[list[int]]] = {}
        score = functools.partial(self._score, memo, unsupported_ok=unsupported_ok)
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            out = runner.run(self._map(requests, score))
        if self.refused.total() > before:
            log.warning(
                "%d log-likelihood requests were not scored (over the server's max_model_len "
                "%s, or refused); their rows count as unparsed",
                self.refused.total() - before,
                self.max_model_len,
            )
        return out

    def close(self) -> None:
        self.started = False


def _ranked(pairs: Any) -> tuple[tuple[str, float], ...] | None:
    """``(token, logprob)`` pairs, most probable first (ties by token: a stable order)."""
    out = [(str(t), float(v)) for t, v in pairs]
    return tuple(sorted(out, key=lambda tv: (-tv[1], tv[0]))) or None


def _chat_top(logprobs: Any) -> tuple[tuple[str, float], ...] | None:
    """The first token's ``top_logprobs`` of a chat completion's ``logprobs.content``; None when
    the server sent none (it ignored the request, or generated nothing)."""
    content = (logprobs or {}).get("content") or []
    if not content or not content[0].get("top_logprobs"):
        return None
    return _ranked((e["token"], e["logprob"]) for e in content[0]["top_logprobs"])


def _completion_top(logprobs: Any) -> tuple[tuple[str, float], ...] | None:
    """The first token's entry of a completion's ``logprobs.top_logprobs`` (token -> logprob)."""
    tops = (logprobs or {}).get("top_logprobs") or []
    if not tops or not tops[0]:
        return None
    return _ranked(tops[0].items())


_CHAT_ONLY = ("messages", "continue_final_message", "add_generation_prompt", "response_format")


def _generation(resp: Reply, url: str, *, kind: str) -> Generation:
    """The first choice of a ``/chat/completions`` (``kind="chat"``: its ``message.content``) or
    ``/completions`` answer (its ``text``) as a Generation; the two differ only in where the
    text and the first token's top log-probabilities sit."""
    chat = kind == "chat"
    try:
        data = resp.json()
        choice = data["choices"][0]
        text = choice["message"].get("content") if chat else choice.get("text")
        usage = data.get("usage") or {}
        top = (_chat_top if chat else _completion_top)(choice.get("logprobs"))
        return Generation(
            output=str(text or ""),
            finish_reason=str(choice.get("finish_reason") or "unknown"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            first_token_logprobs=top,
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        what = "chat completion" if chat else "completion"
        raise EngineError(
            f"{url}: response is not an OpenAI {what} "
            f"({type(exc).__name__}: {exc}): {resp.text[:300]}"
        ) from exc


def _parse(resp: Reply, url: str) -> Generation:
    return _generation(resp, url, kind="chat")


def _parse_text(resp: Reply, url: str) -> Generation:
    return _generation(resp, url, kind="completion")


def _parse_tokens(resp: Reply, url: str) -> list[int]:
    try:
        return [int(t) for t in resp.json()["tokens"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise EngineError(f"{url}: not a /tokenize answer ({exc}): {resp.text[:300]}") from exc


def _attempts(n: int) -> str:
    """
    >>> _attempts(1), _attempts(5)
    ('1 attempt', '5 attempts')
    """
    return f"{n} attempt" + ("" if n == 1 else "s")


def _parse_loglikelihood(
    resp: Reply, url: str, *, ids: list[int], n_continuation: int
) -> Loglikelihood:
    """The continuation's score from an echoed token-id prompt: the sum of the log-probabilities
    at its last ``n_continuation`` positions, greedy when each was the top token there."""
    unsupported = UnsupportedLogprobs(
        f"{url}: the server did not return prompt log-probabilities (the completions endpoint "
        "with echo and logprobs); log-likelihood scoring needs a server that supports them, "
        "such as vLLM's OpenAI-compatible server, or scoring.method: generate"
    )
    try:
        logprobs = resp.json()["choices"][0].get("logprobs")
        if not logprobs or not logprobs.get("token_logprobs"):
            raise unsupported
        tokens = [str(t) for t in logprobs["tokens"]]
        values = list(logprobs["token_logprobs"])
        tops = list(logprobs.get("top_logprobs") or [None] * len(tokens))
    except EngineError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise EngineError(
            f"{url}: response is not an OpenAI completion with logprobs "
            f"({type(exc).__name__}: {exc}): {resp.text[:300]}"
        ) from exc
    if len(values) < len(ids) or len(tokens) < len(ids):
        raise unsupported  # the prompt was not echoed
    total, greedy = 0.0, True
    for pos in range(len(ids) - n_continuation, len(ids)):
        token, value = tokens[pos], values[pos]
        if value is None:
            raise unsupported
        if token.startswith(_TOKEN_ID) and token[len(_TOKEN_ID) :] != str(ids[pos]):
            raise EngineError(
                f"{url}: echoed token {token!r} at position {pos} where token id {ids[pos]} "
                "was sent; the server does not score the prompt it was given"
            )
        total += float(value)
        top = tops[pos] if pos < len(tops) else None
        if top:
            greedy = greedy and max(top.items(), key=lambda kv: kv[1])[0] == token
    return Loglikelihood(total, n_continuation, greedy)
