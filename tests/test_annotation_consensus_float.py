"""Float consensus: ``aggregated_scores`` per axis, per-item ``quality_metrics`` and the
kappa-weighted merge, checked against hand computations on small fixtures."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evalpipe.annotation.consensus import build_consensus
from evalpipe.annotation.schema import AXES, Annotation
from evalpipe.params import load_params
from evalpipe.params_schema import validate_params


def ann(item: str, who: str, scores: dict[str, int], conf: float = 0.9) -> Annotation:
    full = {a: scores.get(a, 1) for a in AXES}
    return Annotation(item, who, "2025-01-01T10:00:00Z", full, {a: conf for a in AXES})


def test_float_consensus_of_the_spec_example_is_the_mean_with_item_quality_metrics():
    # The filtering spec's example: social 3, 4, 3 -> 3.33; avoidant 2, 2, 3 -> 2.33.
    rows = [
        ann("d1", "a", {"social": 3, "avoidant": 2}),
        ann("d1", "b", {"social": 4, "avoidant": 2}),
        ann("d1", "c", {"social": 3, "avoidant": 3}),
        # A second item spreads the pooled scores, so every axis has a chance term.
        ann("d2", "a", {"social": 1, "avoidant": 1, "mechanical": 2, "self": 2}),
        ann("d2", "b", {"social": 1, "avoidant": 1, "mechanical": 2, "self": 2}),
        ann("d2", "c", {"social": 1, "avoidant": 1, "mechanical": 2, "self": 2}),
    ]
    consensus, rejected = build_consensus(rows, max_item_range=1, min_annotators=2)
    assert rejected == []
    d1 = consensus[0]
    assert d1["aggregated_scores"] == {
        "social": 3.3333,
        "avoidant": 2.3333,
        "mechanical": 1.0,
        "self": 1.0,
    }
    assert d1["annotations"] == {"social": 3, "avoidant": 2, "mechanical": 1, "self": 1}
    # Hand computation of the per-item kappa. Pooled social scores 3,4,3,1,1,1: p1=1/2, p3=1/3,
    # p4=1/6. D_e = sum p_k p_l (k-l)^2/16 = 2*(1/2*1/3*4 + 1/2*1/6*9 + 1/3*1/6*1)/16.
    d_e_social = 2 * (0.5 / 3 * 4 + 0.5 / 6 * 9 + 1 / 18) / 16
    # Avoidant pooled 2,2,3,1,1,1: p1=1/2, p2=1/3, p3=1/6.
    d_e_avoid = 2 * (0.5 / 3 * 1 + 0.5 / 6 * 4 + 1 / 18 * 1) / 16
    # Mechanical pooled 1,1,1,2,2,2 (p1=p2=1/2): D_e = 2*(1/4)/16; item d1 agrees (D_o = 0).
    d_o = (1 / 16 + 0 + 1 / 16) / 3  # pairs (3,4), (3,3), (4,3) and likewise for avoidant
    expected = np.mean([1 - d_o / d_e_social, 1 - d_o / d_e_avoid, 1.0, 1.0])
    qm = d1["quality_metrics"]
    assert qm["kappa"] == pytest.approx(expected, abs=1e-4)
    assert qm["n_annotators"] == 3
    # Population variance of 3, 4, 3 (and of 2, 2, 3): 2/9; the largest axis is reported.
    assert qm["agreement_variance"] == pytest.approx(2 / 9, abs=1e-4)
    assert consensus[1]["quality_metrics"]["kappa"] == 1.0


def test_kappa_weighted_merge_matches_a_hand_computation():
    # Three annotators on six items; c disagrees with a and b on social.
    social = {
        "a": [1, 2, 3, 4, 5, 1],
        "b": [1, 2, 3, 4, 4, 1],
        "c": [2, 1, 3, 3, 5, 2],
    }
    rows = [
        ann(f"i{k}", who, {"social": s, "avoidant": 1 + (k % 2)})
        for who, scores in social.items()
        for k, s in enumerate(scores)
    ]
    consensus, _ = build_consensus(
        rows, method="kappa_weighted", max_item_range=4, min_annotators=2, min_pair_overlap=1
    )

    def qwk(x: list[int], y: list[int]) -> float:
        return cohen_kappa_score(x, y, labels=[1, 2, 3, 4, 5], weights="quadratic")

    # Each annotator's weight: the mean of their pairwise kappas (every pair shares 6 items).
    k_ab, k_ac, k_bc = (qwk(social[x], social[y]) for x, y in (("a", "b"), ("a", "c"), ("b", "c")))
    w = {"a": (k_ab + k_ac) / 2, "b": (k_ab + k_bc) / 2, "c": (k_ac + k_bc) / 2}
    for k, record in enumerate(consensus):
        scores = {who: social[who][k] for who in social}
        hand = sum(w[x] * scores[x] for x in w) / sum(w.values())
        assert record["method"] == "kappa_weighted"
        assert record["aggregated_scores"]["social"] == pytest.approx(hand, abs=1e-4)
        assert record["annotations"]["social"] == int(np.floor(hand + 0.5))
    # Item i4: a 5, b 4, c 5, weighted towards the annotators who agree most.
    assert consensus[4]["aggregated_scores"]["social"] != pytest.approx(14 / 3, abs=1e-3)


def test_kappa_weighted_is_an_accepted_merge_method():
    params = load_params("params.yaml")
    params["annotation"]["merge_method"] = "kappa_weighted"
    validate_params(params)
