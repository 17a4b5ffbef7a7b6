"""Stage sycophancy_replies@<model>: the model answers every dialogue of ``sycophancy.dialogues``
-> data/sycophancy/replies/<model>.parquet, through the generation cache
data/cache/sycophancy_generations/<model>/ (the engines and cache of the typo study)."""

from __future__ import annotations

import click

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.inference.engine import make_engine
from evalpipe.inference.tiny import default_model_cache
from evalpipe.model_list import locate_settings, model_config
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.sycophancy.dialogues import read_all
from evalpipe.sycophancy.replies import replies_frame, reply_requests
from stages._common import fail_cleanly, params_option


@click.command()
@click.option("--model", "slug", required=True, help="The model's slug in params.yaml `models`.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar.")
@params_option
@fail_cleanly
def main(slug: str, progress: bool, params_path: str) -> None:
    """Generate one model's replies to the sycophancy dialogues."""
    params = load_params(params_path)
    cfg = section(params, "sycophancy", path=params_path)
    sampling = section(params, "sampling", path=params_path)
    model_cfg = model_config(params, slug, source=params_path)
    paths = ProjectPaths()

    dialogues = read_all([str(e) for e in cfg["dialogues"]])
    requests = reply_requests(
        dialogues,
        max_tokens=int(cfg["max_tokens"]),
        temperature=float(sampling["temperature"]),
        seed=sampling["seed"],
    )
    try:
        engine = make_engine(
            model_cfg,
            cache_dir=paths.sycophancy_generation_cache(slug),
            model_cache=default_model_cache(paths.root),
        )
    except InputError as exc:
        raise InputError(locate_settings(str(exc), f"models.{slug}")) from exc
    try:
        generations = engine.generate(requests, progress=progress)
        frame = replies_frame(slug, engine.identity.label, dialogues, requests, generations)
        stats = engine.last_stats
    finally:
        engine.close()
    atomic.write_parquet(paths.sycophancy_replies(slug), frame)
    cut = int((frame["finish_reason"] == "length").sum())
    not_sent = int(frame["finish_reason"].isin(["prompt_too_long", "rejected"]).sum())
    click.echo(
        f"sycophancy_replies@{slug}: {len(frame)} replies ({stats.cache_hits} from the cache, "
        f"{cut} cut at max_tokens, {not_sent} not sent) -> {paths.sycophancy_replies(slug)}"
    )


if __name__ == "__main__":
    main()
