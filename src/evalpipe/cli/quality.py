"""`evalpipe quality`: the annotation tools ``kappa``, ``merge`` and ``check`` (the quality gate).

    evalpipe quality kappa --input data/raw/annotations/batch_001.jsonl \\
        --output data/annotations/quality_reports/kappa_report.json
    evalpipe quality merge --input data/raw/annotations/*.jsonl \\
        --method weighted_average --min_kappa 0.60 --output data/annotations/consensus.jsonl
    evalpipe quality check          # the quality gate; exit 1 lists failures

``--input`` may be repeated, may be a quoted glob, and may be followed by more files (what an
unquoted shell glob expands to). Only human annotators are used (ids not ``llm:*``/``markers``);
``merge`` also applies adjudications (``adjudicated:<name>``), which win over the merge.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path

import click

from evalpipe import atomic
from evalpipe.annotation.agreement import (
    DEFAULT_MIN_PAIR_OVERLAP,
    agreement_report,
    annotator_kappas,
)
from evalpipe.annotation.batches import find_batches
from evalpipe.annotation.consensus import METHODS, build_consensus
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.schema import (
    Annotation,
    annotator_kind,
    collect_annotations,
    is_human,
    read_annotations,
    read_tasks,
    tasks_or_sample,
    to_long_frame,
)
from evalpipe.commands import fail_cleanly, params_option
from evalpipe.errors import InputError
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths

PATHS = ProjectPaths()


def _expand(inputs: tuple[str, ...], extra: tuple[str, ...]) -> list[Path]:
    paths: list[Path] = []
    for pattern in (*inputs, *extra):
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise InputError(f"{pattern}: no file matches")
        paths.extend(Path(m) for m in matches)
    if not paths:
        raise InputError("no input files: give --input FILE (several allowed, globs too)")
    return list(dict.fromkeys(paths))


def _humans(paths: list[Path], *, adjudications: bool = False) -> list[Annotation]:
    """Human annotations of ``paths`` (and adjudications ``adjudicated:<name>`` if asked)."""
    kinds = {"human", "adjudicated"} if adjudications else {"human"}
    annotations = [a for a in read_annotations(paths) if annotator_kind(a.annotator_id) in kinds]
    if not any(is_human(a.annotator_id) for a in annotations):
        raise InputError(f"{', '.join(map(str, paths))}: no human annotations")
    return annotations


min_pair_overlap_option = click.option(
    "--min-pair-overlap",
    "--min_pair_overlap",
    "min_pair_overlap",
    type=click.IntRange(min=1),
    default=DEFAULT_MIN_PAIR_OVERLAP,
    show_default=True,
    help="Annotator pairs sharing fewer items are listed but left out of the headline kappa "
    "and of outlier decisions.",
)

input_option = click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="FILE",
    help="Annotation JSONL batch; repeat it, or pass a glob.",
)


@click.group()
def cli() -> None:
    """Annotation agreement, consensus and quality-gate tools (kappa, merge, the gate)."""


@cli.command()
@input_option
@click.argument("extra", nargs=-1, type=click.Path())
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    required=True,
    help="Where to write the JSON report.",
)
@click.option("--bootstrap", default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", default=42, show_default=True, help="Base seed of the resampling.")
@click.option("--min-kappa", "--min_kappa", "min_kappa", default=0.60, show_default=True)
@click.option("--target-kappa", "--target_kappa", "target_kappa", default=0.80, show_default=True)
@min_pair_overlap_option
@fail_cleanly
def kappa(
    inputs: tuple[str, ...],
    extra: tuple[str, ...],
    output: str,
    bootstrap: int,
    seed: int,
    min_kappa: float,
    target_kappa: float,
    min_pair_overlap: int,
) -> None:
    """Agreement per axis (weighted kappa, alpha, AC2, raw agreement, CIs) -> JSON report."""
    paths = _expand(inputs, extra)
    long = to_long_frame(_humans(paths))
    report = agreement_report(
        long,
        n_boot=bootstrap,
        seed=seed,
        min_kappa=min_kappa,
        target_kappa=target_kappa,
        min_pair_overlap=min_pair_overlap,
    )
    report["annotator_kappas"] = annotator_kappas(long, min_pair_overlap=min_pair_overlap)
    report["inputs"] = [p.name for p in paths]
    atomic.write_json(output, report)
    summary = ", ".join(
        f"{axis} {v['kappa']:.3f} ({v['status']})" if v["kappa"] is not None else f"{axis} n/a"
        for axis, v in report["axes"].items()
    )
    click.echo(f"kappa: {len(paths)} file(s), {report['n_items']} items: {summary} -> {output}")


@cli.command()
@input_option
@click.argument("extra", nargs=-1, type=click.Path())
@click.option("--method", type=click.Choice(METHODS), default="weighted_average", show_default=True)
@click.option(
    "--min-kappa",
    "--min_kappa",
    "min_kappa",
    default=0.60,
    show_default=True,
    help="Annotators whose mean kappa with the others is below it are left out "
    "(with three or more annotators).",
)
@click.option(
    "--min-confidence",
    "--min_confidence",
    "min_confidence",
    default=0.7,
    show_default=True,
    help="Ratings below it do not vote.",
)
@click.option(
    "--max-item-range",
    default=1,
    show_default=True,
    help="Reject items whose scores on an axis span more points than this.",
)
@min_pair_overlap_option
@click.option(
    "--rejected",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the rejected items (JSONL) here.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    required=True,
    help="Where to write the consensus JSONL.",
)
@fail_cleanly
def merge(
    inputs: tuple[str, ...],
    extra: tuple[str, ...],
    method: str,
    min_kappa: float,
    min_confidence: float,
    max_item_range: int,
    min_pair_overlap: int,
    rejected: str | None,
    output: str,
) -> None:
    """Merge several annotators into one consensus annotation per item -> JSONL."""
    paths = _expand(inputs, extra)
    rated = _humans(paths, adjudications=True)
    humans = [a for a in rated if is_human(a.annotator_id)]
    kappas = annotator_kappas(to_long_frame(humans), min_pair_overlap=min_pair_overlap)
    judged = {a: k["overall"] for a, k in kappas.items() if k["overall"] is not None}
    low = sorted(a for a, k in judged.items() if k < min_kappa)
    # Only annotators with enough shared items are judged; with two, blame cannot be assigned.
    excluded = low if len(judged) >= 3 and len(kappas) - len(low) >= 2 else []
    consensus, rejects = build_consensus(
        rated,
        method=method,
        min_confidence=min_confidence,
        max_item_range=max_item_range,
        exclude=excluded,
        min_pair_overlap=min_pair_overlap,
    )
    atomic.write_jsonl(output, consensus)
    if rejected:
        atomic.write_jsonl(rejected, rejects)
    left_out = f"; left out (kappa < {min_kappa}): {', '.join(excluded)}" if excluded else ""
    click.echo(
        f"merge: {len(paths)} file(s), {len(consensus)} consensus items "
        f"({sum(c['adjudicated'] for c in consensus)} adjudicated), "
        f"{len(rejects)} rejected ({method}){left_out} -> {output}"
    )


@cli.command()
@input_option
@click.argument("extra", nargs=-1, type=click.Path())
@click.option(
    "--tasks",
    "tasks_path",
    default=str(PATHS.annotation_tasks),
    show_default=True,
    help="Task set every item of which needs ratings. If this default is missing, the bundled "
    "sample tasks are used.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the verdict (status, checks, failures) as JSON here.",
)
@params_option
@fail_cleanly
def check(
    inputs: tuple[str, ...],
    extra: tuple[str, ...],
    tasks_path: str,
    output: str | None,
    params_path: str,
) -> None:
    """Quality gate: list every failure and exit 1 if there is one.

    Checks the batches (default: data/raw/annotations/*.jsonl, or while there is none the
    bundled sample batches, labelled as such) for required fields, value ranges,
    weighted kappa >= min_kappa per axis, completeness (every task has `overlap` human ratings),
    consistency flags <= max_consistency_rate, and annotator outliers, with the thresholds of
    params.yaml's `annotation` section. Exit 0: passed; 1: failed; 2: unusable input.
    """
    params = load_params(params_path)
    settings = QualitySettings.from_params(section(params, "annotation"), seed=params["seed"])
    samples = False
    if not inputs and not extra:
        found = find_batches(PATHS.raw_annotations, samples_dir=PATHS.sample_annotations)
        inputs, samples = tuple(str(p) for p in found.paths), found.samples
    paths = _expand(inputs, extra)
    tasks_file, sample_tasks = tasks_or_sample(tasks_path, default=PATHS.annotation_tasks)
    task_label = "the bundled sample tasks" if sample_tasks else str(tasks_file)
    tasks = read_tasks(tasks_file)
    annotations, problems = collect_annotations(paths, task_ids=[t.id for t in tasks])
    result = run_quality(
        annotations, tasks, settings, validation_problems=problems, sample_batches=samples
    )
    gate = result.gate
    if output:
        atomic.write_json(output, gate)
    for failure in gate["failures"]:
        click.echo(f"FAIL [{failure['check']}] {failure['message']}")
    summary = ", ".join(
        f"{name} {'ok' if c['passed'] else 'FAIL'}" for name, c in gate["checks"].items()
    )
    if samples:
        click.echo(
            f"SAMPLE DATA: {PATHS.raw_annotations} holds no batch; checked the bundled "
            f"sample batches in {PATHS.sample_annotations}"
        )
    click.echo(
        f"check: {len(paths)} {'SAMPLE ' if samples else ''}file(s), {len(annotations)} valid annotation(s), "
        f"{len(tasks)} task(s) ({task_label}): {gate['status'].upper()} "
        f"with {gate['n_failures']} failure(s) [{summary}]"
    )
    if gate["status"] != "pass":
        sys.exit(1)
