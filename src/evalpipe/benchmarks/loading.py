"""Load a benchmark's evaluated split and few-shot pool as frames of the common schema.

A spec's ``sources`` say where rows come from: the Hub ids (``hub``, through
``datasets.load_dataset``), the bundled JSONL sample files (``sample``), or files in a folder
(``files``: the publishers' files in ``data/raw/benchmarks/<name>/``, or a local benchmark's own
files next to its spec) parsed by a named reader. A local directory laid out like the Hub
repositories can stand in for the Hub (``hub_dir``, or the ``EVALPIPE_HUB_DIR`` environment
variable): ``<hub_dir>/<owner>/<dataset>/`` with the dataset's README.md (``configs:`` metadata)
and data files.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from tqdm.auto import tqdm

from evalpipe.benchmarks.readers import (
    READERS,
    ListedFilesReader,
    Loaded,
    Reader,
    get_mapper,
    load_files,
    reader_for,
    reader_names,
)
from evalpipe.benchmarks.readers.base import expand, load_dataset_rows, read_bundled_jsonl
from evalpipe.benchmarks.registry import get_spec
from evalpipe.benchmarks.rows import Mapper, hash_key, hold_out, map_rows
from evalpipe.benchmarks.spec import BenchmarkSpec, FilesSource, HubSource
from evalpipe.errors import InputError
from evalpipe.params_schema import BENCHMARK_SOURCES, default_of
from evalpipe.paths import ProjectPaths

# default folder of the publishers' files (source files), relative to the working directory
FILES_DIR = ProjectPaths().raw_benchmarks
HUB_DIR_ENV = "EVALPIPE_HUB_DIR"

EXAMPLE_COLUMNS = [
    "benchmark", "example_id", "subtask", "language", "task_type", "fields", "perturbable",
    "choices", "answer", "answers", "labels", "target", "protected",
]  # fmt: skip

EXAMPLE_SCHEMA = pa.schema(
    [
        ("benchmark", pa.string()),
        ("example_id", pa.string()),
        ("subtask", pa.string()),
        ("language", pa.string()),
        ("task_type", pa.string()),
        ("fields", pa.string()),
        ("perturbable", pa.list_(pa.string())),
        ("choices", pa.list_(pa.string())),
        ("answer", pa.string()),
        ("answers", pa.list_(pa.string())),
        ("labels", pa.list_(pa.string())),
        ("target", pa.string()),
        ("protected", pa.list_(pa.string())),
    ]
)


def samples_root() -> Path:
    """The folder of the bundled sample sets (package data)."""
    return Path(str(resources.files("evalpipe.benchmarks") / "samples"))


def sample_files(name: str | BenchmarkSpec) -> tuple[Path, Path | None]:
    """The bundled (evaluated, few-shot) JSONL files of a built-in benchmark (its spec's
    ``sources.sample``; the few-shot file is None when the spec lists none)."""
    spec = get_spec(name) if isinstance(name, str) else name
    if spec.sample is None:
        raise InputError(f"{spec.path}: sources.sample: the spec has no bundled sample")
    if spec.sample.test is None:
        raise InputError(
            f"{spec.path}: sources.sample is the folder {spec.sample.folder!r} of publisher "
            "files, not JSONL files"
        )
    root = samples_root()
    fewshot = root / spec.sample.fewshot if spec.sample.fewshot else None
    return root / spec.sample.test, fewshot


def _hub_rows(
    dataset: str,
    config: str | None,
    split: str,
    hub_dir: str | Path | None,
    data_files: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    path = str(Path(hub_dir) / dataset) if hub_dir else dataset
    what = f"{path} (config {config or 'default'}, split {split})"
    args = (path, config) if config else (path,)
    kwargs: dict[str, Any] = {"split": split}
    if data_files and split in data_files:
        # only this split's files: the builder then prepares no other split
        args, kwargs["data_files"] = (path,), {split: data_files[split]}
    if not hub_dir:
        return load_dataset_rows(*args, what=what, **kwargs), what
    # datasets keys its cache for a local repository on the folder's base name and config only,
    # so two directories laid out alike would share (stale) Arrow files: use a private cache.
    with tempfile.TemporaryDirectory(prefix="evalpipe-hub-") as cache_dir:
        return load_dataset_rows(*args, what=what, cache_dir=cache_dir, **kwargs), what


def _frame(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(list(records), columns=EXAMPLE_COLUMNS)
    return df.astype({c: object for c in EXAMPLE_COLUMNS})


def select_examples(df: pd.DataFrame, max_samples: int | None, *, seed: int) -> pd.DataFrame:
    """Keep ``max_samples`` examples chosen by a hash of (seed, example_id); keep their order.

    The choice of one example never depends on the others' order, so the same ids come back
    on every run and on every machine. ``None`` keeps all.

    Parameters
    ----------
    df : examples with an ``example_id`` column.
    max_samples : how many to keep, or None.
    seed : the project seed.

    Returns
    -------
    DataFrame
    """
    if max_samples is None or len(df) <= max_samples:
        return df.reset_index(drop=True)
    keys = df["example_id"].map(lambda eid: hash_key(seed, eid))
    keep = keys.sort_values(kind="stable").index[:max_samples]
    return df.loc[sorted(keep)].reset_index(drop=True)


def _fewshot_pool(df: pd.DataFrame, per_group: int) -> pd.DataFrame:
    """A deterministic few-shot pool: ``per_group`` examples per subtask, by hash of the id."""
    if df.empty:
        return df
    ranked = df.assign(
        _key=df["example_id"].map(lambda eid: hash_key("fewshot", eid)),
        _group=df["subtask"].fillna(""),
        _pos=range(len(df)),
    )
    ranked = ranked.sort_values(["_group", "_key"], kind="stable")
    kept = ranked.groupby("_group", sort=True).head(per_group).sort_values("_pos")
    return kept.drop(columns=["_key", "_group", "_pos"]).reset_index(drop=True)


def load_benchmark(
    spec: BenchmarkSpec,
    *,
    source: str | Mapping[str, str] = default_of("benchmarks.source"),
    max_samples: int | None = None,
    seed: int = default_of("seed"),
    hub_dir: str | Path | None = None,
    files_dir: str | Path | None = None,
    fewshot_pool: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluated examples and the few-shot pool of one benchmark.

    Parameters
    ----------
    spec : the benchmark (``get_spec(name)``).
    source : ``sample`` (bundled files), ``hub`` (the spec's Hugging Face ids), ``files`` (the
        publisher's files in ``files_dir/<name>/``, through the reader the spec names) or
        ``hub_raw`` (the raw-schema Hub copies of the JGLUE tasks); a mapping ``{default: ...,
        <name>: ...}`` chooses per benchmark (default: params ``benchmarks.source``). Ignored
        for local benchmarks, which always read the files next to their spec.
    max_samples : evaluated examples to keep (deterministic hash selection), None for all.
    seed : the project seed (part of the selection hash; default: params ``seed``).
    hub_dir : a local directory laid out like the Hub to load from instead of the network;
        defaults to the ``EVALPIPE_HUB_DIR`` environment variable.
    files_dir : the folder holding ``<name>/`` folders of publisher files (source ``files``);
        defaults to ``data/raw/benchmarks`` relative to the working directory.
    fewshot_pool : few-shot candidates kept per subtask (default: the spec's ``fewshot.pool``).

    Returns
    -------
    (examples, fewshot) : two DataFrames with columns ``EXAMPLE_COLUMNS``. The few-shot pool
        comes from the train/dev split (or, where there is none, from examples held out of the
        evaluated split), never from the evaluated examples; it may be empty.
        ``examples.attrs["evalpipe"]`` = ``{"source", "dataset_version", "fewshot_missing"}``
        (see ``dataset_metadata``).

    Raises
    ------
    InputError
        Unknown source, bad max_samples, malformed rows, or an empty selection.
    """
    if max_samples is not None and (
        isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples < 1
    ):
        raise InputError(
            f"params.yaml: benchmarks.max_samples: expected a positive integer or null, "
            f"got {max_samples!r}"
        )
    source = resolve_source(source, spec.name)
    missing: tuple[str, ...] = ()
    if spec.kind == "local":
        assert spec.files is not None  # build_spec requires it for local specs
        examples, fewshot, origin, version, missing = _read_folder(spec, spec.root)
        source = "local"
    elif source not in BENCHMARK_SOURCES:
        raise InputError(
            f"params.yaml: benchmarks.source: expected one of {', '.join(BENCHMARK_SOURCES)}, got {source!r}"
        )
    elif getattr(spec, source) is None:
        raise InputError(
            f"{spec.path}: sources.{source}: benchmark {spec.name!r} declares no {source} source "
            f"(it has: {', '.join(s for s in BENCHMARK_SOURCES if getattr(spec, s) is not None)})"
        )
    elif source == "sample":
        examples, fewshot, origin = _load_sample(spec)
        version = "bundled sample" + (f" ({spec.version})" if spec.version else "")
    elif source == "hub":
        hub_dir = hub_dir or os.environ.get(HUB_DIR_ENV) or None
        examples, fewshot, origin = _load_hub(spec, hub_dir)
        version = (spec.hub.version if spec.hub else None) or origin
    elif source == "files":
        examples, fewshot, origin, version, missing = _read_folder(
            spec, Path(files_dir or FILES_DIR) / spec.name
        )
    else:
        loaded = load_raw_hub(spec, hub_dir or os.environ.get(HUB_DIR_ENV) or None)
        examples, fewshot, origin = loaded.examples, loaded.fewshot, loaded.origin
        version, missing = loaded.version, loaded.missing
    examples = select_examples(_frame(examples), max_samples, seed=seed)
    if examples.empty:
        raise InputError(
            f"{spec.name}: no examples selected from {origin} "
            f"(max_samples={max_samples}); expected at least one"
        )
    fewshot_df = _frame(fewshot)
    # Guard against a pool that shares items with the evaluated set (duplicated rows across
    # splits). An item is its text and its options: BBH hyperbaton asks every question with the
    # same text and differs only in the options, so text alone would empty the pool.
    evaluated = set(_item_keys(examples))
    fewshot_df = fewshot_df[~_item_keys(fewshot_df).isin(evaluated)]
    pool = _fewshot_pool(
        fewshot_df.reset_index(drop=True),
        spec.fewshot_pool if fewshot_pool is None else fewshot_pool,
    )
    examples.attrs["evalpipe"] = {
        "source": source,
        "dataset_version": version,
        "fewshot_missing": list(missing),
    }
    return examples, pool


