"""Stage generate@<model>: every benchmark declared in ``benchmarks.suites`` through one model of
params.yaml ``models`` -> data/outputs/<model>/<benchmark>.parquet, through the generation cache
(data/cache/generations/<model>/, which also reads the other models' caches) and one engine for
all benchmarks; run counts -> data/outputs/<model>/generation.json; the perturbed sets' summaries
-> data/outputs/<model>/perturbation.json."""

from __future__ import annotations

import json
import logging

import click
import pandas as pd
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.arms import WARNED, corrected
from evalpipe.benchmarks import build_prompts, get_spec, validate_suites
from evalpipe.benchmarks.loading import recorded_metadata
from evalpipe.errors import InputError
from evalpipe.inference.cache import cache_key
from evalpipe.inference.engine import make_engine
from evalpipe.inference.generate import (
    answer_budget,
    generation_counts,
    make_requests,
    not_sent_counts,
    outputs_frame,
    outputs_table,
    sampling_settings,
    truncated_share,
    validate_perturbed,
    warned_prompts,
)
from evalpipe.inference.loglikelihood import loglikelihood_columns, loglikelihood_requests
from evalpipe.inference.perplexity import (
    perplexity_columns,
    perplexity_requests,
    perturbable_spans,
)
from evalpipe.inference.tiny import TINY_RANDOM_NOTE, default_model_cache
from evalpipe.inference.types import Generation
from evalpipe.inference.word_tokens import (
    edit_token_columns,
    token_arrays,
    uncounted_message,
    word_token_counter,
)
from evalpipe.model_list import locate_settings, model_benchmarks, model_configs, model_labels
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option, read_parquet

log = logging.getLogger("stages.generate")
TRUNCATION_WARNING = 0.05  # warn when more of a benchmark's outputs than this hit their budget


@click.command()
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Models to run, by their slug in params.yaml `models` (repeatable); default: all.",
)
@click.option(
    "--name",
    "names",
    multiple=True,
    help="Benchmarks to generate for (repeatable); default: those of benchmarks.suites.",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Show a progress bar over the prompts sent to the engine.",
)
@params_option
@fail_cleanly
def main(models: tuple[str, ...], names: tuple[str, ...], progress: bool, params_path: str) -> None:
    """Generate answers for every perturbed prompt; only prompts the cache lacks reach the model."""
    params = load_params(params_path)
    configs = model_configs(params, source=params_path)
    unknown = [m for m in models if m not in configs]
    if unknown:
        raise InputError(
            f"--model {', '.join(unknown)}: not in {params_path} models; "
            f"declared: {', '.join(configs)}"
        )
    for slug in models or tuple(configs):
        try:
            run_model(
                slug, configs[slug], params, names=names, progress=progress, params_path=params_path
            )
        except InputError as exc:
            # the engine names its settings model.<key>; here they are models.<slug>.<key>
            # (or model_defaults.<key>, which every entry inherits)
            raise InputError(locate_settings(str(exc), f"models.{slug}")) from exc


