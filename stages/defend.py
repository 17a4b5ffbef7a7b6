"""Stage defend: every corrector of params.yaml ``defences.correctors`` over every declared
perturbed set -> data/defended/<benchmark>.parquet (the clean and typo'd rows again, corrected,
condition ``corrected:<corrector>``) and data/defended/summary.json (what the edits did, per
benchmark and corrector). ``llm:<slug>`` correctors run through the engine and their own
generation cache, data/cache/corrections/<slug>/. Without correctors it writes the summary only.
Seconds are printed here, never written (docs/defences.md)."""

from __future__ import annotations

import time
from pathlib import Path

import click
import pandas as pd
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.arms import corrected
from evalpipe.benchmarks import validate_suites
from evalpipe.defences.correctors import corrector as corrector_of
from evalpipe.defences.correctors import split_name
from evalpipe.defences.frame import (
    COUNT_KEYS,
    correction_counts,
    defended_rows,
    defended_table,
    field_texts,
    kept_corrections,
)
from evalpipe.errors import InputError
from evalpipe.inference.engine import make_engine
from evalpipe.inference.generate import validate_perturbed
from evalpipe.inference.tiny import default_model_cache
from evalpipe.inference.types import GenerationRequest
from evalpipe.model_list import locate_settings, model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option, read_parquet, root_option


@click.command()
@click.option("--progress/--no-progress", default=True, show_default=True, help="Progress bars.")
@params_option
@root_option("Project root holding data/.")
@fail_cleanly
def main(progress: bool, params_path: str, root: str) -> None:
    """Run the configured input correctors over every declared perturbed set."""
    params = load_params(params_path)
    paths = ProjectPaths(Path(root))
    cfg = section(params, "defences", path=params_path)
    correctors = list(cfg["correctors"] or [])
    configs = model_configs(params, source=params_path)
    for i, name in enumerate(correctors):
        kind, slug = split_name(name)
        if corrector_of(kind).uses_model and slug not in configs:
            raise InputError(
                f"{params_path}: defences.correctors[{i}]: {name!r} names no entry of models; "
                f"declared: {', '.join(configs)}"
            )
        if not corrector_of(kind).uses_model and slug:
            raise InputError(
                f"{params_path}: defences.correctors[{i}]: {name!r}: {kind} takes no model; "
                f"expected {kind}"
            )
    declared = validate_suites(
        section(params, "benchmarks", "suites", path=params_path),
        local=paths.raw_benchmarks,
        source=params_path,
    )
    paths.defended_dir.mkdir(parents=True, exist_ok=True)
    paths.correction_cache("-").parent.mkdir(parents=True, exist_ok=True)  # a DVC out, always
    for stale in paths.defended_dir.glob("*.parquet"):
        stale.unlink()
    sets = {}
    for name in declared if correctors else ():
        path = paths.perturbed(name)
        rows = read_parquet(path, f"run `dvc repro perturb@{name}`")
        validate_perturbed(rows, source=str(path))
        sets[name] = (rows, field_texts(rows, source=str(path)), pq.read_schema(path))

    frames: dict[str, list[pd.DataFrame]] = {name: [] for name in sets}
    counts: dict[str, dict[str, dict]] = {name: {} for name in sets}
    for corrector in correctors:
        started = time.perf_counter()
        proposed, tokens = _propose(corrector, sets, cfg, configs, paths, progress, params_path)
        for name, (rows, texts, _schema) in sets.items():
            kept = kept_corrections(rows, texts, proposed[name])
            frames[name].append(defended_rows(rows, texts, kept, condition=corrected(corrector)))
            counts[name][corrector] = {
                **correction_counts(
                    rows, texts, kept, supported=corrector_of(split_name(corrector)[0]).supports
                ),
                "corrector_tokens": tokens.get(name, 0),
            }
        seconds = time.perf_counter() - started
        restored = sum(c[corrector]["restored_words"] for c in counts.values())
        edited = sum(c[corrector]["edited_words"] for c in counts.values())
        clean = sum(c[corrector]["clean_words_changed"] for c in counts.values())
        n_clean = sum(c[corrector]["clean_prompts"] for c in counts.values())
        click.echo(
            f"defend: {corrector}: restored {restored}/{edited} typo'd words, changed {clean} "
            f"words on {n_clean} clean prompts, {seconds:.1f} s"
        )
    for name, parts in frames.items():
        atomic.write_parquet(
            paths.defended(name), defended_table(pd.concat(parts, ignore_index=True), sets[name][2])
        )
    atomic.write_json(
        paths.defended_summary(),
        {"correctors": correctors, "count_keys": list(COUNT_KEYS), "benchmarks": counts},
    )
    if not correctors:
        click.echo(f"defend: no correctors (defences.correctors) -> {paths.defended_summary()}")


def _propose(name, sets, cfg, configs, paths, progress, params_path):
    """Each benchmark's proposed edits per field text, and the corrector's tokens per benchmark."""
    kind, slug = split_name(name)
    corrector = corrector_of(kind)
    if corrector.local is not None:
        edits = corrector.local()
        return {
            name: [edits(t.text, language=t.language) for t in texts]
            for name, (_rows, texts, _schema) in sets.items()
        }, {}
    assert corrector.prompt is not None and corrector.from_answer is not None
    requests = {
        name: [
            GenerationRequest(
                corrector.prompt(t.text, language=t.language),
                max_tokens=int(cfg["llm_max_tokens"]),
                temperature=0.0,
            )
            for t in texts
        ]
        for name, (_rows, texts, _schema) in sets.items()
    }
    try:
        engine = make_engine(
            configs[slug],
            cache_dir=paths.correction_cache(slug),
            model_cache=default_model_cache(paths.root),
        )
        flat = [r for name in sets for r in requests[name]]
        generations = engine.generate(flat, progress=progress) if flat else []
        engine.close()
    except InputError as exc:
        raise InputError(locate_settings(str(exc), f"models.{slug}")) from exc
    proposed, tokens, at = {}, {}, 0
    for name, (_rows, texts, _schema) in sets.items():
        gens = generations[at : at + len(texts)]
        at += len(texts)
        proposed[name] = [
            corrector.from_answer(t.text, g.output, language=t.language)
            for t, g in zip(texts, gens, strict=True)
        ]
        tokens[name] = sum(int(g.prompt_tokens) + int(g.output_tokens) for g in gens)
    return proposed, tokens


if __name__ == "__main__":
    main()
