"""Coverage of the format spread's interval (1 - (max - min) of the variants' accuracies) with a
known truth, by examples and design (:func:`evalpipe.scoring.formats.simulate_spread`: one latent
ability per example shared by its variants, each variant's accuracy planted).

Run: python perf/format_spread_coverage.py [--replications 200] [--seed 0] [--samples 500]

Each cell prints the share of studies whose interval holds the truth and the mean bias of the
estimate; the Monte Carlo standard error of a coverage is ``sqrt(0.95 * 0.05 / replications)``
(0.015 at 200). Nothing is asserted; the figures go to docs/scoring-studies.md.
"""

from __future__ import annotations

import argparse

from evalpipe.scoring.formats import simulate_spread

DESIGNS = {  # name: each variant's accuracy
    "none (4 variants equal)": (0.7, 0.7, 0.7, 0.7),
    "small (one variant +0.05)": (0.75, 0.7, 0.7, 0.7),
    "position bias (0.8 .. 0.6)": (0.8, 0.7, 0.6, 0.7),
    "two variants, 0.1 apart": (0.6, 0.5),
}
SIZES = (20, 40, 80, 300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=500)
    args = parser.parse_args()
    print(f"level 0.95, {args.replications} replications, {args.samples} bootstrap samples")
    print("design | truth | " + " | ".join(f"n={n} coverage (bias)" for n in SIZES))
    for name, accuracies in DESIGNS.items():
        cells, truth = [], 0.0
        for n in SIZES:
            sim = simulate_spread(
                examples=n,
                accuracies=accuracies,
                level=0.95,
                reps=args.replications,
                seed=args.seed,
                samples=args.samples,
            )
            truth = sim["truth"]
            cells.append(f"{sim['coverage']:.3f} ({sim['bias']:+.3f})")
        print(f"{name} | {truth:.2f} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
