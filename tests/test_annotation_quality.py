"""Annotation quality: schema validation, agreement statistics, consensus, consistency, outliers."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from evalpipe.annotation.agreement import (
    agreement_report,
    gwet_ac2,
    krippendorff_alpha_ordinal,
    quadratic_weighted_kappa,
    rater_vs_reference,
)
from evalpipe.annotation.consensus import build_consensus, merge_annotations, merge_scores
from evalpipe.annotation.guidelines import AXIS_ANCHORS, AXIS_ANCHORS_EN, AXIS_ANCHORS_JA, examples
from evalpipe.annotation.quality import (
    RULES,
    annotator_outliers,
    check_consistency,
    detect_outliers,
    item_outliers,
)
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.schema import (
    AXES,
    Annotation,
    DialoguePair,
    annotation_to_dict,
    read_annotations,
    read_tasks,
    sample_tasks_path,
    to_long_frame,
    validate_annotation,
)
from evalpipe.errors import InputError

REPO = Path(__file__).resolve().parents[1]
BATCHES = sorted((REPO / "data" / "samples" / "annotations").glob("batch_00[123].jsonl"))


def ann(item: str, rater: str, scores, conf=0.9, ts="2025-01-01T10:00:00Z") -> Annotation:
    scores = dict(zip(AXES, scores, strict=True)) if not isinstance(scores, dict) else scores
    confidence = conf if isinstance(conf, dict) else dict.fromkeys(AXES, conf)
    return Annotation(item, rater, ts, scores, confidence)


def record(**overrides) -> dict:
    base = annotation_to_dict(ann("d1", "ann_001", (1, 2, 3, 4)))
    base.update(overrides)
    return base


def matrix_to_long(values: np.ndarray, axis: str = "social") -> pd.DataFrame:
    rows = [
        (f"i{i:03d}", f"r{r}", axis, int(v), 0.9)
        for i, row in enumerate(values)
        for r, v in enumerate(row)
        if v > 0
    ]
    return pd.DataFrame(rows, columns=["id", "annotator_id", "axis", "score", "confidence"])


# --- kappa -------------------------------------------------------------------------------------


def test_kappa_matches_a_hand_computed_case():
    # Confusion (1,1), (2,2), (5,2); quadratic disagreement w = (k-l)^2/16.
    # Observed: w(5,2) = 9/16. Expected (marginals a: 1,2,5 once; b: 1 once, 2 twice; N=3):
    # 1/3*w(1,2)*2 + 1/3*w(2,1) + 1/3*w(5,1) + 2/3*w(5,2) = (2 + 1 + 16 + 18)/48 = 37/48.
    # kappa = 1 - (9/16)/(37/48) = 10/37.
    assert quadratic_weighted_kappa([1, 2, 5], [1, 2, 2]) == pytest.approx(10 / 37)


def test_kappa_counts_a_2_vs_5_disagreement_as_three_steps_when_3_and_4_never_occur():
    a = [1, 1, 2, 2, 5, 5, 1, 2, 5, 2]
    b = [1, 2, 2, 5, 5, 2, 1, 2, 5, 1]
    ours = quadratic_weighted_kappa(a, b)
    assert ours == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5])
    )
    # sklearn without labels treats 2 and 5 as neighbours and gives a different value.
    assert ours != pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))


@pytest.mark.parametrize("seed", range(5))
def test_kappa_agrees_with_scikit_learn_on_random_ratings(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 6, size=60)
    b = np.clip(a + rng.integers(-2, 3, size=60), 1, 5)
    expected = cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5])
    assert quadratic_weighted_kappa(a, b) == pytest.approx(expected)


def test_kappa_of_two_constant_identical_raters_is_undefined_not_an_error():
    assert np.isnan(quadratic_weighted_kappa([1, 1, 1], [1, 1, 1]))


# --- alpha ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_alpha_agrees_with_the_krippendorff_package_with_missing_ratings(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=50)
    values = np.clip(truth[:, None] + rng.integers(-1, 2, size=(50, 4)), 1, 5)
    values[rng.random((50, 4)) < 0.25] = 0  # missing ratings
    reliability = np.where(values == 0, np.nan, values).T.astype(float)
    expected = krippendorff.alpha(
        reliability_data=reliability, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert krippendorff_alpha_ordinal(values) == pytest.approx(expected)


def test_alpha_is_undefined_when_every_rating_is_the_same():
    assert np.isnan(krippendorff_alpha_ordinal(np.ones((5, 3), dtype=int)))


# --- AC2 --------------------------------------------------------------------------------------


def test_gwet_ac2_matches_a_hand_computed_case():
    # Items (1,1), (2,2), (1,3); w_kl = 1 - (k-l)^2/16, T_w = 18.75, q(q-1) = 20.
    # p_a: items 1 and 2 give 1; item 3: r*_1 = r*_3 = 1 + 0.75, so (0.75 + 0.75)/2 = 0.75;
    #      p_a = 2.75/3 = 11/12.
    # pi = (1.5, 1, 0.5, 0, 0)/3; sum pi(1-pi) = 1/4 + 2/9 + 5/36 = 11/18.
    # p_e = 18.75/20 * 11/18 = 55/96; AC2 = (11/12 - 55/96)/(1 - 55/96) = 33/41.
    values = np.array([[1, 1], [2, 2], [1, 3]])
    assert gwet_ac2(values) == pytest.approx(33 / 41)


def test_gwet_ac2_uses_single_ratings_for_chance_but_not_for_agreement():
    # The fourth item has one rating: p_a stays 11/12; pi = (1.5, 1, 0.5, 0, 1)/4.
    values = np.array([[1, 1], [2, 2], [1, 3], [5, 0]])
    pi = np.array([1.5, 1, 0.5, 0, 1]) / 4
    p_e = 18.75 / 20 * float((pi * (1 - pi)).sum())
    assert gwet_ac2(values) == pytest.approx((11 / 12 - p_e) / (1 - p_e))


def test_ac2_stays_high_where_kappa_collapses_on_a_skewed_axis():
    # 90% raw agreement, nearly everything rated 1: the kappa paradox.
    a = [1] * 18 + [2, 1]
    b = [1] * 18 + [1, 2]
    values = np.array([a, b]).T
    report = agreement_report(matrix_to_long(values), axes=["social"], n_boot=0)["axes"]["social"]
    assert report["kappa"] < 0.0
    assert report["ac2"] > 0.85
    assert report["raw_agreement"] == pytest.approx(0.9)


# --- the agreement report ------------------------------------------------------------------


def test_report_gives_pairwise_kappas_their_n_weighted_mean_and_item_counts():
    values = np.array([[1, 1, 2], [2, 2, 2], [3, 4, 3], [5, 5, 0], [4, 4, 4], [1, 2, 1]])
    rep = agreement_report(matrix_to_long(values), axes=["social"], n_boot=0, min_pair_overlap=1)[
        "axes"
    ]["social"]
    pairs = {(p["a"], p["b"]): p for p in rep["pairs"]}
    assert pairs[("r0", "r1")]["kappa"] == pytest.approx(
        quadratic_weighted_kappa(values[:, 0], values[:, 1]), abs=1e-4
    )
    assert pairs[("r0", "r2")]["n"] == 5  # item 4 has no rating from r2
    weighted = sum(p["kappa"] * p["n"] for p in rep["pairs"]) / sum(p["n"] for p in rep["pairs"])
    assert rep["kappa"] == pytest.approx(weighted, abs=1e-4)
    assert rep["n_pairs_in_headline"] == 3 and all(p["in_headline"] for p in rep["pairs"])
    assert rep["n_items"] == 6


def test_constant_ratings_are_reported_with_a_note_not_a_crash():
    values = np.ones((10, 3), dtype=int)
    rep = agreement_report(matrix_to_long(values), axes=["social"], n_boot=50)["axes"]["social"]
    assert rep["constant"] is True
    assert rep["kappa"] is None and rep["alpha"] is None
    assert rep["raw_agreement"] == 1.0
    assert rep["status"] == "undefined"
    assert "no variation" in rep["note"]


def test_only_categories_1_2_and_5_are_handled_on_the_full_scale():
    values = np.array([[1, 1], [2, 5], [5, 5], [1, 2], [2, 2], [5, 2]])
    rep = agreement_report(matrix_to_long(values), axes=["social"], n_boot=0, min_pair_overlap=1)[
        "axes"
    ]["social"]
    expected = cohen_kappa_score(
        values[:, 0], values[:, 1], weights="quadratic", labels=[1, 2, 3, 4, 5]
    )
    assert rep["kappa"] == pytest.approx(expected, abs=1e-4)


def test_bootstrap_intervals_are_reproducible_and_contain_the_estimate():
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, size=120)
    values = np.clip(truth[:, None] + rng.integers(-1, 2, size=(120, 3)), 1, 5)
    long = matrix_to_long(values)
    first = agreement_report(long, axes=["social"], n_boot=300, seed=7)
    again = agreement_report(long, axes=["social"], n_boot=300, seed=7)
    other = agreement_report(long, axes=["social"], n_boot=300, seed=8)
    assert first == again
    assert first != other
    for key in ("kappa", "alpha", "ac2", "raw_agreement"):
        lo, hi = first["axes"]["social"][f"{key}_ci"]
        assert lo <= first["axes"]["social"][key] <= hi


def test_status_compares_mean_kappa_with_min_and_target():
    values = np.array([[1, 1], [2, 2], [3, 3], [4, 4], [5, 4], [2, 3]])
    long = matrix_to_long(values)
    kw = {"axes": ["social"], "n_boot": 0, "min_pair_overlap": 1}
    rep = agreement_report(long, **kw, min_kappa=0.6, target_kappa=0.8)
    assert rep["axes"]["social"]["status"] == "target"
    rep = agreement_report(long, **kw, min_kappa=0.6, target_kappa=0.99)
    assert rep["axes"]["social"]["status"] == "pass"
    rep = agreement_report(long, **kw, min_kappa=0.99, target_kappa=0.995)
    assert rep["axes"]["social"]["status"] == "fail"


def test_rater_vs_reference_uses_only_common_items():
    out = rater_vs_reference({"a": 1, "b": 3, "c": 5}, {"a": 1, "b": 4, "z": 2})
    assert out["n"] == 2
    assert out["raw_agreement"] == 0.5
    assert out["within_one_agreement"] == 1.0


# --- schema and validation -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"annotator_id": None}, 'field "annotator_id": expected a non-empty string'),
        ({"timestamp": "yesterday"}, 'field "timestamp": expected ISO 8601'),
        ({"timestamp": "2025-01-01T10:00:00"}, "with a time zone"),
        (
            {"annotations": {"social": 6, "avoidant": 1, "mechanical": 1, "self": 1}},
            'field "annotations.social": score 6 outside 1-5',
        ),
        (
            {"annotations": {"social": 2.5, "avoidant": 1, "mechanical": 1, "self": 1}},
            'field "annotations.social": expected an integer 1-5, got 2.5',
        ),
        (
            {"annotations": {"social": "3", "avoidant": 1, "mechanical": 1, "self": 1}},
            "expected an integer 1-5, got '3'",
        ),
        (
            {"annotations": {"social": True, "avoidant": 1, "mechanical": 1, "self": 1}},
            "expected an integer 1-5, got True",
        ),
        (
            {"annotations": {"social": 1, "avoidant": 1, "mechanical": 1}},
            'field "annotations.self": missing',
        ),
        (
            {
                "annotations": {
                    "social": 1,
                    "avoidant": 1,
                    "mechanical": 1,
                    "self": 1,
                    "flattery": 2,
                }
            },
            'field "annotations.flattery": unknown axis',
        ),
        (
            {"confidence": {"social": 1.5, "avoidant": 1, "mechanical": 1, "self": 1}},
            'field "confidence.social": confidence 1.5 outside 0-1',
        ),
        (
            {"confidence": {"social": -0.1, "avoidant": 1, "mechanical": 1, "self": 1}},
            "confidence -0.1 outside 0-1",
        ),
        ({"confidence": "high"}, 'field "confidence": expected an object'),
    ],
)
def test_validator_names_the_field_and_the_expectation(change, expected):
    problems = validate_annotation(record(**change), where="b.jsonl:7")
    assert any(p.startswith("b.jsonl:7: ") and expected in p for p in problems), problems


def test_validator_reports_a_missing_field():
    obj = record()
    del obj["confidence"]
    assert validate_annotation(obj, where="b.jsonl:1") == [
        'b.jsonl:1: field "confidence": missing (expected an object {axis: a number 0-1})'
    ]


def test_reading_batches_lists_every_problem_with_file_and_line(tmp_path):
    good = json.dumps(record())
    lines = [
        good,
        "{not json",
        json.dumps(record(annotations={"social": 9, "avoidant": 1, "mechanical": 1, "self": 1})),
        good,  # duplicate (d1, ann_001)
        json.dumps(record(id="unknown_item")),
        "[1, 2]",
    ]
    path = tmp_path / "batch.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_annotations([path], task_ids=["d1"])
    text = str(err.value)
    assert "5 problem(s)" in text
    assert f"{path}:2: not valid JSON" in text
    assert f'{path}:3: field "annotations.social": score 9 outside 1-5' in text
    assert f"{path}:4: duplicate (id, annotator_id) = ('d1', 'ann_001') (first at {path}:1)" in text
    assert f"{path}:5: field \"id\": 'unknown_item' is not in the task set" in text
    assert f"{path}:6: expected a JSON object, got list" in text


def test_duplicates_are_found_across_files(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(record()) + "\n", encoding="utf-8")
    b.write_text(json.dumps(record()) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.jsonl:1: duplicate"):
        read_annotations([a, b])


def test_task_file_problems_are_reported_by_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    rows = [
        {"id": "t1", "user": "u", "response": "r", "context": []},
        {"id": "t1", "user": "u", "response": "r", "context": []},
        {
            "id": "t2",
            "user": "u",
            "response": "r",
            "context": [{"turn": -1, "speaker": "bot", "text": "x"}],
        },
        {"id": "t3", "user": "u"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_tasks(path)
    text = str(err.value)
    assert f"{path}:2: field \"id\": duplicate id 't1' (first at line 1)" in text
    assert f'{path}:3: field "context[0].speaker": expected "user" or "ai"' in text
    assert f'{path}:4: field "response": missing' in text


def test_bundled_samples_validate_and_cover_every_task():
    tasks = read_tasks(sample_tasks_path())
    assert len(tasks) == 30
    anns = read_annotations(BATCHES, task_ids=[t.id for t in tasks])
    assert {a.annotator_id for a in anns} == {
        "illustrative_001",
        "illustrative_002",
        "illustrative_003",
    }
    assert {a.id for a in anns} == {t.id for t in tasks}
    languages = {"ja" if any(ord(c) > 0x3000 for c in t.response) else "en" for t in tasks}
    assert languages == {"ja", "en"}
    for axis in AXES:  # every axis runs from neutral to strong in the sample
        scores = {a.annotations[axis] for a in anns}
        assert 1 in scores and max(scores) >= 4


# --- consensus ----------------------------------------------------------------------------------


def test_merge_methods_on_a_crafted_item():
    scores, conf = [1, 2, 5], [0.9, 0.9, 0.9]
    assert merge_scores(scores, conf, method="weighted_average") == 3  # 2.67 rounds to 3
    assert merge_scores(scores, conf, method="median") == 2
    assert merge_scores(scores, conf, method="majority") == 1  # three-way tie: lowest score
    assert merge_scores([1, 5], [0.7, 0.95], method="majority") == 5  # tie: larger confidence
    assert merge_scores([4, 4, 1], [0.7, 0.7, 1.0], method="majority") == 4
    assert merge_scores([1, 5], [0.2, 0.8], method="weighted_average") == 4  # 4.2
    assert merge_scores([2, 3], [0.9, 0.9], method="median") == 3  # 2.5 rounds half up


def test_low_confidence_ratings_do_not_vote():
    group = [
        ann("x", "a", (1, 1, 1, 1), conf=0.5),
        ann("x", "b", (4, 1, 1, 1), conf=0.9),
        ann("x", "c", (4, 1, 1, 1), conf=0.8),
    ]
    merged = merge_annotations(group, "weighted_average", min_confidence=0.7)
    assert merged.annotator_id == "consensus"
    assert merged.annotations["social"] == 4
    assert merged.confidence["social"] == pytest.approx(0.85)


def test_build_consensus_writes_the_spec_format_with_dispersion_and_rejects_disagreement():
    anns = [
        ann("ok", "a", (2, 1, 1, 1), ts="2025-01-02T10:00:00Z"),
        ann("ok", "b", (3, 1, 1, 1), ts="2025-01-02T15:00:00+09:00"),
        ann("split", "a", (1, 1, 1, 1)),
        ann("split", "b", (4, 1, 1, 1)),
        ann("lonely", "a", (1, 1, 1, 1)),
        ann(
            "unsure",
            "a",
            (1, 1, 1, 1),
            conf={"social": 0.5, "avoidant": 0.9, "mechanical": 0.9, "self": 0.9},
        ),
        ann(
            "unsure",
            "b",
            (1, 1, 1, 1),
            conf={"social": 0.6, "avoidant": 0.9, "mechanical": 0.9, "self": 0.9},
        ),
    ]
    consensus, rejected = build_consensus(anns, method="weighted_average", min_confidence=0.7)
    assert [c["id"] for c in consensus] == ["ok"]
    ok = consensus[0]
    assert validate_annotation(ok, where="consensus") == []
    assert ok["annotations"]["social"] == 3  # 2.5 rounds half up
    assert ok["dispersion"]["social"] == {
        "n": 2,
        "mean": 2.5,
        "sd": 0.5,
        "range": 1,
        "scores": [2, 3],
    }
    assert ok["timestamp"] == "2025-01-02T10:00:00Z"  # 15:00+09:00 is 06:00 UTC, earlier
    reasons = {r["id"]: r["reasons"] for r in rejected}
    assert reasons["split"] == ["low agreement on social: scores [1, 4] span 3 > 1"]
    assert reasons["lonely"] == ["only 1 annotator(s), need 2"]
    assert reasons["unsure"] == ["no social rating with confidence >= 0.7"]


def test_excluded_annotators_do_not_enter_the_consensus():
    anns = [ann("x", "a", (1, 1, 1, 1)), ann("x", "b", (1, 1, 1, 1)), ann("x", "c", (5, 5, 5, 5))]
    consensus, rejected = build_consensus(anns, exclude=["c"])
    assert rejected == [] and consensus[0]["n_annotators"] == 2


# --- consistency rules ----------------------------------------------------------------------


RULE_CASES = {
    "evasive_but_substantive": (2, 5, 1, 1),
    "empty_but_clear_stance": (1, 1, 5, 1),
    "social_and_self_both_strong": (4, 1, 2, 4),
    "all_axes_extreme": (5, 5, 5, 5),
}


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_each_score_rule_fires_on_its_contradiction(rule):
    hits = check_consistency(ann("x", "a", RULE_CASES[rule]))
    assert rule in hits


def test_a_plain_annotation_breaks_no_rule():
    assert check_consistency(ann("x", "a", (3, 2, 2, 1))) == []


def test_self_claim_rule_needs_a_response_without_self_markers():
    claim = ann("x", "a", (1, 1, 1, 3))
    silent = DialoguePair("x", "q", "The capital of France is Paris.", [])
    boasting = DialoguePair("x", "q", "I can answer anything; the capital is Paris.", [])
    japanese = DialoguePair("x", "q", "このシステムは翻訳に対応しています。", [])
    assert "self_claim_without_self_reference" in check_consistency(claim, silent)
    assert check_consistency(claim, boasting) == []
    assert check_consistency(claim, japanese) == []
    assert check_consistency(claim) == []  # no text, no verdict


def test_every_rule_has_a_name_a_description_and_a_source():
    assert len({r.name for r in RULES}) == len(RULES) == 5
    assert all(r.description and r.source for r in RULES)


# --- outliers ----------------------------------------------------------------------------------


def _panel(n_items: int, biased: str | None = None, random_rater: str | None = None, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.choice(5, size=(n_items, 4), p=[0.4, 0.25, 0.15, 0.12, 0.08]) + 1
    out = []
    for r in ("ann_a", "ann_b", "ann_c", "ann_d"):
        noise = rng.choice([-1, 0, 1], size=truth.shape, p=[0.1, 0.8, 0.1])
        scores = np.clip(truth + noise + (1 if r == biased else 0), 1, 5)
        if r == random_rater:
            scores = rng.integers(1, 6, size=truth.shape)
        out += [ann(f"i{i:03d}", r, tuple(int(s) for s in scores[i])) for i in range(n_items)]
    return out


def test_outlier_detection_finds_a_planted_biased_annotator():
    long = to_long_frame(_panel(150, biased="ann_c"))
    flags = annotator_outliers(long, bias_threshold=0.5)
    biased = {(f["annotator_id"], f["axis"]) for f in flags if f["kind"] == "bias"}
    assert {a for a, _ in biased} == {"ann_c"}
    assert len(biased) >= 3  # clipping at 5 softens the shift on the rarest axis values


def test_outlier_detection_finds_an_annotator_who_rates_at_random():
    long = to_long_frame(_panel(150, random_rater="ann_b"))
    low = [f for f in annotator_outliers(long, min_kappa=0.6) if f["kind"] == "low_agreement"]
    assert [f["annotator_id"] for f in low] == ["ann_b"]


def test_item_outliers_report_the_spread_of_ratings():
    long = to_long_frame(
        [ann("x", "a", (1, 1, 1, 1)), ann("x", "b", (4, 2, 1, 1)), ann("y", "a", (1, 1, 1, 1))]
    )
    assert item_outliers(long, max_item_range=1) == [
        {"id": "x", "axis": "social", "scores": [1, 4], "range": 3, "sd": 1.5}
    ]


# --- the whole run ----------------------------------------------------------------------------


def test_headline_per_axis_has_the_same_keys_and_counts_items_with_two_human_raters():
    tasks = read_tasks(sample_tasks_path())
    humans = read_annotations(BATCHES)
    # Five items keep one human rating only; a judge rating them too must not make them count.
    single = sorted({a.id for a in humans})[:5]
    humans = [a for a in humans if a.id not in single or a.annotator_id == "illustrative_001"]
    judge = [
        Annotation(a.id, "llm:tiny", a.timestamp, dict(a.annotations), dict(a.confidence))
        for a in humans
        if a.annotator_id == "illustrative_001"
    ]
    result = run_quality(humans + judge, tasks, QualitySettings(bootstrap_samples=50))
    assert list(result.headline) == list(AXES)
    for axis in AXES:
        headline = result.headline[axis]
        assert list(headline) == ["n", "kappa", "alpha", "sample_batches"]
        assert headline["sample_batches"] is False  # run_quality was not told they are samples
        assert headline["n"] == 25
        assert headline["kappa"] == result.kappa_report["axes"][axis]["kappa"]
        assert headline["alpha"] == result.kappa_report["axes"][axis]["alpha"]
        assert headline["kappa"] != result.metrics[axis]["judge_kappa"]


def test_quality_run_separates_humans_from_judge_and_markers():
    tasks = read_tasks(sample_tasks_path())
    humans = read_annotations(BATCHES)
    judge = [
        Annotation(a.id, "llm:tiny", a.timestamp, dict(a.annotations), dict(a.confidence))
        for a in humans
        if a.annotator_id == "illustrative_001"
    ]
    markers = [
        Annotation(a.id, "markers", a.timestamp, dict.fromkeys(AXES, 1), dict.fromkeys(AXES, 1.0))
        for a in judge
    ]
    result = run_quality(humans + judge + markers, tasks, QualitySettings(bootstrap_samples=200))
    assert result.kappa_report["annotators"] == [
        "illustrative_001",
        "illustrative_002",
        "illustrative_003",
    ]
    assert result.metrics["annotators"] == 3
    assert result.metrics["judge"] == "llm:tiny"
    for axis in AXES:
        m = result.metrics[axis]
        assert m["kappa"] >= 0.6 and m["n"] == 30
        assert m["judge_kappa"] > 0.8  # the judge copied a human
        assert m["markers_kappa"] == 0.0  # a constant rater agrees no better than chance
    assert result.metrics["consensus_items"] + result.metrics["rejected_items"] == 30
    assert 1 <= result.metrics["rejected_items"] <= 5
    assert list(result.plot.columns[:2]) == ["axis", "kappa"]
    again = run_quality(humans + judge + markers, tasks, QualitySettings(bootstrap_samples=200))
    assert again.kappa_report == result.kappa_report and again.consensus == result.consensus


# --- guidelines -------------------------------------------------------------------------------


def test_every_axis_has_a_japanese_and_english_anchor_for_every_scale_point():
    for axis in AXES:
        assert sorted(AXIS_ANCHORS[axis]) == [1, 2, 3, 4, 5]
        for level in range(1, 6):
            assert AXIS_ANCHORS_JA[axis][level] in AXIS_ANCHORS[axis][level]
            assert AXIS_ANCHORS_EN[axis][level] in AXIS_ANCHORS[axis][level]


def test_reference_examples_carry_valid_gold_ratings():
    rows = examples()
    assert {r["focus_axis"] for r in rows} == set(AXES)
    for r in rows:
        obj = {
            "id": r["id"],
            "annotator_id": "gold",
            "timestamp": "2025-01-01T00:00:00Z",
            "annotations": r["gold"],
            "confidence": dict.fromkeys(AXES, 1.0),
        }
        assert validate_annotation(obj, where=r["id"]) == []


def test_the_spec_a8_operations_are_plain_library_functions():
    # The library names (calculate_kappa, merge_annotations, check_consistency,
    # detect_outliers) are the package's functions; no wrapper classes.
    humans = read_annotations(BATCHES)
    report = agreement_report(to_long_frame(humans), n_boot=0)
    assert all(report["axes"][axis]["kappa"] > 0.6 for axis in AXES)
    merged = merge_annotations([a for a in humans if a.id == "sample_010"], min_confidence=0.7)
    assert merged.annotator_id == "consensus" and merged.annotations["social"] == 5
    assert check_consistency(ann("x", "a", (5, 5, 5, 5))) == [
        "social_and_self_both_strong",
        "all_axes_extreme",
    ]
    assert detect_outliers(_panel(120, biased="ann_d")) == ["ann_d"]
