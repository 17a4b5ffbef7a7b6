"""Reading a spec file: its YAML, and the ``include:`` bases merged under it.

Shared parts live in base files (``specs/base/*.yaml``) that a spec pulls in with
``include:``; later files and the spec itself win; mappings merge key by key, anything else is
replaced. An include names a file next to the including one, else a built-in base or spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from evalpipe.errors import InputError

LOCAL_SPEC = "spec.yaml"  # a local benchmark's spec: <local dir>/<name>/spec.yaml


def specs_root() -> Path:
    """The folder of the built-in spec files (package data)."""
    return Path(str(resources.files("evalpipe.benchmarks") / "specs"))


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError(f"{path}: spec file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of spec keys at the top level")
    return data


def _include_path(name: str, base: Path, where: Path) -> Path:
    """An include names a file next to the including one, else a built-in base or spec."""
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: include: expected a file name or a list of them")
    candidates = []
    for folder in (base, specs_root() / "base", specs_root()):
        candidates += [folder / name, folder / f"{name}.yaml"]
    for path in candidates:
        if path.is_file():
            return path
    raise InputError(
        f"{where}: include: {name!r} not found next to the spec nor among the built-in bases "
        f"({', '.join(sorted(p.stem for p in (specs_root() / 'base').glob('*.yaml')))})"
    )


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: mappings merge key by key, anything else is replaced.

    Examples
    --------
    >>> merge({"a": {"x": 1, "y": 2}, "b": [1]}, {"a": {"y": 3}, "b": [2]})
    {'a': {'x': 1, 'y': 3}, 'b': [2]}
    """
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve(path: str | Path, *, _stack: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The spec file at ``path`` with its includes merged in (without the ``include`` key).

    Parameters
    ----------
    path : a spec or base file.

    Returns
    -------
    dict : the merged spec.

    Raises
    ------
    InputError
        Unreadable YAML, a missing include, or an include cycle.
    """
    path = Path(path).resolve()
    if path in _stack:
        chain = " -> ".join(p.name for p in (*_stack, path))
        raise InputError(f"{path}: include cycle ({chain})")
    data = _read_yaml(path)
    includes = data.pop("include", None) or []
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list):
        raise InputError(f"{path}: include: expected a file name or a list of them")
    merged: dict[str, Any] = {}
    for name in includes:
        merged = merge(
            merged, resolve(_include_path(name, path.parent, path), _stack=(*_stack, path))
        )
    return merge(merged, data)
