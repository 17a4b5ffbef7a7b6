"""Stage perturb@{name}: typos on the target words of one benchmark -> data/perturbed/{name}.parquet
and its summary -> data/perturbed/{name}.summary.json."""

from __future__ import annotations

from pathlib import Path

import click

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.perturb import perturb_frame, validate_probabilities
from evalpipe.perturb.control import perturb_with_controls
from evalpipe.perturb.count import perturb_count_frame, validate_counts, validate_design
from evalpipe.perturb.eligibility import from_params as eligibility_from_params
from evalpipe.perturb.parallel import usable_cores
from evalpipe.perturb.parquet_sink import parquet_row_groups
from stages._common import fail_cleanly, params_option
from stages._common import read_parquet as _read_parquet


def summary_path(paths: ProjectPaths, name: str) -> Path:
    """``data/perturbed/{name}.summary.json``, next to the rows it counts (a plain DVC out, not a
    metric: its two dozen keys per benchmark would widen `dvc metrics show`)."""
    return paths.perturbation_summary(name)


@click.command()
@click.option("--name", required=True, help="The benchmark to perturb (a key of benchmarks.*).")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=usable_cores,
    show_default="the usable cores",
    help="Worker processes for the words design (the output does not depend on it; "
    "1 runs in this process).",
)
@params_option
@fail_cleanly
def main(name: str, params_path: str, jobs: int) -> None:
    """Perturb the most frequent words of benchmark NAME with the typo model of params.yaml."""
    params = load_params(params_path)
    cfg = section(params, "perturb", path=params_path)
    probs = validate_probabilities(cfg, source=params_path)
    draws = cfg["draws"]
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InputError(f"{params_path}: perturb.draws must be an integer >= 1, found {draws!r}")
    seed = section(params, "seed", path=params_path)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"{params_path}: seed must be an integer, found {seed!r}")
    paths = ProjectPaths()
    bench_path = paths.benchmark(name)
    bench = _read_parquet(bench_path, f"run `dvc repro benchmarks@{name}`")
    if bench.empty or "language" not in bench.columns:
        raise InputError(f"{bench_path}: expected benchmark rows with a 'language' column")
    language = str(bench["language"].iloc[0])
    design = validate_design(cfg["design"], source=params_path)
    rules = eligibility_from_params(cfg, source=params_path)
    if design == "count" and cfg["control"]:
        raise InputError(
            f"{params_path}: perturb.control: the matched control is an arm of the words design; "
            "expected perturb.control: false with perturb.design: count"
        )
    if design == "count":
        # streamed as the words design's rows: memory for one row group, the same bytes
        with parquet_row_groups(paths.perturbed(name)) as sink:
            s = perturb_count_frame(
                bench,
                probabilities=probs,
                seed=seed,
                counts=validate_counts(cfg["counts"], source=params_path),
                draws=draws,
                eligibility=rules,
                source=str(bench_path),
                progress=True,
                sink=sink,
            ).summary
        atomic.write_json(summary_path(paths, name), s)
        click.echo(
            f"perturb@{name} (count, {s['model']}): {s['examples']} examples, "
            f"{s['eligible_words']} eligible words, rows by k {s['rows_by_k']}, shortfall "
            f"{s['shortfall']}, targeting {s['targeting']['inside_target']}/"
            f"{s['targeting']['edits']} -> {paths.perturbed(name)}"
        )
        return
    words_path = paths.words(language)
    words = _read_parquet(words_path, f"run `dvc repro words@{language}`")
    options = dict(
        probabilities=probs,
        seed=seed,
        source=str(bench_path),
        words_source=str(words_path),
        draws=draws,
        progress=True,
        eligibility=rules,
        jobs=jobs,
    )
    if not cfg["control"]:
        # rows streamed to the file row group by row group: memory for one row group, whatever
        # the benchmark's size, and the bytes of a single write (docs/perturbation.md, "Speed")
        with parquet_row_groups(paths.perturbed(name)) as sink:
            summary = perturb_frame(bench, words, sink=sink, **options).summary
        atomic.write_json(summary_path(paths, name), summary)
        _echo_words(name, summary, paths)
        return
    # the matched-control arm (docs/perturbation.md, "Matched control"): the typo rows, then
    # the control rows made from them read back batch by batch, streamed as above
    with parquet_row_groups(paths.perturbed(name)) as sink:
        summary = perturb_with_controls(bench, words, sink=sink, **options)
    atomic.write_json(summary_path(paths, name), summary)
    _echo_words(name, summary, paths)


def _echo_words(name: str, s: dict, paths: ProjectPaths) -> None:
    click.echo(
        f"perturb@{name} ({s['model']}): {s['examples']} examples, {s['target_words_found']}/{s['target_words']} "
        f"target words found, {s['perturbed_occurrences']}/{s['occurrences']} occurrences "
        f"perturbed, {s['rows']} rows -> {paths.perturbed(name)}"
    )


if __name__ == "__main__":
    main()