def _item_keys(df: pd.DataFrame) -> pd.Series:
    """One key per row: the fields JSON plus the options (never perturbed, part of the item)."""
    return df["fields"] + "\x1f" + df["choices"].map(lambda c: json.dumps(_as_list(c)))


def _as_list(value: Any) -> list[str] | None:
    return None if value is None else [str(v) for v in value]


def recorded_metadata(path: str | Path) -> dict[str, Any]:
    """What ``dataset_metadata`` recorded in a benchmark Parquet file (empty when nothing was).

    Parameters
    ----------
    path : ``data/benchmarks/{name}.parquet`` or its ``.fewshot.parquet``.

    Returns
    -------
    dict
        ``{"source", "dataset_version", "fewshot_missing": list}`` as far as recorded.
    """
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    out: dict[str, Any] = {}
    for key in ("source", "dataset_version", "fewshot_missing"):
        raw = meta.get(f"evalpipe.{key}".encode())
        if raw is not None:
            text = raw.decode("utf-8")
            out[key] = json.loads(text) if key == "fewshot_missing" else text
    return out


def resolve_source(source: str | Mapping[str, str], name: str) -> str:
    """The source of benchmark ``name``: ``source`` itself, or from a per-benchmark mapping.

    Parameters
    ----------
    source : a source name, or ``{default: <source>, <benchmark>: <source>, ...}`` so that, for
        example, one benchmark reads its raw Hub copy while the others read the usual ids.
    name : the benchmark.

    Returns
    -------
    str

    Raises
    ------
    InputError
        A mapping without an entry for ``name`` and without ``default``.
    """
    if isinstance(source, Mapping):
        chosen = source.get(name, source.get("default"))
        if chosen is None:
            raise InputError(
                f"params.yaml: benchmarks.source: no entry for {name!r} and no 'default'; "
                f"expected one of {', '.join(BENCHMARK_SOURCES)} per benchmark"
            )
        return str(chosen)
    return source