def run_model(
    slug: str,
    model_cfg: dict,
    params: dict,
    *,
    names: tuple[str, ...],
    progress: bool,
    params_path: str,
) -> None:
    """Generate every declared benchmark with one model."""
    temperature, override, seed = sampling_settings(
        section(params, "sampling", path=params_path), source=params_path
    )
    style = str(section(params, "prompt", "style", path=params_path))
    n_shots = int(params["prompt"]["n_shots"] or 0)
    paths = ProjectPaths()
    # Exactly the declared sets: dvc.yaml's generate stage tracks data/perturbed as a whole, so
    # reading a stray file there would use data DVC does not attribute to this run.
    declared = validate_suites(
        section(params, "benchmarks", "suites", path=params_path),
        local=paths.raw_benchmarks,
        source=params_path,
    )
    names = names or model_benchmarks(model_cfg, declared, slug=slug, source=params_path)
    method = str(params["scoring"]["method"])
    perplexity = bool(params["scoring"]["perplexity"])
    defences = section(params, "defences", path=params_path)

    # Build every prompt first so the engine gets all benchmarks' misses in one batch.
    plans = []
    summaries = {}
    for name in names:
        path = paths.perturbed(name)
        rows = read_parquet(path, f"run `dvc repro perturb@{name}`")
        validate_perturbed(rows, source=str(path))
        summaries[name] = _perturbation_summary(paths, name)
        spec = get_spec(name, paths.raw_benchmarks)
        fewshot = None
        if style == "few_shot":
            fewshot_path = paths.benchmark_fewshot(name)
            fewshot = read_parquet(fewshot_path, f"run `dvc repro benchmarks@{name}`")
            if fewshot.empty and n_shots:
                missing = recorded_metadata(fewshot_path).get("fewshot_missing")
                click.echo(
                    f"generate: {name}: the few-shot pool is empty"
                    + (f" (missing: {', '.join(missing)})" if missing else "")
                    + "; few_shot prompts have no demonstrations",
                    err=True,
                )
        # The plain rows, then each defence's arm (docs/defences.md): the same clean and typo'd
        # rows behind the typo warning, and each corrector's corrected rows.
        prompts = build_prompts(spec, rows, fewshot, style=style, n_shots=n_shots)
        arms = [(rows, prompts)]
        if defences["warning_prompt"]:
            preamble = _warning(defences, declared.get(name, spec.language), params_path)
            warned = rows.assign(condition=WARNED)
            arms.append((warned, warned_prompts(prompts, preamble=preamble)))
        if defences["correctors"]:
            for defended in _defended(paths, name, defences["correctors"]):
                defended_prompts = build_prompts(
                    spec, defended, fewshot, style=style, n_shots=n_shots
                )
                arms.append((defended.drop(columns=["corrections"]), defended_prompts))
        arm_rows = pd.concat([arm for arm, _ in arms], ignore_index=True)
        prompts = [p for _, arm_prompts in arms for p in arm_prompts]
        requests = make_requests(
            prompts,
            max_tokens=answer_budget(spec.max_tokens(style), override=override),
            temperature=temperature,
            json_schema=spec.json_schema,
            seed=seed,
            stop=spec.stop(style),
        )
        ll_requests, ll_reason = None, "scoring.method is generate"
        if method != "generate":
            choices = arm_rows["choices"].tolist() if "choices" in arm_rows.columns else None
            ll_requests, ll_reason = loglikelihood_requests(
                spec, prompts, style=style, choices=_choice_lists(choices)
            )
            if ll_requests is None:
                click.echo(f"generate: {name}: no log-likelihood scoring: {ll_reason}", err=True)
        if method == "loglikelihood" and ll_requests is not None:
            requests = []  # scored by log-likelihood only: nothing to generate
        ppl_requests = None
        if perplexity:  # the plain arm's perturbable text in its prompt context (docs/scoring.md)
            plain = len(rows)  # the defence arms' prompts follow the plain ones: not scored
            spans = perturbable_spans(
                spec, rows, prompts[:plain], fewshot, style=style, n_shots=n_shots
            )
            ppl_requests = perplexity_requests(prompts, [*spans, *[None] * (len(prompts) - plain)])
        plans.append(
            (name, path, arm_rows, prompts, requests, spec, ll_requests, ll_reason, ppl_requests)
        )

    caches = paths.generation_caches
    engine = make_engine(
        model_cfg,
        cache_dir=paths.generation_cache(slug),
        model_cache=default_model_cache(paths.root),
        read_also=sorted(p for p in caches.iterdir() if p.is_dir()) if caches.is_dir() else (),
    )
    # tokens of every edited word before and after its typo, under this model's tokenizer
    counter = word_token_counter(model_cfg, model_cache=default_model_cache(paths.root))
    all_requests = [r for plan in plans for r in plan[4]]
    generations = engine.generate(all_requests, progress=progress)
    stats = engine.last_stats
    # Log-likelihood requests of every benchmark in one batch as well (same engine, same cache).
    all_ll = [r for plan in plans if plan[6] for row in plan[6] for r in row]
    ll_results = engine.loglikelihood(all_ll, progress=progress) if all_ll else []
    # Perplexity: the same log-likelihood path and cache; a server without prompt
    # log-probabilities leaves its rows unscored (counted), it does not stop the run.
    all_ppl = [r for plan in plans if plan[8] for row in plan[8] for r in row]
    ppl_results = (
        engine.loglikelihood(all_ppl, progress=progress, unsupported_ok=True) if all_ppl else []
    )

    per_benchmark = {}
    sent: set[str] = set()  # requests counted so far: a repeat is generated once
    offset = ll_offset = ppl_offset = 0
    for name, path, rows, prompts, requests, spec, ll_requests, ll_reason, ppl in plans:
        if requests:
            gens = generations[offset : offset + len(requests)]
            offset += len(requests)
        else:  # log-likelihood only: the rows carry no generated answer
            gens = [Generation("", "not_generated", 0, 0)] * len(prompts)
        frame = outputs_frame(rows, prompts, gens, model=slug, model_id=engine.identity.label)
        if ll_requests is not None:
            n = sum(len(row) for row in ll_requests)
            ll = loglikelihood_columns(spec, ll_requests, ll_results[ll_offset : ll_offset + n])
            ll_offset += n
            frame = pd.concat([frame, ll], axis=1)
        ppl_counts = {}
        if ppl is not None:
            n = sum(len(row) for row in ppl)
            results = ppl_results[ppl_offset : ppl_offset + n]
            ppl_offset += n
            columns = perplexity_columns(ppl, results)
            frame = pd.concat([frame, columns], axis=1)
            ppl_counts["perplexity"] = {
                "requests": n,
                "rows_scored": int(columns["ppl_logprob"].notna().sum()),
                "rows_unscored": int(columns["ppl_logprob"].isna().sum()),
            }
        table = outputs_table(frame, pq.read_schema(path))
        tokens, token_counts = edit_token_columns(rows, counter)
        if message := uncounted_message(name, token_counts):
            log.warning(message)
        for column, values in token_arrays(tokens).items():
            table = table.append_column(column, values)
        atomic.write_parquet(paths.outputs(name, slug), table)
        truncated, share = truncated_share(gens)
        if share > TRUNCATION_WARNING:
            log.warning(
                "%s: %d of %d outputs (%.0f%%) stopped at the %d-token budget; raise "
                "generation.max_tokens in its spec (or sampling.max_tokens)",
                name,
                truncated,
                len(gens),
                100 * share,
                requests[0].max_tokens,
            )
        not_sent = not_sent_counts(gens)
        if any(not_sent.values()):
            log.warning(
                "%s: %s prompts got no answer (%s); they are scored as unparsed",
                name,
                sum(not_sent.values()),
                ", ".join(f"{k} {v}" for k, v in not_sent.items()),
            )
        per_benchmark[name] = {
            "prompts": len(prompts),
            **generation_counts(
                [cache_key(engine.identity, r) for r in requests],
                gens if requests else [],
                seen=sent,
            ),
            "max_tokens": requests[0].max_tokens if requests else 0,
            "stop": list(requests[0].stop) if requests else [],
            "truncated": truncated,
            **not_sent,
            "structured_output": bool(requests and requests[0].json_schema),
            "loglikelihood_requests": sum(len(r) for r in ll_requests) if ll_requests else 0,
            "loglikelihood": "scored" if ll_requests is not None else ll_reason,
            **ppl_counts,
            "word_tokens": token_counts,
        }
    smoke = engine.is_smoke_test_model
    metrics = {
        **stats.to_dict(),
        "model": slug,
        "model_id": engine.identity.label,
        "backend": model_cfg["backend"],
        "labels": model_labels(model_cfg),
        "engine_args": dict(model_cfg.get("engine_args") or {}),
        "smoke_test_model": smoke,
        "note": TINY_RANDOM_NOTE if smoke else "",
        "prompt_style": style,
        "benchmarks": per_benchmark,
    }
    if perplexity:
        # requests a server answered without prompt log-probabilities (no echo): not scored
        metrics["perplexity_unsupported"] = engine.unsupported
    atomic.write_json(paths.generation_summary(slug), metrics)
    atomic.write_json(paths.outputs_perturbation(slug), summaries)
    corrections = paths.outputs_corrections(slug)
    if defences["correctors"]:  # the defend stage's counts of these benchmarks, passed on
        counts = _defend_summary(paths)
        atomic.write_json(corrections, {n: counts.get(n, {}) for n in sorted(summaries)})
    elif corrections.exists():
        corrections.unlink()
    engine.close()
    if smoke:
        log.warning(TINY_RANDOM_NOTE)
    # wall-clock figures go here, never into the metrics file
    started = f"started in {stats.engine_start_seconds:.1f} s" if stats.engine_started else ""
    click.echo(
        f"generate@{slug}: {stats.prompts} prompts ({stats.unique_prompts} unique) over "
        f"{len(plans)} benchmarks, {stats.cache_hits} cache hits, {stats.misses} generated "
        f"({stats.output_tokens} tokens in {stats.generation_seconds:.2f} s, "
        f"{stats.tokens_per_s:.0f} tokens/s), engine {started or 'not started'}, "
        f"model {engine.identity.label}"
        f"{' (smoke test: chance accuracy)' if smoke else ''} -> {paths.outputs('*', slug)}"
    )


