"""The headline kappa on designs with unequal pair overlap, against sklearn and krippendorff.

Each design here breaks a plain-mean headline (the unweighted mean over annotator pairs): a pair that shares
one or two items weighed as much as a pair that shares hundreds.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from evalpipe.annotation.agreement import agreement_report, annotator_kappas
from evalpipe.annotation.quality import annotator_outliers
from evalpipe.annotation.schema import LABELS

LAB = list(LABELS)


def to_long(values: np.ndarray, raters: list[str] | None = None, axis: str = "social"):
    raters = raters or [f"r{r}" for r in range(values.shape[1])]
    rows = [
        (f"i{i:04d}", raters[r], axis, int(v), 0.9)
        for i, row in enumerate(values)
        for r, v in enumerate(row)
        if v > 0
    ]
    return pd.DataFrame(rows, columns=["id", "annotator_id", "axis", "score", "confidence"])


def reference_headline(values: np.ndarray, min_overlap: int) -> float:
    """Pair-size-weighted mean of sklearn's pairwise quadratic kappas (labels fixed to 1-5)."""
    num = den = 0.0
    for a in range(values.shape[1]):
        for b in range(a + 1, values.shape[1]):
            both = (values[:, a] > 0) & (values[:, b] > 0)
            n = int(both.sum())
            x, y = values[both, a], values[both, b]
            if n < min_overlap or len(set(x)) < 2 or len(set(y)) < 2:
                continue
            num += n * cohen_kappa_score(x, y, labels=LAB, weights="quadratic")
            den += n
    return num / den


def reference_alpha(values: np.ndarray) -> float:
    data = np.where(values > 0, values, np.nan).T.astype(float)
    return krippendorff.alpha(data, level_of_measurement="ordinal", value_domain=LAB)


def design_200_vs_2() -> np.ndarray:
    """a-b agree on 200 items across the scale; a-c disagree (1 vs 5, 5 vs 1) on 2 more."""
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, size=200)
    values = np.zeros((202, 3), dtype=int)
    values[:200, 0] = values[:200, 1] = truth
    values[200:, 0] = [1, 5]
    values[200:, 2] = [5, 1]
    return values


def test_a_two_item_pair_no_longer_cancels_a_two_hundred_item_pair():
    values = design_200_vs_2()
    rep = agreement_report(to_long(values), axes=["social"], n_boot=200)["axes"]["social"]
    pairs = {(p["a"], p["b"]): p for p in rep["pairs"]}
    # The plain mean of the two defined pairs is (1 + -1) / 2 = 0.0; alpha is near 1.
    assert pairs[("r0", "r1")]["kappa"] == 1.0 and pairs[("r0", "r1")]["n"] == 200
    assert pairs[("r0", "r2")]["kappa"] == -1.0 and pairs[("r0", "r2")]["n"] == 2
    assert not pairs[("r0", "r2")]["in_headline"]  # shown, but below min_pair_overlap
    assert rep["kappa"] == 1.0
    assert rep["kappa"] == pytest.approx(reference_headline(values, 10))
    assert rep["alpha"] == pytest.approx(reference_alpha(values), abs=1e-4)
    assert rep["alpha"] > 0.95
    # Even with every pair in the headline, the n-weighted mean stays close to alpha.
    all_pairs = agreement_report(to_long(values), axes=["social"], n_boot=0, min_pair_overlap=1)
    assert all_pairs["axes"]["social"]["kappa"] == pytest.approx(198 / 202, abs=1e-4)
    assert all_pairs["axes"]["social"]["kappa"] == pytest.approx(
        reference_headline(values, 1), abs=1e-4
    )


def committed_panel(seed: int = 1, n: int = 60) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=n)
    noise = rng.choice([-1, 0, 1], size=(n, 3), p=[0.1, 0.8, 0.1])
    values = np.clip(truth[:, None] + noise, 1, 5)
    values[:5] = np.arange(1, 6)[:, None]  # the first items span the scale, rated alike
    return values


def plain_mean_headline(values: np.ndarray) -> float:
    """The plain-mean headline: unweighted mean of every defined pairwise kappa (sklearn)."""
    kappas = []
    for a in range(values.shape[1]):
        for b in range(a + 1, values.shape[1]):
            both = (values[:, a] > 0) & (values[:, b] > 0)
            if both.sum() >= 1:
                with np.errstate(divide="ignore", invalid="ignore"):
                    k = cohen_kappa_score(
                        values[both, a], values[both, b], labels=LAB, weights="quadratic"
                    )
                if not np.isnan(k):
                    kappas.append(k)
    return float(np.mean(kappas))


