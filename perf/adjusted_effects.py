"""Adjusted operation effects on planted-effect simulations: type I error, coverage, power.

Run: python perf/adjusted_effects.py [--replications 1000] [--planted 0.1]
         [--examples 300,120,40] [--words 60] [--designs null planted rare tilt draws]
         [--compare cr1 cr2 cr2h cr3]

Designs, each over ``--replications`` simulated studies (tests/adjusted_simulation.py): words
with strong effects that lean to one kind of typo, and (null) no effect of the kind of typo,
(planted) ``--planted`` extra flip probability for ``delete`` typos, (rare) rare flips (0.5% noise,
harmful words add 0.05), (tilt) no operation effect but ``replace`` drawn more often on fragile
examples, (draws) rare flips with four typo draws per (example, word) and heavy-tailed counts of
words per example. Per design, operation and scope (pooled, each benchmark) it prints, for the
adjusted rows, the share of replications with p < 0.05 (the type I error without an effect, the
power with one), the coverage of 0 by the 95% interval, the mean estimate and interval width, the
mean reported SE over the empirical SD of the estimate, and the share of rows the fragility
diagnostic warns about; for the marginal rows the mean delta and the share with McNemar p < 0.05.
The first line per operation and scope (starred) is the tables' own columns; ``--compare`` adds
the other variance methods of evalpipe.scoring.adjusted.VARIANCES computed on the same fits.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalpipe.scoring.adjusted import VARIANCE, VARIANCES, adjusted_effects
from evalpipe.scoring.robustness import mcnemar_exact
from tests.adjusted_simulation import simulate_pairs


def run(
    replications: int,
    planted: dict[str, float],
    examples: tuple[int, ...],
    words: int,
    compare: tuple[str, ...] = (),
    **design: float,
):
    adjusted, marginal = [], []
    for r in range(replications):
        pairs = simulate_pairs(r, examples=examples, words=words, kind_harm=planted, **design)
        table = adjusted_effects(pairs, by="op", compare=compare)
        adjusted.append(table)
        for kind, group in pairs.groupby("op"):
            o, p = group["correct_original"].to_numpy(), group["correct_perturbed"].to_numpy()
            p_value = mcnemar_exact(int((o & ~p).sum()), int((~o & p).sum()))
            marginal.append({"op": kind, "delta": p.mean() - o.mean(), "p": p_value})
    return pd.concat(adjusted, ignore_index=True), pd.DataFrame(marginal)


def report(
    name: str, adjusted: pd.DataFrame, marginal: pd.DataFrame, compare: tuple[str, ...] = ()
) -> None:
    """Per operation and scope (pooled, each benchmark): the tables' rows, then each variance
    method of ``compare`` applied to the same fits (same estimates, its own SE and t df)."""
    from scipy import stats

    print(f"\n== {name}")
    print(f"{'op':8} {'scope':7} {'variance':8} {'rows':>5} {'p<0.05':>7} {'covers 0':>8} "
          f"{'estimate':>9} {'width':>7} {'SE/SD':>6} {'warned':>6}   marginal: {'delta':>7} "
          f"{'p<0.05':>7}")  # fmt: skip
    for (op, scope), rows in adjusted.groupby(["op", "scope"], sort=True):
        rows = rows.dropna(subset=["adjusted_p"])
        sd = rows["adjusted_delta"].std()
        warned = rows["adjusted_warning"].notna().mean()
        m = marginal.loc[marginal["op"] == op]
        tail = (
            f"{m['delta'].mean():+7.4f} {(m['p'] < 0.05).mean():7.3f}" if scope == "pooled" else ""
        )
        methods = [(f"{VARIANCE}*", None)] + [(c, c) for c in compare if c != VARIANCE]
        for label, method in methods:
            if method is None:  # the tables' own columns
                low, high, p = rows["adjusted_ci_low"], rows["adjusted_ci_high"], rows["adjusted_p"]
                se = rows[f"se_{VARIANCE}"]
            else:
                se, dof = rows[f"se_{method}"], rows[f"dof_{method}"]
                half = stats.t.ppf(0.975, dof) * se
                low, high = rows["adjusted_delta"] - half, rows["adjusted_delta"] + half
                p = 2 * stats.t.sf(np.abs(rows["adjusted_delta"]) / se, dof)
            covers = ((low <= 0) & (high >= 0)).mean()
            # mean reported SE over the empirical SD of the estimate across replications:
            # below 1, the interval is too narrow
            print(f"{op:8} {scope:7} {label:8} {len(rows):5} {(p < 0.05).mean():7.3f} "
                  f"{covers:8.3f} {rows['adjusted_delta'].mean():+9.4f} {(high - low).mean():7.4f} "
                  f"{se.mean() / sd:6.2f} {warned:6.3f}             {tail}")  # fmt: skip
            tail = ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--planted", type=float, default=0.1)
    parser.add_argument("--examples", default="300,120,40")
    parser.add_argument("--words", type=int, default=60)
    parser.add_argument("--designs", nargs="+", default=["null", "planted"],
                        choices=["null", "planted", "rare", "tilt", "draws"])  # fmt: skip
    parser.add_argument("--compare", nargs="*", default=[], choices=VARIANCES,
                        help="variance methods to compare on the same fits")  # fmt: skip
    args = parser.parse_args()
    examples = tuple(int(x) for x in args.examples.split(","))
    designs = {
        "null": ("strong word effects, no operation effect", {}, {}),
        "planted": (f"strong word effects, delete typos add {args.planted} flip probability",
                    {"delete": args.planted}, {}),
        # Rare flips: 0.5% noise, harmful words add 0.05 (about 1% of pairs flip).
        "rare": ("rare flips, no operation effect", {},
                 {"noise": 0.005, "word_harm": 0.05}),
        # Rare flips with four typo draws per (example, word) and heavy-tailed counts of words
        # per example (log-normal hit rate, sd 1).
        "draws": ("rare flips, 4 draws per word, heavy-tailed words per example, no operation "
                  "effect", {}, {"noise": 0.005, "word_harm": 0.05, "draws": 4, "hit_spread": 1.0}),
        # The first kind (replace) is drawn more often on fragile examples.
        "tilt": ("no operation effect, replace drawn more often on fragile examples", {},
                 {"fragility_tilt": 0.3}),
    }  # fmt: skip
    for key in args.designs:
        name, planted, design = designs[key]
        started = time.perf_counter()
        compare = tuple(dict.fromkeys([VARIANCE, *args.compare]))
        adjusted, marginal = run(
            args.replications, planted, examples, args.words, compare=compare, **design
        )
        report(name, adjusted, marginal, compare)
        seconds = time.perf_counter() - started
        print(f"({args.replications} replications, benchmarks of {examples} examples, "
              f"{args.words} words, {seconds:.0f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
