"""Reading params.yaml (stages only; library functions take plain values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evalpipe.errors import InputError
from evalpipe.params_schema import validate_params, with_defaults


def load_params(path: str | Path = "params.yaml", *, validate: bool = True) -> dict[str, Any]:
    """The parsed params file, checked against ``evalpipe.params_schema.SCHEMA``.

    Parameters
    ----------
    path : the params file.
    validate : False only for tools that read a file mid-edit; every stage validates.

    Returns
    -------
    The top-level mapping, with every key the file leaves out set to its default from
    ``SCHEMA`` (the one place defaults are written), so stages index keys directly.

    Raises
    ------
    InputError when the file is missing or not YAML, or names an unknown key or a value of the
    wrong type (see ``validate_params``).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: params file not found (run from the repository root)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping at the top level")
    if validate:
        validate_params(data, source=str(path))
    return with_defaults(data)


def section(params: dict[str, Any], *keys: str, path: str = "params.yaml") -> Any:
    """``section(p, "perturb", "replace_prob")`` with an error naming the missing key."""
    node: Any = params
    for i, key in enumerate(keys):
        if not isinstance(node, dict) or key not in node:
            dotted = ".".join(keys[: i + 1])
            raise InputError(f"{path}: missing key {dotted!r}")
        node = node[key]
    return node


def resolved_text(params: dict[str, Any]) -> str:
    """The YAML of a loaded params file (every default filled in), keys sorted: what the params
    stage writes to ``data/params.yaml`` for the other stages' DVC ``params`` to name.

    DVC stops a stage whose ``params`` name a key the file lacks; naming the keys in this
    complete copy lets params.yaml give any section in part.

    >>> print(resolved_text({"seed": 42, "impact": {"top_n_plot": 20, "small_n": 30}}), end="")
    impact:
      small_n: 30
      top_n_plot: 20
    seed: 42
    """
    return yaml.safe_dump(params, sort_keys=True, allow_unicode=True, default_flow_style=False)
