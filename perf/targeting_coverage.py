"""Coverage of targeting's intervals with a known truth: the attribution-vs-random accuracy gap
(paired Tango score interval) and the restoration-order rates (Wilson), on the simulated studies
of :mod:`evalpipe.scoring.simulate_targeting` (20 / 50 / 200 examples, K = 4, r = 1, 2, 3).

Run: python perf/targeting_coverage.py [--replications 300] [--seed 0] [--sizes 20 50 200]

Each cell prints the share of studies whose interval holds the truth (Monte Carlo standard error
``sqrt(0.95 * 0.05 / replications)``, 0.013 at 300) and the mean interval width. A restoration
cell is counted only in studies where it has pairs. Nothing is asserted; the figures go to
docs/perturbation.md ("Targeting").
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalpipe.scoring.simulate_targeting import TargetingModel, simulate_pairs, truths
from evalpipe.scoring.targeting import targeting_tables
from evalpipe.seeding import hashed_seed

LEVEL = 0.95


def coverage(replications: int, seed: int, sizes: list[int], model: TargetingModel) -> pd.DataFrame:
    truth = truths(model, truth_examples=20_000, seed=seed)
    rows = []
    for examples in sizes:
        rng = np.random.default_rng(hashed_seed(seed, "targeting", examples))
        hits: dict[tuple, list[bool]] = {}
        widths: dict[tuple, list[float]] = {}
        for _ in range(replications):
            tables = targeting_tables(simulate_pairs(rng, examples, model), level=LEVEL)
            for row in tables["attribution"].to_dict("records"):
                cell = ("gap", "most", model.k)
                hits.setdefault(cell, []).append(row["ci_low"] <= truth["gap"] <= row["ci_high"])
                widths.setdefault(cell, []).append(row["ci_high"] - row["ci_low"])
            for row in tables["restoration"].to_dict("records"):
                if not row["n"]:
                    continue
                cell = ("restore", row["order"], row["r"])
                true = truth[cell]
                hits.setdefault(cell, []).append(row["ci_low"] <= true <= row["ci_high"])
                widths.setdefault(cell, []).append(row["ci_high"] - row["ci_low"])
        for cell in sorted(hits, key=str):
            rows.append({
                "examples": examples, "figure": cell[0], "order": cell[1], "k_or_r": cell[2],
                "truth": truth[cell[0]] if cell[0] == "gap" else truth[cell],
                "studies": len(hits[cell]), "coverage": float(np.mean(hits[cell])),
                "mean_width": float(np.mean(widths[cell])),
            })  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 200])
    args = parser.parse_args()
    table = coverage(args.replications, args.seed, args.sizes, TargetingModel())
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print(table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
