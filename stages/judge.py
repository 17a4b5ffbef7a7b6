"""Stage judge: an LLM rates every annotation task on the four axes ->
data/annotations/judge.jsonl (annotator_id "llm:<model>"), judge_summary.json, judge_details.jsonl."""

from __future__ import annotations

from typing import Any

import click

from evalpipe import atomic
from evalpipe.annotation.judge import judge_annotator_id, judge_tasks, prompt_version
from evalpipe.annotation.markers import FIXED_TIMESTAMP
from evalpipe.annotation.schema import annotation_to_dict, read_tasks
from evalpipe.errors import InputError
from evalpipe.inference.engine import make_engine
from evalpipe.model_list import locate_settings
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option

SAMPLING_KEYS = ("temperature", "max_tokens")


def judge_model_config(judge_cfg: dict[str, Any], *, where: str) -> dict[str, Any]:
    """The engine config for the judge: the ``judge`` params with ``model`` renamed ``name``.

    The judge section is self-contained (backend, dtype, base_urls...) so the judge can be a
    different model, or a different server, from the one that generated the outputs.
    """
    if not isinstance(judge_cfg, dict) or not judge_cfg.get("model"):
        raise InputError(f"{where}: judge.model: expected a model name (e.g. tiny-random)")
    cfg = {k: v for k, v in judge_cfg.items() if k not in SAMPLING_KEYS and k != "model"}
    cfg["name"] = str(judge_cfg["model"])
    return cfg


@click.command()
@params_option
@fail_cleanly
def main(params_path: str) -> None:
    """Rate data/annotation_tasks/tasks.jsonl with the judge model from params.yaml (judge section)."""
    params = load_params(params_path)
    judge_cfg = section(params, "judge", path=params_path)
    model_cfg = judge_model_config(judge_cfg, where=params_path)
    temperature = float(judge_cfg["temperature"])
    max_tokens = int(judge_cfg["max_tokens"])
    paths = ProjectPaths()

    tasks = read_tasks(paths.annotation_tasks)
    try:
        engine = make_engine(model_cfg, cache_dir=paths.judge_generation_cache)
    except InputError as exc:  # the engine says model.<key>; the judge's are judge.<key>
        message = str(exc).replace("model.name", "judge.model")
        raise InputError(locate_settings(message, "judge")) from exc
    try:
        run = judge_tasks(
            tasks,
            engine,
            model=model_cfg["name"],
            timestamp=FIXED_TIMESTAMP,
            temperature=temperature,
            max_tokens=max_tokens,
        )
    finally:
        close = getattr(engine, "close", None)
        if close is not None:
            close()

    atomic.write_jsonl(paths.judge_annotations, (annotation_to_dict(a) for a in run.annotations))
    atomic.write_jsonl(paths.judge_details, (o.to_dict() for o in run.outcomes))
    counts = run.counts()
    atomic.write_json(
        paths.judge_summary,
        {
            **counts,
            "annotator_id": judge_annotator_id(model_cfg["name"]),
            "model": model_cfg["name"],
            "backend": model_cfg["backend"],
            "prompt_version": prompt_version(),
            "temperature": temperature,
            "max_tokens": max_tokens,
            "unrated_ids": [o.id for o in run.outcomes if o.status == "unrated"],
        },
    )
    click.echo(
        f"judge: {counts['rated']}/{counts['tasks']} tasks rated by "
        f"{judge_annotator_id(model_cfg['name'])} ({counts['repaired']} after a repair retry, "
        f"{counts['unrated']} unrated, see {paths.judge_details}); prompt {prompt_version()} "
        f"-> {paths.judge_annotations}"
    )


if __name__ == "__main__":
    main()
