"""Adjusted operation effects on planted-effect simulations: type I error, coverage, power.

Run: python perf/adjusted_effects.py [--replications 1000] [--planted 0.1]
         [--examples 300,120,40] [--words 60] [--designs null planted rare tilt]

Two designs, each over ``--replications`` simulated studies (tests/adjusted_simulation.py):
words with strong effects that lean to one kind of typo, and (1) no effect of the kind of typo,
(2) ``--planted`` extra flip probability for ``delete`` typos. Per design and per operation it
prints, for the adjusted rows (pooled scope, and per benchmark), the share of replications with
p < 0.05 (the type I error under (1), the power under (2)), the coverage of 0 by the 95% interval
under (1), the mean estimate and interval width; for the marginal rows the mean delta and the
share with McNemar p < 0.05. Designs ``rare`` (0.5% noise flips, harmful words add 0.05: rare
flips) and ``tilt`` (no operation effect, but ``replace`` drawn more often on fragile examples)
add the reported SE over the empirical SD of the estimate and the share of rows the fragility
diagnostic warns about. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalpipe.scoring.adjusted import adjusted_effects
from evalpipe.scoring.robustness import mcnemar_exact
from tests.adjusted_simulation import simulate_pairs


def run(
    replications: int,
    planted: dict[str, float],
    examples: tuple[int, ...],
    words: int,
    **design: float,
):
    adjusted, marginal = [], []
    for r in range(replications):
        pairs = simulate_pairs(r, examples=examples, words=words, kind_harm=planted, **design)
        table = adjusted_effects(pairs, by="op")
        table["scope"] = np.where(table["scope"] == "pooled", "pooled", "benchmark")
        adjusted.append(table)
        for kind, group in pairs.groupby("op"):
            o, p = group["correct_original"].to_numpy(), group["correct_perturbed"].to_numpy()
            p_value = mcnemar_exact(int((o & ~p).sum()), int((~o & p).sum()))
            marginal.append({"op": kind, "delta": p.mean() - o.mean(), "p": p_value})
    return pd.concat(adjusted, ignore_index=True), pd.DataFrame(marginal)


def report(name: str, adjusted: pd.DataFrame, marginal: pd.DataFrame) -> None:
    print(f"\n== {name}")
    print(f"{'op':8} {'scope':9} {'rows':>5} {'p<0.05':>7} {'covers 0':>8} {'estimate':>9} "
          f"{'width':>7} {'SE/SD':>6} {'warned':>6}   marginal: {'delta':>7} "
          f"{'p<0.05':>7}")  # fmt: skip
    for (op, scope), rows in adjusted.groupby(["op", "scope"], sort=True):
        rows = rows.dropna(subset=["adjusted_p"])
        covers = ((rows["adjusted_ci_low"] <= 0) & (rows["adjusted_ci_high"] >= 0)).mean()
        width = (rows["adjusted_ci_high"] - rows["adjusted_ci_low"]).mean()
        # Reported SE (half-width / t quantile, t ~ 1.97-2.02 here) over the empirical SD of
        # the estimate across replications: below 1, the interval is too narrow.
        se_ratio = (width / 2 / 1.98) / rows["adjusted_delta"].std()
        warned = rows["adjusted_warning"].notna().mean() if "adjusted_warning" in rows else 0.0
        m = marginal.loc[marginal["op"] == op]
        tail = (
            f"{m['delta'].mean():+7.4f} {(m['p'] < 0.05).mean():7.3f}" if scope == "pooled" else ""
        )
        print(f"{op:8} {scope:9} {len(rows):5} {(rows['adjusted_p'] < 0.05).mean():7.3f} "
              f"{covers:8.3f} {rows['adjusted_delta'].mean():+9.4f} {width:7.4f} "
              f"{se_ratio:6.2f} {warned:6.3f}             {tail}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--planted", type=float, default=0.1)
    parser.add_argument("--examples", default="300,120,40")
    parser.add_argument("--words", type=int, default=60)
    parser.add_argument("--designs", nargs="+", default=["null", "planted"],
                        choices=["null", "planted", "rare", "tilt"])  # fmt: skip
    args = parser.parse_args()
    examples = tuple(int(x) for x in args.examples.split(","))
    designs = {
        "null": ("strong word effects, no operation effect", {}, {}),
        "planted": (f"strong word effects, delete typos add {args.planted} flip probability",
                    {"delete": args.planted}, {}),
        # Rare flips: 0.5% noise, harmful words add 0.05 (about 1% of pairs flip).
        "rare": ("rare flips, no operation effect", {},
                 {"noise": 0.005, "word_harm": 0.05}),
        # The first kind (replace) is drawn more often on fragile examples.
        "tilt": ("no operation effect, replace drawn more often on fragile examples", {},
                 {"fragility_tilt": 0.3}),
    }  # fmt: skip
    for key in args.designs:
        name, planted, design = designs[key]
        started = time.perf_counter()
        adjusted, marginal = run(args.replications, planted, examples, args.words, **design)
        report(name, adjusted, marginal)
        seconds = time.perf_counter() - started
        print(f"({args.replications} replications, benchmarks of {examples} examples, "
              f"{args.words} words, {seconds:.0f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
