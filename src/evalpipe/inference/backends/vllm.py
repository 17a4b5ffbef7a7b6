"""vLLM's offline engine (GPU, or the CPU build): the model loaded in-process or by vLLM's own
engine processes (:mod:`evalpipe.inference.vllm_engine`)."""

from __future__ import annotations

import functools
from typing import Any

from evalpipe.errors import InputError
from evalpipe.inference.backends.base import BackendKind, Cache, int_setting
from evalpipe.inference.engine_args import identity_args
from evalpipe.inference.models import resolve_model
from evalpipe.inference.ray_engine import RayBackend, check_data_parallel_size, replica_resources
from evalpipe.inference.types import ModelIdentity
from evalpipe.inference.vllm_engine import VLLMBackend
from evalpipe.inference.word_tokens import WordTokenCounter, hf_counter


def build(
    model_cfg: dict[str, Any], *, engine_args: dict, model_cache: Cache
) -> VLLMBackend | RayBackend:
    """One engine in this process, or (``data_parallel_size`` not 1) replicas of it as Ray
    actors, under the same identity, so every cache key is the same."""
    for key in ("max_model_len", "tensor_parallel_size"):
        if int_setting(model_cfg, key) < 1:
            raise InputError(f"params.yaml: model.{key}: expected an integer >= 1")
    target, identity = resolve_model(model_cfg, model_cache=model_cache)
    changing = identity_args(engine_args)
    if changing:
        # quantization, kv_cache_dtype, ... change the outputs: part of every cache key
        shown = ",".join(f"{k}={v}" for k, v in changing.items())
        identity = ModelIdentity(
            f"{identity.label}[{shown}]", {**identity.fields, "engine_args": changing}
        )
    settings = dict(model_cfg, engine_args=engine_args)
    # a hub model loads the resolved commit; a local folder (tiny-random's seed<N>
    # included) has no revision to pass on
    settings["revision"] = identity.fields.get("revision")
    single = VLLMBackend(target, identity, settings)
    replicas = check_data_parallel_size(model_cfg["data_parallel_size"])
    if replicas == 1:
        return single
    replica = settings
    if int(settings["tensor_parallel_size"]) > 1:
        # inside a replica, vLLM's own worker processes on the GPUs Ray gave the actor
        args = {"distributed_executor_backend": "mp", **engine_args}
        replica = dict(settings, engine_args=args)
    return RayBackend(
        single,
        functools.partial(VLLMBackend, target, identity, replica),
        replicas=replicas,
        resources=replica_resources(settings),
    )


def word_counter(model_cfg: dict[str, Any], *, model_cache: Cache) -> WordTokenCounter:
    """The Hugging Face tokenizer of the model vLLM loads."""
    target, identity = resolve_model(model_cfg, model_cache=model_cache)
    revision = identity.fields.get("revision")
    return hf_counter(str(target), revision=str(revision) if revision else None)


BACKEND = BackendKind(build=build, word_counter=word_counter, engine_args=True)
