"""Requests, results and the backend protocol shared by every inference engine."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalpipe.errors import InputError
from evalpipe.params_schema import default_of


class EngineError(InputError):
    """An engine or server failed in a way the user can act on (unreachable URL, bad model)."""


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to generate from.

    Parameters
    ----------
    prompt:
        The user message text (the engine applies the model's chat template, if it has one).
    max_tokens:
        Most new tokens to generate; must be > 0.
    temperature:
        Sampling temperature (0 = greedy).
    json_schema:
        A JSON schema the output must follow (structured outputs), or None.
    system:
        An optional system message (the judge uses one).
    seed:
        Sampling seed for temperature > 0; part of the cache key.
    stop:
        Stop sequences: generation ends before the first of them (the benchmark spec's, per
        prompt style); part of the cache key when not empty.
    prefix:
        The start of the assistant's answer, which the model continues (a continuation arm:
        its output is the text after the prefix); part of the cache key when not empty.
        docs/inference.md ("Continuing an assistant prefix") says how each backend sends it.
    top_logprobs:
        When > 0, ask for the ``top_logprobs`` most probable first answer tokens with their
        log-probabilities (``Generation.first_token_logprobs``; the readouts' first-token KL);
        part of the cache key only when set.
    """

    prompt: str
    max_tokens: int
    temperature: float = default_of("sampling.temperature")
    json_schema: dict[str, Any] | None = None
    system: str | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    prefix: str = ""
    top_logprobs: int = default_of("scoring.top_logprobs")

    def validate(self, index: int = 0) -> None:
        """Raise InputError naming the request and field when a value is out of range."""
        if not isinstance(self.prompt, str):
            raise InputError(
                f'request {index}: field "prompt": expected a string, '
                f"got {type(self.prompt).__name__}"
            )
        if not isinstance(self.max_tokens, int) or self.max_tokens <= 0:
            raise InputError(
                f'request {index}: field "max_tokens": expected an integer > 0, '
                f"got {self.max_tokens!r} (check sampling.max_tokens in params.yaml)"
            )
        if not (0.0 <= float(self.temperature) <= 5.0):
            raise InputError(
                f'request {index}: field "temperature": expected 0..5, got {self.temperature!r}'
            )
        if not isinstance(self.stop, tuple | list) or not all(
            isinstance(x, str) and x for x in self.stop
        ):
            raise InputError(
                f'request {index}: field "stop": expected a list of non-empty strings, '
                f"got {self.stop!r}"
            )
        if not isinstance(self.prefix, str):
            raise InputError(
                f'request {index}: field "prefix": expected a string, '
                f"got {type(self.prefix).__name__}"
            )
        if (
            isinstance(self.top_logprobs, bool)
            or not isinstance(self.top_logprobs, int)
            or self.top_logprobs < 0
        ):
            raise InputError(
                f'request {index}: field "top_logprobs": expected an integer >= 0, '
                f"got {self.top_logprobs!r} (check scoring.top_logprobs in params.yaml)"
            )
        if self.json_schema is not None and not isinstance(self.json_schema, dict):
            raise InputError(
                f'request {index}: field "json_schema": expected a JSON object '
                f"(dict) or null, got {type(self.json_schema).__name__}"
            )

    def sampling_key(self) -> dict[str, Any]:
        """Everything besides the prompt and model that changes the output.

        ``stop``, ``prefix`` and ``top_logprobs`` join the key only when set, so requests without them (the
        judge's, every plain answer) keep the keys their cached generations were stored under.
        """
        key: dict[str, Any] = {
            "max_tokens": int(self.max_tokens),
            "temperature": float(self.temperature),
            "seed": self.seed,
            "json_schema": self.json_schema,
        }
        if self.stop:
            key["stop"] = list(self.stop)
        if self.prefix:
            key["prefix"] = self.prefix
        if self.top_logprobs:
            key["top_logprobs"] = int(self.top_logprobs)
        return key


PROMPT_TOO_LONG = "prompt_too_long"
"""finish_reason of a prompt longer than the model's context: not generated, empty output."""
REJECTED = "rejected"
"""finish_reason of a prompt a server refused with a client error that retrying cannot fix."""
NOT_SENT = (PROMPT_TOO_LONG, REJECTED)
"""finish_reasons of prompts that got no answer; scoring counts them as unparsed."""


@dataclass(frozen=True)
class Generation:
    """One result. ``from_cache`` is True when it came from the generation cache.

    ``first_token_logprobs``: for a request with ``top_logprobs`` > 0, the first generated
    token's most probable tokens as ``(token text, log-probability)``, most probable first; None
    when not asked for or when the backend returned none (counted as unavailable, never zero).
    """

    output: str
    finish_reason: str
    prompt_tokens: int
    output_tokens: int
    from_cache: bool = False
    first_token_logprobs: tuple[tuple[str, float], ...] | None = None


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """The log-probability of ``continuation`` right after ``context`` (lm-eval's loglikelihood).

    The context is the raw prompt text: no chat template is applied, on every backend, so the
    offline engine and an OpenAI-compatible server score the same token sequence (the
    completions endpoint never applies one). The continuation is tokenized on its own and
    appended to the context's tokens, so its tokens never merge with the context's.

    Parameters
    ----------
    context:
        The prompt, ending where the answer starts (e.g. ``"...\nAnswer:"``).
    continuation:
        The answer text scored (e.g. ``" B"``); must not be empty.
    """

    context: str
    continuation: str

    def validate(self, index: int = 0) -> None:
        """Raise InputError naming the request and field when a value is unusable."""
        for name in ("context", "continuation"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise InputError(
                    f'loglikelihood request {index}: field "{name}": expected a string, '
                    f"got {type(value).__name__}"
                )
        if not self.continuation:
            raise InputError(
                f'loglikelihood request {index}: field "continuation": expected a non-empty string'
            )


@dataclass(frozen=True)
class Loglikelihood:
    """Sum of the continuation tokens' log-probabilities, their count, and whether each token
    was the model's top choice (``greedy``, lm-eval's ``is_greedy``)."""

    logprob: float
    n_tokens: int
    greedy: bool
    from_cache: bool = False


@dataclass(frozen=True)
class ModelIdentity:
    """What makes two generations comparable: it is hashed into every cache key.

    ``fields`` holds backend, name, revision or weights hash, dtype, chat-template hash and any
    other setting that changes outputs.
    """

    label: str
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return stable_hash(self.fields)


def stable_hash(obj: Any) -> str:
    """SHA-256 of the canonical JSON form of ``obj`` (sorted keys, no whitespace)."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Backend(Protocol):
    """An engine without a cache: started lazily, generates every request it is given."""

    identity: ModelIdentity
    started: bool

    def generate(
        self, requests: list[GenerationRequest], *, progress: bool = True
    ) -> list[Generation]: ...

    def loglikelihood(
        self, requests: list[LoglikelihoodRequest], *, unsupported_ok: bool = False
    ) -> list[Loglikelihood]: ...

    def close(self) -> None: ...
