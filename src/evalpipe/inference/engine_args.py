"""``models.<slug>.engine_args``: extra arguments for vLLM's engine, checked against its own list.

A model ladder (a base model and its AWQ / GPTQ / FP8 checkpoints, a KV cache in fp8, ...) needs
arguments evalpipe does not set itself: ``quantization``, ``kv_cache_dtype``, ``max_num_seqs``,
... Each name must be a field of ``vllm.EngineArgs`` (what ``vllm.LLM(**kwargs)`` accepts); the
list is read from vLLM's source without importing vLLM (an import costs seconds, and a run whose
prompts are all cached never starts the engine). Arguments that change what the model computes
join the model identity, so every cache key; arguments that only schedule the work do not.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.inference.types import EngineError

MANAGED = {
    "model": "name",
    "revision": "revision",
    "dtype": "dtype",
    "max_model_len": "max_model_len",
    "tensor_parallel_size": "tensor_parallel_size",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "enforce_eager": "enforce_eager",
    "structured_outputs_config": "compact_json",
    "seed": None,
    "enable_prefix_caching": None,
}
"""Engine arguments evalpipe sets itself -> the model setting that controls them (None: fixed)."""

SCHEDULING_ONLY = frozenset(
    {
        "max_num_seqs",
        "max_num_batched_tokens",
        "max_parallel_loading_workers",
        "disable_log_stats",
        "swap_space",
        "kv_cache_memory_bytes",
    }
)
"""Arguments that change how the work is scheduled or loaded, not the numbers computed (as
``in_process`` and ``cpu_threads``): left out of the model identity."""


@functools.lru_cache(maxsize=1)
def engine_argument_names() -> frozenset[str]:
    """The field names of ``vllm.EngineArgs``, read from vLLM's source (vLLM not imported).

    Raises
    ------
    EngineError
        When vLLM is not installed.
    """
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise EngineError(
            "model.engine_args: vLLM is not installed, so its engine arguments cannot be "
            "checked: pip install -e '.[cpu]' or '.[gpu]'"
        )
    source = Path(next(iter(spec.submodule_search_locations))) / "engine" / "arg_utils.py"
    names: set[str] = set()
    if source.exists():
        for node in ast.parse(source.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name == "EngineArgs":
                names = {
                    item.target.id
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
    if not names:  # another layout: ask the dataclass itself (importing vLLM)
        from vllm import EngineArgs

        names = {f.name for f in dataclasses.fields(EngineArgs)}
    return frozenset(names)


def check_engine_args(value: Any, *, backend: str, accepted: bool = True) -> dict[str, Any]:
    """The ``engine_args`` mapping, checked: every name an argument of vLLM's engine that
    evalpipe does not set itself.

    Parameters
    ----------
    value:
        ``model.engine_args`` (None or a mapping).
    backend:
        The model's backend, for messages.
    accepted:
        Whether the backend takes engine arguments (``BackendKind.engine_args``); a server
        gets its arguments at start-up.

    Returns
    -------
    dict
        The arguments, sorted by name.

    Raises
    ------
    EngineError
        Naming ``model.engine_args.<name>`` and the closest valid name.

    Examples
    --------
    >>> check_engine_args(None, backend="vllm")
    {}
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise EngineError(
            "params.yaml: model.engine_args: expected a mapping of vLLM engine arguments, e.g. "
            f"{{quantization: awq, kv_cache_dtype: fp8}}, got {type(value).__name__}"
        )
    if not value:
        return {}
    if not accepted:
        raise EngineError(
            f"params.yaml: model.engine_args: backend {backend} takes none; an OpenAI-compatible "
            "server takes its engine arguments when it starts (vllm serve ... --quantization awq)"
        )
    valid = engine_argument_names()
    for name in value:
        if not isinstance(name, str) or name not in valid:
            close = difflib.get_close_matches(str(name), sorted(valid), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise EngineError(
                f"params.yaml: model.engine_args.{name}: not an argument of vLLM's engine "
                f"(the fields of vllm.EngineArgs){hint}"
            )
        if name in MANAGED:
            setting = MANAGED[name]
            where = f"set model.{setting} instead" if setting else "evalpipe fixes it"
            raise EngineError(
                f"params.yaml: model.engine_args.{name}: evalpipe sets this argument itself; "
                f"{where}"
            )
    return {k: value[k] for k in sorted(value)}


def identity_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The engine arguments that change outputs (all but :data:`SCHEDULING_ONLY`).

    >>> identity_args({"max_num_seqs": 8, "quantization": "awq"})
    {'quantization': 'awq'}
    """
    return {k: v for k, v in sorted(args.items()) if k not in SCHEDULING_ONLY}
