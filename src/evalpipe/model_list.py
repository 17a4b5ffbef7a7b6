"""The models a run compares: params.yaml ``models`` (slug -> settings) over ``model_defaults``.

A mapping rather than a list because DVC names foreach stages after the keys: ``generate@<slug>``
and ``score@<slug>`` depend on ``models.<slug>`` only, so adding or changing one model re-runs
only that model's stages. The slug also names the model's folders (data/outputs/<slug>/,
metrics/<slug>/, plots/<slug>/) and is the ``model`` column of every table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evalpipe.errors import InputError
from evalpipe.params_schema import MODEL_LABELS, engine_defaults
from evalpipe.paths import check_slug

# The engine layer names settings as `model.<key>` (one engine, one settings mapping).
_ENGINE_KEY = re.compile(r"\bmodel\.(?=[a-z_]+\b)")


def model_configs(params: Mapping[str, Any], *, source: str = "params.yaml") -> dict[str, dict]:
    """Every model's settings: ``model_defaults`` overlaid with the entry's own keys.

    Parameters
    ----------
    params : the parsed params file.
    source : its name, for messages.

    Returns
    -------
    ``{slug: settings}`` in the file's order; each has at least ``name``.

    Examples
    --------
    >>> cfgs = model_configs({"model_defaults": {"backend": "vllm", "dtype": "auto"},
    ...                       "models": {"a": {"name": "tiny-random", "dtype": "float32"}}})
    >>> cfgs["a"]["backend"], cfgs["a"]["dtype"]
    ('vllm', 'float32')
    """
    defaults = params.get("model_defaults") or {}
    models = params.get("models")
    if not isinstance(models, Mapping) or not models:
        raise InputError(
            f"{source}: models: expected a mapping with at least one model, e.g. "
            "models: {tiny-random: {name: tiny-random}} (docs/inference.md)"
        )
    if not isinstance(defaults, Mapping):
        raise InputError(f"{source}: model_defaults: expected a mapping")
    out: dict[str, dict] = {}
    for slug, entry in models.items():
        slug = check_slug(slug, where=f"{source}: models")
        if entry is None:
            entry = {}
        if not isinstance(entry, Mapping):
            raise InputError(f"{source}: models.{slug}: expected a mapping of settings")
        merged = {**engine_defaults(), **defaults, **entry}
        if not merged.get("name"):
            raise InputError(
                f"{source}: models.{slug}.name: expected the model (tiny-random, a hub id or a "
                "local folder)"
            )
        out[slug] = merged
    return out


def corrector_models(params: Mapping[str, Any], *, source: str = "params.yaml") -> dict[str, dict]:
    """The settings of the models that ``defences.correctors`` name (``llm:<slug>``): the only
    models the defend stage runs. The params stage writes them to data/params.yaml as
    ``defences.corrector_models`` for defend's DVC params, so that adding or editing a model
    that corrects nothing (or ``model_defaults``) does not re-run and re-lock defend; without
    such correctors it is empty.

    >>> params = {"models": {"a": {"name": "tiny-random"}, "b": {"name": "other"}}}
    >>> corrector_models({**params, "defences": {"correctors": ["spelling"]}})
    {}
    >>> list(corrector_models({**params, "defences": {"correctors": ["spelling", "llm:b"]}}))
    ['b']
    """
    correctors = (params.get("defences") or {}).get("correctors") or []
    # a corrector that takes a model is named <kind>:<slug> (evalpipe.defences.correctors)
    slugs = [str(name).partition(":")[2] for name in correctors]
    if not any(slugs):
        return {}
    configs = model_configs(params, source=source)
    return {slug: configs[slug] for slug in slugs if slug in configs}


def model_config(params: Mapping[str, Any], slug: str, *, source: str = "params.yaml") -> dict:
    """One model's settings, or InputError listing the declared slugs."""
    configs = model_configs(params, source=source)
    if slug not in configs:
        raise InputError(f"{source}: models: no model {slug!r}; declared: {', '.join(configs)}")
    return configs[slug]


def model_benchmarks(
    model_cfg: Mapping[str, Any],
    suites: Mapping[str, Any],
    *,
    slug: str,
    source: str = "params.yaml",
) -> tuple[str, ...]:
    """The benchmarks one model runs: ``models.<slug>.benchmarks``, a subset of
    ``benchmarks.suites`` (in the suites' order); every suite when the entry leaves it out.

    Parameters
    ----------
    model_cfg : the model's settings (:func:`model_config`).
    suites : ``benchmarks.suites``.
    slug : the model's key, for messages.
    source : the params file, for messages.

    Raises
    ------
    InputError
        An empty list, a name listed twice, or one that ``benchmarks.suites`` does not declare.

    Examples
    --------
    >>> suites = {"gsm8k": "english", "mmlu": "english", "jnli": "japanese"}
    >>> model_benchmarks({"benchmarks": ["jnli", "gsm8k"]}, suites, slug="api")
    ('gsm8k', 'jnli')
    >>> model_benchmarks({}, suites, slug="api")
    ('gsm8k', 'mmlu', 'jnli')
    """
    chosen = model_cfg.get("benchmarks")
    if chosen is None:
        return tuple(str(name) for name in suites)
    where = f"{source}: models.{slug}.benchmarks"
    if not isinstance(chosen, list | tuple) or not chosen:
        raise InputError(
            f"{where}: expected a list of benchmarks of benchmarks.suites ({', '.join(suites)}), "
            f"or null for all of them; got {chosen!r}"
        )
    seen: set[str] = set()
    for i, name in enumerate(chosen):
        if name not in suites:
            raise InputError(
                f"{where}[{i}]: {name!r} is not in benchmarks.suites; declared: "
                f"{', '.join(suites)} (add it to benchmarks.suites to run it)"
            )
        if name in seen:
            raise InputError(f"{where}[{i}]: {name!r} is listed twice")
        seen.add(name)
    return tuple(str(name) for name in suites if name in seen)


def locate_settings(message: str, key: str) -> str:
    """An engine error with its ``model.<setting>`` names pointed at where the settings live.

    >>> locate_settings("params.yaml: model.base_urls: expected a URL", "models.qwen")
    'params.yaml: models.qwen.base_urls: expected a URL'
    """
    return _ENGINE_KEY.sub(f"{key}.", message)


def model_labels(model_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The labels a model entry gives (``family``, ``size``, ``quantisation``), in that order.

    >>> model_labels({"name": "x", "family": "qwen2.5", "size": "7B", "quantisation": None})
    {'family': 'qwen2.5', 'size': '7B'}
    """
    return {k: model_cfg[k] for k in MODEL_LABELS if model_cfg.get(k) is not None}
