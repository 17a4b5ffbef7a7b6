"""The language the params schema is written in: keys (``Value``), sections (``Section``),
their constructors, and what is done with a schema: check a params mapping against it, fill in
its defaults, find one key.

Constructors: ``integer``, ``number``, ``probability``, ``boolean``, ``text`` (optionally with
``choices``), ``list_of(item)``, ``anything`` (a value another module validates), and
``Section({...})`` for a nested mapping (``Section(each=...)`` when the keys are names the user
chooses, as in ``benchmarks.suites``). Every constructor takes ``nullable=True`` when ``null``
is allowed, and ``default=`` the value a stage uses when the file leaves the key out. The table
written in this language is :mod:`evalpipe.params_schema.table`.
"""

from __future__ import annotations

import copy
import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalpipe.errors import InputError


class _NoDefault:
    """Marks a key with no default (``None`` is a real default: "null")."""

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Value:
    """One leaf key: ``kind`` is int | number | bool | str | list | any."""

    kind: str
    doc: str
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    item: Value | None = None  # for lists: every element
    default: Any = NO_DEFAULT

    def expected(self) -> str:
        """What a valid value looks like, for error messages."""
        if self.choices is not None:
            text = "one of " + ", ".join(str(c) for c in self.choices)
        elif self.kind == "list":
            text = f"a list (each {self.item.expected()})" if self.item else "a list"
        else:
            text = {
                "int": "an integer",
                "number": "a number",
                "bool": "true or false",
                "str": "a string",
                "any": "a value",
            }[self.kind]
            if self.minimum is not None and self.maximum is not None:
                text += f" in [{self.minimum:g}, {self.maximum:g}]"
            elif self.minimum is not None:
                text += f" >= {self.minimum:g}"
            elif self.maximum is not None:
                text += f" <= {self.maximum:g}"
        return text + (" or null" if self.nullable else "")


@dataclass(frozen=True)
class Section:
    """A mapping: fixed ``keys``, or (``each``) names the user chooses, all shaped alike.

    ``check`` sees the whole section after its keys passed, for rules that tie keys together
    (e.g. the three typo probabilities sum to at most 1); it raises InputError.
    """

    keys: Mapping[str, Value | Section] = field(default_factory=dict)
    doc: str = ""
    each: Value | Section | None = None
    nullable: bool = False
    check: Callable[[Mapping[str, Any], str], None] | None = None

    def expected(self) -> str:
        return "a mapping" + (" or null" if self.nullable else "")


def integer(
    doc: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    nullable: bool = False,
    default: Any = NO_DEFAULT,
) -> Value:
    return Value("int", doc, nullable, minimum, maximum, default=default)


def number(
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    nullable: bool = False,
    default: Any = NO_DEFAULT,
) -> Value:
    return Value("number", doc, nullable, minimum, maximum, default=default)


def probability(doc: str, *, nullable: bool = False, default: Any = NO_DEFAULT) -> Value:
    return Value("number", doc, nullable, 0.0, 1.0, default=default)


def boolean(doc: str, *, nullable: bool = False, default: Any = NO_DEFAULT) -> Value:
    return Value("bool", doc, nullable, default=default)


def text(
    doc: str,
    *,
    choices: tuple[str, ...] | None = None,
    nullable: bool = False,
    default: Any = NO_DEFAULT,
) -> Value:
    return Value("str", doc, nullable, choices=choices, default=default)


def list_of(item: Value, doc: str, *, nullable: bool = False, default: Any = NO_DEFAULT) -> Value:
    return Value("list", doc, nullable, item=item, default=default)


def anything(doc: str, *, default: Any = NO_DEFAULT) -> Value:
    return Value("any", doc, nullable=True, default=default)


def _type_ok(spec: Value, value: Any) -> bool:
    if spec.kind == "any":
        return True
    if spec.kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):  # YAML true is not the integer 1 here
        return False
    if spec.kind == "int":
        return isinstance(value, int)
    if spec.kind == "number":
        return isinstance(value, int | float) and not math.isnan(value)
    if spec.kind == "str":
        return isinstance(value, str)
    return isinstance(value, list)


def _describe(value: Any) -> str:
    kind = {str: "a string", bool: "a boolean", list: "a list", dict: "a mapping"}.get(
        type(value), type(value).__name__
    )
    return f"{value!r} ({kind})"


