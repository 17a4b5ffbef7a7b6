"""Stage score@<model>: parse and score one model's outputs -> data/scored/<model>/ (rows, the pairs
table and every figure), one small headline file per benchmark in metrics/<model>/, plot tables in
plots/<model>/."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from evalpipe import atomic
from evalpipe.benchmarks.registry import get_spec
from evalpipe.errors import InputError
from evalpipe.inference.loglikelihood import not_applicable_reason
from evalpipe.model_list import model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.defences import defence_figures, usage_table
from evalpipe.scoring.loglikelihood import method_agreement, score_loglikelihood
from evalpipe.scoring.pairs import build_pairs
from evalpipe.scoring.perplexity import perplexity_pairs, perplexity_summary
from evalpipe.scoring.scorer import error_preview, score_frame
from evalpipe.scoring.summaries import (
    ClassificationSetup,
    build_reports,
    rounded,
    truncation_warnings,
)
from evalpipe.scoring.views import view_name
from stages._common import fail_cleanly, params_option, read_parquet, root_option


def read_outputs(path: Path) -> pd.DataFrame:
    return read_parquet(path, "run `dvc repro generate`")


@click.command()
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Models to score, by their slug in params.yaml `models` (repeatable); default: all.",
)
@params_option
@root_option("Project root holding data/, metrics/ and plots/.")
@fail_cleanly
def main(models: tuple[str, ...], params_path: str, root: str) -> None:
    """Score data/outputs/<model>/*.parquet and write scored rows, metrics and plot data."""
    params = load_params(params_path)
    slugs = list(model_configs(params, source=params_path))
    unknown = [m for m in models if m not in slugs]
    if unknown:
        raise InputError(
            f"--model {', '.join(unknown)}: not in {params_path} models; declared: {', '.join(slugs)}"
        )
    for slug in models or slugs:
        score_model(slug, params, ProjectPaths(Path(root)))


def score_model(slug: str, params: dict, paths: ProjectPaths) -> None:
    """Score every benchmark one model answered."""
    level = float(section(params, "scoring", "confidence_level"))
    # answer types take their scoring-time options from here (json_label: sentiment_strict)
    scoring = section(params, "scoring")
    outputs_dir = paths.outputs_dir(slug)
    files = sorted(outputs_dir.glob("*.parquet"))
    if not files:
        raise InputError(
            f"{outputs_dir}: no *.parquet outputs to score (run `dvc repro generate@{slug}`)"
        )

    method = str(scoring["method"])
    style = str(section(params, "prompt", "style"))
    scored: dict[str, pd.DataFrame] = {}
    classification: dict[str, ClassificationSetup] = {}
    agreement: dict[str, dict] = {}
    for path in files:
        name = path.stem
        if name == paths.defences_metrics(slug).stem:
            raise InputError(
                f"{path}: a benchmark may not be named {name!r}: "
                f"{paths.defences_metrics(slug)} holds the defences figures"
            )
        try:
            spec = get_spec(name, paths.raw_benchmarks)
        except InputError as exc:
            raise InputError(f"{path}: no benchmark named after this file: {exc}") from exc
        outputs = read_outputs(path)
        # log-likelihood views where the benchmark has fixed choices (generate wrote ll_* then);
        # the generated answers otherwise, and always with method generate or both
        by_ll = method != "generate" and not_applicable_reason(spec, style=style) is None
        views: dict[str, pd.DataFrame] = {}
        if method != "loglikelihood" or not by_ll:

            def parser_options(subtask: str | None, spec=spec) -> dict:
                return spec.parser_options(subtask, scoring=scoring)

            views[view_name(name, "generate")] = score_frame(
                outputs,
                parser=spec.parser,
                metric=spec.metric,
                parser_options=parser_options,
                source=str(path),
                progress=True,
            )
        if by_ll:
            for ll_method, normalised in (("loglikelihood", False), ("loglikelihood_norm", True)):
                views[view_name(name, ll_method)] = score_loglikelihood(
                    outputs, spec, normalised=normalised, source=str(path), scoring=scoring
                )
            if name in views:  # both: how often the two ways of answering agree
                agreement[name] = method_agreement(
                    views[name], views[view_name(name, "loglikelihood")]
                )
        scored.update(views)
        if spec.labels and spec.answer.classification:
            for view in views:
                classification[view] = ClassificationSetup(
                    labels=list(spec.labels),
                    explicit_invalid=spec.answer.has_invalid_class(
                        spec.parser_options(scoring=scoring)
                    ),
                )

    scored_dir = paths.scored_dir(slug)
    # Paired once: every paired figure below (and the impact stage's, the report's) groups this.
    pairs = build_pairs(scored, model=slug, source_dir=str(scored_dir))
    reports = build_reports(
        scored,
        pairs,
        classification=classification,
        level=level,
        margin=section(params, "scoring", "margin"),
    )
    # Written only once every benchmark has scored: a bad file leaves no partial results behind.
    for name, frame in scored.items():
        atomic.write_parquet(paths.scored(name, slug), frame)
        atomic.write_jsonl(paths.errors_preview(name, slug), error_preview(frame, limit=20))
    atomic.write_parquet(paths.pairs(slug), pairs)
    summaries = paths.outputs_perturbation(slug)
    if summaries.exists():  # generate's {benchmark: perturbation summary}, passed on unchanged
        atomic.write_text(paths.scored_perturbation(slug), summaries.read_text(encoding="utf-8"))
    for name, figures in agreement.items():
        # beside the log-likelihood view's figures: agreement with the generated answers
        reports.robustness[view_name(name, "loglikelihood")]["method_agreement"] = rounded(figures)
    defences = defence_figures(
        pairs,
        usage=usage_table(scored),
        corrections=_corrections(paths.outputs_corrections(slug)),
        level=level,
    )
    atomic.write_json(paths.scored_details("robustness", slug), reports.robustness)
    atomic.write_json(paths.scored_details("classification", slug), reports.classification)
    metrics_dir = paths.model_metrics(slug)
    perplexity = None
    if scoring["perplexity"]:
        ppl_path = paths.perplexity_metrics(slug)
        if ppl_path.stem in reports.headline:
            raise InputError(
                f"benchmark {ppl_path.stem!r}: its headline file would be {ppl_path}, which "
                "scoring.perplexity writes; rename the benchmark"
            )
        perplexity = perplexity_summary(
            perplexity_pairs(pairs, scored, source=str(outputs_dir)), level=level
        )
    for stale in metrics_dir.glob("*.json") if metrics_dir.is_dir() else ():
        if stale.stem not in reports.headline:
            stale.unlink()  # a benchmark no longer scored (run by hand, outside DVC)
    if perplexity is not None:
        atomic.write_json(paths.perplexity_metrics(slug), rounded(perplexity))
    for name, headline in reports.headline.items():
        atomic.write_json(paths.headline_metrics(name, slug), headline)
    scored_defences = paths.scored_defences(slug)
    if defences["arms"]:  # only when a defence ran: the default outputs stay as they were
        atomic.write_json(scored_defences, defences)
        atomic.write_json(paths.defences_metrics(slug), defences)
    elif scored_defences.exists():
        scored_defences.unlink()
    plots = paths.model_plots(slug)
    atomic.write_csv(plots / "word_accuracy_drop.csv", reports.word_accuracy_drop)
    atomic.write_csv(plots / "confusion.csv", reports.confusion)
    atomic.write_csv(plots / "accuracy_by_rate.csv", reports.accuracy_by_rate)

    rows = sum(len(f) for f in scored.values())
    unparsed = sum(int((f["parse_status"] == "unparsed").sum()) for f in scored.values())
    for name, figures in sorted(agreement.items()):
        click.echo(
            f"score@{slug}: {name}: generated and log-likelihood answers agree on "
            f"{figures['agreement']:.1%} of {figures['n']} rows"
            if figures.get("agreement") is not None
            else f"score@{slug}: {name}: no rows to compare the two methods on"
        )
    deltas = [r["delta"] for r in reports.robustness.values() if r.get("delta") is not None]
    mean_delta = f"{sum(deltas) / len(deltas):+.4f}" if deltas else "n/a"
    for line in truncation_warnings(reports.robustness):
        click.echo(line, err=True)
    for name, figures in sorted((perplexity or {}).get("pooled", {}).items()):
        if figures["ratio"] is not None:
            click.echo(
                f"score@{slug}: perplexity ({name}): perturbed / original {figures['ratio']:.4f} "
                f"over {figures['n']} pairs"
            )
    click.echo(
        f"score@{slug}: {len(scored)} views ({len(files)} benchmarks), {rows} rows ({unparsed} unparsed), "
        f"{len(pairs)} pairs -> "
        f"{scored_dir}, {metrics_dir}/ (mean delta {mean_delta}), {plots}/"
    )


def _corrections(path: Path) -> dict:
    """generate's copy of the defend stage's counts (``{benchmark: {corrector: counts}}``)."""
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}); rerun generate") from None


if __name__ == "__main__":
    main()
