"""Everything the report reads: params, metrics, scored rows, impact tables and annotation
agreement, from the working tree or (through a reader) from any Git revision.

Reading goes through two small functions, ``read(rel) -> bytes | None`` and
``ls(rel, pattern) -> [rel]``, so the same code loads the workspace and an old revision
(:mod:`evalpipe.report.revisions`).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from evalpipe.errors import InputError
from evalpipe.paths import ProjectPaths
from evalpipe.report.data import ReportData, ReportOptions
from evalpipe.scoring.views import parse_view

# Sections of params.yaml shown under "What produced this report".
SHOWN_PARAMS = (
    "seed", "words", "benchmarks", "perturb", "model_defaults", "models", "sampling", "prompt",
    "scoring",
)  # fmt: skip
# One headline file per annotation axis (n, kappa, alpha), read for the comparison's diff only:
# the tables use the full figures of data/annotations/quality_reports/agreement.json.
AGREEMENT_METRICS = "agreement"

Reader = Callable[[str], bytes | None]
Lister = Callable[[str, str], list[str]]


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


def _parse_json(rel: str, raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{rel}: not valid UTF-8 JSON: {exc}") from exc


def _parse_parquet(rel: str, raw: bytes) -> pd.DataFrame:
    try:
        return pd.read_parquet(io.BytesIO(raw))
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


def load_report_data(read: Reader, ls: Lister, paths: ProjectPaths) -> ReportData:
    """Read every input the report shows; absent ones are recorded in ``missing``.

    ``paths`` gives the relative layout (its root is ignored: ``read``/``ls`` resolve paths).
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
    for slug in slugs:
        scored_dir = str(rel.scored_dir(slug))
        found = [
            p for p in ls(scored_dir, "*.parquet") if parse_view(Path(p).stem)[1] == "generate"
        ]
        if not found:
            data.missing[f"{scored_dir}/*.parquet"] = f"written by `dvc repro score@{slug}`"
        for path in found:
            raw = get(path, "")
            if raw is not None:
                # one frame per benchmark over every model; the model column is the slug
                frame = _parse_parquet(path, raw).assign(model=slug)
                frames.setdefault(Path(path).stem, []).append(frame)
    data.scored = {name: pd.concat(parts, ignore_index=True) for name, parts in frames.items()}
    # The typo model and counts of every perturbed benchmark (scored or not yet).
    suffix = ".summary.json"
    for path in ls(str(rel.perturbed("x").parent), f"*{suffix}"):
        if (raw := get(path, "")) is not None:
            summary = _parse_json(path, raw)
            if not isinstance(summary, dict):
                raise InputError(f"{path}: expected a JSON object (the perturb summary)")
            data.perturb_summaries[Path(path).name[: -len(suffix)]] = summary
    for name in sorted(set(data.scored) | set(data.perturb_summaries)):
        path = str(rel.perturbed(name))
        # Only what the examples need: the perturbed set also holds every other column.
        raw = get(path, "the typo edits shown in the examples (`dvc repro perturb`)")
        if raw is not None:
            frame = _parse_parquet(path, raw)
            keep = ["benchmark", "example_id", "word_rank", "draw", "language", "fields",
                    "perturbations"]  # fmt: skip
            data.perturbed[name] = frame[[c for c in keep if c in frame.columns]]
    ids: dict[str, set[str]] = {}
    for frame in data.scored.values():
        if "model_id" in frame.columns:
            for slug, group in frame.groupby("model", sort=True):
                ids.setdefault(str(slug), set()).update(map(str, group["model_id"].dropna()))
    suites = (params.get("benchmarks") or {}).get("suites") or {}
    # the accuracy tables' language column and the first screen's grouping
    data.languages = {str(k): str(v) for k, v in suites.items() if isinstance(v, str)}
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
