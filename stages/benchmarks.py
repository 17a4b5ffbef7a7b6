"""Stage benchmarks@{name}: load one benchmark -> data/benchmarks/{name}.parquet and
data/benchmarks/{name}.fewshot.parquet. ``--list`` shows every benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evalpipe import atomic
from evalpipe.benchmarks import (
    BenchmarkSpec,
    get_spec,
    list_specs,
    load_benchmark,
    sample_files,
    to_arrow,
)
from evalpipe.benchmarks.loading import dataset_metadata, read_json_rows, resolve_source
from evalpipe.benchmarks.readers import RAW_HUB
from evalpipe.errors import InputError
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option


def _count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def _size(spec: BenchmarkSpec, source: str) -> str:
    if spec.kind == "local":
        path = Path((spec.local or {})["path"])
        if not path.is_file():
            return "file missing"
        try:
            return str(len(read_json_rows(path, json_field=(spec.local or {}).get("json_field"))))
        except InputError:
            return "unreadable"
    if source == "hub":
        size = spec.hub.size if spec.hub else None
        return str(size) if size is not None else "? (counted when loaded)"
    if source == "hub_raw" and spec.name in RAW_HUB:
        return str(RAW_HUB[spec.name].hub.size)
    if source in ("files", "hub_raw"):
        return "? (counted when loaded)"
    return str(_count_lines(sample_files(spec.name)[0]))


def _list(cfg: dict[str, Any]) -> None:
    source = cfg.get("source", "sample")
    rows = [("name", "task_type", "language", "source", "size")]
    for spec in list_specs(cfg.get("local")):
        src = "local" if spec.kind == "local" else resolve_source(source, spec.name)
        rows.append((spec.name, spec.task_type, spec.language, src, _size(spec, src)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    click.echo(f"max_samples: {cfg.get('max_samples')} per benchmark (deterministic selection)")


@click.command()
@click.option("--name", help="Benchmark to build (a built-in one or a key of benchmarks.local).")
@click.option("--list", "list_", is_flag=True, help="List every benchmark and exit.")
@params_option
@fail_cleanly
def main(name: str | None, list_: bool, params_path: str) -> None:
    """Build benchmark NAME's evaluated set and few-shot pool from params.yaml's source."""
    params = load_params(params_path)
    cfg = section(params, "benchmarks", path=params_path)
    if list_:
        _list(cfg)
        return
    if not name:
        raise click.UsageError("give --name NAME or --list")
    spec = get_spec(name, cfg.get("local"))
    source = cfg.get("source", "sample")
    paths = ProjectPaths()
    examples, fewshot = load_benchmark(
        spec,
        source=source,
        max_samples=cfg.get("max_samples"),
        seed=int(params.get("seed", 42)),
        files_dir=paths.raw_benchmarks,
    )
    out = paths.benchmark(name)
    fewshot_out = paths.benchmark_fewshot(name)
    meta = dataset_metadata(examples)
    atomic.write_parquet(out, to_arrow(examples), metadata=meta)
    atomic.write_parquet(fewshot_out, to_arrow(fewshot), metadata=meta)
    info = examples.attrs.get("evalpipe", {})
    origin = "local file" if spec.kind == "local" else info.get("source", source)
    click.echo(
        f"benchmarks@{name}: {len(examples)} examples + {len(fewshot)} few-shot "
        f"({spec.task_type}, {spec.language}, from {origin}) -> {out}"
    )
    if info.get("fewshot_missing"):
        # the run goes on: zero-shot and CoT need no demonstrations, few-shot prompts get none
        click.echo(
            f"benchmarks@{name}: few-shot source missing ({', '.join(info['fewshot_missing'])}); "
            "few_shot prompts will have no demonstrations",
            err=True,
        )


if __name__ == "__main__":
    main()
