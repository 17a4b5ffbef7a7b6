"""Load a benchmark's evaluated split and few-shot pool as frames of the common schema.

Every source goes through ``datasets.load_dataset``: the Hub ids of the registry (``hub``), the
bundled JSONL sample files (``sample``), or a user's JSON/JSONL file (``local`` benchmarks). A
local directory laid out like the Hub repositories can stand in for the Hub (``hub_dir``, or the
``EVALPIPE_HUB_DIR`` environment variable): ``<hub_dir>/<owner>/<dataset>/`` with the dataset's
README.md (``configs:`` metadata) and data files.
"""

from __future__ import annotations

import hashlib
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

from evalpipe.benchmarks.spec import BenchmarkSpec, HubSource
from evalpipe.errors import InputError

SOURCES = ("sample", "hub", "files", "hub_raw")
FILES_DIR = Path("data/raw/benchmarks")  # default folder of the publishers' files (source files)
HUB_DIR_ENV = "EVALPIPE_HUB_DIR"
FEWSHOT_POOL = 8  # few-shot candidates kept per subtask (per benchmark when there is none)

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


def sample_files(name: str) -> tuple[Path, Path]:
    """The bundled (evaluated, few-shot) JSONL files of benchmark ``name``."""
    folder = samples_root() / name
    return folder / "test.jsonl", folder / "fewshot.jsonl"


def hash_key(*parts: object) -> str:
    """A stable sort key: sha256 of the parts joined by '/' (never Python's salted hash)."""
    return hashlib.sha256("/".join(str(p) for p in parts).encode("utf-8")).hexdigest()


def _load_dataset(*args: Any, what: str, **kwargs: Any) -> list[dict[str, Any]]:
    import datasets

    datasets.disable_progress_bars()
    try:
        ds = datasets.load_dataset(*args, **kwargs)
    except InputError:
        raise
    except Exception as exc:  # datasets raises many types; the user needs the file and the cause
        raise InputError(
            f"{what}: could not load with datasets.load_dataset: {type(exc).__name__}: {exc}"
        ) from exc
    return ds.to_list()


