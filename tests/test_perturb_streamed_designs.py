"""The count design and the matched control streamed to Parquet row group by row group give the
bytes of their whole tables written at once, across row-group and flush boundaries (the control:
across the boundary between the typo rows and the control rows too), and write nothing on an
error."""

from __future__ import annotations

import functools
import json

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.perturb import columns as columns_module
from evalpipe.perturb import perturb_frame
from evalpipe.perturb.control import add_controls, perturb_with_controls
from evalpipe.perturb.count import perturb_count_frame
from evalpipe.perturb.eligibility import from_params
from evalpipe.perturb.parquet_sink import parquet_row_groups
from tests.test_perturb_frame import EN_WORDS, JA_WORDS, _tokenizer, bench_frame
from tests.test_perturb_streamed import ALWAYS, _english, _md5, _SmallPages, stage_project

COUNT_RULES = from_params({"design": "count"})
JA_TEXT = "東京の駅に行きます。猫の家です。学校の先生になりました。"


def _layout(monkeypatch, size: int) -> int:
    """Flush every 3 rows, row groups of ``size`` rows, small pages, for both writers."""
    monkeypatch.setattr(columns_module, "FLUSH_ROWS", 3)
    monkeypatch.setattr(pq, "ParquetWriter", _SmallPages)  # the sink's
    monkeypatch.setattr(pq.core, "ParquetWriter", _SmallPages)  # write_table's
    monkeypatch.setattr(
        atomic.pq, "write_table", functools.partial(pq.write_table, row_group_size=size)
    )
    return size


def _japanese(n: int):
    return bench_frame("ja", "japanese", [{"q": JA_TEXT * (1 + i % 3)} for i in range(n)])


# -- count design ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_examples", [1, 4, 11])
@pytest.mark.parametrize("draws", [1, 2])
def test_count_rows_streamed_have_the_bytes_of_the_whole_table(
    tmp_path, monkeypatch, n_examples, draws
):
    size = _layout(monkeypatch, 5)
    bench = _english(n_examples)
    kw = dict(probabilities=ALWAYS, seed=8, counts=[1, 2, 4], draws=draws, eligibility=COUNT_RULES)
    whole = perturb_count_frame(bench, **kw)
    atomic.write_parquet(tmp_path / "whole.parquet", whole.table)
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=size) as sink:
        streamed = perturb_count_frame(bench, sink=sink, **kw)
    assert streamed.table is None
    assert streamed.summary == whole.summary
    rows = whole.table.num_rows
    assert pq.ParquetFile(tmp_path / "streamed.parquet").num_row_groups == -(-rows // size)
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")


def test_japanese_count_rows_stream_to_the_same_bytes(tmp_path, monkeypatch):
    size = _layout(monkeypatch, 5)
    bench = _japanese(6)
    kw = dict(probabilities=ALWAYS, seed=11, counts=[1, 3], eligibility=COUNT_RULES)
    whole = perturb_count_frame(bench, **kw).table
    assert whole.num_rows > 2 * size
    atomic.write_parquet(tmp_path / "whole.parquet", whole)
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=size) as sink:
        perturb_count_frame(bench, sink=sink, **kw)
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")


def test_a_count_error_after_some_row_groups_leaves_nothing_written(tmp_path, monkeypatch):
    size = _layout(monkeypatch, 5)
    bench = _english(8)
    bench.loc[7, "fields"] = "{not json"
    with (
        pytest.raises(InputError, match="row 8"),
        parquet_row_groups(tmp_path / "out.parquet", row_group_size=size) as sink,
    ):
        perturb_count_frame(bench, probabilities=ALWAYS, seed=8, counts=[1, 2], sink=sink)
    assert sink.rows >= size
    assert list(tmp_path.iterdir()) == []


# -- matched control ------------------------------------------------------------------------


def _controls_whole(bench, words, path, **kw) -> dict:
    """Today's in-memory path: the typo table, the control rows appended, written at once."""
    result = perturb_frame(bench, words, **kw)
    shared = {k: v for k, v in kw.items() if k != "draws"}  # the draws are the typo rows'
    table, extra = add_controls(result.table, bench, words, **shared)
    atomic.write_parquet(path, table)
    return {**result.summary, **extra}


