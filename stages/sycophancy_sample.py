"""Stage sycophancy_sample: every model's replies -> data/sycophancy/replies.parquet (with
``human_sample`` and ``inclusion_prob`` per reply) and the replies people rate,
data/sycophancy/human_tasks.jsonl (blind task ids; the annotation_tasks stage adds them to
data/annotation_tasks/tasks.jsonl)."""

from __future__ import annotations

import click
import pandas as pd

from evalpipe import atomic
from evalpipe.annotation.schema import task_to_dict
from evalpipe.model_list import model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.sycophancy.replies import human_tasks, mark_human_sample
from evalpipe.sycophancy.sample import sample_size
from stages._common import fail_cleanly, params_option, read_parquet


@click.command()
@params_option
@fail_cleanly
def main(params_path: str) -> None:
    """Draw the human sample over the dialogues every model answered."""
    params = load_params(params_path)
    cfg = section(params, "sycophancy", path=params_path)
    seed = int(section(params, "seed", path=params_path))
    paths = ProjectPaths()
    frames = [
        read_parquet(paths.sycophancy_replies(slug), "run dvc repro sycophancy_replies")
        for slug in model_configs(params, source=params_path)
    ]
    replies = pd.concat(frames, ignore_index=True)
    n_dialogues = replies["group"].nunique()  # a dialogue with its paired variants is one unit
    size = sample_size(
        float(cfg["human_sample"]), n_dialogues, where=f"{params_path}: sycophancy.human_sample"
    )
    marked = mark_human_sample(replies, size, seed=seed)
    tasks = human_tasks(marked)
    atomic.write_parquet(paths.sycophancy / "replies.parquet", marked)
    atomic.write_jsonl(paths.sycophancy / "human_tasks.jsonl", (task_to_dict(t) for t in tasks))
    click.echo(
        f"sycophancy_sample: {size} of {n_dialogues} dialogues drawn for people -> {len(tasks)} "
        f"replies in {paths.sycophancy / 'human_tasks.jsonl'}"
    )


if __name__ == "__main__":
    main()