def dataset_metadata(examples: pd.DataFrame) -> dict[str, str]:
    """Parquet key-value metadata recording where a benchmark's rows came from.

    Parameters
    ----------
    examples : the frame ``load_benchmark`` returned.

    Returns
    -------
    dict
        ``{"evalpipe.source", "evalpipe.dataset_version", "evalpipe.fewshot_missing"}`` (the last
        a JSON list); empty when the frame carries no such record.
    """
    info = examples.attrs.get("evalpipe")
    if not info:
        return {}
    return {
        "evalpipe.source": str(info["source"]),
        "evalpipe.dataset_version": str(info["dataset_version"]),
        "evalpipe.fewshot_missing": json.dumps(list(info["fewshot_missing"])),
    }


def _splits(spec: BenchmarkSpec) -> tuple[str, str]:
    """Split names used in example ids, the same whichever source the rows come from."""
    split = spec.hub.split if spec.hub else "test"
    fs_split = (spec.hub.fewshot_split if spec.hub else None) or "fewshot"
    return split, fs_split


def _load_sample(spec: BenchmarkSpec) -> tuple[list, list, str]:
    if spec.sample is not None and spec.sample.folder is not None:
        if spec.files is None:
            raise InputError(
                f"{spec.path}: sources.sample.folder needs sources.files.reader to read it"
            )
        folder = samples_root() / spec.sample.folder
        examples, fewshot, _, _, _ = _read_folder(spec, folder)
        return examples, fewshot, f"bundled sample {spec.sample.folder}/ (publisher files)"
    test_path, fewshot_path = sample_files(spec)
    split, fs_split = _splits(spec)
    mapper = _mapper(spec, spec.sample.mapper if spec.sample else None)
    examples = map_rows(
        spec, read_bundled_jsonl(test_path), split=split, config=None, where=str(test_path),
        mapper=mapper,
    )  # fmt: skip
    fewshot = []
    if fewshot_path is not None and fewshot_path.exists():
        fewshot = map_rows(
            spec, read_bundled_jsonl(fewshot_path), split=fs_split, config=None,
            where=str(fewshot_path), mapper=mapper,
        )  # fmt: skip
    return examples, fewshot, f"bundled sample {test_path.name}"