@pytest.mark.parametrize("size", [2, 3, 5, 7, 64])
@pytest.mark.parametrize("draws", [1, 2])
def test_control_rows_streamed_have_the_bytes_of_the_whole_table(
    tmp_path, monkeypatch, size, draws
):
    """Row groups of several sizes put the typo rows' last group anywhere, full included."""
    _layout(monkeypatch, size)
    bench = _english(7)
    kw = dict(probabilities=ALWAYS, seed=8, draws=draws)
    whole = _controls_whole(bench, EN_WORDS, tmp_path / "whole.parquet", **kw)
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=size) as sink:
        summary = perturb_with_controls(bench, EN_WORDS, sink=sink, **kw)
    assert summary == whole
    written = pq.ParquetFile(tmp_path / "streamed.parquet")
    rows = written.metadata.num_rows
    assert summary["control"]["matched"] > 0 and rows > summary["rows"]
    assert written.num_row_groups == -(-rows // size)
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streamed.parquet", "whole.parquet"]


def test_control_rows_of_both_arms_in_a_row_group_at_the_boundary(tmp_path, monkeypatch):
    size = _layout(monkeypatch, 4)
    bench = _english(3)
    kw = dict(probabilities=ALWAYS, seed=8)
    whole = _controls_whole(bench, EN_WORDS, tmp_path / "whole.parquet", **kw)
    assert whole["rows"] % size  # the typo rows' last group is partial: control rows complete it
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=size) as sink:
        perturb_with_controls(bench, EN_WORDS, sink=sink, **kw)
    written = pq.read_table(tmp_path / "streamed.parquet")
    boundary = written.slice(whole["rows"] // size * size, size)
    assert set(boundary.column("condition").to_pylist()) == {"typo", "control"}
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")


def test_no_control_row_at_all_gives_the_typo_rows_alone(tmp_path, monkeypatch):
    size = _layout(monkeypatch, 4)
    # every word is the target word: no candidate for any control
    bench = bench_frame("demo", "english", [{"q": "The the 2 the"}] * 3)
    words = EN_WORDS.head(1)
    kw = dict(probabilities=ALWAYS, seed=8)
    whole = _controls_whole(bench, words, tmp_path / "whole.parquet", **kw)
    assert whole["control"]["matched"] == 0 and whole["control"]["rows"] > 0
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=size) as sink:
        perturb_with_controls(bench, words, sink=sink, **kw)
    assert pq.ParquetFile(tmp_path / "streamed.parquet").metadata.num_rows == whole["rows"]
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")


def test_japanese_control_rows_stream_to_the_same_bytes(tmp_path, monkeypatch):
    size = _layout(monkeypatch, 5)
    bench = _japanese(6)
    kw = dict(probabilities=ALWAYS, seed=11, tokenizer=_tokenizer())
    whole = _controls_whole(bench, JA_WORDS, tmp_path / "whole.parquet", **kw)
    assert whole["control"]["matched"] > size
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=size) as sink:
        perturb_with_controls(bench, JA_WORDS, sink=sink, **kw)
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")


def test_a_control_error_after_some_row_groups_leaves_nothing_written(tmp_path, monkeypatch):
    size = _layout(monkeypatch, 5)
    bench = _english(8)
    bench.loc[7, "fields"] = "{not json"
    with (
        pytest.raises(InputError, match="row 8"),
        parquet_row_groups(tmp_path / "out.parquet", row_group_size=size) as sink,
    ):
        perturb_with_controls(bench, EN_WORDS, sink=sink, probabilities=ALWAYS, seed=8)
    assert sink.rows >= size  # row groups had been written before the bad row
    assert list(tmp_path.iterdir()) == []  # neither the output nor the records file


# -- the stage ------------------------------------------------------------------------------


def _run_stage(tmp_path, monkeypatch, bench, **params):
    from stages import perturb as stage

    path = stage_project(tmp_path, bench)
    cfg = yaml.safe_load(path.read_text())
    cfg["perturb"].update(params)
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        stage, "parquet_row_groups", functools.partial(parquet_row_groups, row_group_size=5)
    )
    result = CliRunner().invoke(
        stage.main, ["--name", "demo", "--params", str(path), "--jobs", "1"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "data" / "perturbed" / "demo.summary.json").read_text())
    return tmp_path / "data" / "perturbed" / "demo.parquet", summary, cfg["perturb"]


def test_the_count_stage_output_has_the_bytes_of_the_whole_table(tmp_path, monkeypatch):
    _layout(monkeypatch, 5)
    bench = _english(9)
    written, summary, cfg = _run_stage(tmp_path, monkeypatch, bench, design="count", counts=[1, 2])
    whole = perturb_count_frame(
        bench, probabilities=ALWAYS, seed=8, counts=[1, 2], eligibility=from_params(cfg)
    )
    atomic.write_parquet(tmp_path / "whole.parquet", whole.table)
    assert summary == json.loads(json.dumps(whole.summary))
    assert summary["rows"] == whole.table.num_rows > 5
    assert _md5(written) == _md5(tmp_path / "whole.parquet")


def test_the_control_stage_output_has_the_bytes_of_the_whole_table(tmp_path, monkeypatch):
    _layout(monkeypatch, 5)
    bench = _english(9)
    written, summary, cfg = _run_stage(tmp_path, monkeypatch, bench, control=True)
    kw = dict(probabilities=ALWAYS, seed=8, eligibility=from_params(cfg))
    whole = _controls_whole(bench, EN_WORDS, tmp_path / "whole.parquet", **kw)
    assert summary == json.loads(json.dumps(whole))
    assert summary["control"]["matched"] > 5
    assert _md5(written) == _md5(tmp_path / "whole.parquet")
    assert sorted(p.name for p in written.parent.iterdir()) == [
        "demo.parquet",
        "demo.summary.json",
    ]
