"""Coverage of the run-to-run spread's intervals with a known truth: the ``repeat`` arm's
accuracy change (truth 0: a rerun changes nothing in expectation) and its share of changed
answers, at the sizes users run.

Run: python perf/repeats_coverage.py [--replications 400] [--seed 0] [--alpha 0.3 1.0]

A study has G examples (20, 40, 80, 300) of a 4-option question; example g answers option k with
probability ``q_gk``, ``q_g ~ Dirichlet(alpha)`` (alpha 0.3: most examples nearly settled, a
few torn; alpha 1: spread out), option 0 correct. Its clean prompt is sampled R times (R = 3, 5:
``sampling.repeats``); the arm pairs repeats 1..R-1 with repeat 0, so an example is one cluster
of R - 1 pairs, as in metrics/<model>/repeats.json. Truths: accuracy change 0, answer-change
share ``1 - E sum_k q_gk^2 = 1 - (alpha + 1) / (4 alpha + 1)``. Each cell prints the share of
studies whose interval holds the truth (Monte Carlo standard error ``sqrt(0.95 * 0.05 / n)``,
0.011 at 400) and the mean width. Nothing is asserted; the figures go to docs/scoring.md.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.robustness import paired_stats
from evalpipe.seeding import hashed_seed

LEVEL = 0.95
SIZES = (20, 40, 80, 300)
OPTIONS = 4


def study(rng: np.random.Generator, *, examples: int, repeats: int, alpha: float):
    """One study's repeat-arm pairs: cluster, correct (0, r), changed (0, r)."""
    q = rng.dirichlet(np.full(OPTIONS, alpha), examples)
    cumulative = q.cumsum(axis=1)
    draws = rng.random((examples, repeats))
    answers = (draws[:, :, None] > cumulative[:, None, :]).sum(axis=2)
    clusters = np.repeat(np.arange(examples), repeats - 1)
    first = np.repeat(answers[:, 0], repeats - 1)
    again = answers[:, 1:].reshape(-1)
    return clusters, first == 0, again == 0, (first != again).astype(float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replications", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, nargs="+", default=[0.3, 1.0])
    parser.add_argument("--repeats", type=int, nargs="+", default=[3, 5])
    args = parser.parse_args()
    rows = []
    for alpha in args.alpha:
        truth = 1.0 - (alpha + 1.0) / (OPTIONS * alpha + 1.0)
        for repeats in args.repeats:
            for examples in SIZES:
                rng = np.random.default_rng(hashed_seed(args.seed, alpha, repeats, examples))
                delta_hits, delta_widths, change_hits, change_widths = [], [], [], []
                for _ in range(args.replications):
                    clusters, before, after, changed = study(
                        rng, examples=examples, repeats=repeats, alpha=alpha
                    )
                    stats = paired_stats(before, after, clusters=clusters, level=LEVEL)
                    delta_hits.append(stats.ci_low <= 0.0 <= stats.ci_high)
                    delta_widths.append(stats.ci_high - stats.ci_low)
                    share = clustered_mean_interval(changed, clusters, level=LEVEL)
                    change_hits.append(share.low <= truth <= share.high)
                    change_widths.append(share.high - share.low)
                rows.append(
                    {
                        "alpha": alpha,
                        "repeats": repeats,
                        "examples": examples,
                        "delta_coverage": np.mean(delta_hits),
                        "delta_width": np.mean(delta_widths),
                        "change_truth": round(truth, 3),
                        "change_coverage": np.mean(change_hits),
                        "change_width": np.mean(change_widths),
                    }
                )
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
