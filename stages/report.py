"""Stage report: metrics, scored outputs, impact tables and annotation agreement -> one
self-contained HTML report (reports/report.html) and its main figures as SVG image plots
(plots/report/*.svg). `compare` puts two revisions side by side.

    python -m stages.report build                       # what `dvc repro report` runs
    python -m stages.report build --commit              # by hand: also show the Git commit
    python -m stages.report compare --a main --b workspace
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pandas as pd
import yaml

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.params import load_params
from evalpipe.paths import ProjectPaths
from evalpipe.report.build import ReportData, ReportOptions, build_figures, build_report
from evalpipe.report.compare import build_comparison, diff_metrics
from evalpipe.scoring.views import parse_view
from stages._common import fail_cleanly, params_option

log = logging.getLogger("stages.report")

# dvc.yaml declares one words_<language>.svg per language: keep these in step with it.
FIGURE_LANGUAGES = ("english", "japanese")
# Sections of params.yaml shown under "What produced this report".
SHOWN_PARAMS = (
    "seed", "words", "benchmarks", "perturb", "model_defaults", "models", "sampling", "prompt",
    "scoring",
)  # fmt: skip
# One headline file per annotation axis (n, kappa, alpha), read for the comparison's diff only:
# the tables use the full figures of data/annotations/quality_reports/agreement.json.
AGREEMENT_METRICS = "agreement"
WORKSPACE = "workspace"

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


def revision_reader(root: Path, rev: str) -> tuple[Reader, Lister]:
    """Read files as they were at Git revision ``rev``: Git-tracked files from Git, DVC-tracked
    ones through DVC (cache or remote). A file DVC cannot get counts as absent."""
    from dvc.api import DVCFileSystem

    fs = DVCFileSystem(str(root), rev=rev)

    def read(rel: str) -> bytes | None:
        try:
            with fs.open(rel, "rb") as handle:
                return handle.read()
        except Exception as exc:  # absent at this revision, or data not fetched
            log.debug("%s@%s not available: %s", rel, rev, exc)
            return None

    def ls(rel: str, pattern: str) -> list[str]:
        try:
            found = fs.glob(f"{rel}/{pattern}")
        except Exception:  # a pattern DVC cannot list means nothing there
            return []
        return sorted(str(p).lstrip("/") for p in found)

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
        if (raw := get(path, "the per-word impact tables (issue 14)")) is not None:
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


def git(root: Path, *args: str) -> str | None:
    """Output of a git command, or None outside a repository."""
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip()


def commit_label(root: Path, rev: str) -> str | None:
    """``<hash>`` for a revision; the workspace adds whether it has uncommitted changes."""
    if rev == WORKSPACE:
        head = git(root, "rev-parse", "HEAD")
        if head is None:
            return None
        dirty = git(root, "status", "--porcelain", "--untracked-files=no")
        return f"{head} + uncommitted changes" if dirty else head
    return git(root, "rev-parse", rev)


@click.group()
def main() -> None:
    """Build the self-contained HTML report, or compare two revisions."""


@main.command()
@params_option
@click.option("--root", type=click.Path(file_okay=False), default=".", show_default=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="HTML file to write [default: reports/report.html under --root].",
)
@click.option(
    "--commit/--no-commit",
    default=False,
    show_default=True,
    help="Show the Git commit. Off under DVC: the commit changes with every commit while the "
    "inputs may not, and the report must depend on its inputs only.",
)
@fail_cleanly
def build(params_path: str, root: str, out: str | None, commit: bool) -> None:
    """Write reports/report.html and plots/report/*.svg from the current workspace."""
    base = Path(root)
    paths = ProjectPaths(base)
    options = report_options(load_params(params_path))
    read, ls = workspace_reader(base)
    data = load_report_data(read, ls, paths)
    if commit:
        data.provenance["commit"] = commit_label(base, WORKSPACE)
    target = Path(out) if out else paths.report_html
    atomic.write_text(target, build_report(data, options))
    figures = build_figures(data, options, languages=FIGURE_LANGUAGES)
    for name, svg in figures.items():
        atomic.write_text(paths.report_figures / name, svg + "\n")
    missing = len(data.missing)
    click.echo(
        f"report: {len(data.scored)} benchmarks, "
        f"{0 if data.words is None else len(data.words)} word rows, {missing} missing inputs -> "
        f"{target}, {len(figures)} figures in {paths.report_figures}"
    )


def dvc_metrics_diff(root: Path, a: str, b: str) -> tuple[dict[str, Any] | None, str]:
    """``dvc metrics diff --json`` between two revisions (``workspace`` = the working tree)."""
    args = ["dvc", "metrics", "diff", "--json", a] + ([] if b == WORKSPACE else [b])
    try:
        proc = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    try:
        return json.loads(proc.stdout or "{}"), " ".join(args)
    except ValueError:
        return None, "dvc printed no JSON"


@main.command()
@click.option("--a", "rev_a", default="main", show_default=True, help="Before: a Git revision.")
@click.option(
    "--b", "rev_b", default=WORKSPACE, show_default=True, help="After: a revision or `workspace`."
)
@params_option
@click.option("--root", type=click.Path(file_okay=False), default=".", show_default=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="HTML file to write [default: reports/compare.html under --root].",
)
@fail_cleanly
def compare(rev_a: str, rev_b: str, params_path: str, root: str, out: str | None) -> None:
    """Write a side-by-side report of two revisions (metrics from Git, data through DVC)."""
    base = Path(root)
    paths = ProjectPaths(base)
    options = report_options(load_params(params_path))
    sides = []
    for rev in (rev_a, rev_b):
        if rev != WORKSPACE and git(base, "rev-parse", "--verify", f"{rev}^{{commit}}") is None:
            raise InputError(f"--a/--b: {rev!r} is not a Git revision of {base.resolve()}")
        read, ls = workspace_reader(base) if rev == WORKSPACE else revision_reader(base, rev)
        data = load_report_data(read, ls, paths)
        data.provenance["commit"] = commit_label(base, rev)
        data.provenance["label"] = rev
        sides.append(data)
    diff, source = dvc_metrics_diff(base, rev_a, rev_b)
    if diff is None:
        log.info("dvc metrics diff failed (%s); diffing the metrics files directly", source)
        files = sorted({p for side in sides for p in side.metrics if p.startswith("metrics/")})
        diff = diff_metrics(
            {p: sides[0].metrics.get(p) for p in files},
            {p: sides[1].metrics.get(p) for p in files},
        )
        source = "the metrics files of both revisions (dvc metrics diff was not available)"
    html = build_comparison(
        sides[0],
        sides[1],
        label_a=rev_a,
        label_b=rev_b,
        metrics_diff=diff,
        diff_source=source,
        options=options,
    )
    target = Path(out) if out else paths.report_compare_html
    atomic.write_text(target, html)
    changed = sum(len(v) for v in diff.values())
    click.echo(f"report compare: {rev_a} vs {rev_b}, {changed} changed metrics -> {target}")


if __name__ == "__main__":
    main()
