"""Coverage of the perplexity ratio's interval and of the headline delta on a second generator
(:mod:`evalpipe.scoring.simulate_skew`: Zipf words per example, longer texts holding more target
words, log-normal typo costs shared by a word's draws, rare flips on a few fragile examples).

Run: python perf/skew_coverage.py [--replications 300] [--seed 0] [--part perplexity flips]

Per cell (words per example realistic / heavy, typo cost skew realistic / strong, K = 1 or 4
draws, 20 / 40 / 80 / 300 examples): the share of studies whose 95% interval holds the truth,
and the median width relative to the CR2 t interval's. Estimators of the mean log-ratio: the CR2
t interval, Hall's skewness-corrected t, the plain cluster bootstrap-t, the guarded one (never
narrower than the CR2 t interval on either side) and the tail-augmented one (each side at least
where the guarded one lies with the sample's most extreme example on that side counted twice:
what ``perplexity_summary`` reports), with the share of studies whose truth lies above each.
Flips: the headline's clustered Tango interval (``paired_score``) on the delta, with the
independent-pairs degrees of freedom, with ``df_model="exchangeable"`` and with the default
``df_model="auto"`` (exchangeable from 41 examples on; the share of studies whose truth lies
below the interval, and the median width relative to the independent-pairs one's are printed
too). Monte Carlo
standard error of a 0.95 coverage: ``sqrt(0.95 * 0.05 / replications)``. Nothing is asserted;
the figures go to docs/scoring.md.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from evalpipe.scoring.intervals import DF_AUTO, DF_EXCHANGEABLE, DF_INDEPENDENT, paired_score
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.simulate_skew import FLIPS, SIZES, SKEW, WORDS, flips_study, perplexity_study
from evalpipe.scoring.skewed_mean import (
    bootstrap_t_mean_interval,
    hall_mean_interval,
    tail_augmented_mean_interval,
)
from evalpipe.seeding import hashed_seed

LEVEL = 0.95
# The headline's clustered Tango interval with the df of each working model (cluster_correction);
# tango_auto is paired_score's default.
FLIP_ESTIMATORS = {
    "tango_clustered": DF_INDEPENDENT,
    "tango_exchangeable_df": DF_EXCHANGEABLE,
    "tango_auto": DF_AUTO,
}


def perplexity(args: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for words in args.words:
        for skew in args.skews:
            for draws in args.draws:
                for examples in args.sizes:
                    rng = np.random.default_rng(hashed_seed(args.seed, "ppl", words, skew, draws, examples))  # fmt: skip
                    got: dict[str, list[tuple[bool, float]]] = {}
                    for r in range(args.replications):
                        s = perplexity_study(rng, examples=examples, draws=draws, words=words, skew=skew)  # fmt: skip
                        d, cl, seed = s.values["d"], s.clusters, hashed_seed(args.seed, r, examples)
                        results = {
                            "cr2_t": clustered_mean_interval(d, cl, level=LEVEL),
                            "hall_t": hall_mean_interval(d, cl, level=LEVEL),
                            "bootstrap_t": bootstrap_t_mean_interval(
                                d, cl, level=LEVEL, seed=seed, samples=args.bootstrap_samples,
                                guard=False,
                            ),
                            "guarded": bootstrap_t_mean_interval(
                                d, cl, level=LEVEL, seed=seed, samples=args.bootstrap_samples
                            ),
                            "tail_augmented": tail_augmented_mean_interval(
                                d, cl, level=LEVEL, seed=seed, samples=args.bootstrap_samples
                            ),
                        }  # fmt: skip
                        for name, res in results.items():
                            hit = res.low <= s.truth <= res.high
                            above = s.truth > res.high
                            got.setdefault(name, []).append((hit, res.high - res.low, above))
                    base = float(np.median([w for _, w, _ in got["cr2_t"]]))
                    for name, triples in got.items():
                        arr = np.array(triples, dtype=float)
                        rows.append({"words": words, "skew": skew, "K": draws,
                                     "examples": examples, "estimator": name,
                                     "coverage": float(arr[:, 0].mean()),
                                     "truth_above": float(arr[:, 2].mean()),
                                     "width": float(np.median(arr[:, 1])) / base})  # fmt: skip
                    if args.progress:
                        print(pd.DataFrame(rows[-len(got):]).to_string(header=False, index=False), flush=True)  # fmt: skip
    return pd.DataFrame(rows)


def flips(args: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for kind in FLIPS:
        for words in WORDS:
            for draws in args.draws:
                for examples in args.sizes:
                    rng = np.random.default_rng(hashed_seed(args.seed, "flips", kind, words, draws, examples))  # fmt: skip
                    got: dict[str, list[tuple[bool, bool, float]]] = {}
                    for _ in range(args.replications):
                        s = flips_study(rng, examples=examples, draws=draws, words=words, kind=kind)
                        for name, model in FLIP_ESTIMATORS.items():
                            ps = paired_score(s.values["clean"], s.values["typo"], clusters=s.clusters, level=LEVEL, df_model=model)  # fmt: skip
                            hit = ps.low - 1e-12 <= s.truth <= ps.high + 1e-12
                            below = s.truth < ps.low - 1e-12
                            got.setdefault(name, []).append((hit, below, ps.high - ps.low))
                    base = float(np.median([w for _, _, w in got["tango_clustered"]]))
                    for name, triples in got.items():
                        arr = np.array(triples, dtype=float)
                        rows.append({"design": kind, "words": words, "K": draws, "examples": examples,
                                     "estimator": name, "coverage": float(arr[:, 0].mean()),
                                     "truth_below": float(arr[:, 1].mean()),
                                     "width": float(np.median(arr[:, 2])) / base})  # fmt: skip
                    if args.progress:
                        print(pd.DataFrame(rows[-len(got):]).to_string(header=False, index=False), flush=True)  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", nargs="+", default=["perplexity", "flips"])
    parser.add_argument("--draws", nargs="+", type=int, default=[1, 4])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--bootstrap-samples", type=int, default=999)
    parser.add_argument("--skews", nargs="+", default=list(SKEW))
    parser.add_argument("--words", nargs="+", default=list(WORDS), help="perplexity part only")
    parser.add_argument("--progress", action="store_true", help="print each cell as it ends")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    se = math.sqrt(0.95 * 0.05 / args.replications)
    print(f"{args.replications} studies per cell; Monte Carlo SE of a 0.95 coverage: {se:.4f}")
    for part in args.part:
        table = {"perplexity": perplexity, "flips": flips}[part](args)
        keys = [
            c
            for c in table.columns
            if c not in ("examples", "coverage", "width", "truth_below", "truth_above")
        ]
        print(f"\n== {part}: coverage")
        wide = table.pivot_table(index=keys, columns="examples", values="coverage", sort=False)
        print(wide.round(3).to_string())
        for side in ("below", "above"):
            if f"truth_{side}" in table:
                print(f"\n== {part}: share of studies with the truth {side} the interval")
                wide = table.pivot_table(
                    index=keys, columns="examples", values=f"truth_{side}", sort=False
                )
                print(wide.round(3).to_string())
        if "width" in table:
            base = "CR2 t's" if part == "perplexity" else "tango_clustered's"
            print(f"\n== {part}: median width / {base}")
            wide = table.pivot_table(index=keys, columns="examples", values="width", sort=False)
            print(wide.round(2).to_string())


if __name__ == "__main__":
    main()
