"""Inference backends (params.yaml ``model_defaults.backend``; docs/inference.md).

One module per backend, named as registered in
:data:`evalpipe.registries.INFERENCE_BACKENDS`, holding ``BACKEND =
BackendKind(...)`` (:class:`evalpipe.inference.backends.base.BackendKind`): how the engine's
backend is built from a model's settings and where the model's tokenizer comes from. Adding one
is its module and its name in the registry (docs/extending.md).
"""

from __future__ import annotations

import functools
from importlib import import_module
from typing import Any

from evalpipe.inference.backends.base import BackendKind, Cache
from evalpipe.inference.word_tokens import WordTokenCounter
from evalpipe.registries import INFERENCE_BACKENDS


@functools.cache
def backend_kind(name: str) -> BackendKind:
    """The registered backend ``name``."""
    INFERENCE_BACKENDS.check(name, where="params.yaml: model.backend")
    return import_module(f"evalpipe.inference.backends.{name}").BACKEND


def word_token_counter(model_cfg: dict[str, Any], *, model_cache: Cache) -> WordTokenCounter:
    """The edited words' token counter of one model of params.yaml ``models``
    (:mod:`evalpipe.inference.word_tokens`)."""
    name = model_cfg.get("backend") or INFERENCE_BACKENDS.default
    return backend_kind(str(name)).word_counter(model_cfg, model_cache=model_cache)
