"""Coverage of the first-token KL's interval (the mean per-pair KL of the aligned top-k
distributions, cluster bootstrap-t) with a known truth.

Run: python perf/first_token_kl_coverage.py [--replications 200] [--seed 0] [--samples 499]

The studies are :mod:`evalpipe.scoring.simulate_first_token`'s (40 / 80 / 300 examples, 1 and 4
typo draws each, top 5 and top 20). Each cell prints the share of studies whose interval holds
the truth, the mean estimate's bias and the interval's mean width; the Monte Carlo standard
error of a coverage is ``sqrt(0.95 * 0.05 / replications)`` (0.015 at 200). Nothing is
asserted; the figures go to docs/scoring-studies.md.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalpipe.scoring.simulate_first_token import SIZES, first_token_study, truth
from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval
from evalpipe.seeding import hashed_seed

LEVEL = 0.95


def run(replications: int, seed: int, samples: int, tops: list[int], draws: list[int]):
    rows = []
    for k in tops:
        t = truth(k)
        for d in draws:
            for g in SIZES:
                rng = np.random.default_rng(hashed_seed(seed, "first_token", k, d, g))
                hits, est, widths = [], [], []
                for r in range(replications):
                    s = first_token_study(rng, examples=g, draws=d, k=k)
                    m = bootstrap_t_mean_interval(
                        s.kl, s.clusters, level=LEVEL, seed=hashed_seed(seed, r, g), samples=samples
                    )
                    hits.append(m.low <= t <= m.high)
                    est.append(m.mean - t)
                    widths.append(m.high - m.low)
                rows.append(
                    {
                        "top_k": k,
                        "draws": d,
                        "examples": g,
                        "truth": round(t, 4),
                        "coverage": float(np.mean(hits)),
                        "bias": float(np.mean(est)),
                        "width": float(np.mean(widths)),
                    }
                )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=499)
    parser.add_argument("--tops", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--draws", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    table = run(args.replications, args.seed, args.samples, args.tops, args.draws)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