def _check_value(spec: Value, value: Any, dotted: str, source: str, errors: list[str]) -> None:
    if value is None:
        if not spec.nullable:
            errors.append(f"{source}: {dotted} must be {spec.expected()}, found null")
        return
    bad = not _type_ok(spec, value)
    if not bad and spec.choices is not None:
        bad = value not in spec.choices
    if not bad and spec.kind in ("int", "number"):
        bad = (spec.minimum is not None and value < spec.minimum) or (
            spec.maximum is not None and value > spec.maximum
        )
    if bad:
        errors.append(f"{source}: {dotted} must be {spec.expected()}, found {_describe(value)}")
        return
    if spec.kind == "list" and spec.item is not None:
        for i, element in enumerate(value):
            _check_value(spec.item, element, f"{dotted}[{i}]", source, errors)


def _check_section(spec: Section, value: Any, dotted: str, source: str, errors: list[str]) -> None:
    where = dotted or "the top level"
    if value is None:
        if not spec.nullable and dotted:
            errors.append(f"{source}: {where} must be {spec.expected()}, found null")
        return
    if not isinstance(value, Mapping):
        errors.append(f"{source}: {where} must be {spec.expected()}, found {_describe(value)}")
        return
    before = len(errors)
    for key, child_value in value.items():
        child_dotted = f"{dotted}.{key}" if dotted else str(key)
        child = spec.each if spec.each is not None else spec.keys.get(str(key))
        if child is None:
            errors.append(_unknown(spec, str(key), child_dotted, dotted, source))
        elif isinstance(child, Section):
            _check_section(child, child_value, child_dotted, source, errors)
        else:
            _check_value(child, child_value, child_dotted, source, errors)
    if spec.check is not None and len(errors) == before:
        try:
            spec.check(value, source)
        except InputError as exc:
            errors.append(str(exc))


def _unknown(spec: Section, key: str, dotted: str, parent: str, source: str) -> str:
    known = sorted(spec.keys)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" (did you mean '{f'{parent}.' if parent else ''}{close[0]}'?)" if close else ""
    return (
        f"{source}: unknown key '{dotted}'{hint}; {parent or 'the top level'} takes "
        f"{', '.join(known)}. A new key is declared in src/evalpipe/params_schema/table.py"
    )


def problems(schema: Section, params: Any, *, source: str) -> list[str]:
    """Every problem of ``params`` against ``schema``, one message each (empty: valid).

    Parameters
    ----------
    schema : the top-level section.
    params : the parsed params file.
    source : the file name used in messages.

    Returns
    -------
    list of str
    """
    errors: list[str] = []
    _check_section(schema, params, "", source, errors)
    return errors


def section_defaults(spec: Section) -> dict[str, Any]:
    """Every default of a section's fixed keys (nested sections too; copies, never shared)."""
    out: dict[str, Any] = {}
    for key, child in spec.keys.items():
        if isinstance(child, Section):
            nested = section_defaults(child)
            if nested:
                out[key] = nested
        elif child.default is not NO_DEFAULT:
            out[key] = copy.deepcopy(child.default)
    return out


def fill(spec: Section, value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` with every key it leaves out set to its default in ``spec`` (a new mapping).

    Examples
    --------
    >>> fill(Section({"n": integer("count", default=3)}), {})
    {'n': 3}
    """
    out = dict(value)
    for key, child in spec.keys.items():
        if isinstance(child, Section):
            if key not in out:
                nested = section_defaults(child)
                if nested:
                    out[key] = nested
            elif isinstance(out[key], Mapping):
                out[key] = fill(child, out[key])
        elif key not in out and child.default is not NO_DEFAULT:
            out[key] = copy.deepcopy(child.default)
    return out


def leaf(schema: Section, dotted: str) -> Value:
    """The key at ``dotted`` (``annotation.context_window``); KeyError naming it otherwise."""
    node: Value | Section = schema
    for part in dotted.split("."):
        if not isinstance(node, Section) or part not in node.keys:
            raise KeyError(f"no key {dotted!r} in the params schema")
        node = node.keys[part]
    if not isinstance(node, Value):
        raise KeyError(f"{dotted!r} is a section, not a key")
    return node
