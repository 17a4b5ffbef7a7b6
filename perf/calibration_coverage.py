"""Coverage of the calibration readouts' paired intervals with a known truth: the ECE change
(cluster basic bootstrap), the Brier change (CR2 t), typo'd - clean, and the mean choice KL
clean -> typo'd (cluster bootstrap-t).

Run: python perf/calibration_coverage.py [--replications 400] [--seed 0] [--samples 499]

The studies are :mod:`evalpipe.scoring.simulate_calibration`'s (40 / 80 / 300 / 1000 examples,
1 and 4 typo draws each). Each cell prints the share of studies whose interval holds the truth,
the mean estimate's bias and the interval's mean width; the Monte Carlo standard error of a
coverage is ``sqrt(0.95 * 0.05 / replications)`` (0.011 at 400). Nothing is asserted; the
figures go to docs/scoring-studies.md.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalpipe.scoring.calibration import ece, ece_difference_interval
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.simulate_calibration import KINDS, SIZES, calibration_study, truth
from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval
from evalpipe.seeding import hashed_seed

LEVEL = 0.95


def run(replications: int, seed: int, samples: int, sizes: list[int], draws: list[int]):
    rows = []
    for kind in KINDS:
        t = truth(kind)
        truths = {"ece": t["ece_delta"], "brier": t["brier_delta"], "choice_kl": t["choice_kl"]}
        for k in draws:
            for g in sizes:
                rng = np.random.default_rng(hashed_seed(seed, "calibration", kind, k, g))
                est: dict[str, list] = {name: [] for name in truths}
                hit: dict[str, list] = {name: [] for name in truths}
                width: dict[str, list] = {name: [] for name in truths}
                for r in range(replications):
                    s = calibration_study(kind, rng, examples=g, draws=k)
                    d = ece(s.conf_typo, s.correct_typo) - ece(s.conf_clean, s.correct_clean)
                    low, high = ece_difference_interval(
                        s.conf_clean, s.correct_clean, s.conf_typo, s.correct_typo,
                        s.clusters, level=LEVEL, seed=hashed_seed(seed, r, g), samples=samples,
                    )  # fmt: skip
                    b = clustered_mean_interval(
                        s.brier_typo - s.brier_clean, s.clusters, level=LEVEL
                    )
                    kl = bootstrap_t_mean_interval(
                        s.kl, s.clusters, level=LEVEL, seed=hashed_seed(seed, "kl", r, g),
                        samples=samples,
                    )  # fmt: skip
                    for name, value, lo, hi in (
                        ("ece", d, low, high),
                        ("brier", b.mean, b.low, b.high),
                        ("choice_kl", kl.mean, kl.low, kl.high),
                    ):
                        est[name].append(value)
                        hit[name].append(lo <= truths[name] <= hi)
                        width[name].append(hi - lo)
                for name in truths:
                    rows.append({
                        "kind": kind, "draws": k, "examples": g, "readout": name,
                        "truth": round(truths[name], 4),
                        "bias": round(float(np.mean(est[name])) - truths[name], 4),
                        "coverage": round(float(np.mean(hit[name])), 3),
                        "width": round(float(np.mean(width[name])), 4),
                    })  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replications", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=499)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--draws", type=int, nargs="*", default=[1, 4])
    args = parser.parse_args()
    table = run(args.replications, args.seed, args.samples, args.sizes, args.draws)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
