"""The protocol's reports: re-annotation tiers, rater flags (straight-liner, variance, fast),
Macro-F1 and MAE of the judge and markers against the consensus, and the sure/unsure split."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import f1_score

from evalpipe.annotation.agreement import macro_f1_score, rater_vs_reference
from evalpipe.annotation.confidence_split import confidence_split
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.rater_flags import rater_flags
from evalpipe.annotation.reannotation import reannotation_plan
from evalpipe.annotation.schema import AXES, Annotation, DialoguePair, to_long_frame

SETTINGS = QualitySettings(bootstrap_samples=20, min_pair_overlap=5)


def ann(item, who, scores, conf=0.9, duration=None):
    if isinstance(scores, int):
        scores = {a: scores for a in AXES}
    conf = conf if isinstance(conf, dict) else {a: conf for a in AXES}
    return Annotation(item, who, "2025-01-06T10:00:00Z", dict(scores), conf, duration)


def _record(item, kappa, n=3, reasons=()):
    qm = {"kappa": kappa, "n_annotators": n, "agreement_variance": 0.5}
    return {"id": item, "reasons": list(reasons), "quality_metrics": qm}


def test_reannotation_tiers_follow_the_item_kappa():
    rejected = [
        _record("r_high", 0.5, reasons=["x"]),
        _record("r_med", 0.3, reasons=["x"]),
        _record("r_low", 0.05, reasons=["x"]),
        _record("r_few", None, n=1, reasons=["only 1 annotator(s), need 2"]),
        _record("r_conf", 0.9, reasons=["no social rating with confidence >= 0.7"]),
    ]
    consensus = [
        _record("c_ok", 0.95) | {"adjudicated": False},
        _record("c_low", 0.45) | {"adjudicated": False},
        _record("c_adj", 0.1) | {"adjudicated": True},
    ]
    raters = {"r_high": ["b", "a"], "c_low": ["a", "c"]}
    plan = reannotation_plan(consensus, rejected, raters, min_kappa=0.6, min_annotators=2)
    got = {r["id"]: (r["priority"], r["strategy"]) for r in plan}
    assert got == {
        "r_high": ("high", "same_raters"),
        "r_conf": ("high", "same_raters"),
        "c_low": ("high", "same_raters"),
        "r_med": ("medium", "add_raters"),
        "r_few": ("medium", "add_raters"),
        "r_low": ("low", "revise_item"),
    }
    assert [r["priority"] for r in plan] == sorted(
        (r["priority"] for r in plan), key=["high", "medium", "low"].index
    )
    first = next(r for r in plan if r["id"] == "r_high")
    assert first["annotators"] == ["a", "b"] and first["in_consensus"] is False
    assert next(r for r in plan if r["id"] == "c_low")["in_consensus"] is True


def _team(n_items=20, seed=0):
    rng = random.Random(seed)
    rows = []
    for k in range(n_items):
        truth = rng.randint(1, 5)
        for who in ("a", "b", "c"):
            score = min(5, max(1, truth + rng.choice((0, 0, 0, 1, -1))))
            rows.append(ann(f"i{k:02d}", who, score, duration=30.0 + rng.random()))
    return rows


def test_run_quality_lists_rejected_items_for_reannotation():
    rows = _team()
    # One item where the three annotators are far apart: rejected, and tiered.
    rows = [r for r in rows if r.id != "i00"] + [
        ann("i00", "a", 1),
        ann("i00", "b", 5),
        ann("i00", "c", 3),
    ]
    tasks = [DialoguePair(f"i{k:02d}", "u", "r") for k in range(20)]
    result = run_quality(rows, tasks, SETTINGS)
    listed = {r["id"]: r for r in result.reannotation}
    assert "i00" in listed
    assert listed["i00"]["priority"] == "low" and listed["i00"]["strategy"] == "revise_item"
    assert set(listed) >= {r["id"] for r in result.rejected}
    assert result.metrics["reannotation_items"]["low"] >= 1


def test_a_straight_liner_is_flagged_and_fails_the_gate():
    rows = _team() + [ann(f"i{k:02d}", "lazy", 1, duration=30.0) for k in range(20)]
    tasks = [DialoguePair(f"i{k:02d}", "u", "r") for k in range(20)]
    result = run_quality(rows, tasks, SETTINGS)
    flags = [f for f in result.outlier_report["rater_flags"] if f["annotator_id"] == "lazy"]
    assert {(f["kind"], f["axis"]) for f in flags} == {("straight_liner", a) for a in AXES}
    # Their pairwise kappa is undefined, so low agreement alone never caught them.
    assert not any(
        f["annotator_id"] == "lazy" and f["kind"] == "low_agreement"
        for f in result.outlier_report["annotators"]
    )
    assert any(
        f["check"] == "outliers" and "straight-liner" in f["message"]
        for f in result.gate["failures"]
    )


def test_fast_and_variance_flags_use_their_thresholds():
    rng = random.Random(1)
    rows = []
    for k in range(12):
        for who, secs in (("a", 40.0), ("b", 50.0), ("c", 45.0), ("quick", 5.0)):
            rows.append(ann(f"i{k}", who, rng.randint(1, 2), duration=secs))
        # "wild" scatters over the whole scale (variance 4 on 1s and 5s).
        rows.append(ann(f"i{k}", "wild", 1 if k % 2 else 5, duration=40.0))
        # "flat" rates 1 on all but one item: variance 11/144 < 0.1, not a straight-liner.
        rows.append(ann(f"i{k}", "flat", 2 if k == 0 else 1, duration=41.0))
    flags = rater_flags(rows, min_items=10, fast_ratio=0.33, variance_min=0.1, variance_max=2.0)
    kinds = {(f["annotator_id"], f["kind"]) for f in flags}
    assert ("quick", "fast") in kinds
    assert not any(k == "fast" for w, k in kinds if w != "quick")
    assert ("wild", "variance") in kinds and ("flat", "variance") in kinds
    fast = next(f for f in flags if f["kind"] == "fast")
    assert fast["value"] == 5.0 and fast["threshold"] == pytest.approx(
        0.33 * 40.5
    )  # team median of 5, 40, 40, 41, 45, 50
    # Under the fewest-items threshold nobody is judged.
    assert rater_flags(rows[:30], min_items=10) == []


def test_macro_f1_matches_sklearn_and_mae_is_mean_absolute_difference():
    rng = random.Random(3)
    for _ in range(20):
        ref = [rng.randint(1, 5) for _ in range(30)]
        got = [min(5, max(1, r + rng.choice((-1, 0, 0, 1, 2)))) for r in ref]
        expected = f1_score(ref, got, average="macro", zero_division=0)
        assert macro_f1_score(ref, got) == pytest.approx(expected, abs=1e-4)
    out = rater_vs_reference({"x": 1, "y": 3, "z": 5}, {"x": 1, "y": 4, "z": 3})
    assert out["mae"] == pytest.approx(1.0)
    assert out["macro_f1"] == pytest.approx(f1_score([1, 4, 3], [1, 3, 5], average="macro"))


def test_agreement_summary_has_judge_and_marker_f1_and_mae_per_axis():
    rows = _team()
    judge = [ann(r.id, "llm:judge", r.annotations) for r in rows if r.annotator_id == "a"]
    markers = [ann(r.id, "markers", 1) for r in rows if r.annotator_id == "a"]
    tasks = [DialoguePair(f"i{k:02d}", "u", "r") for k in range(20)]
    result = run_quality(rows + judge + markers, tasks, SETTINGS)
    for axis in AXES:
        entry = result.metrics[axis]
        assert {"judge_macro_f1", "judge_mae", "markers_macro_f1", "markers_mae"} <= set(entry)
        assert entry["judge_macro_f1"] > entry["markers_macro_f1"]
        assert entry["judge_mae"] < entry["markers_mae"]
    # The markers always say 1: their Macro-F1 is below 0.60, which the summary warns about.
    assert any("markers Macro-F1" in w for w in result.metrics["warnings"])


def test_sure_ratings_agree_more_than_unsure_ones():
    rng = random.Random(5)
    rows = []
    for k in range(60):
        truth = rng.randint(1, 5)
        sure = k % 2 == 0
        for who in ("a", "b", "c"):
            noise = 0 if sure else rng.choice((-2, -1, 1, 2))
            score = min(5, max(1, truth + noise))
            rows.append(ann(f"i{k}", who, score, conf=0.9 if sure else 0.4))
    split = confidence_split(to_long_frame(rows), min_confidence=0.7, min_pair_overlap=10)
    for axis in AXES:
        entry = split[axis]
        assert entry["sure"]["kappa"] > entry["unsure"]["kappa"]
        assert entry["p_value"] < 0.05 and entry["significant"] is True
    tasks = [DialoguePair(f"i{k}", "u", "r") for k in range(60)]
    summary = run_quality(rows, tasks, SETTINGS).metrics
    assert summary["confidence_split"]["social"]["p_value"] == split["social"]["p_value"]
