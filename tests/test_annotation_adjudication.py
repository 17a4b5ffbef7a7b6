"""Adjudications (``adjudicated:<name>``) settle the consensus and stay out of agreement."""

from __future__ import annotations

from pathlib import Path

from evalpipe.annotation.consensus import build_consensus
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.schema import (
    AXES,
    Annotation,
    annotator_kind,
    is_human,
    read_annotations,
    read_tasks,
    sample_tasks_path,
)

REPO = Path(__file__).resolve().parents[1]
BATCHES = sorted((REPO / "data" / "samples" / "annotations").glob("batch_*.jsonl"))


def ann(item, rater, scores, conf=0.9, ts="2025-01-01T10:00:00Z") -> Annotation:
    return Annotation(
        item, rater, ts, dict(zip(AXES, scores, strict=True)), dict.fromkeys(AXES, conf)
    )


def test_adjudicated_ids_are_their_own_kind_not_human():
    assert annotator_kind("adjudicated:kim") == "adjudicated"
    assert not is_human("adjudicated:kim")
    assert is_human("adjudicator_kim")  # only the prefix marks an adjudication


def test_an_adjudication_settles_a_rejected_item_and_is_recorded():
    ratings = [ann("x", "a", (1, 1, 1, 1)), ann("x", "b", (4, 1, 1, 1))]
    _, rejected = build_consensus(ratings)
    assert [r["id"] for r in rejected] == ["x"]  # social spans 3 points
    adj = ann("x", "adjudicated:kim", (2, 1, 1, 1), conf=1.0, ts="2025-01-03T09:00:00Z")
    consensus, rejected = build_consensus([*ratings, adj])
    assert rejected == []
    (rec,) = consensus
    assert rec["annotations"] == {"social": 2, "avoidant": 1, "mechanical": 1, "self": 1}
    assert rec["adjudicated"] is True and rec["source"] == "adjudicated"
    assert rec["adjudicator"] == "adjudicated:kim"
    assert rec["merged"]["social"] == 3  # what the weighted average alone gave (2.5 -> 3)
    assert rec["confidence"]["social"] == 1.0
    assert rec["n_annotators"] == 2  # the adjudicator is not counted as an annotator
    assert rec["dispersion"]["social"]["scores"] == [1, 4]  # human ratings only
    assert rec["timestamp"] == "2025-01-03T09:00:00Z"


def test_adjudicated_values_win_even_where_annotators_agreed():
    ratings = [ann("y", "a", (3, 3, 1, 1)), ann("y", "b", (3, 3, 1, 1))]
    adj = ann("y", "adjudicated:kim", (1, 3, 1, 1))
    (rec,), _ = build_consensus([*ratings, adj])
    assert rec["annotations"]["social"] == 1 and rec["merged"]["social"] == 3


def test_newest_adjudication_wins_and_plain_items_say_merged():
    ratings = [ann("x", "a", (1, 1, 1, 1)), ann("x", "b", (2, 1, 1, 1))]
    ratings += [ann("z", "a", (5, 1, 1, 1)), ann("z", "b", (5, 1, 1, 1))]
    old = ann("x", "adjudicated:lee", (4, 1, 1, 1), ts="2025-01-02T10:00:00Z")
    new = ann("x", "adjudicated:kim", (2, 2, 1, 1), ts="2025-01-05T10:00:00+09:00")
    consensus, _ = build_consensus([*ratings, new, old])
    by_id = {c["id"]: c for c in consensus}
    assert by_id["x"]["adjudicator"] == "adjudicated:kim"
    assert by_id["x"]["annotations"]["avoidant"] == 2
    assert by_id["z"]["adjudicated"] is False and by_id["z"]["source"] == "merged"
    assert "adjudicator" not in by_id["z"] and "merged" not in by_id["z"]


def test_an_item_only_the_adjudicator_rated_is_kept():
    (rec,), rejected = build_consensus([ann("w", "adjudicated:kim", (2, 2, 2, 2))])
    assert rejected == [] and rec["n_annotators"] == 0 and rec["annotations"]["self"] == 2


def test_adjudications_stay_out_of_agreement_but_enter_the_consensus():
    tasks = read_tasks(sample_tasks_path())
    humans = read_annotations(BATCHES)
    settings = QualitySettings(bootstrap_samples=100)
    plain = run_quality(humans, tasks, settings)
    contested = plain.rejected[0]["id"]
    adjudications = [
        ann(contested, "adjudicated:kim", (5, 5, 5, 1), conf=1.0),
        # An adjudication that disagrees with everyone: it must not lower any kappa.
        ann("sample_001", "adjudicated:kim", (5, 5, 5, 1), conf=1.0),
    ]
    result = run_quality(humans + adjudications, tasks, settings)
    assert result.kappa_report["axes"] == plain.kappa_report["axes"]
    assert "adjudicated:kim" not in result.kappa_report["annotators"]
    assert "adjudicated:kim" not in result.kappa_report["annotator_kappas"]
    assert all(f["annotator_id"] != "adjudicated:kim" for f in result.outlier_report["annotators"])
    by_id = {c["id"]: c for c in result.consensus}
    assert by_id[contested]["adjudicated"] and by_id[contested]["annotations"]["social"] == 5
    assert by_id["sample_001"]["annotations"]["social"] == 5
    assert result.metrics["adjudicated_items"] == 2
    assert result.metrics["rejected_items"] == plain.metrics["rejected_items"] - 1
    assert result.metrics["annotators"] == plain.metrics["annotators"]
