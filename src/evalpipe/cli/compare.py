"""`evalpipe report compare`: the report of two revisions side by side.

    evalpipe report compare --a main --b workspace     # -> reports/compare.html

Metrics come from Git (``dvc metrics diff``), data through DVC (its cache or remote); an input
DVC cannot get counts as absent. Building the report itself is the DVC stage ``report``.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import click

from evalpipe import atomic
from evalpipe.commands import fail_cleanly, html_out_option, params_option, root_option
from evalpipe.errors import InputError
from evalpipe.params import load_params
from evalpipe.paths import ProjectPaths
from evalpipe.report.compare import build_comparison, diff_metrics
from evalpipe.report.inputs import (
    Lister,
    Reader,
    load_report_data,
    report_options,
    workspace_reader,
)
from evalpipe.report.revisions import WORKSPACE, commit_label, git

log = logging.getLogger(__name__)


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


@click.group()
def main() -> None:
    """Compare the report of two revisions (the report itself: `dvc repro report`)."""


@main.command()
@click.option("--a", "rev_a", default="main", show_default=True, help="Before: a Git revision.")
@click.option(
    "--b", "rev_b", default=WORKSPACE, show_default=True, help="After: a revision or `workspace`."
)
@params_option
@root_option()
@html_out_option("reports/compare.html")
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