def _load_hub(
    spec: BenchmarkSpec,
    hub_dir: str | Path | None,
    *,
    hub: HubSource | None = None,
    mapper: Mapper | None = None,
    options: Mapping[str, Any] | None = None,
    split_names: tuple[str, str] | None = None,
) -> tuple[list, list, str]:
    # hub/mapper/options/split_names: a raw-schema copy (sources.hub_raw) whose split names
    # differ from the ids' (JGLUE valid = "validation" there, "test" in example ids)
    hub = hub or spec.hub
    assert hub is not None
    mapper = mapper or _mapper(spec, hub.mapper)
    id_split, id_fs_split = split_names or (hub.split, hub.fewshot_split)
    examples: list[dict[str, Any]] = []
    fewshot: list[dict[str, Any]] = []
    kw: dict[str, Any] = {"mapper": mapper, "options": options}
    for config in tqdm(hub.configs, desc=f"load {spec.name}", disable=len(hub.configs) < 2):
        rows, what = _hub_rows(hub.dataset, config, hub.split, hub_dir, hub.data_files)
        mapped = map_rows(spec, rows, split=id_split, config=config, where=what, **kw)
        if hub.fewshot_split is None and hub.fewshot_holdout:
            mapped, held = hold_out(mapped, hub.fewshot_holdout)
            fewshot.extend(held)
        examples.extend(mapped)
        if hub.fewshot_split is not None:
            fs_rows, fs_what = _hub_rows(
                hub.dataset, config, hub.fewshot_split, hub_dir, hub.data_files
            )
            fs_split = id_fs_split or hub.fewshot_split
            fewshot.extend(
                map_rows(spec, fs_rows, split=fs_split, config=config, where=fs_what, **kw)
            )
    return examples, fewshot, f"{hub.dataset} split {hub.split}"


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


