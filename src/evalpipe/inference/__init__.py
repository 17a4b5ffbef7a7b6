"""Inference: one engine interface (vLLM offline, OpenAI-compatible servers) behind a
content-addressed generation cache, and the locally built smoke-test model ``tiny-random``.

>>> from evalpipe.inference import GenerationRequest, make_engine
>>> engine = make_engine({"name": "tiny-random", "backend": "vllm"},
...                      cache_dir="data/cache/generations")  # doctest: +SKIP
>>> [g.output for g in engine.generate([GenerationRequest("2+2=", max_tokens=8)])]  # doctest: +SKIP
"""

from evalpipe.inference.cache import GenerationCache, cache_key
from evalpipe.inference.engine import BACKENDS, Engine, RunStats, make_backend, make_engine
from evalpipe.inference.openai_engine import OpenAIBackend
from evalpipe.inference.tiny import TINY_RANDOM, TINY_RANDOM_NOTE, build_tiny_random
from evalpipe.inference.types import (
    EngineError,
    Generation,
    GenerationRequest,
    ModelIdentity,
)
from evalpipe.inference.vllm_engine import VLLMBackend

__all__ = [
    "BACKENDS",
    "TINY_RANDOM",
    "TINY_RANDOM_NOTE",
    "Engine",
    "EngineError",
    "Generation",
    "GenerationCache",
    "GenerationRequest",
    "ModelIdentity",
    "OpenAIBackend",
    "RunStats",
    "VLLMBackend",
    "build_tiny_random",
    "cache_key",
    "make_backend",
    "make_engine",
]