def _perturbation_summary(paths: ProjectPaths, name: str) -> dict:
    """perturb@<name>'s summary (data/perturbed/<name>.summary.json)."""
    path = paths.perturbation_summary(name)
    if not path.exists():
        raise InputError(f"{path}: not found (run `dvc repro perturb@{name}`)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not a JSON object ({exc.msg}); rerun perturb@{name}") from None


def _warning(defences: dict, language: str, params_path: str) -> str:
    """The typo warning of a benchmark's language (``defences.warning_text.<language>``)."""
    text = (defences.get("warning_text") or {}).get(language)
    if not text:
        raise InputError(
            f"{params_path}: defences.warning_text.{language}: expected the warning preamble of "
            f"{language} prompts (defences.warning_prompt is true)"
        )
    return str(text)


def _defended(paths: ProjectPaths, name: str, correctors: list[str]) -> list[pd.DataFrame]:
    """Each configured corrector's rows of one benchmark (data/defended/<name>.parquet)."""
    path = paths.defended(name)
    rows = read_parquet(path, "run `dvc repro defend`")
    out = []
    for corrector in correctors:
        condition = corrected(corrector)
        arm = rows.loc[rows["condition"] == condition].reset_index(drop=True)
        if arm.empty:
            raise InputError(
                f"{path}: no rows of condition {condition!r}; rerun `dvc repro defend` "
                "(defences.correctors changed since it ran)"
            )
        out.append(arm)
    return out


def _defend_summary(paths: ProjectPaths) -> dict:
    """The defend stage's ``{benchmark: {corrector: counts}}``."""
    path = paths.defended_summary()
    if not path.exists():
        raise InputError(f"{path}: not found (run `dvc repro defend`)")
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("benchmarks", {})
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}); rerun `dvc repro defend`") from None


def _choice_lists(column: list | None) -> list | None:
    """The rows' choice texts as plain lists (None for rows without choices, e.g. NLI)."""
    if column is None:
        return None
    out = []
    for value in column:
        if value is None or (isinstance(value, float) and value != value):
            out.append(None)
        else:
            out.append([str(v) for v in value] if len(value) else None)
    return out if any(v is not None for v in out) else None


if __name__ == "__main__":
    main()
