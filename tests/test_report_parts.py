"""The report stage reads its large inputs (scored views, pairs tables) in parts: the columns it
counts with, the whole rows only of the examples it shows. The page must be the one built from
every row read whole, which this file rebuilds as the stage used to read them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from evalpipe.arms import typo_rows
from evalpipe.errors import InputError
from evalpipe.report import inputs
from evalpipe.report.assemble import build_figures, build_report
from evalpipe.report.data import ReportData
from evalpipe.report.inputs import (
    EDIT_COLUMNS,
    PAIR_COLUMNS,
    SCORED_COLUMNS,
    load_report_data,
    workspace_locator,
    workspace_reader,
)
from tests.test_report_stage import M, lay_out


def whole(root: Path, data: ReportData) -> ReportData:
    """``data`` with the scored views, typo records and pairs read whole into memory."""
    folder = root / "data" / "scored" / M
    scored = {}
    for path in sorted(folder.glob("*.parquet")):
        if path.name != "pairs.parquet":
            scored[path.stem] = typo_rows(pd.read_parquet(path)).assign(model=M)
    edits = {name: frame[[c for c in EDIT_COLUMNS if c in frame]] for name, frame in scored.items()}
    pairs = pd.read_parquet(folder / "pairs.parquet", columns=PAIR_COLUMNS).assign(model=M)
    return replace(data, scored=scored, scored_rows={}, edits=edits, pairs=pairs)


@pytest.fixture
def small_batches(monkeypatch):
    # every file in several batches, so rows are found across batch boundaries
    monkeypatch.setattr(inputs, "BATCH_ROWS", 3)


def test_the_report_read_in_parts_is_the_report_read_whole(tmp_path, small_batches):
    paths = lay_out(tmp_path)
    read, ls = workspace_reader(tmp_path)
    parts = load_report_data(read, ls, paths, locate=workspace_locator(tmp_path))
    assert set(parts.scored["jnli"].columns) <= {*SCORED_COLUMNS, "model"}  # no texts held
    reference = whole(tmp_path, parts)
    assert "<h2" in build_report(parts) and "Examples" in build_report(parts)
    assert build_report(parts) == build_report(reference)
    assert build_figures(parts, languages=["japanese"]) == build_figures(
        reference, languages=["japanese"]
    )


def test_a_revision_read_from_bytes_gives_the_same_report(tmp_path, small_batches):
    """`evalpipe report compare` reads an old revision's files as bytes (no locator)."""
    paths = lay_out(tmp_path)
    read, ls = workspace_reader(tmp_path)
    from_files = load_report_data(read, ls, paths, locate=workspace_locator(tmp_path))
    from_bytes = load_report_data(read, ls, paths)
    assert from_bytes.provenance == from_files.provenance  # the same content hashes
    assert build_report(from_bytes) == build_report(from_files)


def test_the_shown_rows_are_the_whole_rows_of_their_file(tmp_path, small_batches):
    paths = lay_out(tmp_path)
    read, ls = workspace_reader(tmp_path)
    data = load_report_data(read, ls, paths, locate=workspace_locator(tmp_path))
    reference = whole(tmp_path, data).scored["jnli"]
    positions = [len(reference) - 1, 0, len(reference) // 2]
    assert len(set(positions)) == 3
    rows = data.scored_rows["jnli"].rows(positions)
    assert sorted(rows) == sorted(positions)
    for position in positions:
        expected = reference.iloc[position]
        got = rows[position]
        assert list(got.index) == list(expected.index)
        assert got.drop("perturbations").astype(str).tolist() == (
            expected.drop("perturbations").astype(str).tolist()
        )
        assert list(got["perturbations"]) == list(expected["perturbations"])


def test_a_damaged_view_names_its_file(tmp_path):
    paths = lay_out(tmp_path)
    paths.scored("jnli", M).write_bytes(b"PAR1 not parquet")
    read, ls = workspace_reader(tmp_path)
    with pytest.raises(InputError, match=f"data/scored/{M}/jnli.parquet: cannot read Parquet"):
        load_report_data(read, ls, paths, locate=workspace_locator(tmp_path))
