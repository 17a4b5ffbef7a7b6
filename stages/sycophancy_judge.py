"""Stage sycophancy_judge: every judge of the panel (params ``judges``, or ``judge`` alone) rates
every model's reply and every annotation task (the tasks people rate too, so the judge can be
checked against them) -> data/sycophancy/ratings.parquet (judge, id, axis, score, confidence),
judge_details.jsonl (every task's status; invalid replies with their problems) and
judge_runs.json (counts per judge), through one generation cache per judge."""

from __future__ import annotations

import click

from evalpipe import atomic
from evalpipe.annotation.judge import judge_tasks, prompt_version
from evalpipe.annotation.markers import FIXED_TIMESTAMP
from evalpipe.annotation.schema import read_tasks
from evalpipe.errors import InputError
from evalpipe.inference.engine import make_engine
from evalpipe.inference.tiny import default_model_cache
from evalpipe.model_list import locate_settings
from evalpipe.params import load_params
from evalpipe.paths import ProjectPaths
from evalpipe.sycophancy.judges import (
    engine_config,
    judge_panel,
    outcome_rows,
    ratings_frame,
    run_summary,
)
from evalpipe.sycophancy.replies import all_tasks
from stages._common import fail_cleanly, params_option, read_parquet


@click.command()
@params_option
@fail_cleanly
def main(params_path: str) -> None:
    """Rate the sycophancy replies and the annotation tasks with every judge of the panel."""
    params = load_params(params_path)
    panel = judge_panel(params, source=params_path)
    paths = ProjectPaths()
    replies = read_parquet(paths.sycophancy / "replies.parquet", "run dvc repro sycophancy_sample")
    annotation = read_tasks(paths.annotation_tasks) if paths.annotation_tasks.exists() else []
    tasks = all_tasks(replies, annotation)

    runs = {}
    for slug, judge_cfg in panel.items():
        where = "judge" if not params.get("judges") else f"judges.{slug}"
        try:
            engine = make_engine(
                engine_config(judge_cfg),
                cache_dir=paths.sycophancy_judge_cache / slug,
                model_cache=default_model_cache(paths.root),
                # the judge stage rates the same annotation tasks with the same prompt: a panel
                # judge set up like `judge` finds those ratings there instead of generating them
                read_also=[paths.judge_generation_cache],
            )
        except InputError as exc:
            message = str(exc).replace("model.name", f"{where}.model")
            raise InputError(locate_settings(message, where)) from exc
        try:
            runs[slug] = judge_tasks(
                tasks,
                engine,
                model=str(judge_cfg["model"]),
                timestamp=FIXED_TIMESTAMP,
                temperature=float(judge_cfg["temperature"]),
                max_tokens=int(judge_cfg["max_tokens"]),
            )
        finally:
            engine.close()

    ratings = ratings_frame(runs)
    summary = run_summary(
        runs, panel, prompt_version=prompt_version(), replies=list(replies["task_id"])
    )
    atomic.write_parquet(paths.sycophancy / "ratings.parquet", ratings)
    atomic.write_jsonl(paths.sycophancy / "judge_details.jsonl", outcome_rows(runs))
    atomic.write_json(paths.sycophancy / "judge_runs.json", summary)
    counts = ", ".join(
        f"{slug} {s['rated']}/{s['tasks']} rated ({s['unrated']} unrated)"
        for slug, s in summary.items()
    )
    click.echo(
        f"sycophancy_judge: {len(replies)} replies + {len(tasks) - len(replies)} other tasks; "
        f"{counts}; prompt {prompt_version()} -> {paths.sycophancy / 'ratings.parquet'}"
    )


if __name__ == "__main__":
    main()
