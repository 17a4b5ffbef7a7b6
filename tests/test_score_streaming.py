"""The score stage one benchmark at a time: the streamed pairs file and every output have the
bytes of the in-memory path (kept below as the reference), and a failing benchmark leaves
nothing behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from evalpipe import atomic
from evalpipe.benchmarks.registry import get_spec
from evalpipe.model_list import model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.benchmark_scores import score_benchmark
from evalpipe.scoring.nested_columns import carried, record_columns
from evalpipe.scoring.pairs import build_pairs
from evalpipe.scoring.pairs_file import write_pairs
from evalpipe.scoring.scorer import error_preview, score_frame
from evalpipe.scoring.staged_views import StagedViews, compact_view
from evalpipe.scoring.study import ScoreInputs
from evalpipe.scoring.summaries import build_reports, rounded
from evalpipe.scoring.views import view_name
from evalpipe.studies.score import STUDIES
from stages._common import read_parquet
from tests.scoring_fixtures import make_outputs
from tests.test_scoring_stage import NAMES, M, _run, _setup, _with_loglikelihoods


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    # the first rows' object column is all null: its type comes from the later rows
    later = np.where(np.arange(n) < 5, None, rng.choice(["A", "B", "12"], n)).astype(object)
    return pd.DataFrame(
        {
            "view": pd.Series(rng.choice(["a", "b.ll"], n), dtype="str"),
            "cluster": rng.integers(0, 50, n),
            "tokens": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), "Int32"),
            "correct": rng.random(n) < 0.5,
            "score": rng.random(n),
            "prediction": later,
            "example_id": pd.Series([f"ex-{i}" for i in rng.integers(0, 40, n)], dtype="str"),
        }
    )


def _same_bytes(folder: Path, frame: pd.DataFrame, **options) -> bool:
    atomic.write_parquet(folder / "whole.parquet", frame)
    write_pairs(folder / "streamed.parquet", frame, **options)
    return (folder / "whole.parquet").read_bytes() == (folder / "streamed.parquet").read_bytes()


def test_streamed_pairs_file_has_the_bytes_of_the_whole_frame_written_at_once(tmp_path):
    assert _same_bytes(tmp_path, _frame(300))
    assert _same_bytes(tmp_path, _frame(0))


def test_streamed_pairs_file_crosses_row_groups_with_the_same_bytes(tmp_path):
    frame = _frame(1000, seed=3)
    # write_parquet's row groups at this size, written whole, against the streamed ones
    atomic.write_parquet(tmp_path / "whole.parquet", frame)
    whole = pq.ParquetFile(tmp_path / "whole.parquet")
    write_pairs(tmp_path / "streamed.parquet", frame, row_group_size=1000)
    assert (tmp_path / "streamed.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    write_pairs(tmp_path / "small.parquet", frame, row_group_size=64)
    small = pq.ParquetFile(tmp_path / "small.parquet")
    assert whole.metadata.num_row_groups == 1
    assert small.metadata.num_row_groups == 16  # 15 full groups and one of 40 rows
    assert small.metadata.row_group(15).num_rows == 40
    assert small.schema_arrow == whole.schema_arrow
    pd.testing.assert_frame_equal(small.read().to_pandas(), whole.read().to_pandas())
    # and the bytes of pyarrow's own writer given the same row-group size
    table = pq.read_table(tmp_path / "whole.parquet")
    pq.write_table(
        table, tmp_path / "ref.parquet", compression="zstd", write_statistics=True,
        row_group_size=64,
    )  # fmt: skip
    assert (tmp_path / "small.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()


def reference_score_model(slug: str, params: dict, paths: ProjectPaths) -> None:
    """The score stage's in-memory path: every view in memory, paired, summarised and written at
    the end (what the stage wrote before it scored one benchmark at a time)."""
    level = float(section(params, "scoring", "confidence_level"))
    scoring = section(params, "scoring")
    parts = [study(params) for study in STUDIES]
    scored, classification, agreement = {}, {}, {}
    for path in sorted(paths.outputs_dir(slug).glob("*.parquet")):
        name = path.stem
        spec = get_spec(name, paths.raw_benchmarks)
        outputs = read_parquet(path, "run `dvc repro generate`")
        style = str(section(params, "prompt", "style"))
        scores = score_benchmark(
            outputs, spec, name=name, scoring=scoring, style=style, source=str(path)
        )
        scored.update(scores.views)
        classification.update(scores.classification)
        if scores.agreement is not None:
            agreement[name] = scores.agreement
    scored_dir = paths.scored_dir(slug)
    pairs = build_pairs(scored, model=slug, source_dir=str(scored_dir))
    margin = section(params, "scoring", "margin")
    reports = build_reports(
        scored, pairs, classification=classification, level=level, margin=margin
    )
    inputs = ScoreInputs(slug, paths, scored, pairs, level)
    figures = [part.figures(inputs) for part in parts]
    for name, frame in scored.items():
        atomic.write_parquet(paths.scored(name, slug), frame)
        atomic.write_jsonl(paths.errors_preview(name, slug), error_preview(frame, limit=20))
    atomic.write_parquet(paths.pairs(slug), pairs)
    for name, agreed in agreement.items():
        reports.robustness[view_name(name, "loglikelihood")]["method_agreement"] = rounded(agreed)
    atomic.write_json(paths.scored_details("robustness", slug), reports.robustness)
    atomic.write_json(paths.scored_details("classification", slug), reports.classification)
    for name, headline in reports.headline.items():
        atomic.write_json(paths.headline_metrics(name, slug), headline)
    for part, result in zip(parts, figures, strict=True):
        part.write(inputs, result)
    plots = paths.model_plots(slug)
    atomic.write_csv(plots / "word_accuracy_drop.csv", reports.word_accuracy_drop)
    atomic.write_csv(plots / "confusion.csv", reports.confusion)
    atomic.write_csv(plots / "accuracy_by_rate.csv", reports.accuracy_by_rate)


def _outputs(root: Path) -> dict[str, bytes]:
    folders = [root / "data" / "scored" / M, root / "metrics" / M, root / "plots" / M]
    return {
        str(p.relative_to(root)): p.read_bytes()
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "changes",
    [
        {},  # the default study
        # both ways of answering, and the studies that read whole views back from the staging
        # folder (calibration) or every view's usage (defences)
        {"scoring": {"method": "both", "calibration": True}},
    ],
    ids=["default", "loglikelihood-calibration"],
)
def test_stage_writes_the_bytes_of_the_in_memory_path(tmp_path, changes):
    names = ("mmlu", "jnli", "gsm8k") if changes else NAMES
    streamed = _setup(tmp_path / "streamed", names=names)
    params = yaml.safe_load((streamed / "params.yaml").read_text(encoding="utf-8"))
    for key, values in changes.items():
        params[key].update(values)
    (streamed / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    if changes:
        for name in ("mmlu", "jnli"):
            _with_loglikelihoods(streamed, name)
    for path in sorted((streamed / "data" / "outputs" / M).glob("*.parquet")):
        _with_edits(path)
    reference = tmp_path / "reference"
    shutil.copytree(streamed, reference)
    result = _run(streamed)
    assert result.exit_code == 0, result.output
    params = load_params(str(reference / "params.yaml"))
    for slug in model_configs(params, source="params.yaml"):
        reference_score_model(slug, params, ProjectPaths(reference))
    written, expected = _outputs(streamed), _outputs(reference)
    assert sorted(written) == sorted(expected)
    assert any(name.endswith("pairs.parquet") for name in written)
    if changes:
        assert (
            f"metrics/{M}/readouts.json" in written
            and f"data/scored/{M}/mmlu.ll.parquet" in written
        )
    for name in expected:
        assert written[name] == expected[name], name
    # nothing of the staging folder is left beside the scored views
    assert [p.name for p in (streamed / "data" / "scored").iterdir()] == [M]


EDIT = pa.struct(
    [("field", pa.string()), ("start", pa.int32()), ("end", pa.int32()), ("op", pa.string()),
     ("keys", pa.string()), ("reading", pa.string())]
)  # fmt: skip


def _with_edits(path: Path) -> None:
    """Add generate's ``perturbations`` column (a list of edit records per row; null on the clean
    rows, an empty list on one row, fields without any value) as perturb types it."""
    table = pq.read_table(path)
    values = []
    for i, variant in enumerate(table.column("variant").to_pylist()):
        if variant == "original":
            values.append(None)
        elif i % 7 == 0:
            values.append([])
        else:
            values.append(
                [
                    {"field": "question", "start": i + k, "end": i + k + 2, "op": "delete",
                     "keys": None, "reading": None if k else "よみ"}
                    for k in range(1 + i % 2)
                ]
            )  # fmt: skip
    column = pa.array(values, pa.list_(EDIT))
    atomic.write_parquet(path, table.add_column(table.num_columns - 2, "perturbations", column))


def test_record_columns_take_the_type_of_the_pandas_round_trip(tmp_path):
    path = tmp_path / "outputs.parquet"
    atomic.write_parquet(path, make_outputs("mmlu"))
    _with_edits(path)
    column = pq.read_table(path).column("perturbations")
    assert record_columns(pq.read_schema(path)) == ["perturbations"]
    expected = pa.Table.from_pandas(
        pd.read_parquet(path, columns=["perturbations"]), preserve_index=False
    ).column(0)
    got = carried(column)
    assert got.type == expected.type  # int32 -> int64; keys (never set) -> null
    assert got.type.value_type.field("keys").type == pa.null()
    assert got.equals(expected.combine_chunks())


def test_a_failing_benchmark_leaves_no_partial_results(tmp_path):
    root = _setup(tmp_path, names=("gsm8k", "jnli"))
    # sorted after gsm8k and jnli: both score (and are staged) before this one fails
    bad = make_outputs("mmlu", seed=9).drop(columns="output")
    bad.to_parquet(root / "data" / "outputs" / M / "mmlu.parquet")
    result = _run(root)
    assert result.exit_code != 0
    assert "mmlu.parquet" in result.output and "missing column(s) output" in result.output
    assert "score jnli" in result.output  # the two before it were scored
    assert not (root / "data" / "scored" / M).exists()
    assert list((root / "data" / "scored").iterdir()) == []  # the staging folder is gone
    assert not (root / "metrics" / M).exists()


def test_a_staging_folder_left_by_a_killed_run_is_removed_by_the_next(tmp_path):
    root = _setup(tmp_path, names=("gsm8k",))
    stale = root / "data" / "scored" / f".{M}.abc123.staging"
    stale.mkdir(parents=True)
    (stale / "gsm8k.parquet").write_bytes(b"half-written")
    other = root / "data" / "scored" / ".another-model.abc123.staging"
    other.mkdir()
    result = _run(root)
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert other.exists()  # another model's run is not this one's to clean
    assert (root / "data" / "scored" / M / "gsm8k.parquet").exists()


def test_compact_views_give_the_summaries_of_the_whole_views():
    views = {name: _scored(name) for name in ("mmlu", "jnli", "gsm8k")}
    pairs = build_pairs(views, model=M)
    from evalpipe.scoring.summaries import ClassificationSetup

    setup = {v: ClassificationSetup(labels=list(get_spec(v).labels)) for v in ("mmlu", "jnli")}
    whole = build_reports(views, pairs, classification=setup, level=0.95, margin=0.02)
    compact = {name: compact_view(frame) for name, frame in views.items()}
    small = build_reports(compact, pairs, classification=setup, level=0.95, margin=0.02)
    assert small.robustness == whole.robustness
    assert small.classification == whole.classification
    for table in ("word_accuracy_drop", "confusion", "accuracy_by_rate"):
        pd.testing.assert_frame_equal(getattr(small, table), getattr(whole, table))
    assert sum(f.memory_usage(deep=True).sum() for f in compact.values()) < sum(
        f.memory_usage(deep=True).sum() for f in views.values()
    )


def test_staged_views_read_back_the_scored_frames(tmp_path):
    frame = _scored("mmlu")
    atomic.write_parquet(tmp_path / "mmlu.parquet", frame)
    views = StagedViews(tmp_path, ["mmlu"])
    assert list(views) == ["mmlu"] and len(views) == 1
    back = views["mmlu"]
    for column in ("gold", "prediction", "parse_status", "parse_extra"):
        assert back[column].tolist() == frame[column].tolist()
    with pytest.raises(KeyError):
        views["jnli"]


def _scored(name: str) -> pd.DataFrame:
    spec = get_spec(name)
    scoring = {"method": "generate", "sentiment_strict": True}
    outputs = make_outputs(name, seed=1, p_flip=0.3)
    scores = score_benchmark(outputs, spec, name=name, scoring=scoring, style="plain", source=name)
    return scores.views[name]


@pytest.mark.parametrize("name", ["mmlu", "gsm8k", "jsquad", "imdb"])
def test_repeated_outputs_score_as_each_row_scored_alone(name):
    spec = get_spec(name)
    outputs = make_outputs(name, seed=2, p_flip=0.4, p_garbage=0.3, n_examples=20)
    outputs = pd.concat([outputs, outputs.iloc[::-1]], ignore_index=True)  # every output twice
    options = {"parser": spec.parser, "metric": spec.metric, "parser_options": spec.parser_options}
    together = score_frame(outputs, **options)
    alone = pd.concat(
        [score_frame(outputs.iloc[[i]], **options) for i in range(len(outputs))], ignore_index=True
    )
    pd.testing.assert_frame_equal(together, alone)
