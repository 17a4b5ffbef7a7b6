"""Stage agreement: human batches (+ judge, markers) -> consensus, quality reports, metrics.

Reads ``data/raw/annotations/*.jsonl`` (human annotators; while that folder holds no batch, the
bundled illustrative ones in ``data/samples/annotations/``, labelled as samples in every output),
and where present
``data/annotations/judge.jsonl`` and ``data/annotations/markers.jsonl``; validates them against the
task set; writes ``data/annotations/consensus.jsonl``, ``data/annotations/quality_reports/
{kappa_report,outlier_report,agreement}.json``, ``data/annotations/rejected/low_agreement.jsonl``,
one headline metrics file per axis (``metrics/agreement/<axis>.json``: ``n, kappa, alpha``) and
``plots/agreement.csv``; the re-annotation list (``data/annotations/for_reannotation.jsonl``); the quality gate's verdict (``quality_reports/gate.json``,
summarised under ``gate`` in ``quality_reports/agreement.json``) and agreement over time
(``quality_reports/agreement_over_time.csv``, ``plots/agreement_weekly.csv``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from evalpipe import atomic
from evalpipe.annotation.batches import find_batches
from evalpipe.annotation.pseudonyms import pseudonymise, rater_salt
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.schema import AXES, read_annotations, read_tasks, tasks_or_sample
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option

log = logging.getLogger("stages.agreement")
PATHS = ProjectPaths()


@click.command()
@click.option(
    "--tasks",
    "tasks_path",
    default=str(PATHS.annotation_tasks),
    show_default=True,
    help="Task set (JSONL). If this default is missing, the bundled sample tasks are used.",
)
@click.option(
    "--raw-dir",
    default=str(PATHS.raw_annotations),
    show_default=True,
    help="Folder of human annotation batches (*.jsonl). While this default holds none, the "
    "bundled sample batches are used and labelled as such.",
)
@click.option(
    "--judge",
    "judge_path",
    default=str(PATHS.judge_annotations),
    show_default=True,
    help="LLM-judge annotations, used when the file exists.",
)
@click.option(
    "--markers",
    "markers_path",
    default=str(PATHS.marker_annotations),
    show_default=True,
    help="Marker-based annotations, used when the file exists.",
)
@params_option
@fail_cleanly
def main(
    tasks_path: str, raw_dir: str, judge_path: str, markers_path: str, params_path: str
) -> None:
    """Validate annotation batches, measure agreement, build the consensus, flag outliers."""
    params = load_params(params_path)
    settings = QualitySettings.from_params(section(params, "annotation"), seed=params["seed"])
    tasks_file, sample_tasks = tasks_or_sample(tasks_path, default=PATHS.annotation_tasks)
    if sample_tasks:
        log.info("%s not found; using the bundled sample tasks", tasks_path)
    tasks = read_tasks(tasks_file)
    found = find_batches(
        raw_dir,
        samples_dir=PATHS.sample_annotations if raw_dir == str(PATHS.raw_annotations) else None,
    )
    if found.samples:
        log.warning("%s holds no batch: using the SAMPLE batches in %s", raw_dir, found.folder)
    extra = [Path(p) for p in (judge_path, markers_path) if Path(p).exists()]
    annotations = read_annotations([*found.paths, *extra], task_ids=[t.id for t in tasks])
    if not found.samples:
        # Batches exported by the tools already carry pseudonyms; hand-made ones and raw CSV
        # may not, and no plain annotator id may reach data/, metrics/ or plots/.
        annotations = pseudonymise(annotations, rater_salt(PATHS.root))
    result = run_quality(annotations, tasks, settings, sample_batches=found.samples)

    atomic.write_jsonl(PATHS.consensus, result.consensus)
    atomic.write_jsonl(PATHS.rejected, result.rejected)
    atomic.write_jsonl(PATHS.for_reannotation, result.reannotation)
    atomic.write_json(PATHS.quality_reports / "kappa_report.json", result.kappa_report)
    atomic.write_json(PATHS.quality_reports / "outlier_report.json", result.outlier_report)
    atomic.write_json(PATHS.quality_reports / "agreement.json", result.metrics)
    # One small file per axis with the same keys: `dvc metrics show` prints one row per file and
    # one column per key over all metrics files, so the wide summary above stays out of it.
    for axis, headline in result.headline.items():
        atomic.write_json(PATHS.metrics / "agreement" / f"{axis}.json", headline)
    atomic.write_csv(PATHS.plots / "agreement.csv", result.plot)
    atomic.write_json(PATHS.quality_reports / "gate.json", result.gate)
    atomic.write_csv(PATHS.quality_reports / "agreement_over_time.csv", result.over_time)
    atomic.write_csv(PATHS.plots / "agreement_weekly.csv", result.weekly_plot)
    for warning in result.metrics["warnings"]:
        log.warning("%s", warning)

    kappas = ", ".join(
        f"{axis} {result.metrics[axis]['kappa']:.2f}"
        if result.metrics[axis]["kappa"] is not None
        else f"{axis} n/a"
        for axis in AXES
    )
    click.echo(
        f"agreement: {len(found.paths)} {found.label}, {result.metrics['annotators']} annotators, "
        f"{result.metrics['consensus_items']} consensus / {result.metrics['rejected_items']} "
        f"rejected items; kappa {kappas}; quality gate {result.gate['status']} "
        f"({result.gate['n_failures']} failure(s): evalpipe quality check) "
        f"-> {PATHS.consensus}"
    )


if __name__ == "__main__":
    main()
