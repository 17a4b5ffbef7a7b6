"""The words design over several forked worker processes gives the bytes and the summary of
one process (English and Japanese, across flush and row-group boundaries), and a bad row in a
worker raises the same InputError with nothing written."""

from __future__ import annotations

import functools
import hashlib
import tempfile

import pyarrow.parquet as pq
import pytest

from evalpipe.errors import InputError
from evalpipe.perturb import Probabilities, columns, perturb_frame
from evalpipe.perturb.eligibility import from_params
from evalpipe.perturb.parquet_sink import parquet_row_groups
from tests.test_perturb_frame import EN_WORDS, JA_WORDS, _tokenizer, bench_frame
from tests.test_perturb_streamed import _english, stage_project, tiny_layout  # noqa: F401 (a fixture)

ALWAYS = Probabilities(0.4, 0.3, 0.3)


@pytest.fixture
def layout(tiny_layout):  # noqa: F811 (the imported fixture, by name)
    """Flushes of 3 rows, row groups of 5 rows, small pages (test_perturb_streamed)."""
    return tiny_layout


def _written(path, bench, words, *, row_group_size, **kw) -> tuple[str, dict]:
    with parquet_row_groups(path, row_group_size=row_group_size) as sink:
        summary = perturb_frame(bench, words, sink=sink, **kw).summary
    return hashlib.md5(path.read_bytes()).hexdigest(), summary


@pytest.mark.parametrize(("jobs", "n_examples"), [(2, 23), (3, 23), (2, 200)])
def test_english_over_workers_has_the_bytes_of_one_process(tmp_path, layout, jobs, n_examples):
    """Ranges of 1 example (23), and of 12 examples with flushes inside a range (200)."""
    bench = _english(n_examples)
    kw = dict(
        probabilities=Probabilities(0.3, 0.2, 0.2, 0.2, model="keyboard"),
        seed=8,
        draws=2,
        eligibility=from_params({"model": "keyboard"}),
        row_group_size=layout,
    )
    one = _written(tmp_path / "one.parquet", bench, EN_WORDS, **kw)
    many = _written(tmp_path / "many.parquet", bench, EN_WORDS, jobs=jobs, **kw)
    assert many == one
    assert one[1]["perturbed_occurrences"] > 0 and one[1]["redrawn"] is not None
    assert pq.ParquetFile(tmp_path / "many.parquet").num_row_groups > 3


def test_japanese_over_workers_has_the_bytes_of_one_process(tmp_path, layout):
    text = "東京の駅に行きます。猫の家です。学校の先生になりました。"
    bench = bench_frame("ja", "japanese", [{"q": text * (1 + i % 3)} for i in range(13)])
    kw = dict(
        probabilities=Probabilities(0.2, 0.2, 0.2, 0.1, 0.3, model="keyboard"),
        seed=11,
        tokenizer=_tokenizer(),  # built once here; the forked workers share it
        row_group_size=layout,
    )
    one = _written(tmp_path / "one.parquet", bench, JA_WORDS, **kw)
    many = _written(tmp_path / "many.parquet", bench, JA_WORDS, jobs=2, **kw)
    assert many == one
    assert one[1]["drawn"]["conversion"] > 0 and one[1]["redrawn"]  # the merged counts


def test_the_in_memory_table_over_workers_is_the_same(layout):
    bench = _english(9)
    one = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=3)
    many = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=3, jobs=2)
    assert many.table.equals(one.table) and many.summary == one.summary


def test_a_bad_row_in_a_worker_raises_the_same_error_and_writes_nothing(tmp_path, layout):
    bench = _english(30)
    bench.loc[26, "fields"] = "{not json"
    with pytest.raises(InputError) as single:
        perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8)
    target = tmp_path / "out.parquet"
    with (
        pytest.raises(InputError) as parallel,
        parquet_row_groups(target, row_group_size=layout) as sink,
    ):
        perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8, sink=sink, jobs=2)
    assert str(parallel.value) == str(single.value) and "row 27" in str(single.value)
    assert list(tmp_path.iterdir()) == []


def test_the_workers_rows_leave_no_file_behind(tmp_path, monkeypatch):
    # the workers hand their rows over as files in the temp folder, removed once mapped, and
    # the folder goes too, also when a worker fails
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shipped = []

    def read_block(path):
        shipped.append(path)
        return read(path)

    read = columns.read_block
    monkeypatch.setattr(columns, "read_block", read_block)
    bench = _english(40)
    one = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=3)
    many = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=3, jobs=2)
    assert many.table.equals(one.table) and list(tmp_path.iterdir()) == []
    assert len(shipped) > 1 and all(p.parent.parent == tmp_path for p in shipped)
    bench.loc[37, "fields"] = "{not json"
    with pytest.raises(InputError, match="row 38"):
        perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=3, jobs=2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("jobs", [0, True, 1.5])
def test_jobs_must_be_a_positive_integer(jobs):
    with pytest.raises(InputError, match="jobs must be an integer >= 1"):
        perturb_frame(_english(2), EN_WORDS, probabilities=ALWAYS, seed=1, jobs=jobs)


def test_the_stage_with_two_jobs_writes_the_bytes_of_one(tmp_path, monkeypatch, layout):
    from click.testing import CliRunner

    from stages import perturb as stage

    params = stage_project(tmp_path, _english(17))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        stage, "parquet_row_groups", functools.partial(parquet_row_groups, row_group_size=layout)
    )
    out = tmp_path / "data" / "perturbed"
    written = {}
    for jobs in ("1", "2"):
        args = ["--name", "demo", "--params", str(params), "--jobs", jobs]
        result = CliRunner().invoke(stage.main, args)
        assert result.exit_code == 0, result.output
        written[jobs] = [(out / f).read_bytes() for f in ("demo.parquet", "demo.summary.json")]
    assert written["2"] == written["1"]
    bad = CliRunner().invoke(stage.main, ["--name", "demo", "--params", str(params), "--jobs", "0"])
    assert bad.exit_code != 0 and "--jobs" in bad.output


def test_no_more_workers_are_forked_than_there_are_ranges():
    import multiprocessing

    from evalpipe.perturb.parallel import map_ranges

    seen = []
    for lo_hi in map_ranges(_range_of, 5, jobs=8, size=3):  # two ranges: (0, 3), (3, 5)
        seen.append(lo_hi)
        assert len(multiprocessing.active_children()) <= 2
    assert seen == [(0, 3), (3, 5)]


def _range_of(lo: int, hi: int) -> tuple[int, int]:
    return lo, hi
