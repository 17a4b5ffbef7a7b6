"""Targeting's intervals on simulated studies with a known truth
(:mod:`evalpipe.scoring.simulate_targeting`; perf/targeting_coverage.py prints the full table)."""

from __future__ import annotations

import numpy as np

from evalpipe.scoring.simulate_targeting import TargetingModel, simulate_pairs, truths
from evalpipe.scoring.targeting import targeting_tables


def test_gap_and_restoration_intervals_cover_the_truth_on_simulated_studies() -> None:
    model = TargetingModel()
    truth = truths(model, truth_examples=4_000, seed=1)
    assert truth["gap"] < -0.05  # the noisy ranking still finds critical words
    assert truth[("restore", "most", 1)] > truth[("restore", "least", 1)]
    rng = np.random.default_rng(2)
    gap_hits, restore_hits = [], []
    for _ in range(40):
        tables = targeting_tables(simulate_pairs(rng, 40, model), level=0.95)
        (row,) = tables["attribution"].to_dict("records")
        gap_hits.append(row["ci_low"] <= truth["gap"] <= row["ci_high"])
        for rec in tables["restoration"].to_dict("records"):
            if rec["n"]:
                true = truth[("restore", rec["order"], rec["r"])]
                restore_hits.append(rec["ci_low"] <= true <= rec["ci_high"])
    # 40 studies at 95%: fewer than 34 hits has probability about 1%
    assert np.mean(gap_hits) >= 0.85, np.mean(gap_hits)
    assert np.mean(restore_hits) >= 0.88, np.mean(restore_hits)
