"""``evalpipe generate``: every model's generate stage at once, each on its own GPUs, then
``dvc repro``.

``dvc repro`` runs stages one after another, so N models on N GPUs would take N times as long.
This command starts one ``python -m stages.generate --model <slug>`` process per model, each
with ``CUDA_VISIBLE_DEVICES`` pinned to GPUs no other running process holds
(``evalpipe.inference.device_plan``); a model that needs more GPUs than are free waits for one
to finish. Each process fills its model's generation cache (checkpointed as it goes), then
``dvc repro`` runs the pipeline, whose generate stages find every answer in the caches and start
no engine. A model with ``data_parallel_size`` runs its replicas on a local Ray cluster inside
its GPUs, or on the cluster ``RAY_ADDRESS`` names (which places them).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import click

from evalpipe.commands import fail_cleanly, params_option
from evalpipe.errors import InputError
from evalpipe.inference.device_plan import check_fits, devices_needed, take_devices
from evalpipe.model_list import model_configs
from evalpipe.params import load_params


def visible_devices(option: str | None) -> list[str]:
    """The GPU ids to share out: ``--devices``, else ``CUDA_VISIBLE_DEVICES``, else every GPU
    torch sees (none on the CPU build)."""
    listed = option if option is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip()]
    try:
        import torch
    except ImportError:
        return []
    return [str(i) for i in range(torch.cuda.device_count())]


@click.command()
@click.option("--model", "models", multiple=True, help="A model's slug (repeatable); default: all.")
@click.option("--devices", default=None, help="GPU ids to share out, e.g. 0,1,2,3.")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Most generate processes at once (default: as many as the GPUs allow; 1 without GPUs).",
)
@click.option(
    "--repro/--no-repro",
    default=True,
    show_default=True,
    help="Run `dvc repro` once every model's cache is filled.",
)
@click.option("--dry-run", is_flag=True, help="Print which model gets how many GPUs and stop.")
@params_option
@fail_cleanly
def main(
    models: tuple[str, ...],
    devices: str | None,
    jobs: int | None,
    repro: bool,
    dry_run: bool,
    params_path: str,
) -> None:
    """Generate every model's answers at once, each on its own GPUs, then `dvc repro`."""
    configs = model_configs(load_params(params_path), source=params_path)
    unknown = [m for m in models if m not in configs]
    if unknown:
        raise InputError(f"--model {', '.join(unknown)}: not in {params_path} models")
    slugs = list(models or configs)
    gpus = visible_devices(devices)
    on_cluster = bool(os.environ.get("RAY_ADDRESS"))
    needs = {s: devices_needed(configs[s], total=len(gpus), ray_cluster=on_cluster) for s in slugs}
    check_fits(needs, gpus)
    jobs = jobs or (len(slugs) if gpus else 1)
    if dry_run:
        for slug in slugs:
            click.echo(f"{slug}: {needs[slug]} GPUs")
        click.echo(f"{len(gpus)} GPUs ({', '.join(gpus) or 'none'}), at most {jobs} at once")
        return
    failed = run_all(slugs, needs, gpus, jobs=jobs, params_path=params_path)
    if failed:
        raise InputError(f"generate failed for {', '.join(failed)}; the others' caches are filled")
    click.echo(f"generate: {len(slugs)} models done", err=True)
    if repro:
        subprocess.run(["dvc", "repro"], check=True)


def run_all(
    slugs: list[str], needs: dict[str, int], gpus: list[str], *, jobs: int, params_path: str
) -> list[str]:
    """Run each model's generate process as GPUs free up; the slugs whose process failed."""
    waiting, free = list(slugs), list(gpus)
    running: dict[subprocess.Popen[bytes], tuple[str, list[str]]] = {}
    failed: list[str] = []
    while waiting or running:
        while waiting and len(running) < jobs and not failed:
            taken = take_devices(free, needs[waiting[0]])
            if taken is None:
                break
            held, free = taken
            slug = waiting.pop(0)
            env = dict(os.environ)
            if gpus:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(held)
            command = [sys.executable, "-m", "stages.generate", "--model", slug]
            command += ["--no-progress", "--params", params_path]
            click.echo(f"generate@{slug}: started on GPUs {','.join(held) or '-'}", err=True)
            running[subprocess.Popen(command, env=env)] = (slug, held)
        if failed and not running:
            break
        time.sleep(0.5)
        for proc in [p for p in running if p.poll() is not None]:
            slug, held = running.pop(proc)
            free = sorted([*free, *held], key=gpus.index)
            click.echo(f"generate@{slug}: exit {proc.returncode}", err=True)
            if proc.returncode != 0:
                failed.append(slug)
    return failed
