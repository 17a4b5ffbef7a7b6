"""The one reader registry: readers of the publishers' own files (``benchmarks.source: files``;
also the mappers of the raw-schema Hub copies, ``hub_raw``), each with the mapper that turns its
rows into the common example schema, and the generic ``json`` reader of the files a spec lists.

``READERS[name]`` is the reader a benchmark spec names (``sources: files: reader: <name>``,
and ``sources: hub_raw: reader: <name>`` for a raw-schema Hub copy read through its mapper): a
:class:`Reader` (a publisher's files) or a :class:`ListedFilesReader`. :func:`get_mapper` finds
a mapper by name (the Hub-schema mappers and the readers' own). :func:`load_files` gives
``(examples, fewshot, origin, version, missing)`` record lists that
``evalpipe.benchmarks.loading.load_benchmark`` turns into frames. See docs/benchmarks.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalpipe.benchmarks.mapping import MAPPERS
from evalpipe.benchmarks.readers import (
    bbh,
    gsm8k,
    imdb,
    jamp,
    jglue,
    json_files,
    lawqa,
    mmlu,
    niilc,
    wrime,
)
from evalpipe.benchmarks.readers.base import ListedFilesReader, PublisherFiles, RawSplit, Reader
from evalpipe.benchmarks.rows import Mapper, hold_out, map_rows
from evalpipe.errors import InputError

if TYPE_CHECKING:
    from evalpipe.benchmarks.spec import BenchmarkSpec

READERS: dict[str, Reader | ListedFilesReader] = {
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
        json_files.READER,
    )
}


def reader_names() -> list[str]:
    """Every reader a spec may name (sorted)."""
    return sorted(READERS)


def mapper_registry() -> dict[str, Mapper]:
    """Every mapper by name: the Hub-schema mappers (:data:`evalpipe.benchmarks.mapping.MAPPERS`)
    and, under its reader's name when no Hub-schema mapper has that name, each publisher
    reader's own, so a spec read only from publisher files can name its reader's mapper."""
    registry = {name: r.mapper for name, r in READERS.items() if isinstance(r, Reader)}
    registry.update(MAPPERS)
    return registry


def get_mapper(name: str, *, where: str = "spec") -> Mapper:
    """The mapper called ``name``; InputError naming ``where`` and the known names otherwise."""
    registry = mapper_registry()
    if name not in registry:
        raise InputError(
            f"{where}: unknown mapper {name!r}; known mappers: {', '.join(sorted(registry))}"
        )
    return registry[name]


def reader_for(spec: BenchmarkSpec, name: str | None = None) -> Reader:
    """The reader of benchmark ``spec`` (or the one named ``name``).

    Raises
    ------
    InputError
        When no reader is registered under that name; the message lists the registered ones.
    """
    key = name or spec.name
    found = READERS.get(key)
    if not isinstance(found, Reader):
        publishers = [n for n, r in READERS.items() if isinstance(r, Reader)]
        raise InputError(
            f"{spec.name}: no publisher-file reader {key!r}; readers: {', '.join(publishers)} "
            "(benchmarks.source: files reads only these)"
        )
    return found


def map_split(
    spec: BenchmarkSpec,
    mapper: Mapper,
    split: RawSplit,
    *,
    id_key: str | None = None,
    options: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The split's rows in the common schema, errors naming the publisher's file and line."""
    return map_rows(
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
    data: PublisherFiles = found.load(folder, subtasks=tuple(spec.subtasks))
    examples = map_split(spec, found.mapper, data.evaluated, id_key=data.id_key)
    fewshot: list[dict[str, Any]] = []
    if data.fewshot is not None:
        fewshot = map_split(spec, found.mapper, data.fewshot, id_key=data.id_key)
    elif data.holdout:
        examples, fewshot = hold_out(examples, data.holdout)
    return Loaded(examples, fewshot, str(folder), data.version, data.missing)


__all__ = [
    "READERS",
    "ListedFilesReader",
    "Loaded",
    "PublisherFiles",
    "RawSplit",
    "Reader",
    "get_mapper",
    "load_files",
    "mapper_registry",
    "reader_for",
    "reader_names",
]
