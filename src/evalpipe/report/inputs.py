"""Everything the report reads: params, metrics, scored rows, impact tables and annotation
agreement, from the working tree or (through a reader) from any Git revision.

Reading goes through two small functions, ``read(rel) -> bytes | None`` and
``ls(rel, pattern) -> [rel]``, so the same code loads the workspace and an old revision
(:mod:`evalpipe.report.revisions`). A third, ``locate(rel) -> Path | None`` (the working tree's
:func:`workspace_locator`), lets the large inputs (the scored views and the pairs tables) be read
from their files in parts instead of whole into memory: their content hashes are computed in
chunks, only the columns the report reads are loaded, and the few scored rows the examples show
are read when shown (:class:`ScoredRows`).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from evalpipe.arms import TYPO
from evalpipe.errors import InputError
from evalpipe.paths import ProjectPaths
from evalpipe.report.data import ReportData, ReportOptions
from evalpipe.report.study import ReportInput
from evalpipe.scoring.views import parse_view

# the module, not its tuple: a study's report part imports report modules, so either package
# may be imported first
from evalpipe.studies import report as study_reports

# Sections of params.yaml shown under "What produced this report".
SHOWN_PARAMS = (
    "seed", "words", "benchmarks", "perturb", "model_defaults", "models", "sampling", "prompt",
    "scoring",
)  # fmt: skip
# One headline file per annotation axis (n, kappa, alpha), read for the comparison's diff only:
# the tables use the full figures of data/annotations/quality_reports/agreement.json.
AGREEMENT_METRICS = "agreement"
# What the report reads of the pairs table: the keys, the language and both answers' correctness.
PAIR_COLUMNS = [
    "view", "method", "benchmark", "language", "example_id", "variant", "word_rank", "draw",
    "condition", "correct_original", "correct_perturbed",
]  # fmt: skip
# What the typo section reads of the scored rows.
EDIT_COLUMNS = ["benchmark", "example_id", "word_rank", "draw", "language", "perturbations"]
# What the counts and look-ups of the report read of the scored rows (parse status, truncation,
# languages, model ids, which rows the examples show); the texts of the rows shown are read then.
SCORED_COLUMNS = [
    "benchmark", "example_id", "variant", "word_rank", "draw", "condition", "language",
    "parse_status", "finish_reason", "model_id",
]  # fmt: skip
# Rows per batch when a large input is read in parts.
BATCH_ROWS = 65_536

Reader = Callable[[str], bytes | None]
Lister = Callable[[str, str], list[str]]
Locator = Callable[[str], Path | None]


def workspace_reader(root: Path) -> tuple[Reader, Lister]:
    """Read files of the working tree (relative paths)."""

    def read(rel: str) -> bytes | None:
        path = root / rel
        return path.read_bytes() if path.is_file() else None

    def ls(rel: str, pattern: str) -> list[str]:
        folder = root / rel
        return (
            sorted(str(p.relative_to(root)) for p in folder.glob(pattern))
            if folder.is_dir()
            else []
        )

    return read, ls


def workspace_locator(root: Path) -> Locator:
    """The file of the working tree at a relative path (None when there is none)."""

    def locate(rel: str) -> Path | None:
        path = root / rel
        return path if path.is_file() else None

    return locate


def _md5(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()[:12]


def _parquet_source(rel: str, read: Reader, locate: Locator | None) -> Path | io.BytesIO | None:
    """What pyarrow opens for ``rel``: the file when it can be located, else its bytes."""
    path = locate(rel) if locate is not None else None
    if path is not None:
        return path
    raw = read(rel)
    return None if raw is None else io.BytesIO(raw)


def _read_columns(
    rel: str,
    source: Path | io.BytesIO,
    columns: Sequence[str] | None,
    *,
    keep: Callable[[pa.RecordBatch], np.ndarray] | None = None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """``columns`` (those the file has; None: all) of the rows ``keep(batch)`` selects, read in
    batches; and the positions of those rows in the file.

    The batches are converted as the whole file would be (:func:`_parse_parquet`), so a value
    reads the same whether its file was read whole or in parts.
    """
    try:
        handle = pq.ParquetFile(source)
        names = handle.schema_arrow.names
        wanted = names if columns is None else [c for c in columns if c in names]
        parts, positions, start = [], [], 0
        for batch in handle.iter_batches(batch_size=BATCH_ROWS, columns=wanted):
            chosen = np.arange(batch.num_rows) if keep is None else np.flatnonzero(keep(batch))
            if chosen.size:
                parts.append(batch.take(pa.array(chosen)) if keep is not None else batch)
                positions.append(chosen + start)
            start += batch.num_rows
        schema = pa.schema([handle.schema_arrow.field(c) for c in wanted])
        schema = schema.with_metadata(handle.schema_arrow.metadata)
        table = pa.Table.from_batches(parts, schema=schema)
        frame = _table_frame(table)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{rel}: cannot read Parquet: {exc}") from exc
    order = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    return frame, order.astype(np.int64)


def _table_frame(table: pa.Table) -> pd.DataFrame:
    """A table of a Parquet file's rows as :func:`_parse_parquet` gives them (``read_parquet``
    converts the flat columns so; the nested ones stay Arrow arrays)."""
    nested = [f.name for f in table.schema if pa.types.is_nested(f.type)]
    frame = table.drop_columns(nested).to_pandas()
    for name in nested:
        frame[name] = pd.Series(
            pd.arrays.ArrowExtensionArray(table.column(name)), index=frame.index
        )
    return frame[table.schema.names]


def _is_typo(batch: pa.RecordBatch) -> np.ndarray:
    names = batch.schema.names
    if "condition" not in names:  # typo_rows names the missing column
        raise KeyError("condition")
    return np.asarray(pc.equal(batch.column(names.index("condition")), TYPO).fill_null(False))


class ScoredRows:
    """Whole scored rows of one view for the few the examples section shows: the report holds
    only :data:`SCORED_COLUMNS` of every row (``data.scored``), and reads the other columns of
    a row from its file when it is shown.

    ``parts`` are, in ``data.scored``'s row order, each model's ``(slug, rel, source,
    positions)``: the file the rows come from and the file row of each.
    """

    def __init__(self, parts: Sequence[tuple[str, str, Any, np.ndarray]]) -> None:
        self.parts = list(parts)
        self.starts = np.cumsum([0, *(len(p[3]) for p in self.parts)])

    def rows(self, positions: Sequence[int]) -> dict[int, pd.Series]:
        """The rows at ``positions`` of ``data.scored[view]``, each with every column of its
        file and ``model`` (as ``scored.iloc[position]`` of whole rows would give it)."""
        wanted = np.unique(np.asarray(positions, dtype=np.int64))
        found: dict[int, pd.Series] = {}
        for number, (slug, rel, source, file_rows) in enumerate(self.parts):
            mine = wanted[(wanted >= self.starts[number]) & (wanted < self.starts[number + 1])]
            if not mine.size:
                continue
            at_file = file_rows[mine - self.starts[number]]
            if isinstance(source, io.BytesIO):
                source.seek(0)
            targets = set(at_file.tolist())
            frame, where = _read_columns(rel, source, None, keep=_rows_in(targets))
            by_file_row = dict(zip(where.tolist(), range(len(frame)), strict=True))
            frame = frame.assign(model=slug)
            for position, file_row in zip(mine.tolist(), at_file.tolist(), strict=True):
                found[position] = frame.iloc[by_file_row[file_row]]
        return found


def _rows_in(targets: set[int]) -> Callable[[pa.RecordBatch], np.ndarray]:
    """A ``keep`` for :func:`_read_columns` taking the file rows ``targets`` (in file order)."""
    state = {"start": 0}

    def keep(batch: pa.RecordBatch) -> np.ndarray:
        start = state["start"]
        state["start"] += batch.num_rows
        rows = np.arange(start, start + batch.num_rows)
        return np.isin(rows, np.fromiter(targets, dtype=np.int64, count=len(targets)))

    return keep


class EditRows(Mapping):
    """``{benchmark: one model's typo rows}`` (:data:`EDIT_COLUMNS`) read when asked for, one
    benchmark at a time: the typo records are the largest column of the scored rows."""

    def __init__(self, sources: Mapping[str, Sequence[tuple[str, Any]]]) -> None:
        self.sources = {name: list(found) for name, found in sources.items()}

    def __getitem__(self, name: str) -> pd.DataFrame:
        frame = None
        for rel, source in self.sources[name]:  # the models in order: the first with rows
            if isinstance(source, io.BytesIO):
                source.seek(0)
            frame, _ = _read_columns(rel, source, [*EDIT_COLUMNS, "condition"], keep=_is_typo)
            if len(frame):
                break
        if frame is None:
            raise KeyError(name)  # no model holds rows of this benchmark
        return frame[[c for c in EDIT_COLUMNS if c in frame.columns]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.sources)

    def __len__(self) -> int:
        return len(self.sources)


def _parse_json(rel: str, raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{rel}: not valid UTF-8 JSON: {exc}") from exc


def _parse_parquet(rel: str, raw: bytes, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The file's rows; with ``columns``, only those of them the file has.

    Nested columns (the typo records, a list of structs per row) stay Arrow arrays
    (``pd.ArrowDtype``): a row's value is still a list of dicts, made when a section reads it
    (the report reads a few), not a million Python objects at load time.
    """
    try:
        schema = pq.read_schema(io.BytesIO(raw))
        wanted = schema.names if columns is None else [c for c in columns if c in schema.names]
        nested = [c for c in wanted if pa.types.is_nested(schema.field(c).type)]
        if not nested:
            return pd.read_parquet(io.BytesIO(raw), columns=None if columns is None else wanted)
        frame = pd.read_parquet(io.BytesIO(raw), columns=[c for c in wanted if c not in nested])
        table = pq.read_table(io.BytesIO(raw), columns=nested)
        for name in nested:
            frame[name] = pd.Series(
                pd.arrays.ArrowExtensionArray(table.column(name)), index=frame.index
            )
        return frame[wanted]
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{rel}: cannot read Parquet: {exc}") from exc


def _parse_jsonl(rel: str, raw: bytes) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise InputError(f"{rel}, line {number}: not valid JSON: {exc}") from exc
    return rows


def _load_study_input(
    wanted: ReportInput,
    data: ReportData,
    rel: ProjectPaths,
    slugs: list[str],
    read: Reader,
    hashes: dict[str, str],
) -> None:
    """Read one study input into ``data.study_inputs`` (:class:`ReportInput`)."""
    if wanted.when is not None and not wanted.when(data):
        return
    found: dict[str, Any] = {}
    for slug, file in wanted.files(rel, slugs):
        path = str(file)
        raw = read(path)
        if raw is None:
            if wanted.needed is not None:
                data.missing[path] = wanted.needed
            continue
        hashes[path] = hashlib.md5(raw).hexdigest()[:12]
        content = (
            _parse_parquet(path, raw) if wanted.format == "parquet" else _parse_json(path, raw)
        )
        if slug is None:
            data.study_inputs[wanted.name] = content
        else:
            found[slug] = content
    if wanted.model_path is not None:
        data.study_inputs[wanted.name] = found


def load_report_data(
    read: Reader, ls: Lister, paths: ProjectPaths, *, locate: Locator | None = None
) -> ReportData:
    """Read every input the report shows; absent ones are recorded in ``missing``.

    ``paths`` gives the relative layout (its root is ignored: ``read``/``ls`` resolve paths).
    ``locate`` (:func:`workspace_locator`): the large inputs are read from their files in parts
    (without it, from their bytes; a scored view's are kept for the rows read later).
    """
    data = ReportData()
    hashes: dict[str, str] = {}

    def get(rel: str, what: str) -> bytes | None:
        raw = read(rel)
        if raw is None:
            data.missing[rel] = what
        else:
            hashes[rel] = hashlib.md5(raw).hexdigest()[:12]
        return raw

    def get_parquet(rel: str, what: str) -> Path | io.BytesIO | None:
        source = _parquet_source(rel, read, locate)
        if source is None:
            data.missing[rel] = what
        elif isinstance(source, Path):
            hashes[rel] = _md5(source)
        else:
            hashes[rel] = hashlib.md5(source.getbuffer()).hexdigest()[:12]
        return source

    rel = ProjectPaths(Path("."))
    params_raw = read(str(rel.params))
    params = (yaml.safe_load(params_raw.decode("utf-8")) if params_raw else {}) or {}
    # the models of this revision (params.yaml `models`): each has its own scored folder
    slugs = [str(s) for s in (params.get("models") or {})]
    for attr in ("robustness", "classification"):
        # every figure per model and benchmark (the metrics files hold headline keys only)
        nested = {}
        for slug in slugs:
            path = str(rel.scored_details(attr, slug))
            if (raw := get(path, f"written by `dvc repro score@{slug}`")) is not None:
                nested[slug] = _parse_json(path, raw)
                data.metrics[path] = nested[slug]
        if nested:
            setattr(data, attr, nested)
    for slug in slugs:  # the headline files, for the comparison's fallback metrics diff
        for path in ls(str(rel.model_metrics(slug)), "*.json"):
            if (raw := read(path)) is not None:
                data.metrics[path] = _parse_json(path, raw)
    agreement = str(rel.quality_reports / "agreement.json")
    if (raw := get(agreement, "written by `dvc repro agreement`")) is not None:
        data.agreement = _parse_json(agreement, raw)
    # Not hashed into the provenance: the built report does not show them (only `compare` does).
    for path in ls(str(rel.metrics / AGREEMENT_METRICS), "*.json"):
        if (raw := read(path)) is not None:
            data.metrics[path] = _parse_json(path, raw)
    kappa = str(rel.quality_reports / "kappa_report.json")
    if (raw := get(kappa, "written by `dvc repro agreement`")) is not None:
        data.kappa_report = _parse_json(kappa, raw)
    rejected = str(rel.rejected)
    if (raw := get(rejected, "written by `dvc repro agreement`")) is not None:
        data.rejected = _parse_jsonl(rejected, raw)
    for kind in ("words", "operations", "scripts"):
        path = str(rel.impact(kind))
        if (raw := get(path, "written by `dvc repro impact`")) is not None:
            setattr(data, kind, _parse_parquet(path, raw))
    frames: dict[str, list[pd.DataFrame]] = {}
    rows: dict[str, list[tuple[str, str, Any, np.ndarray]]] = {}
    for slug in slugs:
        scored_dir = str(rel.scored_dir(slug))
        # the generated-answer views (the pairs table beside them is not a view)
        found = [
            p
            for p in ls(scored_dir, "*.parquet")
            if Path(p).name != rel.pairs(slug).name and parse_view(Path(p).stem)[1] == "generate"
        ]
        if not found:
            data.missing[f"{scored_dir}/*.parquet"] = f"written by `dvc repro score@{slug}`"
        for path in found:
            source = get_parquet(path, "")
            if source is not None:
                # one frame per benchmark over every model; the model column is the slug; the
                # typo arm's rows (evalpipe.arms): the sections of other arms read the pairs
                frame, at = _read_columns(path, source, SCORED_COLUMNS, keep=_is_typo)
                frames.setdefault(Path(path).stem, []).append(frame.assign(model=slug))
                rows.setdefault(Path(path).stem, []).append((slug, path, source, at))
    data.scored = {name: pd.concat(parts, ignore_index=True) for name, parts in frames.items()}
    data.scored_rows = {name: ScoredRows(parts) for name, parts in rows.items()}
    # The typo records of each benchmark, from one model's scored rows (every model answered the
    # same perturbed prompts): the typo section's examples, read one benchmark at a time.
    data.edits = EditRows(
        {name: [(rel, source) for _, rel, source, _ in rows[name]] for name in sorted(rows)}
    )
    pairs = []
    for slug in slugs:
        # The typo model and counts of every benchmark the model answered (score's copy).
        path = str(rel.scored_perturbation(slug))
        if (raw := get(path, f"written by `dvc repro score@{slug}`")) is not None:
            summaries = _parse_json(path, raw)
            if not isinstance(summaries, dict):
                raise InputError(f"{path}: expected a JSON object {{benchmark: summary}}")
            for name, summary in sorted(summaries.items()):
                if not isinstance(summary, dict):
                    raise InputError(f"{path}: {name}: expected a JSON object (its summary)")
                data.perturb_summaries.setdefault(str(name), summary)
        path = str(rel.pairs(slug))
        if (source := get_parquet(path, f"written by `dvc repro score@{slug}`")) is not None:
            frame, _ = _read_columns(path, source, PAIR_COLUMNS)
            pairs.append(frame.assign(model=slug))
    if pairs:
        data.pairs = pd.concat(pairs, ignore_index=True)
        # Each benchmark's language, as the data records it.
        known = data.pairs.reindex(columns=["benchmark", "language"]).dropna()
        known = known.drop_duplicates("benchmark")
        data.languages = dict(
            zip(known["benchmark"].astype(str), known["language"].astype(str), strict=True)
        )
    # The studies' own files (each part's ``inputs``), read once the core inputs are in.
    for part in study_reports.STUDIES:
        for wanted in part.inputs:
            _load_study_input(wanted, data, rel, slugs, read, hashes)
    # The sycophancy study, read only when its stage ran (absent: no section, nothing missing).
    syco = rel.sycophancy
    syco_found: dict[str, Any] = {}
    for key, name in (
        ("estimates", "estimates.parquet"),
        ("differences", "differences.parquet"),
        ("arm_changes", "arm_changes.parquet"),
        ("validity", "judge_validity.json"),
    ):
        path = str(syco / name)
        if (raw := read(path)) is not None:
            hashes[path] = hashlib.md5(raw).hexdigest()[:12]
            syco_found[key] = (
                _parse_parquet(path, raw) if name.endswith(".parquet") else _parse_json(path, raw)
            )
    if "estimates" in syco_found:
        data.sycophancy = syco_found
    ids: dict[str, set[str]] = {}
    for frame in data.scored.values():
        if "model_id" in frame.columns:
            for slug, group in frame.groupby("model", sort=True):
                ids.setdefault(str(slug), set()).update(map(str, group["model_id"].dropna()))
    data.provenance = {
        "models": slugs,
        "model_ids": {slug: ", ".join(sorted(v)) for slug, v in sorted(ids.items())},
        "params": {k: params[k] for k in SHOWN_PARAMS if k in (params or {})},
        "inputs": hashes,
    }
    return data


def report_options(params: dict[str, Any]) -> ReportOptions:
    """``ReportOptions`` from the params' ``report`` section (absent keys keep defaults)."""
    section = params.get("report") or {}
    known = {k: section[k] for k in ReportOptions.__dataclass_fields__ if k in section}
    try:
        return ReportOptions(**known)
    except TypeError as exc:
        raise InputError(f"params.yaml: report section: {exc}") from exc
