"""Readers of the publishers' own files (``benchmarks.source: files``) and the raw-schema Hub
copies of JGLUE (``hub_raw``), each with the mapper that turns its rows into the common example
schema.

``READERS[name]`` is the reader a benchmark spec names (``sources: files: reader: <name>``,
and ``sources: hub_raw: reader: <name>`` for a raw-schema Hub copy read through its mapper).
``load_files`` and ``load_raw_hub`` give ``(examples, fewshot, origin, version, missing)`` record lists that
``evalpipe.benchmarks.loading.load_benchmark`` turns into frames. See docs/benchmarks.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.readers import bbh, gsm8k, imdb, jamp, jglue, lawqa, mmlu, niilc, wrime
from evalpipe.benchmarks.readers.base import Mapper, PublisherFiles, RawSplit, Reader
from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.errors import InputError

READERS: dict[str, Reader] = {
    r.name: r
    for r in (
        gsm8k.READER,
        bbh.READER,
        mmlu.READER,
        imdb.READER,
        jamp.READER,
        jglue.JNLI,
        niilc.READER,
        jglue.JSQUAD,
        jglue.JCOMMONSENSEQA,
        lawqa.READER,
        lawqa.ORDERS_READER,
        wrime.READER,
    )
}


def reader_for(spec: BenchmarkSpec, name: str | None = None) -> Reader:
    """The reader of benchmark ``spec`` (or the one named ``name``).

    Raises
    ------
    InputError
        When no reader is registered under that name; the message lists the registered ones.
    """
    key = name or spec.name
    if key not in READERS:
        raise InputError(
            f"{spec.name}: no publisher-file reader {key!r}; readers: {', '.join(READERS)} "
            "(benchmarks.source: files reads only these)"
        )
    return READERS[key]


def map_split(
    spec: BenchmarkSpec,
    mapper: Mapper,
    split: RawSplit,
    *,
    id_key: str | None = None,
    options: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The split's rows in the common schema, errors naming the publisher's file and line."""
    from evalpipe.benchmarks.loading import _map_rows

    return _map_rows(
        spec,
        split.rows,
        split=split.split,
        config=None,
        where="",
        options=options,
        id_key=id_key,
        mapper=mapper,
        locations=split.locations,
    )


def hold_out(records: list[dict[str, Any]], per_subtask: int) -> tuple[list, list]:
    """Split mapped records into (evaluated, held out): ``per_subtask`` per subtask by hash of
    the example id, exactly as the Hub path holds out BBH's few-shot pool."""
    from evalpipe.benchmarks.loading import hash_key

    by_sub: dict[Any, list[dict[str, Any]]] = {}
    for rec in records:
        by_sub.setdefault(rec["subtask"], []).append(rec)
    held: set[str] = set()
    for recs in by_sub.values():
        ranked = sorted(recs, key=lambda r: hash_key("holdout", r["example_id"]))
        held.update(r["example_id"] for r in ranked[:per_subtask])
    return (
        [r for r in records if r["example_id"] not in held],
        [r for r in records if r["example_id"] in held],
    )


@dataclass(frozen=True)
class Loaded:
    """Mapped records of one benchmark and where they came from."""

    examples: list[dict[str, Any]]
    fewshot: list[dict[str, Any]]
    origin: str
    version: str
    missing: tuple[str, ...] = ()


def load_files(spec: BenchmarkSpec, folder: str | Path, *, reader: str | None = None) -> Loaded:
    """Benchmark ``spec`` read from the publisher's files in ``folder``.

    Parameters
    ----------
    spec : the benchmark.
    folder : ``data/raw/benchmarks/<name>``.
    reader : registered reader name; defaults to the benchmark's name.

    Returns
    -------
    Loaded

    Raises
    ------
    InputError
        Folder or file missing, or a file in the wrong layout (file, line, what was expected).
    """
    folder = Path(folder)
    found = reader_for(spec, reader)
    if not folder.is_dir():
        raise InputError(
            f"{folder}: folder not found; benchmarks.source: files reads {spec.name} from the "
            f"publisher's files there: {', '.join(found.layout)} (from {found.origin})"
        )
    data: PublisherFiles = found.read(folder)
    examples = map_split(spec, found.mapper, data.evaluated, id_key=data.id_key)
    fewshot: list[dict[str, Any]] = []
    if data.fewshot is not None:
        fewshot = map_split(spec, found.mapper, data.fewshot, id_key=data.id_key)
    elif data.holdout:
        examples, fewshot = hold_out(examples, data.holdout)
    return Loaded(examples, fewshot, str(folder), data.version, data.missing)


def load_raw_hub(spec: BenchmarkSpec, hub_dir: str | Path | None) -> Loaded:
    """Benchmark ``spec`` read from the raw-schema Hub copy its spec declares
    (``sources.hub_raw``), through the mapper of the publisher reader it names.

    Parameters
    ----------
    spec : a benchmark with ``sources.hub_raw`` (the JGLUE tasks).
    hub_dir : a local directory laid out like the Hub, or None for the Hub itself.

    Returns
    -------
    Loaded
    """
    from evalpipe.benchmarks.loading import _load_hub

    raw = spec.hub_raw
    if raw is None:
        raise InputError(
            f"{spec.path}: sources.hub_raw: benchmark {spec.name!r} declares no raw-schema Hub "
            f"copy (use hub or files for {spec.name})"
        )
    reader = reader_for(spec, raw.reader)
    # JGLUE's valid set is "validation" or "test" on the copies, "test" in example ids (as
    # llm-jp-eval names it), so the same question gets the same id from every source
    examples, fewshot, origin = _load_hub(
        spec,
        hub_dir,
        hub=raw.hub,
        mapper=reader.mapper,
        options=raw.options,
        split_names=("test", "train"),
    )
    return Loaded(examples, fewshot, origin, raw.hub.version or origin)


__all__ = [
    "READERS",
    "Loaded",
    "PublisherFiles",
    "RawSplit",
    "Reader",
    "load_files",
    "load_raw_hub",
    "reader_for",
]
