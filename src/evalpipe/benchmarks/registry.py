"""The benchmark registry: every spec by name, the built-in ones (``specs/*.yaml``, read on
first use) and the local ones (``<local dir>/<name>/spec.yaml``), and the check of the params'
``benchmarks.suites`` against them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.benchmarks.spec_build import load_spec
from evalpipe.benchmarks.spec_files import LOCAL_SPEC, specs_root
from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES


@functools.cache
def _builtin() -> dict[str, BenchmarkSpec]:
    paths = sorted(specs_root().glob("*.yaml"))
    specs = [load_spec(p, kind="builtin") for p in paths]
    order = {n: i for i, n in enumerate(BUILTIN_ORDER)}
    specs.sort(key=lambda s: (order.get(s.name, len(order)), s.name))
    return {s.name: s for s in specs}


# Display order of the built-ins (English, then Japanese); a new spec file sorts after them.
BUILTIN_ORDER = (
    "gsm8k",
    "bbh",
    "mmlu",
    "imdb",
    "jamp",
    "jnli",
    "niilc",
    "jsquad",
    "jcommonsenseqa",
)


class _Registry(Mapping[str, BenchmarkSpec]):
    """The built-in specs, read from their files on first use."""

    def __getitem__(self, name: str) -> BenchmarkSpec:
        return _builtin()[name]

    def __iter__(self):
        return iter(_builtin())

    def __len__(self) -> int:
        return len(_builtin())


REGISTRY: Mapping[str, BenchmarkSpec] = _Registry()


def _local_dirs(local: str | Path | Iterable[str | Path] | None) -> list[Path]:
    if local is None:
        return []
    if isinstance(local, str | Path):
        return [Path(local)]
    if isinstance(local, Mapping):
        raise InputError(
            "benchmarks.local is gone: a local benchmark is a spec file, "
            f"<data/raw/benchmarks>/<name>/{LOCAL_SPEC} (docs/benchmarks.md)"
        )
    return [Path(p) for p in local]


def local_names(local: str | Path | Iterable[str | Path] | None) -> list[str]:
    """Names of the local benchmarks: folders holding a ``spec.yaml`` under the local dirs."""
    names: set[str] = set()
    for folder in _local_dirs(local):
        if folder.is_dir():
            names.update(p.parent.name for p in folder.glob(f"*/{LOCAL_SPEC}"))
    return sorted(names)


def list_specs(local: str | Path | Iterable[str | Path] | None = None) -> list[BenchmarkSpec]:
    """Every built-in benchmark, then the local ones found under ``local`` (sorted by name).

    Parameters
    ----------
    local : folder(s) holding local benchmarks (``<folder>/<name>/spec.yaml``), or None.

    Returns
    -------
    list of BenchmarkSpec

    Examples
    --------
    >>> [s.name for s in list_specs()][:3]
    ['gsm8k', 'bbh', 'mmlu']
    """
    return [*REGISTRY.values(), *(get_spec(n, local) for n in local_names(local))]


def get_spec(name: str, local: str | Path | Iterable[str | Path] | None = None) -> BenchmarkSpec:
    """The spec of benchmark ``name``: a built-in one, or a local ``<folder>/<name>/spec.yaml``.

    Parameters
    ----------
    name : benchmark name (``gsm8k``, ..., or a local benchmark's folder name).
    local : folder(s) holding local benchmarks (the stages pass ``data/raw/benchmarks``).

    Returns
    -------
    BenchmarkSpec

    Raises
    ------
    InputError
        When the name is unknown (the message lists the known names), or the spec is invalid.
    """
    if name in REGISTRY:
        for folder in _local_dirs(local):
            if (folder / name / LOCAL_SPEC).is_file():
                raise InputError(
                    f"{folder / name / LOCAL_SPEC}: name clashes with the built-in benchmark "
                    f"{name!r}; rename the folder"
                )
        return REGISTRY[name]
    for folder in _local_dirs(local):
        path = folder / name / LOCAL_SPEC
        if path.is_file():
            return load_spec(path, name=name, kind="local")
    known = [*REGISTRY, *local_names(local)]
    raise InputError(
        f"unknown benchmark {name!r}; known benchmarks: {', '.join(known)} "
        f"(a local benchmark is a folder data/raw/benchmarks/<name>/ holding {LOCAL_SPEC})"
    )


def subtasks_of(name: str) -> tuple[str, ...]:
    """The subtasks a built-in spec lists (BBH's 27, MMLU's 57 subjects)."""
    return tuple(REGISTRY[name].subtasks)


def validate_suites(
    suites: Any, *, local: Any = None, source: str = "params.yaml"
) -> dict[str, str]:
    """The ``benchmarks.suites`` declaration, checked: ``{benchmark: language of its words}``.

    Parameters
    ----------
    suites : the params value.
    local : folder(s) of local benchmarks.
    source : the params file, for messages.

    Returns
    -------
    dict

    Raises
    ------
    InputError
        Not a mapping, an unknown benchmark, or a language that is not a word list.
    """
    if not isinstance(suites, Mapping) or not suites:
        raise InputError(
            f"{source}: benchmarks.suites: expected a mapping {{benchmark: language}}, got {suites!r}"
        )
    out = {}
    for name, language in suites.items():
        if language not in LANGUAGES:
            raise InputError(
                f"{source}: benchmarks.suites.{name}: expected one of {', '.join(LANGUAGES)}, "
                f"got {language!r}"
            )
        spec = get_spec(str(name), local)
        if spec.language != language:
            raise InputError(
                f"{source}: benchmarks.suites.{name}: {language}, but its spec ({spec.path}) "
                f"says language {spec.language}; the target words follow the benchmark's language"
            )
        out[str(name)] = str(language)
    return out


__all__ = [
    "BUILTIN_ORDER",
    "REGISTRY",
    "get_spec",
    "list_specs",
    "local_names",
    "subtasks_of",
    "validate_suites",
]


def __getattr__(name: str) -> tuple[str, ...]:
    # BBH's subtasks and MMLU's subjects are listed once, in their spec files.
    if name == "BBH_SUBTASKS":
        return subtasks_of("bbh")
    if name == "MMLU_SUBJECTS":
        return subtasks_of("mmlu")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
