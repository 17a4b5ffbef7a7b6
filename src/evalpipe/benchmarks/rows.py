"""What every way of reading a benchmark shares: the mapped example, mapping raw rows to the
common example schema with stable ids, and hash-based choices that never depend on row order.

The lowest module of :mod:`evalpipe.benchmarks`: the mappers (:mod:`.mapping`), the publisher-file
readers (:mod:`.readers`) and the loaders (:mod:`.loading`) build on it; it imports none of them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from evalpipe.errors import InputError

if TYPE_CHECKING:
    from evalpipe.benchmarks.spec import BenchmarkSpec

Mapper = Callable[..., dict[str, Any]]
"""``mapper(row, *, config, where, options) -> example(...)``: one raw row in the common schema."""


def hash_key(*parts: object) -> str:
    """A stable sort key: sha256 of the parts joined by '/' (never Python's salted hash)."""
    return hashlib.sha256("/".join(str(p) for p in parts).encode("utf-8")).hexdigest()


def text_field(row: Mapping[str, Any], key: str, where: str) -> str:
    """``row[key]`` as text; InputError naming ``where`` and the field when it is missing,
    empty or not a scalar."""
    value = row.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(f'{where}: field "{key}" is missing or empty; expected text')
    if not isinstance(value, str | int | float):
        raise InputError(f'{where}: field "{key}" must be text, got {type(value).__name__}')
    return str(value)


def example(
    fields: dict[str, str],
    perturbable: list[str],
    answer: str,
    *,
    choices: list[str] | None = None,
    answers: list[str] | None = None,
    subtask: str | None = None,
    target: str | None = None,
    protected: list[str] | None = None,
) -> dict[str, Any]:
    """One mapped example: the parts of the common schema a mapper returns (``answers``
    defaults to ``[answer]``, ``target`` to ``answer``)."""
    return {
        "fields": fields,
        "perturbable": perturbable,
        "choices": choices,
        "answer": answer,
        "answers": answers if answers is not None else [answer],
        "subtask": subtask,
        "target": target if target is not None else answer,
        "protected": protected or [],
    }


def mapper_options(spec: BenchmarkSpec) -> dict[str, Any]:
    """What the declarative ``local`` mapper needs besides the row."""
    return {
        **spec.mapping,
        "labels": list(spec.labels or []),
        "task_type": spec.task_type,
        "perturbable": list(spec.perturbable),
        "digit_map": spec.answer_options.get("digit_map"),
    }


def map_rows(
    spec: BenchmarkSpec,
    rows: list[dict[str, Any]],
    *,
    split: str,
    config: str | None,
    where: str,
    mapper: Mapper,
    id_key: str | None = None,
    options: Mapping[str, Any] | None = None,
    locations: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Raw rows -> example records of the common schema, with stable example ids.

    Parameters
    ----------
    spec : the benchmark (name, language, perturbable and protected fields, labels).
    rows : raw rows in the source's schema.
    split, config : the split name used in example ids, and the Hub config (or None).
    where : the source, for messages (``"<where>, row <n>"``) unless ``locations`` is given.
    mapper : turns one raw row into an :func:`example`.
    id_key : raw-row key holding a stable example id, or None for numbered ids.
    options : what the mapper needs besides the row (default :func:`mapper_options`).
    locations : each row's ``file:line`` (publisher files).

    Returns
    -------
    list of dict, one record per row (the columns of ``loading.EXAMPLE_COLUMNS``).

    Raises
    ------
    InputError
        A row the mapper rejects, a perturbable field the rows lack, a duplicate example id.
    """
    out: list[dict[str, Any]] = []
    counters: dict[str | None, int] = {}
    seen: dict[str, int] = {}
    options = mapper_options(spec) if options is None else options
    for i, row in enumerate(tqdm(rows, desc=f"map {spec.name}/{split}", disable=len(rows) < 2000)):
        loc = locations[i] if locations is not None else f"{where}, row {i + 1}"
        ex = mapper(row, config=config, where=loc, options=options)
        stray = [f for f in spec.perturbable if f not in ex["fields"]]
        if stray:
            raise InputError(
                f"{spec.path}: perturbable: {stray} are not fields of the mapped rows "
                f"(fields: {sorted(ex['fields'])}; first seen at {loc})"
            )
        protected = list(ex["protected"])
        for key in spec.protected:
            values = ex["answers"] if key == "answers" else [ex["answer"]]
            protected += [v for v in values if v and v not in protected]
        sub = ex["subtask"]
        n = counters.get(sub, 0)
        counters[sub] = n + 1
        if id_key is not None:
            raw_id = row.get(id_key)
            if raw_id is None or str(raw_id).strip() == "":
                raise InputError(f'{loc}: field "{id_key}" (the example id) is missing or empty')
            example_id = f"{spec.name}/{raw_id}"
        elif sub:
            example_id = f"{spec.name}/{split}/{sub}/{n}"
        else:
            example_id = f"{spec.name}/{split}/{n}"
        if example_id in seen:
            raise InputError(
                f"{loc}: duplicate example id {example_id!r} (also row {seen[example_id]})"
            )
        seen[example_id] = i + 1
        out.append(
            {
                "benchmark": spec.name,
                "example_id": example_id,
                "subtask": sub,
                "language": spec.language,
                "task_type": spec.task_type,
                "fields": json.dumps(ex["fields"], ensure_ascii=False, sort_keys=True),
                "perturbable": list(spec.perturbable),
                "choices": ex["choices"],
                "answer": ex["answer"],
                "answers": list(ex["answers"]),
                "labels": list(spec.labels) if spec.labels is not None else None,
                "target": ex["target"],
                "protected": protected,
            }
        )
    return out


def hold_out(
    mapped: list[dict[str, Any]], per_group: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split mapped records into (evaluated, held out): ``per_group`` per subtask, chosen by a
    hash of the example id (the few-shot pool of a benchmark with only an evaluated split)."""
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for r in mapped:
        groups.setdefault(r["subtask"], []).append(r)
    held: set[str] = set()
    for rows in groups.values():
        ranked = sorted(rows, key=lambda r: hash_key("holdout", r["example_id"]))
        held.update(r["example_id"] for r in ranked[:per_group])
    return (
        [r for r in mapped if r["example_id"] not in held],
        [r for r in mapped if r["example_id"] in held],
    )
