"""Every key params.yaml may hold: its type, range, meaning and default, in one declarative table.

``evalpipe.params.load_params`` checks a params file against ``SCHEMA`` before any stage reads
it, so a misspelt key (``min_kapa``) or a wrong type (``min_kappa: "0.6"``) stops every stage
with a message naming the file, the dotted key and what was expected, instead of being ignored
or crashing later with a raw TypeError.

Two modules: :mod:`.language` (how a key is declared: ``Value``, ``Section``, ``integer``,
``text``, ..., and checking / filling a mapping against a schema) and :mod:`.table` (the one
table, ``SCHEMA``, written in it; a new key is one line there). This package binds the two:
``validate_params``, ``with_defaults``, ``default_of`` (a library function's keyword default:
``def f(*, context_window: int = default_of("annotation.context_window"))``) and
``engine_defaults``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from evalpipe.errors import InputError
from evalpipe.params_schema.language import (
    NO_DEFAULT,
    Section,
    Value,
    anything,
    boolean,
    fill,
    integer,
    leaf,
    list_of,
    number,
    probability,
    problems,
    section_defaults,
    text,
)
from evalpipe.params_schema.table import (
    BACKENDS,
    BENCHMARK_SOURCES,
    MODEL_LABELS,
    PROMPT_STYLES,
    SCHEMA,
    validate_source,
)

__all__ = [
    "BACKENDS",
    "BENCHMARK_SOURCES",
    "MODEL_LABELS",
    "NO_DEFAULT",
    "PROMPT_STYLES",
    "SCHEMA",
    "Section",
    "Value",
    "anything",
    "boolean",
    "default_of",
    "engine_defaults",
    "integer",
    "list_of",
    "number",
    "probability",
    "text",
    "validate_params",
    "validate_source",
    "with_defaults",
]


def validate_params(params: Mapping[str, Any], *, source: str = "params.yaml") -> None:
    """Check every key of a params mapping against ``SCHEMA``.

    Parameters
    ----------
    params : the parsed params file.
    source : the file name used in messages.

    Raises
    ------
    InputError listing every problem, one per line: an unknown key (with the closest known key
    and the keys its section takes), a value of the wrong type or outside its range (with what
    was expected and what was found), or a section rule that fails (e.g. typo probabilities that
    sum above 1).

    Examples
    --------
    >>> validate_params({"annotation": {"min_kappa": 0.6}})
    >>> try:
    ...     validate_params({"annotation": {"min_kapa": 0.6}})
    ... except InputError as exc:
    ...     print(str(exc).split(";")[0])
    params.yaml: unknown key 'annotation.min_kapa' (did you mean 'annotation.min_kappa'?)
    """
    errors = problems(SCHEMA, params, source=source)
    if errors:
        raise InputError("\n".join(errors))


def with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with every key the file leaves out set to its ``SCHEMA`` default.

    Sections whose keys the user names (``models``, ``benchmarks.suites``) get no entries; a
    key without a default stays absent. The input is not changed.

    Examples
    --------
    >>> filled = with_defaults({"annotation": {"min_kappa": 0.5}})
    >>> filled["annotation"]["min_kappa"], filled["annotation"]["context_window"], filled["seed"]
    (0.5, 7, 42)
    """
    return fill(SCHEMA, params)


def default_of(dotted: str) -> Any:
    """The default of one key, for a library function's keyword default.

    Examples
    --------
    >>> default_of("annotation.context_window")
    7
    >>> default_of("model_defaults.max_model_len")
    2048
    """
    value = leaf(SCHEMA, dotted).default
    if value is NO_DEFAULT:
        raise KeyError(f"{dotted!r} has no default in the params schema")
    return copy.deepcopy(value)


def engine_defaults() -> dict[str, Any]:
    """Every engine key's default (``model_defaults`` / ``judge``), for a partial model config."""
    keys = SCHEMA.keys["model_defaults"]
    assert isinstance(keys, Section)
    return {
        k: v for k, v in section_defaults(keys).items() if k != "name" and k not in MODEL_LABELS
    }
