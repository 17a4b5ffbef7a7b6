"""Agreement over time: weekly windows for the team and each annotator; honest notes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from evalpipe.annotation.agreement import agreement_report
from evalpipe.annotation.batches import NOTE_SAMPLE_BATCHES
from evalpipe.annotation.monitoring import TABLE_COLUMNS, agreement_over_time, window_start
from evalpipe.annotation.quality_run import NOTE_MARKERS_IN_SAMPLE, QualitySettings, run_quality
from evalpipe.annotation.schema import (
    AXES,
    Annotation,
    read_annotations,
    read_tasks,
    sample_tasks_path,
    to_long_frame,
)

REPO = Path(__file__).resolve().parents[1]
BATCHES = sorted((REPO / "data" / "samples" / "annotations").glob("batch_*.jsonl"))
MONDAY = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def campaign(weeks: int = 3, per_week: int = 40, drifter: str | None = "c", seed: int = 0):
    """Three annotators rate ``per_week`` new items a week; ``drifter`` goes random in week 3."""
    rng = np.random.default_rng(seed)
    out = []
    for week in range(weeks):
        for j in range(per_week):
            item = f"w{week}_{j:03d}"
            truth = rng.integers(1, 6, size=len(AXES))
            for k, rater in enumerate(("a", "b", "c")):
                noise = rng.choice([-1, 0, 1], size=len(AXES), p=[0.1, 0.8, 0.1])
                scores = np.clip(truth + noise, 1, 5)
                if rater == drifter and week == weeks - 1:
                    scores = rng.integers(1, 6, size=len(AXES))
                ts = MONDAY + timedelta(weeks=week, hours=j, minutes=k)
                out.append(
                    Annotation(
                        item,
                        rater,
                        ts.isoformat(),
                        {a: int(s) for a, s in zip(AXES, scores, strict=True)},
                        dict.fromkeys(AXES, 0.9),
                    )
                )
    return out


def test_windows_are_iso_weeks_in_utc_and_width_is_a_param():
    assert window_start("2025-03-03T00:00:00Z", 7) == "2025-03-03"  # Monday
    assert window_start("2025-03-09T23:59:59Z", 7) == "2025-03-03"  # Sunday
    assert window_start("2025-03-10T08:00:00+09:00", 7) == "2025-03-03"  # Sunday 23:00 UTC
    assert window_start("2025-03-05T12:00:00Z", 1) == "2025-03-05"
    with pytest.raises(ValueError, match="at least 1"):
        window_start("2025-03-05T12:00:00Z", 0)


def test_weekly_team_kappa_matches_the_report_on_that_weeks_items_and_shows_the_drift():
    anns = campaign()
    table, plot = agreement_over_time(anns, window_days=7, min_pair_overlap=10)
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert list(plot["window_start"]) == ["2025-03-03", "2025-03-10", "2025-03-17"]
    assert list(plot["n_items"]) == [40, 40, 40]
    week2 = [a for a in anns if a.id.startswith("w1_")]
    expected = agreement_report(to_long_frame(week2), n_boot=0)["axes"]
    for axis in AXES:
        assert plot.loc[1, axis] == expected[axis]["kappa"]
        assert plot.loc[0, axis] > 0.8 and plot.loc[2, axis] < plot.loc[0, axis] - 0.25
    # The drifting annotator's own row falls; the steady ones stay high.
    overall = table[(table["axis"] == "overall") & (table["window_start"] == "2025-03-17")]
    by_rater = dict(zip(overall["scope"], overall["kappa"], strict=True))
    assert by_rater["c"] < 0.3
    # a and b keep agreeing with each other; only their pairs with c fall.
    assert min(by_rater["a"], by_rater["b"]) > by_rater["c"] + 0.3


def test_items_rated_across_weeks_belong_to_the_week_they_were_completed():
    anns = campaign(weeks=1, drifter=None)
    late = [
        Annotation(
            a.id,
            a.annotator_id,
            (MONDAY + timedelta(days=8)).isoformat(),
            a.annotations,
            a.confidence,
        )
        if a.annotator_id == "c"
        else a
        for a in anns
    ]
    table, plot = agreement_over_time(late, window_days=7)
    assert list(plot["n_items"]) == [0, 40]  # completed when c rated them, the next week
    assert plot.loc[0, "social"] is None or np.isnan(plot.loc[0, "social"])
    c_rows = table[(table["scope"] == "c") & (table["axis"] == "overall")]
    assert list(c_rows["window_start"]) == ["2025-03-10"] and c_rows["kappa"].iloc[0] > 0.8


def test_a_thin_week_reads_not_enough_data_not_a_collapse():
    anns = campaign(weeks=1, per_week=6, drifter=None)
    table, _ = agreement_over_time(anns, window_days=7, min_pair_overlap=10)
    team = table[table["scope"] == "all"]
    assert team["kappa"].isna().all()
    assert team["note"].str.startswith("fewer than 10 shared items").all()
    mine = table[table["scope"] == "a"]
    assert mine["kappa"].isna().all() and (mine["note"] != "").all()


def test_the_quality_run_carries_monitoring_and_honest_notes():
    humans = read_annotations(BATCHES)
    tasks = read_tasks(sample_tasks_path())
    markers = [
        Annotation(a.id, "markers", a.timestamp, dict.fromkeys(AXES, 1), dict.fromkeys(AXES, 1.0))
        for a in humans
        if a.annotator_id == "illustrative_001"
    ]
    result = run_quality(
        humans + markers, tasks, QualitySettings(bootstrap_samples=0), sample_batches=True
    )
    assert result.metrics["data_notes"] == {
        "sample_batches": True,
        "illustrative_humans": True,
        "markers_in_sample": True,
    }
    assert result.gate["sample_batches"] is True
    assert result.kappa_report["data_notes"][0] == NOTE_SAMPLE_BATCHES
    assert result.gate["data_notes"] == result.kappa_report["data_notes"]
    assert any("illustrative" in n for n in result.kappa_report["data_notes"])
    assert NOTE_MARKERS_IN_SAMPLE in result.kappa_report["data_notes"]
    # The sample batches were all rated in one week (2025-01-06 .. 01-12, and 01-13).
    assert set(result.weekly_plot["window_start"]) <= {"2025-01-06", "2025-01-13"}
    assert set(result.over_time["scope"]) >= {"all", "illustrative_001"}
    real = [
        Annotation(
            a.id,
            a.annotator_id.replace("illustrative_", "ann_"),
            a.timestamp,
            a.annotations,
            a.confidence,
        )
        for a in humans
    ]
    plain = run_quality(real, tasks, QualitySettings(bootstrap_samples=0))
    assert plain.metrics["data_notes"] == {
        "sample_batches": False,
        "illustrative_humans": False,
        "markers_in_sample": False,
    }
    assert plain.kappa_report["data_notes"] == [] and plain.gate["sample_batches"] is False


def test_per_window_annotator_kappa_is_annotator_kappas_on_those_items():
    from evalpipe.annotation.agreement import annotator_kappas, rating_matrix
    from evalpipe.annotation.monitoring import _annotator_kappas_on

    anns = campaign(weeks=2)
    long = to_long_frame(anns)
    all_items = sorted(long["id"].unique())
    matrices = {axis: rating_matrix(long, axis, items=all_items) for axis in AXES}
    for items in ({a.id for a in anns if a.id.startswith("w1_")}, {a.id for a in anns}):
        subset = long[long["id"].isin(items)]
        rows = np.array([i in items for i in all_items])
        for rater in ("a", "c"):
            for overlap in (1, 10, 50):
                expected = annotator_kappas(subset, min_pair_overlap=overlap)[rater]
                got = _annotator_kappas_on(matrices, rater, rows, overlap)
                assert got == pytest.approx(expected, abs=1e-4)
