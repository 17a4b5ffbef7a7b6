"""The filtering protocol's raw CSV input (dialogue_id, annotator_id, social, avoidant,
mechanical, self, timestamp): read like a batch, errors by row, imported with pseudonyms."""

from __future__ import annotations

import json

import pytest

from evalpipe.annotation.consensus import build_consensus
from evalpipe.annotation.pseudonyms import pseudonym
from evalpipe.annotation.schema import read_annotations
from evalpipe.errors import InputError
from tests.annotation_harness import annotate_cli

SPEC_CSV = """dialogue_id,annotator_id,social,avoidant,mechanical,self,timestamp
dialogue_001,ann_001,3,2,1,1,2025-01-01T10:00:00Z
dialogue_001,ann_002,4,2,1,1,2025-01-01T10:05:00Z
dialogue_001,ann_003,3,3,1,1,2025-01-01T10:10:00Z
"""


def test_the_spec_csv_reads_as_annotations_and_merges_to_its_float_example(tmp_path):
    path = tmp_path / "raw_annotations.csv"
    path.write_text(SPEC_CSV)
    rows = read_annotations(path)
    assert [(r.id, r.annotator_id, r.annotations["social"]) for r in rows] == [
        ("dialogue_001", "ann_001", 3),
        ("dialogue_001", "ann_002", 4),
        ("dialogue_001", "ann_003", 3),
    ]
    assert all(r.confidence["social"] == 1.0 for r in rows)
    consensus, _ = build_consensus(rows, max_item_range=1)
    assert consensus[0]["aggregated_scores"] == {
        "social": 3.3333,
        "avoidant": 2.3333,
        "mechanical": 1.0,
        "self": 1.0,
    }


def test_bad_csv_rows_are_reported_by_row_and_field(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(SPEC_CSV + "dialogue_002,ann_001,7,2,1,1,2025-01-01T10:00:00Z\n")
    with pytest.raises(InputError, match=r'bad.csv:5: field "annotations.social": score 7'):
        read_annotations(path)
    (tmp_path / "nohead.csv").write_text("id,who\n1,2\n")
    with pytest.raises(InputError, match="missing column"):
        read_annotations(tmp_path / "nohead.csv")


def test_import_csv_writes_a_batch_with_pseudonyms(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALPIPE_RATER_SALT", "csv-salt")
    path = tmp_path / "raw.csv"
    path.write_text(SPEC_CSV)
    out = tmp_path / "raw"
    proc = annotate_cli(
        "import-csv", str(path), "--out-dir", str(out), "--tasks", str(tmp_path / "none.jsonl")
    )
    assert proc.returncode == 0, proc.stderr
    text = (out / "batch_001.jsonl").read_text()
    assert "ann_00" not in text
    ids = {json.loads(line)["annotator_id"] for line in text.splitlines()}
    assert ids == {pseudonym(f"ann_00{i}", "csv-salt") for i in (1, 2, 3)}
