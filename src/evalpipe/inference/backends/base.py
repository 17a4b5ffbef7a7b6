"""What an inference backend is (:class:`BackendKind`); the backends are the modules beside it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalpipe.errors import InputError
from evalpipe.inference.types import Backend
from evalpipe.inference.word_tokens import WordTokenCounter
from evalpipe.params_schema import default_of

Cache = str | os.PathLike[str] | None


@dataclass(frozen=True)
class BackendKind:
    """One backend of ``model_defaults.backend``.

    Attributes
    ----------
    build : ``build(model_cfg, *, engine_args, model_cache) -> Backend`` (not started): the
        model's settings completed with the engine defaults, its checked ``engine_args``.
    word_counter : ``word_counter(model_cfg, *, model_cache) -> WordTokenCounter``: the
        tokenizer that counts each edited word's tokens (``evalpipe.inference.word_tokens``).
    engine_args : whether ``engine_args`` (vLLM engine arguments) apply to it.
    """

    build: Callable[..., Backend]
    word_counter: Callable[..., WordTokenCounter]
    engine_args: bool = False


def int_setting(cfg: dict[str, Any], key: str, default: int | None = None) -> int:
    """An integer engine setting of ``cfg`` (null or missing: the schema's default)."""
    if default is None:
        default = int(default_of(f"model_defaults.{key}"))
    value = cfg.get(key, default)
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"params.yaml: model.{key}: expected an integer, got {value!r}") from exc
