"""Adjusted operation effects on planted-effect simulations: type I error, coverage, power.

Run: python perf/adjusted_effects.py [--replications 1000] [--planted 0.1]
         [--examples 300,120,40] [--words 60]

Two designs, each over ``--replications`` simulated studies (tests/adjusted_simulation.py):
words with strong effects that lean to one kind of typo, and (1) no effect of the kind of typo,
(2) ``--planted`` extra flip probability for ``delete`` typos. Per design and per operation it
prints, for the adjusted rows (pooled scope, and per benchmark), the share of replications with
p < 0.05 (the type I error under (1), the power under (2)), the coverage of 0 by the 95% interval
under (1), the mean estimate and interval width; for the marginal rows the mean delta and the
share with McNemar p < 0.05. Nothing is asserted.
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


def run(replications: int, planted: dict[str, float], examples: tuple[int, ...], words: int):
    adjusted, marginal = [], []
    for r in range(replications):
        pairs = simulate_pairs(r, examples=examples, words=words, kind_harm=planted)
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
          f"{'width':>7}   marginal: {'delta':>7} {'p<0.05':>7}")  # fmt: skip
    for (op, scope), rows in adjusted.groupby(["op", "scope"], sort=True):
        rows = rows.dropna(subset=["adjusted_p"])
        covers = ((rows["adjusted_ci_low"] <= 0) & (rows["adjusted_ci_high"] >= 0)).mean()
        width = (rows["adjusted_ci_high"] - rows["adjusted_ci_low"]).mean()
        m = marginal.loc[marginal["op"] == op]
        tail = (
            f"{m['delta'].mean():+7.4f} {(m['p'] < 0.05).mean():7.3f}" if scope == "pooled" else ""
        )
        print(f"{op:8} {scope:9} {len(rows):5} {(rows['adjusted_p'] < 0.05).mean():7.3f} "
              f"{covers:8.3f} {rows['adjusted_delta'].mean():+9.4f} {width:7.4f}   "
              f"          {tail}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--planted", type=float, default=0.1)
    parser.add_argument("--examples", default="300,120,40")
    parser.add_argument("--words", type=int, default=60)
    args = parser.parse_args()
    examples = tuple(int(x) for x in args.examples.split(","))
    for name, planted in [
        ("strong word effects, no operation effect", {}),
        (f"strong word effects, delete typos add {args.planted} flip probability",
         {"delete": args.planted}),
    ]:  # fmt: skip
        started = time.perf_counter()
        adjusted, marginal = run(args.replications, planted, examples, args.words)
        report(name, adjusted, marginal)
        seconds = time.perf_counter() - started
        print(f"({args.replications} replications, benchmarks of {examples} examples, "
              f"{args.words} words, {seconds:.0f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