def read_json_rows(path: str | Path, *, json_field: str | None = None) -> list[dict[str, Any]]:
    """Rows of a JSON (list of objects, or an object holding the list under ``json_field``) or
    JSONL file, read through ``datasets.load_dataset("json", ...)``.

    Parameters
    ----------
    path : the file.
    json_field : key of the list when the file is one JSON object (ignored for ``.jsonl``).

    Returns
    -------
    list of dict
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return []
    kwargs: dict[str, Any] = {"data_files": {"train": str(path)}, "split": "train"}
    if path.suffix == ".jsonl":
        json_field = None  # one object per line: there is no enclosing object to look into
    if json_field:
        kwargs["field"] = json_field
    try:
        return _load_dataset("json", what=str(path), **kwargs)
    except InputError:
        _explain_json(path, text, json_field)
        raise


def _explain_json(path: Path, text: str, json_field: str | None) -> None:
    """Raise an InputError naming the first line that is not valid JSON (datasets' own errors
    name an Arrow row, not a line of the file)."""
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if obj is not None:
        if isinstance(obj, dict) and json_field and not isinstance(obj.get(json_field), list):
            raise InputError(f'{path}: field "{json_field}": expected a list of examples')
        if isinstance(obj, dict) and not json_field:
            raise InputError(
                f"{path}: the file is one JSON object; set json_field to the key "
                f"that holds the list of examples (keys: {sorted(obj)})"
            )
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object per line")


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
        return _load_dataset(*args, what=what, **kwargs), what
    # datasets keys its cache for a local repository on the folder's base name and config only,
    # so two directories laid out alike would share (stale) Arrow files: use a private cache.
    with tempfile.TemporaryDirectory(prefix="evalpipe-hub-") as cache_dir:
        return _load_dataset(*args, what=what, cache_dir=cache_dir, **kwargs), what


def _map_rows(
    spec: BenchmarkSpec,
    rows: list[dict[str, Any]],
    *,
    split: str,
    config: str | None,
    where: str,
    options: Mapping[str, Any] | None = None,
    id_key: str | None = None,
    mapper: Any = None,
    locations: list[str] | None = None,
) -> list[dict[str, Any]]:
    # mapper/locations: a publisher-file reader's own mapper and each row's file:line
    mapper = mapper or spec.mapper
    out: list[dict[str, Any]] = []
    counters: dict[str | None, int] = {}
    seen: dict[str, int] = {}
    for i, row in enumerate(tqdm(rows, desc=f"map {spec.name}/{split}", disable=len(rows) < 2000)):
        loc = locations[i] if locations is not None else f"{where}, row {i + 1}"
        ex = mapper(row, config=config, where=loc, options=options)
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
                "perturbable": list(ex["perturbable"]),
                "choices": ex["choices"],
                "answer": ex["answer"],
                "answers": list(ex["answers"]),
                "labels": list(spec.labels) if spec.labels is not None else None,
                "target": ex["target"],
                "protected": list(ex["protected"]),
            }
        )
    return out


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
    source: str = "sample",
    max_samples: int | None = None,
    seed: int = 42,
    hub_dir: str | Path | None = None,
    fewshot_pool: int = FEWSHOT_POOL,
    files_dir: str | Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The evaluated examples and the few-shot pool of one benchmark.

    Parameters
    ----------
    spec : the benchmark (``get_spec(name)``).
    source : ``sample`` (bundled files), ``hub`` (Hugging Face ids of the registry), ``files``
        (the publishers' own files in ``files_dir/<name>/``) or ``hub_raw`` (the raw-schema Hub
        copies of the JGLUE tasks); a mapping ``{default: ..., <name>: ...}`` chooses per
        benchmark. Ignored for local benchmarks, which always read their own file.
    max_samples : evaluated examples to keep (deterministic hash selection), None for all.
    seed : the project seed (part of the selection hash).
    hub_dir : a local directory laid out like the Hub to load from instead of the network;
        defaults to the ``EVALPIPE_HUB_DIR`` environment variable.
    fewshot_pool : few-shot candidates kept per subtask.
    files_dir : the folder holding ``<name>/`` folders of publisher files (source ``files``);
        defaults to ``data/raw/benchmarks`` relative to the working directory.

    Returns
    -------
    (examples, fewshot) : two DataFrames with columns ``EXAMPLE_COLUMNS``. The few-shot pool
        comes from the train/dev split (or, for BBH on the Hub, from examples held out of the
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
    version, missing = "", ()
    if spec.kind == "local":
        examples, fewshot, origin = _load_local(spec)
        source, version = "local", str(origin)
    elif source == "sample":
        examples, fewshot, origin = _load_sample(spec)
        version = "bundled sample"
    elif source == "hub":
        hub_dir = hub_dir or os.environ.get(HUB_DIR_ENV) or None
        examples, fewshot, origin = _load_hub(spec, hub_dir)
        version = origin
    elif source in ("files", "hub_raw"):
        from evalpipe.benchmarks import readers

        if source == "files":
            loaded = readers.load_files(spec, Path(files_dir or FILES_DIR) / spec.name)
        else:
            loaded = readers.load_raw_hub(spec, hub_dir or os.environ.get(HUB_DIR_ENV) or None)
        examples, fewshot, origin = loaded.examples, loaded.fewshot, loaded.origin
        version, missing = loaded.version, loaded.missing
    else:
        raise InputError(
            f"params.yaml: benchmarks.source: expected one of {', '.join(SOURCES)}, got {source!r}"
        )
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
    pool = _fewshot_pool(fewshot_df.reset_index(drop=True), fewshot_pool)
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


def validate_source(source: Any, *, where: str = "params.yaml: benchmarks.source") -> None:
    """Check a ``benchmarks.source`` value: one of ``SOURCES``, or a mapping of benchmark names
    (and ``default``) to one of them.

    Raises
    ------
    InputError
        Naming ``where``, the offending entry and the accepted values.
    """
    entries = source.items() if isinstance(source, Mapping) else [(None, source)]
    for key, value in entries:
        if not isinstance(value, str) or value not in SOURCES:
            at = f"{where}.{key}" if key is not None else where
            raise InputError(
                f"{at}: expected one of {', '.join(SOURCES)}"
                + ("" if key is not None else " or a mapping {default: ..., <benchmark>: ...}")
                + f", got {value!r}"
            )


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
                f"expected one of {', '.join(SOURCES)} per benchmark"
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


def _load_sample(spec: BenchmarkSpec) -> tuple[list, list, str]:
    test_path, fewshot_path = sample_files(spec.name)
    split = spec.hub.split if spec.hub else "test"
    fs_split = (spec.hub.fewshot_split if spec.hub else None) or "fewshot"
    config = None
    examples = _map_rows(
        spec, read_json_rows(test_path), split=split, config=config, where=str(test_path)
    )
    fewshot = []
    if fewshot_path.exists():
        fewshot = _map_rows(
            spec,
            read_json_rows(fewshot_path),
            split=fs_split,
            config=config,
            where=str(fewshot_path),
        )
    return examples, fewshot, f"bundled sample {test_path.name}"


def _load_hub(
    spec: BenchmarkSpec,
    hub_dir: str | Path | None,
    *,
    hub: HubSource | None = None,
    mapper: Any = None,
    options: Mapping[str, Any] | None = None,
    split_names: tuple[str, str] | None = None,
) -> tuple[list, list, str]:
    # hub/mapper/options/split_names: a raw-schema copy (readers.RAW_HUB) whose split names
    # differ from the ids' (JGLUE valid = "validation" there, "test" in example ids)
    hub = hub or spec.hub
    assert hub is not None
    id_split, id_fs_split = split_names or (hub.split, hub.fewshot_split)
    examples: list[dict[str, Any]] = []
    fewshot: list[dict[str, Any]] = []
    for config in tqdm(hub.configs, desc=f"load {spec.name}", disable=len(hub.configs) < 2):
        rows, what = _hub_rows(hub.dataset, config, hub.split, hub_dir, hub.data_files)
        mapped = _map_rows(
            spec, rows, split=id_split, config=config, where=what, mapper=mapper, options=options
        )
        if hub.fewshot_split is None and hub.fewshot_holdout:
            held = {
                r["example_id"]
                for r in sorted(mapped, key=lambda r: hash_key("holdout", r["example_id"]))[
                    : hub.fewshot_holdout
                ]
            }
            fewshot.extend(r for r in mapped if r["example_id"] in held)
            mapped = [r for r in mapped if r["example_id"] not in held]
        examples.extend(mapped)
        if hub.fewshot_split is not None:
            fs_rows, fs_what = _hub_rows(
                hub.dataset, config, hub.fewshot_split, hub_dir, hub.data_files
            )
            fewshot.extend(
                _map_rows(
                    spec,
                    fs_rows,
                    split=id_fs_split or hub.fewshot_split,
                    config=config,
                    where=fs_what,
                    mapper=mapper,
                    options=options,
                )
            )
    return examples, fewshot, f"{hub.dataset} split {hub.split}"


def _load_local(spec: BenchmarkSpec) -> tuple[list, list, str]:
    cfg = spec.local or {}
    path = Path(cfg["path"])
    json_field = cfg.get("json_field")
    rows = read_json_rows(path, json_field=json_field)
    if rows:
        missing = sorted({*cfg["fields"].values(), cfg["answer"]} - set(rows[0]))
        choices = cfg.get("choices")
        if isinstance(choices, str) and choices not in rows[0]:
            missing.append(choices)
        elif isinstance(choices, list):
            missing.extend(c for c in choices if c not in rows[0])
        if missing:
            raise InputError(
                f"{path}: mapped field(s) {missing} not found in any row; "
                f"the file has {sorted(rows[0])}"
            )
    examples = _map_rows(
        spec, rows, split="test", config=None, where=str(path), options=cfg, id_key=cfg.get("id")
    )
    fewshot = []
    if cfg.get("fewshot_path"):
        fs_path = Path(cfg["fewshot_path"])
        # numbered ids ("<name>/fewshot/<n>") keep the pool apart from the evaluated ids
        fewshot = _map_rows(
            spec,
            read_json_rows(fs_path, json_field=json_field),
            split="fewshot",
            config=None,
            where=str(fs_path),
            options=cfg,
        )
    return examples, fewshot, str(path)


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
