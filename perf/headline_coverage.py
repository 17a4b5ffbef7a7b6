"""Coverage of the headline intervals at the sizes users run, by estimator and design.

Run: python perf/headline_coverage.py [--replications 1000] [--seed 0]
         [--designs moderate heavy sparse word-centric] [--draws 1 4] [--bootstrap 400]

Each replication draws a planted-effect study (:mod:`evalpipe.scoring.simulate`) with four
benchmarks of 20, 40, 80 and 300 examples and computes every benchmark's headline delta (all its
(word, example, draw) pairs, clustered on the example) with each estimator of
``HEADLINE_METHODS``: the clusters ignored, CR1 with a normal quantile, CR1 with t on G - 1, an
example bootstrap hulled with the score interval, CR2 with Bell-McCaffrey degrees of freedom,
CR2 at t hulled with the independent-pairs score interval,
the CR3 hull with the independent-pairs and with the exchangeable working model's df, and the
tables' default (``cr3_floor``: the exchangeable df from 41 examples on).
Designs: ``moderate`` (Lomax shape 3 target words per example, about 4.5 per example), ``heavy``
(shape 1.5, the same mean: a few examples hold 20-60 words), ``sparse`` (shape 3, 1.5 words per
example), ``word-centric`` (the word-table simulator's design at these sizes). Prints coverage, mean width, mean design effect, median df, and how many rows'
interval and printed p-value disagree. Nothing is asserted (figures go to docs/scoring.md;
tests/test_simulate.py runs a small case).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import pandas as pd

from evalpipe.scoring.simulate import HEADLINE_SIZES, HEAVY, MODERATE, SPARSE, Design, run_headline

DESIGNS = {
    "moderate": MODERATE,
    "heavy": HEAVY,
    "sparse": SPARSE,
    "word-centric": Design(
        benchmark_sizes=HEADLINE_SIZES,
        benchmark_accuracy=HEAVY.benchmark_accuracy,
        pairs_range=(5, 400),
        noise=0.2,
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--designs", nargs="+", default=["moderate", "heavy", "sparse"], choices=list(DESIGNS)
    )
    parser.add_argument("--draws", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--noise", type=float, default=None, help="override the designs' noise")
    parser.add_argument("--bootstrap", type=int, default=400)
    args = parser.parse_args()

    pd.set_option("display.width", 200)
    for name in args.designs:
        for draws in args.draws:
            design = replace(DESIGNS[name], draws=draws)
            if args.noise is not None:
                design = replace(design, noise=args.noise)
            start = time.perf_counter()
            table = run_headline(design, replications=args.replications, seed=args.seed,
                                 bootstrap_samples=args.bootstrap)  # fmt: skip
            print(f"\n== {name}, K = {draws} draws, noise {design.noise}: {args.replications} "
                  f"replications ({time.perf_counter() - start:.0f} s)")  # fmt: skip
            print(table.round(3).to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
