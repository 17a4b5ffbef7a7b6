"""The words design streamed to Parquet row group by row group gives the bytes of the whole
table written at once, across row-group and flush boundaries, and writes nothing on an error."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.perturb import Probabilities, perturb_frame
from evalpipe.perturb import columns as columns_module
from evalpipe.perturb.parquet_sink import parquet_row_groups
from tests.test_perturb_frame import EN_WORDS, JA_WORDS, _tokenizer, bench_frame

ALWAYS = Probabilities(0.4, 0.3, 0.3)


class _SmallPages(pq.ParquetWriter):
    """Pages of a few bytes and batches of two rows: on tiny data, a page boundary then falls
    inside every chunk, so a streamed row group whose chunks differed from the whole table's
    would give other bytes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "data_page_size": 64, "write_batch_size": 2})


@pytest.fixture
def tiny_layout(monkeypatch):
    """Flush every 3 rows, row groups of 5 rows, small pages, for both writers."""
    monkeypatch.setattr(columns_module, "FLUSH_ROWS", 3)
    monkeypatch.setattr(pq, "ParquetWriter", _SmallPages)  # the sink's
    monkeypatch.setattr(pq.core, "ParquetWriter", _SmallPages)  # write_table's
    monkeypatch.setattr(
        atomic.pq, "write_table", functools.partial(pq.write_table, row_group_size=5)
    )
    return 5


def _md5(path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _english(n: int):
    return bench_frame(
        "demo", "english", [{"q": f"the cat {i} and the dog of a man"} for i in range(n)]
    )


@pytest.mark.parametrize("n_examples", [1, 4, 11])
@pytest.mark.parametrize("draws", [1, 2])
def test_streamed_file_has_the_bytes_of_the_whole_table(tmp_path, tiny_layout, n_examples, draws):
    bench = _english(n_examples)
    whole = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8, draws=draws)
    atomic.write_parquet(tmp_path / "whole.parquet", whole.table)
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=tiny_layout) as sink:
        streamed = perturb_frame(
            bench, EN_WORDS, probabilities=ALWAYS, seed=8, draws=draws, sink=sink
        )
    assert streamed.table is None
    assert streamed.summary == whole.summary
    rows = whole.table.num_rows
    assert pq.ParquetFile(tmp_path / "streamed.parquet").num_row_groups == -(-rows // tiny_layout)
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")


def test_rows_a_multiple_of_the_row_group_size_add_no_empty_row_group(tmp_path, tiny_layout):
    bench = _english(3)
    rows = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8).table.num_rows
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=rows) as sink:
        perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8, sink=sink)
    assert pq.ParquetFile(tmp_path / "streamed.parquet").num_row_groups == 1


def test_japanese_rows_stream_to_the_same_bytes(tmp_path, tiny_layout):
    text = "東京の駅に行きます。猫の家です。学校の先生になりました。"
    bench = bench_frame("ja", "japanese", [{"q": text * (1 + i % 3)} for i in range(6)])
    kw = dict(probabilities=ALWAYS, seed=11, tokenizer=_tokenizer())
    atomic.write_parquet(tmp_path / "whole.parquet", perturb_frame(bench, JA_WORDS, **kw).table)
    with parquet_row_groups(tmp_path / "streamed.parquet", row_group_size=tiny_layout) as sink:
        perturb_frame(bench, JA_WORDS, sink=sink, **kw)
    assert _md5(tmp_path / "streamed.parquet") == _md5(tmp_path / "whole.parquet")


def test_an_error_after_some_row_groups_leaves_nothing_written(tmp_path, tiny_layout):
    bench = _english(8)
    bench.loc[7, "fields"] = "{not json"
    target = tmp_path / "out.parquet"
    with (
        pytest.raises(InputError, match="row 8"),
        parquet_row_groups(target, row_group_size=tiny_layout) as sink,
    ):
        perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8, sink=sink)
    assert sink.rows >= tiny_layout  # row groups had been written before the bad row
    assert list(tmp_path.iterdir()) == []


def test_a_sink_given_no_rows_writes_no_file(tmp_path):
    target = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError, match="no rows were written"), parquet_row_groups(target):
        pass
    assert list(tmp_path.iterdir()) == []


def stage_project(root, bench) -> Path:
    """A project folder for the perturb stage: benchmark ``demo`` (English, ``bench``), the
    English word list, and a params.yaml of the words design (seed 8, the ALWAYS probabilities,
    no control); returns the params file."""
    (root / "data" / "benchmarks").mkdir(parents=True)
    (root / "data" / "words").mkdir(parents=True)
    atomic.write_parquet(root / "data" / "benchmarks" / "demo.parquet", bench)
    atomic.write_parquet(root / "data" / "words" / "english.parquet", EN_WORDS)
    params = root / "params.yaml"
    params.write_text(
        "seed: 8\nperturb:\n  design: words\n  counts: [1]\n  targeting: random\n  model: uniform\n"
        "  replace_prob: 0.4\n  insert_prob: 0.3\n  delete_prob: 0.3\n  transpose_prob: 0.0\n"
        "  conversion_prob: 0.0\n  draws: 1\n  control: false\n",
        encoding="utf-8",
    )
    return params


def test_the_stage_output_has_the_bytes_of_the_in_memory_path(tmp_path, monkeypatch, tiny_layout):
    """What the stage writes (streamed) against the whole table the in-memory path writes."""
    from click.testing import CliRunner

    from stages import perturb as stage

    bench = _english(9)
    params = stage_project(tmp_path, bench)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        stage, "parquet_row_groups", functools.partial(parquet_row_groups, row_group_size=5)
    )
    result = CliRunner().invoke(stage.main, ["--name", "demo", "--params", str(params)])
    assert result.exit_code == 0, result.output
    whole = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8)
    atomic.write_parquet(tmp_path / "whole.parquet", whole.table)
    written = tmp_path / "data" / "perturbed" / "demo.parquet"
    assert _md5(written) == _md5(tmp_path / "whole.parquet")
    summary = json.loads((tmp_path / "data" / "perturbed" / "demo.summary.json").read_text())
    assert summary["rows"] == whole.table.num_rows > 5
