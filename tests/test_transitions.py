"""The field's figures of a typo study on small hand-made pair tables."""

from __future__ import annotations

import pandas as pd
import pytest

from evalpipe.scoring.transitions import (
    FAIL,
    GATE_OUTCOMES,
    INCONCLUSIVE,
    PASS,
    TRANSITIONS,
    dose_response,
    noninferiority,
    transition_counts,
)


def pairs_frame(rows: list[tuple]) -> pd.DataFrame:
    columns = ["model", "language", "benchmark", "cluster", "n_typos", "correct_original",
               "correct_perturbed", "prediction_original", "prediction_perturbed"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def test_transitions_count_each_way_an_answer_can_go():
    pairs = pairs_frame(
        [
            ("m", "english", "b", 0, 1, True, True, "A", "A"),
            ("m", "english", "b", 1, 1, True, False, "A", "B"),
            ("m", "english", "b", 2, 1, True, False, "A", None),
            ("m", "english", "b", 3, 1, False, True, "C", "A"),
            ("m", "english", "b", 4, 1, False, False, "C", "D"),
            ("m", "english", "b", 5, 1, False, False, None, None),
        ]
    )
    counts = transition_counts(pairs)
    assert [counts[k] for k in TRANSITIONS] == [1, 2, 1, 2]
    assert counts["right_wrong_rate"] == pytest.approx(2 / 6)
    # changed: A->B, A->unparsed, C->A, C->D; unchanged: A->A and unparsed->unparsed
    assert counts["answer_change"] == pytest.approx(4 / 6)


def test_a_wrong_answer_that_changes_to_another_wrong_answer_counts_as_a_change():
    pairs = pairs_frame([("m", "english", "b", 0, 1, False, False, "B", "C")])
    assert transition_counts(pairs)["answer_change"] == 1.0
    assert transition_counts(pairs)["wrong_wrong"] == 1


def test_no_pairs_give_no_rates():
    counts = transition_counts(pairs_frame([]))
    assert counts["n"] == 0 and counts["right_wrong_rate"] is None
    assert counts["answer_change"] is None


def test_gate_passes_a_harmless_typo_and_fails_a_costly_one():
    n = 300
    harmless = pairs_frame([("m", "english", "b", i, 1, True, True, "A", "A") for i in range(n)])
    assert noninferiority(harmless, margin=0.02)["verdict"] == PASS
    costly = pairs_frame(
        [("m", "english", "b", i, 1, True, i % 10 != 0, "A", "A") for i in range(n)]
    )  # 10% right -> wrong: the lower bound is far below -0.02
    gate = noninferiority(costly, margin=0.02)
    assert gate["verdict"] == FAIL and gate["lower_bound"] < -0.05


def test_gate_is_inconclusive_when_the_interval_straddles_the_margin():
    # no change on a few examples: the interval holds both a harmless and a costly truth
    few = pairs_frame([("m", "english", "b", i, 1, True, True, "A", "A") for i in range(8)])
    gate = noninferiority(few, margin=0.02)
    assert gate["lower_bound"] < -0.02 < gate["upper_bound"]
    assert gate["verdict"] == INCONCLUSIVE
    # a loss of 5 points on a few examples is not yet shown to exceed 2 points either
    small = pairs_frame(
        [("m", "english", "b", i, 1, True, i % 20 != 0, "A", "A") for i in range(40)]
    )
    assert noninferiority(small, margin=0.02)["verdict"] == INCONCLUSIVE


def test_gate_fails_only_when_the_whole_interval_lies_below_the_margin():
    n = 300
    costly = pairs_frame(
        [("m", "english", "b", i, 1, True, i % 10 != 0, "A", "A") for i in range(n)]
    )
    gate = noninferiority(costly, margin=0.02)
    assert gate["upper_bound"] < -0.02 and gate["verdict"] == FAIL
    assert {PASS, FAIL, INCONCLUSIVE} == set(GATE_OUTCOMES)


def test_gate_lower_bound_is_the_one_sided_bound_of_the_paired_interval():
    pairs = pairs_frame(
        [("m", "english", "b", i, 1, True, i % 20 != 0, "A", "A") for i in range(200)]
    )
    one_sided = noninferiority(pairs, margin=0.1, level=0.95)["lower_bound"]
    two_sided_95 = noninferiority(pairs, margin=0.1, level=0.975)["lower_bound"]
    # a more confident bound lies lower; both below the observed -0.05
    assert two_sided_95 < one_sided < -0.05 + 0.05
    assert noninferiority(pairs, margin=None)["verdict"] is None


def test_dose_response_pairs_each_dose_with_its_own_originals():
    rows = []
    for example in range(10):
        right = example < 8
        for k in (1, 2, 4):
            # one more wrong answer per doubling of the edits
            broken = example < {1: 0, 2: 2, 4: 4}[k]
            rows.append(("m", "english", "b", example, k, right, right and not broken, "A", "A"))
    table = dose_response(pairs_frame(rows))
    pooled = table.loc[table["scope"] == "pooled"].set_index("n_typos")
    assert list(pooled.index) == [0, 1, 2, 4]
    assert pooled.loc[0, "delta"] == 0.0 and pooled.loc[0, "accuracy_original"] == 0.8
    assert pooled.loc[1, "delta"] == 0.0
    assert pooled.loc[2, "delta"] == pytest.approx(-0.2)
    assert pooled.loc[4, "delta"] == pytest.approx(-0.4)
    assert pooled.loc[4, "ci_high"] < 0 < pooled.loc[1, "ci_high"]
    per_benchmark = table.loc[table["scope"] == "benchmark"]
    assert set(per_benchmark["benchmark"]) == {"b"}
    assert pooled["benchmark"].isna().all()
