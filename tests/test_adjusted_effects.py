"""Operation and script effects adjusted for word, example and benchmark,
validated on planted-effect simulations (tests/adjusted_simulation.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evalpipe.scoring import demean, exact_sums
from evalpipe.scoring.adjusted import (
    ADJUSTED_COLUMNS,
    _fit,
    _variance,
    absorb,
    adjusted_effect,
    adjusted_effects,
    exact_sum,
)
from evalpipe.scoring.pairs import cluster_codes
from evalpipe.scoring.robustness import mcnemar_exact
from tests.adjusted_simulation import simulate_pairs
from tests.test_word_impact import _build, _no_effect_examples

KINDS = ("replace", "insert", "delete", "mixed")


def _pooled(table: pd.DataFrame) -> pd.DataFrame:
    return table.loc[table["scope"] == "pooled"].set_index("op")


def test_strong_word_effects_without_an_operation_effect_leave_the_adjusted_rows_null():
    rejected, marginal_significant, marginal_delta = [], [], {k: [] for k in KINDS}
    for seed in range(30):
        pairs = simulate_pairs(seed, examples=(200, 80, 30))
        pooled = _pooled(adjusted_effects(pairs, by="op"))
        rejected += (pooled.loc[list(KINDS), "adjusted_p"] < 0.05).tolist()
        assert (pooled["adjusted_ci_low"] < pooled["adjusted_ci_high"]).all()
        for kind, group in pairs.groupby("op"):
            o, p = group["correct_original"].to_numpy(), group["correct_perturbed"].to_numpy()
            marginal_delta[kind].append(p.mean() - o.mean())
            marginal_significant.append(mcnemar_exact(int((o & ~p).sum()), int((~o & p).sum())))
    # type I error near 5% (120 tests: 6 expected; 13 would be 3 standard deviations out)
    assert np.mean(rejected) <= 0.11
    # the marginal rows are confounded: nearly every one "shows an effect", and the kind the
    # harmful words lean to looks worst
    assert np.mean(np.array(marginal_significant) < 0.05) > 0.7
    assert (
        np.mean(marginal_delta["replace"])
        < min(np.mean(marginal_delta[k]) for k in ("insert", "delete", "mixed")) - 0.02
    )


def test_a_planted_operation_effect_is_found_by_the_adjusted_row():
    found, estimates = [], []
    for seed in range(12):
        pairs = simulate_pairs(100 + seed, examples=(200, 80, 30), kind_harm={"delete": 0.12})
        pooled = _pooled(adjusted_effects(pairs, by="op"))
        found.append(pooled.loc["delete", "adjusted_p"] < 0.05)
        estimates.append(pooled.loc["delete", "adjusted_delta"])
        assert pooled.loc["delete", "adjusted_ci_high"] < 0 or not found[-1]
    assert np.mean(found) >= 0.8
    # the contrast is on all pairs of the word strata, half of whose examples start correct
    assert -0.12 < np.mean(estimates) < -0.03


def test_labels_are_taken_as_they_come():
    pairs = simulate_pairs(3, kinds=("replace", "transpose", "conversion"), examples=(120,))
    table = adjusted_effects(pairs, by="op")
    assert set(table["op"]) == {"replace", "transpose", "conversion"}
    assert list(table.columns) == ["model", "language", "scope", "op", *ADJUSTED_COLUMNS]
    assert table["adjusted_delta"].notna().all()


def test_a_scope_without_flips_still_gets_an_interval_of_positive_width():
    pairs = simulate_pairs(4, examples=(80,), word_harm=0.0, noise=0.0)
    table = adjusted_effects(pairs, by="op")
    assert (table["adjusted_delta"] == 0).all()
    assert (table["adjusted_ci_low"] < 0).all() and (table["adjusted_ci_high"] > 0).all()
    assert (table["adjusted_p"] == 1.0).all()


def test_strata_with_one_kind_carry_no_information():
    d = np.array([-1, 0, -1, 0])
    x = np.array([True, True, False, False])
    # each word has one kind only: nothing to compare within a word
    effect = adjusted_effect(d, x, strata=np.array([0, 0, 1, 1]), examples=np.arange(4))
    assert effect["adjusted_delta"] is None and effect["adjusted_n"] == 0
    # words A and B hold both kinds on examples 0 and 1; word C (one kind) is left out
    d = np.array([-1, 0, 0, -1, -1, -1])
    x = np.array([True, False, False, True, True, True])
    strata, examples = np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1, 0, 1, 2, 3])
    effect = adjusted_effect(d, x, strata=strata, examples=examples)
    assert effect["adjusted_n"] == 4 and effect["adjusted_delta"] == pytest.approx(-1.0)
    # an example seen once has nothing to compare within itself: its pair drops out too
    effect = adjusted_effect(d[:2], x[:2], strata=strata[:2], examples=examples[:2])
    assert effect["adjusted_delta"] is None


def test_absorbing_two_crossed_groupings_equals_the_dummy_variable_regression():
    rng = np.random.default_rng(0)
    n = 120
    a, b = rng.integers(0, 9, n), rng.integers(0, 15, n)
    x = (rng.random(n) < 0.4).astype(float)
    y = rng.normal(size=n) + 0.7 * x + a * 0.3 - b * 0.1
    dummies = np.column_stack(
        [x, *(a == i for i in range(9)), *(b == j for j in range(1, 15))]
    ).astype(float)
    expected = np.linalg.lstsq(dummies, y, rcond=None)[0][0]
    resid = absorb(np.column_stack([y, x]), [a, b])
    assert resid[:, 1] @ resid[:, 0] / (resid[:, 1] @ resid[:, 1]) == pytest.approx(expected)


def test_the_compiled_sweeps_give_the_numpy_sweeps_bits(monkeypatch):
    # the study-scale path (evalpipe.scoring.demean) must not move a written figure's last digit
    pairs = simulate_pairs(11, examples=(300, 120), words=40, hit_rate=0.3)
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 40, 3000), rng.integers(0, 700, 3000)
    a[:5] = 45  # levels without rows in between
    values = np.column_stack([rng.integers(-1, 2, 3000), rng.random(3000) < 0.3]).astype(float)
    one_column = rng.random(3000)
    monkeypatch.setattr(demean, "COMPILED_FROM", 10**12)
    expected = [absorb(values, [a, b]), absorb(one_column, [b]), adjusted_effects(pairs, by="op")]
    monkeypatch.setattr(demean, "COMPILED_FROM", 0)
    monkeypatch.setattr(exact_sums, "COMPILED_FROM", 0)
    got = [absorb(values, [a, b]), absorb(one_column, [b]), adjusted_effects(pairs, by="op")]
    assert got[0].tobytes() == expected[0].tobytes() and got[0].shape == expected[0].shape
    assert got[1].tobytes() == expected[1].tobytes() and got[1].shape == expected[1].shape
    pd.testing.assert_frame_equal(got[2], expected[2], check_exact=True)
    assert expected[2]["adjusted_delta"].notna().any()


def test_the_compiled_exact_sum_is_the_correctly_rounded_sum(monkeypatch):
    rng = np.random.default_rng(5)
    values = [
        rng.normal(size=5000) * 10.0 ** rng.integers(-300, 300, 5000),
        np.concatenate([[1e16, 1.0, -1e16, 5e-324, -0.0], rng.random(4000) - 0.5]),
        np.round(rng.normal(size=6000), 3) ** 2,
    ]
    monkeypatch.setattr(exact_sums, "COMPILED_FROM", 0)
    for v in values:
        assert exact_sum(v) == math.fsum(v.tolist())
        assert exact_sum(-v) == -math.fsum(v.tolist())


def test_operation_and_script_tables_carry_the_adjusted_columns_beside_the_marginal_ones():
    examples = _no_effect_examples("g", n=16)
    replace, delete = [("replace", "e", "x")], [("delete", "o", "")]
    for i, (_, correct, hits) in enumerate(examples):
        # both words on every example, their kinds of typo varying within words and examples
        hits["the"] = (correct ^ (i % 3 == 0), 1, replace if i % 4 in (0, 3) else delete)
        hits["of"] = (correct ^ (i % 5 == 0), 1, delete if i % 4 in (0, 1) else replace)
    _, operations, scripts = _build({"gsm8k": examples, "bbh": _no_effect_examples("b", n=12)})
    for table in (operations, scripts):
        assert set(ADJUSTED_COLUMNS) <= set(table.columns)
        assert list(table.columns[-len(ADJUSTED_COLUMNS) :]) == ADJUSTED_COLUMNS
        assert table["delta"].notna().all()
    pooled = operations.loc[operations["scope"] == "pooled"].set_index("op")
    assert pooled["adjusted_n"].gt(0).all() and pooled["adjusted_delta"].notna().all()
    # one script class only: no within-word contrast to make
    assert scripts["adjusted_delta"].isna().all() and (scripts["adjusted_n"] == 0).all()


def test_kinds_are_compared_at_equal_numbers_of_typos():
    # mixed pairs always carry two typos and a second typo adds harm: mixed is not harmful as a
    # kind, it just has more typos
    estimates = []
    for seed in range(6):
        pairs = simulate_pairs(200 + seed, examples=(200, 80), second_typo_harm=0.15)
        pooled = _pooled(adjusted_effects(pairs, by="op"))
        estimates.append(pooled.loc["mixed", "adjusted_delta"])
        blind = adjusted_effects(pairs.drop(columns="perturbed_occurrences"), by="op")
        assert _pooled(blind).loc["mixed", "adjusted_delta"] < pooled.loc["mixed", "adjusted_delta"]
    assert abs(np.mean(estimates)) < 0.02


def test_any_kind_column_works_the_same_way():
    pairs = simulate_pairs(5, examples=(150,), kind_harm={"delete": 0.2})
    by_op = adjusted_effects(pairs, by="op")
    by_script = adjusted_effects(pairs.assign(script=pairs["op"], op=None), by="script")
    pd.testing.assert_frame_equal(
        by_op.drop(columns="op"), by_script.drop(columns="script"), check_like=True
    )


_BLAS_SCRIPT = """
import hashlib, io, sys
sys.path.insert(0, sys.argv[1])
from tests.adjusted_simulation import simulate_pairs
from evalpipe.scoring.adjusted import adjusted_effects
frames = [simulate_pairs(seed, examples=(120, 60), words=24, hit_rate=0.3) for seed in (0, 1)]
buffer = io.BytesIO()
for frame in frames:
    adjusted_effects(frame, by="op").to_parquet(buffer, index=False)
