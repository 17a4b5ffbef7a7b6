"""The score stage's reading side: one model's outputs files scored one at a time, each file's
views staged (:class:`~evalpipe.scoring.staged_views.ViewStaging`) before the next is read, in a
staging folder that nothing half-scored outlives."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from evalpipe.benchmarks.registry import get_spec
from evalpipe.errors import InputError
from evalpipe.scoring.benchmark_scores import BenchmarkScores, score_benchmark
from evalpipe.scoring.nested_columns import Records, record_columns, split_records
from evalpipe.scoring.staged_views import ViewStaging


@contextmanager
def staging_folder(parent: Path, model: str) -> Iterator[Path]:
    """A fresh folder beside ``parent/<model>/`` for the model's views as they are scored,
    removed on exit; a folder a killed run of the same model left behind is removed first."""
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f".{model}.*.staging"):
        shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{model}.", suffix=".staging", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_outputs(path: Path) -> tuple[pd.DataFrame, Records]:
    """One benchmark's outputs: the columns the scorer reads in pandas, the record columns (the
    edits of each row) in Arrow (:mod:`evalpipe.scoring.nested_columns`)."""
    if not path.exists():
        raise InputError(f"{path}: not found (run `dvc repro generate`)")
    try:
        schema = pq.read_schema(path)
        kept = record_columns(schema)
        frame = pd.read_parquet(path, columns=[n for n in schema.names if n not in kept])
        records = split_records(schema, pq.read_table(path, columns=kept))
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from exc
    return frame, records


def stage_benchmark(
    staged: ViewStaging, path: Path, *, benchmarks_dir: Path, scoring: dict, style: str
) -> BenchmarkScores:
    """Score the outputs file ``path`` (its benchmark is named after it) and stage its views;
    the scores keep the classification and agreement figures, the views go to ``staged``."""
    name = path.stem
    try:
        spec = get_spec(name, benchmarks_dir)
    except InputError as exc:
        raise InputError(f"{path}: no benchmark named after this file: {exc}") from exc
    outputs, records = read_outputs(path)
    scores = score_benchmark(
        outputs, spec, name=name, scoring=scoring, style=style, source=str(path)
    )
    del outputs  # the text is let go before the next benchmark is read
    for view in list(scores.views):
        # Paired once: every paired figure of the stage (and the impact stage's, the report's)
        # groups this.
        staged.add(view, scores.views.pop(view), records)
    return scores
