"""OpenAI-compatible servers (vLLM's server, others) over HTTP
(:mod:`evalpipe.inference.openai_engine`)."""

from __future__ import annotations

import functools
from typing import Any

from evalpipe.errors import InputError
from evalpipe.inference.backends.base import BackendKind, Cache, int_setting
from evalpipe.inference.models import local_tokenizer_dir
from evalpipe.inference.openai_engine import OpenAIBackend
from evalpipe.inference.types import ModelIdentity
from evalpipe.inference.word_tokens import WordTokenCounter, hf_counter, server_counter
from evalpipe.params_schema import default_of

NAME = __name__.rsplit(".", 1)[-1]


def build(model_cfg: dict[str, Any], *, engine_args: dict, model_cache: Cache) -> OpenAIBackend:
    name = str(model_cfg.get("name") or "")
    if not name:
        raise InputError("params.yaml: model.name: expected the served model name")
    fields = {"backend": NAME, "name": name, "revision": model_cfg.get("revision")}
    identity = ModelIdentity(
        name if not fields["revision"] else f"{name}@{fields['revision']}", fields
    )
    return OpenAIBackend(
        list(model_cfg.get("base_urls") or []),
        name,
        identity,
        api_key_env=model_cfg.get("api_key_env"),
        max_concurrency=int_setting(model_cfg, "max_concurrency"),
        max_retries=int_setting(model_cfg, "max_retries"),
        # null in the file means "the default", as for every nullable engine number
        timeout_s=float(
            model_cfg["request_timeout_s"] or default_of("model_defaults.request_timeout_s")
        ),
        backoff_s=float(
            model_cfg["retry_backoff_s"] or default_of("model_defaults.retry_backoff_s")
        ),
        structured_outputs=bool(model_cfg["structured_outputs"]),
        tokenizer_dir=functools.partial(local_tokenizer_dir, model_cfg, model_cache=model_cache),
    )


def word_counter(model_cfg: dict[str, Any], *, model_cache: Cache) -> WordTokenCounter:
    """The local model folder's tokenizer when ``name`` is one (or tiny-random), else the
    server's ``/tokenize``, else none (counted as ``tokenizer_unavailable``)."""
    local = local_tokenizer_dir(model_cfg, model_cache=model_cache)
    if local is not None:
        return hf_counter(str(local))
    urls = list(model_cfg.get("base_urls") or [])
    if urls:
        return server_counter(str(urls[0]), str(model_cfg.get("name") or ""))
    return WordTokenCounter(None, source=None, reason="tokenizer_unavailable")


BACKEND = BackendKind(build=build, word_counter=word_counter)
