"""Stage benchmarks@{name}: load one benchmark -> data/benchmarks/{name}.parquet and
data/benchmarks/{name}.fewshot.parquet. ``--list`` shows every benchmark."""

from __future__ import annotations

from typing import Any

import click

from evalpipe import atomic
from evalpipe.benchmarks import (
    BENCHMARK_SOURCES,
    BenchmarkSpec,
    get_spec,
    list_specs,
    load_benchmark,
    sample_files,
    to_arrow,
)
from evalpipe.benchmarks.loading import dataset_metadata, resolve_source, samples_root
from evalpipe.benchmarks.readers import READERS, ListedFilesReader, load_files
from evalpipe.benchmarks.readers.base import expand
from evalpipe.errors import InputError
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option


def _count_lines(path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def _size(spec: BenchmarkSpec, source: str, paths: ProjectPaths) -> str:
    if spec.kind == "local" or source == "files":
        assert spec.files is not None
        folder = spec.root if spec.kind == "local" else paths.raw_benchmarks / spec.name
        reader = READERS.get(spec.files.reader)
        if not isinstance(reader, ListedFilesReader):  # a publisher's: counted when loaded
            return "? (counted when loaded)" if folder.is_dir() else "files missing"
        if not expand(folder, spec.files.test):
            return "files missing"
        try:
            return str(len(reader.read(folder, spec.files.test, options=spec.files.options)))
        except InputError:
            return "unreadable"
    if source == "hub_raw":
        return str(spec.hub_raw.hub.size) if spec.hub_raw else "no hub_raw copy"
    if source == "hub":
        size = spec.hub.size if spec.hub else None
        return str(size) if size is not None else "? (counted when loaded)"
    if spec.sample is not None and spec.sample.folder is not None:
        folder = samples_root() / spec.sample.folder
        return str(len(load_files(spec, folder, reader=spec.files.reader).examples))
    return str(_count_lines(sample_files(spec)[0]))


def _list(cfg: dict[str, Any], paths: ProjectPaths) -> None:
    source = cfg["source"]
    suites = cfg.get("suites") or {}
    rows = [("name", "task_type", "language", "source", "size", "in suites")]
    for spec in list_specs(paths.raw_benchmarks):
        src = "local" if spec.kind == "local" else resolve_source(source, spec.name)
        has = spec.kind == "local" or src == "hub_raw" or getattr(spec, src, None) is not None
        size = _size(spec, src, paths) if has else f"no {src} source"
        rows.append(
            (
                spec.name,
                spec.task_type,
                spec.language,
                src,
                size,
                "yes" if spec.name in suites else "no",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    click.echo(f"max_samples: {cfg['max_samples']} per benchmark (deterministic selection)")


@click.command()
@click.option("--name", help="Benchmark to build (a built-in one or a local spec's folder name).")
@click.option("--list", "list_", is_flag=True, help="List every benchmark and exit.")
@params_option
@fail_cleanly
def main(name: str | None, list_: bool, params_path: str) -> None:
    """Build benchmark NAME's evaluated set and few-shot pool from params.yaml's source."""
    params = load_params(params_path)
    cfg = section(params, "benchmarks", path=params_path)
    paths = ProjectPaths()
    if list_:
        _list(cfg, paths)
        return
    if not name:
        raise click.UsageError("give --name NAME or --list")
    spec = get_spec(name, paths.raw_benchmarks)
    source = cfg["source"]
    if resolve_source(source, name) not in BENCHMARK_SOURCES:
        raise InputError(
            f"{params_path}: benchmarks.source: expected one of {', '.join(BENCHMARK_SOURCES)}, "
            f"got {source!r}"
        )
    examples, fewshot = load_benchmark(
        spec,
        source=source,
        max_samples=cfg["max_samples"],
        seed=int(params["seed"]),
        files_dir=paths.raw_benchmarks,
    )
    out = paths.benchmark(name)
    fewshot_out = paths.benchmark_fewshot(name)
    meta = dataset_metadata(examples)
    atomic.write_parquet(out, to_arrow(examples), metadata=meta)
    atomic.write_parquet(fewshot_out, to_arrow(fewshot), metadata=meta)
    info = examples.attrs.get("evalpipe", {})
    origin = "local files" if spec.kind == "local" else info.get("source", source)
    click.echo(
        f"benchmarks@{name}: {len(examples)} examples + {len(fewshot)} few-shot "
        f"({spec.task_type}, {spec.language}, from {origin}; {info.get('dataset_version', '')})"
        f" -> {out}"
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
