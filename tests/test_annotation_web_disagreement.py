"""The adjudication queue's order: range per axis and the leave-one-out kappa effect, checked
against scikit-learn's quadratic weighted kappa (labels 1-5) recomputed without each item."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.disagreement import item_disagreement


def long_frame(ratings: dict[str, dict[str, list[int]]]) -> pd.DataFrame:
    """``{annotator: {axis: scores per item}}`` -> the long frame, items i000, i001, ..."""
    rows = [
        (f"i{k:03d}", who, axis, int(score))
        for who, by_axis in ratings.items()
        for axis, scores in by_axis.items()
        for k, score in enumerate(scores)
    ]
    return pd.DataFrame(rows, columns=["id", "annotator_id", "axis", "score"])


def sk_kappa(a: np.ndarray, b: np.ndarray) -> float:
    return cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5], weights="quadratic")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kappa_effect_is_sklearn_kappa_without_the_item_minus_with_it(seed):
    rng = np.random.default_rng(seed)
    n = 40
    base = {axis: rng.choice([1, 1, 1, 2, 2, 3, 4, 5], size=n) for axis in AXES}
    x = {axis: base[axis] for axis in AXES}
    y = {
        axis: np.clip(base[axis] + rng.choice([-2, -1, 0, 0, 0, 1], size=n), 1, 5) for axis in AXES
    }
    rows = item_disagreement(long_frame({"x": x, "y": y}))
    assert len(rows) == n
    for row in rows:
        k = int(row["id"][1:])
        keep = np.arange(n) != k
        for axis in AXES:
            expected = sk_kappa(x[axis][keep], y[axis][keep]) - sk_kappa(x[axis], y[axis])
            assert row["kappa_effect"][axis] == pytest.approx(expected, abs=1e-4)
            assert row["range"][axis] == abs(int(x[axis][k]) - int(y[axis][k]))


def test_items_are_ordered_by_range_then_kappa_effect_and_single_ratings_left_out():
    ratings = {
        "x": {axis: [1, 1, 3, 1, 2, 5] for axis in AXES},
        "y": {axis: [1, 3, 1, 1, 2, 5] for axis in AXES},
    }
    long = long_frame(ratings)
    # i006 rated by one annotator only: nothing to adjudicate.
    long = pd.concat(
        [long, pd.DataFrame([("i006", "x", a, 4) for a in AXES], columns=long.columns)]
    )
    rows = item_disagreement(long)
    ids = [r["id"] for r in rows]
    assert "i006" not in ids
    assert {ids[0], ids[1]} == {"i001", "i002"}  # range 2 first
    assert all(r["max_range"] == 0 for r in rows[2:])
    first, second = rows[0]["kappa_effect_total"], rows[1]["kappa_effect_total"]
    assert first >= second > 0