def _mapper(spec: BenchmarkSpec, name: str | None) -> Mapper:
    """The mapper a source names, or the spec's own."""
    return get_mapper(name or spec.mapper_name, where=str(spec.path))


def _read_folder(spec: BenchmarkSpec, folder: Path) -> tuple[list, list, str, str, tuple[str, ...]]:
    """Rows from a folder through the spec's reader (``evalpipe.benchmarks.readers.READERS``): a
    publisher's reader (it knows its files, version and mapper) or a generic one (the spec lists
    the files)."""
    files = spec.files
    assert files is not None
    if isinstance(READERS.get(files.reader), Reader):
        loaded = load_files(spec, folder, reader=files.reader)
        return loaded.examples, loaded.fewshot, loaded.origin, loaded.version, loaded.missing
    examples, fewshot, origin, missing = _load_files(spec, files, folder)
    return examples, fewshot, origin, files.version or spec.version or origin, missing


def _load_files(
    spec: BenchmarkSpec, files: FilesSource, folder: Path
) -> tuple[list, list, str, tuple[str, ...]]:
    found = READERS.get(files.reader)
    if not isinstance(found, ListedFilesReader):
        raise InputError(
            f"{spec.path}: sources.files.reader: unknown reader {files.reader!r}; known readers: "
            f"{', '.join(reader_names())}"
        )
    read = found.read
    options = {"json_field": None, **files.options}
    if not files.test:
        raise InputError(
            f"{spec.path}: sources.files.test: the {files.reader} reader reads the files the spec "
            "lists; expected at least one file name or pattern"
        )
    if not expand(folder, files.test):
        raise InputError(
            f"{folder}: no file matches {list(files.test)} (benchmark {spec.name!r}, "
            f"sources.files.test of {spec.path.name})"
        )
    split, fs_split = _splits(spec)
    mapper = _mapper(spec, files.mapper)
    id_key = spec.mapping.get("id")
    where = str(folder / files.test[0]) if len(files.test) == 1 else str(folder)
    rows = read(folder, files.test, options=options)
    if spec.kind == "local" and rows:
        _check_local_keys(spec, expand(folder, files.test)[0], rows[0])
    examples = map_rows(
        spec, rows, split=split, config=None, where=where, id_key=id_key, mapper=mapper
    )
    fewshot: list[dict[str, Any]] = []
    missing: tuple[str, ...] = ()
    if files.fewshot and not expand(folder, files.fewshot):
        missing = tuple(str(folder / p) for p in files.fewshot)
    if files.fewshot and expand(folder, files.fewshot):
        fs_where = str(folder / files.fewshot[0]) if len(files.fewshot) == 1 else str(folder)
        # numbered ids ("<name>/fewshot/<n>") keep the pool apart from the evaluated ids
        fewshot = map_rows(
            spec, read(folder, files.fewshot, options=options), split=fs_split, config=None,
            where=fs_where, mapper=mapper,
        )  # fmt: skip
    elif files.fewshot_holdout:
        examples, fewshot = hold_out(examples, files.fewshot_holdout)
    return examples, fewshot, where, missing


def _check_local_keys(spec: BenchmarkSpec, path: Path, first: Mapping[str, Any]) -> None:
    """A mapped key absent from the first row is a mapping error, not a row error: say so."""
    cfg = spec.mapping
    missing = sorted({*cfg["fields"].values(), cfg["answer"]} - set(first))
    choices = cfg.get("choices")
    if isinstance(choices, str) and choices not in first:
        missing.append(choices)
    elif isinstance(choices, list):
        missing.extend(c for c in choices if c not in first)
    if missing:
        raise InputError(
            f"{path}: mapped field(s) {missing} not found in any row; the file has {sorted(first)}"
        )


def to_arrow(df: pd.DataFrame) -> pa.Table:
    """The frame as an Arrow table with the fixed example schema (stable types when all-null).

    Parameters
    ----------
    df : examples with ``EXAMPLE_COLUMNS``.

    Returns
    -------
    pyarrow.Table
    """
    return pa.Table.from_pandas(df[EXAMPLE_COLUMNS], schema=EXAMPLE_SCHEMA, preserve_index=False)
