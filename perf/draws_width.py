"""What an extra typo draw buys: word-table interval width and coverage for perturb.draws K.

Run: python perf/draws_width.py [--replications 1000] [--draws 1 2 4] [--noise 0.5] [--seed 0]

Each replication draws a planted-effect study (:mod:`evalpipe.scoring.simulate`: 4 benchmarks of
600/300/120/40 examples, 60 words with 5-500 expected examples, 10% of them with a planted harm
of 0.3) with K typo draws per (example, word): every draw redraws the perturbed answer's noise
and harm, the original answer stays the example's. The word rows are the impact stage's (Tango
score interval with the example clusters' design effect). Prints, per n-band of the word's
examples and K: rows, coverage of the true delta, mean width, and the width relative to K = 1.
Nothing is asserted (figures go to docs/scoring.md; tests/test_draws_pairing.py runs a fast case).
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from evalpipe.scoring.simulate import Design, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--draws", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--noise",
        type=float,
        default=0.5,
        help="share of perturbed answers redrawn from the example's accuracy",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()  # fmt: skip

    pd.set_option("display.width", 200)
    tables = []
    for k in args.draws:
        start = time.perf_counter()
        bands, fdr = run(Design(noise=args.noise, draws=k), replications=args.replications,
                         seed=args.seed)  # fmt: skip
        print(f"draws {k}: {args.replications} replications in {time.perf_counter() - start:.0f} s, "
              f"BH FDR {fdr['bh_fdr'].iloc[0]:.4f}")  # fmt: skip
        tables.append(bands.assign(draws=k))
    table = pd.concat(tables, ignore_index=True)
    table = table.loc[table["band"] != "<2"]
    first = table.loc[table["draws"] == args.draws[0]].set_index("band")["mean_width"]
    table["width_vs_first"] = table["mean_width"] / table["band"].map(first)
    order = {band: i for i, band in enumerate(dict.fromkeys(tables[0]["band"]))}
    table = table.sort_values(["band", "draws"], key=lambda c: c.map(order) if c.name == "band"
                              else c, kind="stable")  # fmt: skip
    columns = ["band", "draws", "rows", "coverage", "mean_width", "width_vs_first", "zero_width"]
    print(f"\nnoise {args.noise}; width_vs_first: mean width / mean width at draws "
          f"{args.draws[0]} in the same n-band (examples per word)")  # fmt: skip
    print(table[columns].round(4).to_string(index=False))


if __name__ == "__main__":
    main()
