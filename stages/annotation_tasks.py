"""Stage annotation_tasks: dialogues + a sample of model outputs + the sycophancy study's sampled
replies (data/sycophancy/human_tasks.jsonl) -> data/annotation_tasks/tasks.jsonl and the
spreadsheet template data/annotation_tasks/template.xlsx."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click
import pandas as pd

from evalpipe import atomic
from evalpipe.annotation.schema import read_tasks, task_to_dict
from evalpipe.annotation.spreadsheet import write_template
from evalpipe.annotation.tasks import combine_tasks, sample_output_tasks, trim_context
from evalpipe.arms import TYPO
from evalpipe.errors import InputError
from evalpipe.model_list import model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option

SAMPLE = "sample"


def bundled_sample_tasks() -> Path:
    """The sample dialogues shipped with the package (the ones the sample human batches rate)."""
    return Path(str(resources.files("evalpipe.annotation").joinpath("samples", "tasks.jsonl")))


def read_outputs(folder: Path) -> tuple[pd.DataFrame, str]:
    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise InputError(f"{folder}: no outputs (*.parquet); run the generate stage first")
    frames = []
    for path in files:
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from exc
        # the plain arm's prompts only: a defence's copies of them are not annotated
        if "condition" in frame.columns:
            frame = frame.loc[frame["condition"] == TYPO].reset_index(drop=True)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True), str(folder)


@click.command()
@params_option
@fail_cleanly
def main(params_path: str) -> None:
    """Build annotation tasks from the dialogues and a deterministic sample of model outputs."""
    params = load_params(params_path)
    cfg = section(params, "annotation", path=params_path)
    seed = int(section(params, "seed", path=params_path))
    paths = ProjectPaths()

    window = int(cfg["context_window"])
    dialogue_groups, sources = [], []
    for entry in cfg["dialogues"] or []:
        path = bundled_sample_tasks() if entry == SAMPLE else Path(str(entry))
        if entry != SAMPLE and not path.exists():
            raise InputError(f"{params_path}: annotation.dialogues: file {entry!r} not found")
        dialogue_groups.append([trim_context(t, context_window=window) for t in read_tasks(path)])
        sources.append(SAMPLE if entry == SAMPLE else str(entry))

    # One model's answers become tasks (raters judge answers, not a model comparison).
    slugs = list(model_configs(params, source=params_path))
    slug = cfg.get("model") or slugs[0]
    if slug not in slugs:
        raise InputError(
            f"{params_path}: annotation.model: no model {slug!r} in models; "
            f"declared: {', '.join(slugs)}"
        )
    outputs, out_source = read_outputs(paths.outputs_dir(slug))
    sampled, stats = sample_output_tasks(
        outputs,
        per_benchmark=cfg["tasks_per_benchmark"],
        seed=seed,
        variants=str(cfg["variants"]),
        benchmarks=cfg["benchmarks"],
        source=out_source,
    )
    # The sycophancy study's random sample of replies (sycophancy_sample), blind to the model.
    syc_path = paths.sycophancy / "human_tasks.jsonl"
    syc_tasks = read_tasks(syc_path) if syc_path.exists() else []
    tasks = combine_tasks(
        *dialogue_groups, sampled, syc_tasks, sources=[*sources, out_source, str(syc_path)]
    )
    atomic.write_jsonl(paths.annotation_tasks, (task_to_dict(t) for t in tasks))
    template = write_template(tasks, paths.annotation_template, context_window=window)

    n_dialogues = sum(len(g) for g in dialogue_groups)
    blank = sum(stats.blank.values())
    click.echo(
        f"annotation_tasks: {len(tasks)} tasks ({n_dialogues} dialogues, {len(sampled)} model "
        f"outputs from {len(stats.taken)} benchmarks, {len(syc_tasks)} sycophancy replies; "
        f"{blank} blank outputs skipped) -> "
        f"{paths.annotation_tasks}, {template}"
    )


if __name__ == "__main__":
    main()