print(hashlib.sha256(buffer.getvalue()).hexdigest())
"""

# Two BLAS settings that round dot products differently: OpenBLAS's default kernel for this CPU,
# several threads; and the SSE-only Nehalem kernel, one thread (OPENBLAS_CORETYPE is honoured by
# the DYNAMIC_ARCH OpenBLAS that NumPy's wheels bundle, and every x86-64 CPU runs Nehalem code).
BLAS_SETTINGS = (
    {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"},
    {"OPENBLAS_CORETYPE": "Nehalem", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
)


def test_adjusted_columns_are_the_same_bytes_under_two_blas_settings():
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import project_env

    root = Path(__file__).resolve().parents[1]
    digests = []
    for setting in BLAS_SETTINGS:
        env = {k: v for k, v in project_env(**setting).items()
               if k != "OPENBLAS_CORETYPE" or k in setting}  # fmt: skip
        result = subprocess.run([sys.executable, "-c", _BLAS_SCRIPT, str(root)], env=env,
                                capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
        digests.append(result.stdout.strip())
    assert digests[0] == digests[1]


def test_examples_with_a_single_pair_are_left_out_of_adjusted_n():
    # Two words with a delete and an insert each on examples e1, e2; e3 is seen once: its pair
    # is absorbed by its own example effect and carries no information.
    pairs = pd.DataFrame({
        "model": "m", "language": "english", "benchmark": "b",
        "example_id": ["e1", "e2", "e1", "e2", "e3"], "variant": ["w", "w", "v", "v", "w"],
        "word_rank": [1, 1, 2, 2, 1], "correct_original": True,
        "correct_perturbed": [False, True, True, False, False],
        "op": ["delete", "insert", "insert", "delete", "delete"],
    })  # fmt: skip
    pairs["cluster"] = cluster_codes(pairs["benchmark"], pairs["example_id"])
    table = adjusted_effects(pairs, by="op")
    pooled = table.loc[table["scope"] == "pooled"].set_index("op")
    assert pooled.loc["delete", "adjusted_n"] == 4


def test_a_kind_drawn_more_often_on_fragile_examples_is_flagged():
    tilted = adjusted_effects(simulate_pairs(0, fragility_tilt=0.3), by="op")
    plain = adjusted_effects(simulate_pairs(0), by="op")
    assert "fragile" in _pooled(tilted).loc["replace", "adjusted_warning"]
    assert _pooled(plain)["adjusted_warning"].isna().all()


def _dummy_regression(d, x, strata, examples):
    """The coefficient of x, its residuals and the residualised x by explicit dummies."""
    design = np.column_stack(
        [x, np.eye(strata.max() + 1)[strata], np.eye(examples.max() + 1)[examples]]
    )
    coefficients = np.linalg.lstsq(design, d, rcond=None)[0]
    others = design[:, 1:]
    x_t = x - others @ np.linalg.lstsq(others, x, rcond=None)[0]
    return coefficients[0], d - design @ coefficients, x_t


def _small_case(seed):
    """Three words on six examples, every word on every example; kinds and losses at random."""
    rng = np.random.default_rng(seed)
    strata, examples = np.repeat(np.arange(3), 6), np.tile(np.arange(6), 3)
    x = (rng.random(18) < 0.5).astype(float)
    d = -(rng.random(18) < 0.3).astype(float)
    return d, x, strata, examples


def _direct_variances(d, x, strata, examples):
    """CR1, model-based and per-stratum model-based variance by explicit dummies and loops."""
    beta, e, x_t = _dummy_regression(d, x, strata, examples)
    sxx, n, s, g = x_t @ x_t, d.size, strata.max() + 1, examples.max() + 1
    scores = np.array([x_t[examples == k] @ e[examples == k] for k in range(g)])
    cr1 = g / (g - 1) * (n - 1) / (n - s - 1) * (scores @ scores) / sxx**2
    model = e @ e / (n - s - g) / sxx
    per_stratum = [(e[strata == k] ** 2).mean() * n / (n - s - g) for k in range(s)]
    stratified = sum(x_t[i] ** 2 * per_stratum[strata[i]] for i in range(n)) / sxx**2
    return beta, cr1, model, stratified


def test_the_cluster_variance_is_the_cr1_sandwich_of_the_dummy_variable_regression():
    d, x, strata, examples = _small_case(23)  # a case where the sandwich is the largest
    beta, cr1, model, stratified = _direct_variances(d, x, strata, examples)
    assert cr1 > 1.2 * max(model, stratified)
    fit = _fit(d, x, strata, examples)
    assert fit["beta"] == pytest.approx(beta, abs=1e-12)
    for method in ("cr1", "cr1h"):
        assert _variance(fit, method) == (pytest.approx(cr1, rel=1e-12), 5.0)


def test_the_stratified_model_variance_floors_the_sandwich():
    d, x, strata, examples = _small_case(17)  # a case where the word strata differ in variance
    _, cr1, model, stratified = _direct_variances(d, x, strata, examples)
    assert stratified > 1.2 * max(model, cr1)
    fit = _fit(d, x, strata, examples)
    assert _variance(fit, "cr1h")[0] == pytest.approx(stratified, rel=1e-12)
    assert _variance(fit, "cr1")[0] == pytest.approx(max(cr1, model), rel=1e-12)
    # the tables' interval is made with it: t on G - 1 = 5 df
    effect = adjusted_effect(d, x, strata=strata, examples=examples)
    half = (effect["adjusted_ci_high"] - effect["adjusted_ci_low"]) / 2
    assert half == pytest.approx(2.570581835636314 * stratified**0.5, rel=1e-9)
