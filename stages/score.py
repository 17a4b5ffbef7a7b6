"""Stage score@<model>: parse and score one model's outputs -> data/scored/<model>/ (rows, the pairs
table and every figure), one small headline file per benchmark in metrics/<model>/, plot tables in
plots/<model>/; the enabled studies (evalpipe.studies.score) add their figures and files."""

from __future__ import annotations

from pathlib import Path

import click

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.model_list import model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.pairs_file import write_pairs
from evalpipe.scoring.score_files import stage_benchmark, staging_folder
from evalpipe.scoring.staged_views import ViewStaging
from evalpipe.scoring.study import ScoreInputs, ScorePart
from evalpipe.scoring.summaries import build_reports, rounded, truncation_warnings
from evalpipe.scoring.views import view_name
from evalpipe.studies.score import STUDIES
from stages._common import fail_cleanly, params_option, root_option

MODELS_HELP = "Models to score, by their slug in params.yaml `models` (repeatable); default: all."


@click.command()
@click.option("--model", "models", multiple=True, help=MODELS_HELP)
@params_option
@root_option("Project root holding data/, metrics/ and plots/.")
@fail_cleanly
def main(models: tuple[str, ...], params_path: str, root: str) -> None:
    """Score data/outputs/<model>/*.parquet and write scored rows, metrics and plot data."""
    params = load_params(params_path)
    slugs = list(model_configs(params, source=params_path))
    if unknown := [m for m in models if m not in slugs]:
        raise InputError(
            f"--model {', '.join(unknown)}: not in {params_path} models; declared: {', '.join(slugs)}"
        )
    for slug in models or slugs:
        score_model(slug, params, ProjectPaths(Path(root)))


def score_model(slug: str, params: dict, paths: ProjectPaths) -> None:
    """Score every benchmark one model answered."""
    outputs_dir = paths.outputs_dir(slug)
    files = sorted(outputs_dir.glob("*.parquet"))
    if not files:
        raise InputError(
            f"{outputs_dir}: no *.parquet outputs to score (run `dvc repro generate@{slug}`)"
        )
    parts = [study(params) for study in STUDIES]
    # Each view is written to the staging folder as soon as it is scored, and moved to
    # data/scored/<model>/ only once every benchmark has scored and every figure is computed: a
    # bad file leaves no partial results behind, and no view's text stays in memory after it is
    # paired.
    with staging_folder(paths.scored_dir(slug).parent, slug) as staging:
        finish_model(slug, params, paths, files=files, parts=parts, staging=staging)


def finish_model(
    slug: str,
    params: dict,
    paths: ProjectPaths,
    *,
    files: list[Path],
    parts: list[ScorePart],
    staging: Path,
) -> None:
    """Score, stage and pair one benchmark at a time, then summarise and write."""
    level = float(section(params, "scoring", "confidence_level"))
    scoring = section(params, "scoring")
    style = str(section(params, "prompt", "style"))
    scored_dir = paths.scored_dir(slug)
    staged = ViewStaging(staging, paths=paths, model=slug)
    classification, agreement = {}, {}
    for path in files:
        name = path.stem
        for part in parts:  # a study's metrics file is not a benchmark's headline
            if name == (reserved := part.reserved(paths, slug)).stem:
                raise InputError(
                    f"{path}: a benchmark may not be named {name!r}: {reserved} holds the "
                    f"{part.name} figures"
                )
        scores = stage_benchmark(
            staged, path, benchmarks_dir=paths.raw_benchmarks, scoring=scoring, style=style
        )
        classification.update(scores.classification)
        if scores.agreement is not None:
            agreement[name] = scores.agreement

    pairs = staged.pairs()
    margin = section(params, "scoring", "margin")
    reports = build_reports(
        staged.compact, pairs, classification=classification, level=level, margin=margin
    )
    inputs = ScoreInputs(slug, paths, staged.views(), pairs, level, usage=staged.usage())
    figures = [part.figures(inputs) for part in parts]
    # Moved into place only once every benchmark has scored and every figure is computed.
    staged.publish()
    write_pairs(paths.pairs(slug), pairs)
    summaries = paths.outputs_perturbation(slug)
    if summaries.exists():  # generate's {benchmark: perturbation summary}, passed on unchanged
        atomic.write_text(paths.scored_perturbation(slug), summaries.read_text(encoding="utf-8"))
    for name, agreed in agreement.items():
        # beside the log-likelihood view's figures: agreement with the generated answers
        reports.robustness[view_name(name, "loglikelihood")]["method_agreement"] = rounded(agreed)
    atomic.write_json(paths.scored_details("robustness", slug), reports.robustness)
    atomic.write_json(paths.scored_details("classification", slug), reports.classification)
    metrics_dir = paths.model_metrics(slug)
    for stale in metrics_dir.glob("*.json") if metrics_dir.is_dir() else ():
        if stale.stem not in reports.headline:
            stale.unlink()  # a benchmark no longer scored (run by hand, outside DVC)
    for name, headline in reports.headline.items():
        atomic.write_json(paths.headline_metrics(name, slug), headline)
    for part, result in zip(parts, figures, strict=True):
        part.write(inputs, result)
    plots = paths.model_plots(slug)
    atomic.write_csv(plots / "word_accuracy_drop.csv", reports.word_accuracy_drop)
    atomic.write_csv(plots / "confusion.csv", reports.confusion)
    atomic.write_csv(plots / "accuracy_by_rate.csv", reports.accuracy_by_rate)

    for name, agreed in sorted(agreement.items()):
        click.echo(
            f"score@{slug}: {name}: generated and log-likelihood answers agree on "
            f"{agreed['agreement']:.1%} of {agreed['n']} rows"
            if agreed.get("agreement") is not None
            else f"score@{slug}: {name}: no rows to compare the two methods on"
        )
    deltas = [r["delta"] for r in reports.robustness.values() if r.get("delta") is not None]
    mean_delta = f"{sum(deltas) / len(deltas):+.4f}" if deltas else "n/a"
    for line in truncation_warnings(reports.robustness):
        click.echo(line, err=True)
    for part, result in zip(parts, figures, strict=True):
        for line in part.lines(result):
            click.echo(f"score@{slug}: {line}")
    click.echo(
        f"score@{slug}: {len(staged.compact)} views ({len(files)} benchmarks), {staged.rows} rows "
        f"({staged.unparsed} unparsed), {len(pairs)} pairs -> {scored_dir}, {metrics_dir}/ (mean delta "
        f"{mean_delta}), {plots}/"
    )


if __name__ == "__main__":
    main()