@pytest.mark.parametrize("n_new", [1, 2, 3, 9])
def test_a_new_annotator_with_a_few_ratings_leaves_the_headline_alone(n_new):
    base = committed_panel()
    before = agreement_report(to_long(base), axes=["social"], n_boot=0)["axes"]["social"]
    grown = np.zeros((len(base), 4), dtype=int)
    grown[:, :3] = base
    # The newcomer disagrees with everyone on the items they rated.
    grown[:n_new, 3] = 6 - base[:n_new, 0]
    after = agreement_report(to_long(grown), axes=["social"], n_boot=0)["axes"]["social"]
    assert after["kappa"] == before["kappa"]
    assert after["kappa"] == pytest.approx(reference_headline(grown, 10), abs=1e-4)
    new_pairs = [p for p in after["pairs"] if "r3" in (p["a"], p["b"])]
    assert all(p["n"] == n_new and not p["in_headline"] for p in new_pairs)
    # The plain-mean headline collapses once the newcomer's pairs are defined.
    if n_new >= 2:
        assert plain_mean_headline(grown) < 0.6 * before["kappa"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_random_sparse_designs_match_sklearn_and_krippendorff(seed):
    rng = np.random.default_rng(seed)
    n_items, n_raters = 300, 5
    truth = rng.integers(1, 6, size=n_items)
    values = np.clip(truth[:, None] + rng.integers(-1, 2, size=(n_items, n_raters)), 1, 5)
    # Unequal overlap: each rater covers a different share of the items.
    coverage = np.array([1.0, 0.8, 0.4, 0.1, 0.03])
    values = np.where(rng.random((n_items, n_raters)) < coverage, values, 0)
    for min_overlap in (1, 10, 30):
        rep = agreement_report(
            to_long(values), axes=["social"], n_boot=0, min_pair_overlap=min_overlap
        )["axes"]["social"]
        assert rep["kappa"] == pytest.approx(reference_headline(values, min_overlap), abs=1e-4)
        for p in rep["pairs"]:
            a, b = int(p["a"][1:]), int(p["b"][1:])
            both = (values[:, a] > 0) & (values[:, b] > 0)
            assert p["n"] == int(both.sum())
            if p["kappa"] is not None:
                expected = cohen_kappa_score(
                    values[both, a], values[both, b], labels=LAB, weights="quadratic"
                )
                assert p["kappa"] == pytest.approx(expected, abs=1e-4)
    assert rep["alpha"] == pytest.approx(reference_alpha(values), abs=1e-4)


def test_few_shared_items_give_none_with_a_reason_not_zero():
    # Six items: a plain mean would print kappa 0.00, CI 0.00-0.00 here.
    values = np.array([[1, 1], [1, 2], [1, 1], [1, 3], [1, 1], [1, 1]])
    rep = agreement_report(to_long(values), axes=["social"], n_boot=200)["axes"]["social"]
    assert rep["kappa"] is None and rep["kappa_ci"] == [None, None]
    assert rep["status"] == "undefined"
    assert (
        rep["kappa_note"]
        == "fewer than 10 shared items in every annotator pair (largest overlap 6)"
    )
    assert rep["undefined_reason"]["kappa"] == rep["kappa_note"]
    # With the overlap rule relaxed, the pair is still undefined: r0 never varies.
    relaxed = agreement_report(to_long(values), axes=["social"], n_boot=200, min_pair_overlap=1)
    entry = relaxed["axes"]["social"]
    assert entry["kappa"] is None and entry["kappa_ci"] == [None, None]
    assert (
        entry["pairs"][0]["undefined_reason"] == "constant ratings: r0 gave 1 on all 6 shared items"
    )
    assert entry["kappa_note"].startswith("constant ratings")
    # sklearn returns exactly 0 here, whatever r1 does: a value that carries no information.
    assert cohen_kappa_score(values[:, 0], values[:, 1], labels=LAB, weights="quadratic") == 0.0


def test_every_undefined_statistic_has_a_reason():
    single = to_long(np.array([[1], [2], [3]]))
    rep = agreement_report(single, axes=["social"], n_boot=0)["axes"]["social"]
    assert rep["kappa"] is None and rep["alpha"] is None
    assert rep["undefined_reason"]["kappa"] == "fewer than two annotators"
    assert rep["undefined_reason"]["alpha"] == "fewer than two annotators"
    disjoint = to_long(np.array([[1, 0], [0, 2], [3, 0]]))
    rep = agreement_report(disjoint, axes=["social"], n_boot=0)["axes"]["social"]
    assert rep["kappa_note"] == "no item rated by two or more annotators"
    assert rep["undefined_reason"]["raw_agreement"] == "no item rated by two or more annotators"
    constant = to_long(np.ones((12, 3), dtype=int))
    rep = agreement_report(constant, axes=["social"], n_boot=0)["axes"]["social"]
    assert set(rep["undefined_reason"]) == {"kappa", "alpha"}  # AC2 is 1 here
    assert rep["undefined_reason"]["alpha"].startswith("constant ratings")
    good = agreement_report(to_long(committed_panel()), axes=["social"], n_boot=0)
    assert good["axes"]["social"]["undefined_reason"] == {}
    assert good["axes"]["social"]["kappa_note"] is None


def test_a_sparse_newcomer_is_not_judged_and_does_not_get_others_judged():
    base = committed_panel(n=80)
    values = np.zeros((80, 4), dtype=int)
    values[:, :3] = base
    values[:8, 3] = np.minimum(base[:8, 0] + 3, 5)  # eight ratings, all far off and high
    long = pd.concat([to_long(values, axis=axis) for axis in ("social", "avoidant")])
    kappas = annotator_kappas(long, axes=("social", "avoidant"))
    assert kappas["r3"]["overall"] is None
    assert annotator_outliers(long) == []
    # With the overlap rule off, the eight ratings decide: the newcomer is flagged.
    flagged = annotator_outliers(long, min_pair_overlap=1)
    assert {f["annotator_id"] for f in flagged} == {"r3"}
    assert {f["kind"] for f in flagged} == {"bias", "low_agreement"}
