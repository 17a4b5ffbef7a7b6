"""Stage generate@<model>: every benchmark declared in ``benchmarks.suites`` through one model of
params.yaml ``models`` -> data/outputs/<model>/<benchmark>.parquet, through the generation cache
(data/cache/generations/<model>/, which also reads the other models' caches) and one engine for
all benchmarks; run counts -> data/outputs/<model>/generation.json; the perturbed sets' summaries
-> data/outputs/<model>/perturbation.json. The enabled studies (evalpipe.studies.generate) add
their arms and requests (evalpipe.inference.plan)."""

from __future__ import annotations

import logging

import click
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.benchmarks import get_spec, validate_suites
from evalpipe.benchmarks.loading import recorded_metadata
from evalpipe.errors import InputError
from evalpipe.inference.backends import word_token_counter
from evalpipe.inference.engine import make_engine
from evalpipe.inference.generate import validate_perturbed
from evalpipe.inference.plan import (
    BenchmarkInput,
    Sampling,
    benchmark_outputs,
    generation_summary,
    plan_benchmark,
    read_summary,
    run_line,
    run_plans,
)
from evalpipe.inference.tiny import TINY_RANDOM_NOTE, default_model_cache
from evalpipe.model_list import locate_settings, model_benchmarks, model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.studies.generate import STUDIES
from stages._common import fail_cleanly, params_option, read_parquet

log = logging.getLogger("stages.generate")
MODELS_HELP = "Models to run, by their slug in params.yaml `models` (repeatable); default: all."
NAMES_HELP = "Benchmarks to generate for (repeatable); default: those of benchmarks.suites."


@click.command()
@click.option("--model", "models", multiple=True, help=MODELS_HELP)
@click.option("--name", "names", multiple=True, help=NAMES_HELP)
@click.option("--progress/--no-progress", default=True, show_default=True, help="Progress bar.")
@params_option
@fail_cleanly
def main(models: tuple[str, ...], names: tuple[str, ...], progress: bool, params_path: str) -> None:
    """Generate answers for every perturbed prompt; only prompts the cache lacks reach the model."""
    params = load_params(params_path)
    configs = model_configs(params, source=params_path)
    if unknown := [m for m in models if m not in configs]:
        raise InputError(
            f"--model {', '.join(unknown)}: not in {params_path} models; "
            f"declared: {', '.join(configs)}"
        )
    for slug in models or tuple(configs):
        try:
            run_model(slug, configs[slug], params, names, progress=progress, source=params_path)
        except InputError as exc:
            # the engine names its settings model.<key>; here they are models.<slug>.<key>
            # (or model_defaults.<key>, which every entry inherits)
            raise InputError(locate_settings(str(exc), f"models.{slug}")) from exc


def run_model(slug: str, model_cfg: dict, params: dict, names, *, progress, source) -> None:
    """Generate every declared benchmark with one model."""
    sampling = Sampling.of(params, source=source)
    style, n_shots = str(params["prompt"]["style"]), int(params["prompt"]["n_shots"] or 0)
    paths = ProjectPaths()
    # Exactly the declared sets: dvc.yaml's generate stage tracks data/perturbed as a whole, so
    # reading a stray file there would use data DVC does not attribute to this run.
    suites = section(params, "benchmarks", "suites", path=source)
    declared = validate_suites(suites, local=paths.raw_benchmarks, source=source)
    parts = [study(params, paths, slug=slug, source=source) for study in STUDIES]
    studies = [part for part in parts if part.enabled]
    caches, model_cache = paths.generation_caches, default_model_cache(paths.root)
    engine = make_engine(  # before the plans (a study's arms may ask it); started on a miss
        model_cfg,
        cache_dir=paths.generation_cache(slug),
        model_cache=model_cache,
        read_also=sorted(p for p in caches.iterdir() if p.is_dir()) if caches.is_dir() else (),
    )
    plans, summaries = [], {}
    names = names or model_benchmarks(model_cfg, declared, slug=slug, source=source)
    for name in names:  # every prompt first: one batch for all benchmarks
        path = paths.perturbed(name)
        rows = read_parquet(path, f"run `dvc repro perturb@{name}`")
        validate_perturbed(rows, source=str(path))
        summaries[name] = read_summary(paths.perturbation_summary(name), name)
        spec = get_spec(name, paths.raw_benchmarks)
        fewshot = _fewshot(paths, name, n_shots) if style == "few_shot" else None
        language = declared.get(name, spec.language)
        bench = BenchmarkInput(name, path, rows, spec, fewshot, style, n_shots, language)
        plan = plan_benchmark(bench, sampling=sampling, studies=studies, engine=engine)
        plans.append(plan)
        if sampling.method != "generate" and plan.loglikelihood is None:
            reason = plan.loglikelihood_reason
            click.echo(f"generate: {name}: no log-likelihood scoring: {reason}", err=True)
    # tokens of every edited word before and after its typo, under this model's tokenizer
    counter = word_token_counter(model_cfg, model_cache=model_cache)
    per_benchmark: dict[str, dict] = {}
    sent: set[str] = set()  # requests counted so far: a repeat is generated once
    results = run_plans(engine, plans, progress=progress)
    for result in results:
        bench = result.plan.bench
        table, per_benchmark[bench.name] = benchmark_outputs(
            result, slug=slug, identity=engine.identity, schema=pq.read_schema(bench.path),
            counter=counter, studies=studies, seen=sent,
        )  # fmt: skip
        atomic.write_parquet(paths.outputs(bench.name, slug), table)
    figures = generation_summary(
        engine, slug=slug, model_cfg=model_cfg, style=style, benchmarks=per_benchmark,
        studies=studies,
    )  # fmt: skip
    atomic.write_json(paths.generation_summary(slug), figures)
    atomic.write_json(paths.outputs_perturbation(slug), summaries)
    line = run_line(engine, slug=slug, benchmarks=len(plans), out=paths.outputs("*", slug))
    for part in [p for p in studies if p.follow]:  # requests cut from the answers written
        part.follow(engine, results, progress=progress)
    for part in [p for p in parts if p.finish]:  # off too: a study removes what it passed on
        part.finish(sorted(summaries))
    engine.close()
    if engine.is_smoke_test_model:
        log.warning(TINY_RANDOM_NOTE)
    click.echo(line)


def _fewshot(paths: ProjectPaths, name: str, n_shots: int):
    """The few-shot pool of benchmark ``name``; an empty one is said (and named) on stderr."""
    path = paths.benchmark_fewshot(name)
    fewshot = read_parquet(path, f"run `dvc repro benchmarks@{name}`")
    if fewshot.empty and n_shots:
        missing = recorded_metadata(path).get("fewshot_missing")
        shown = f" (missing: {', '.join(missing)})" if missing else ""
        click.echo(
            f"generate: {name}: the few-shot pool is empty{shown}; few_shot prompts have no "
            "demonstrations",
            err=True,
        )
    return fewshot


if __name__ == "__main__":
    main()
