"""Coverage of the arms' intervals with a known truth, before and after: the perplexity ratio
(a clustered mean of skewed per-pair log-ratios), the ladder's ``delta_vs_reference`` (rare
flips), and the share of the typo loss a defence wins back (``recovered``).

Run: python perf/arm_coverage.py [--replications 400] [--seed 0] [--part means ladder recovered]

The studies are :mod:`evalpipe.scoring.simulate_arms`'s (20 / 40 / 80 / 300 examples, K = 1 and
4 typo draws, moderate and heavy-tailed words per example). Each cell prints the share of
studies whose interval holds the truth; its Monte Carlo standard error is
``sqrt(0.95 * 0.05 / replications)`` (0.011 at 400). ``recovered`` also prints the headline
``delta_typo``'s coverage, with the default df and with ``df_model="exchangeable"``
(``delta_typo_exch_cov``). Nothing is asserted; the figures go to docs/scoring.md.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.scoring.intervals import DF_EXCHANGEABLE, paired_score
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.ratio_interval import fieller_interval
from evalpipe.scoring.score_mean import score_mean_interval
from evalpipe.scoring.simulate_arms import (
    HEAVY,
    LADDER_KINDS,
    MEAN_KINDS,
    MODERATE,
    RECOVERED_KINDS,
    SIZES,
    ladder_study,
    mean_study,
    recovered_study,
)
from evalpipe.scoring.skewed_mean import (
    bootstrap_t_mean_interval,
    hall_mean_interval,
    tail_augmented_mean_interval,
)
from evalpipe.seeding import hashed_seed

LEVEL = 0.95
CLUSTERS = {"moderate": MODERATE, "heavy": HEAVY}


@dataclass(frozen=True)
class Cell:
    """One cell of a part's grid, with its own seeded generator."""

    kind: str
    shape: str
    clusters: object
    draws: int
    examples: int
    rng: np.random.Generator

    def study(self, draw: Callable[..., Any]) -> Any:
        """One simulated study of this cell's design (the next draw of its generator)."""
        return draw(self.kind, self.rng, examples=self.examples, clusters=self.clusters,
                    draws=self.draws)  # fmt: skip

    def labels(self) -> dict:
        return {"design": self.kind, "clusters": self.shape, "K": self.draws,
                "examples": self.examples}  # fmt: skip


def cells(part: str, kinds: tuple, seed: int, only: argparse.Namespace) -> Iterator[Cell]:
    """The chosen designs x cluster shapes x draws x sizes of one part, in that order."""
    for kind in [k for k in kinds if k in only.kinds or not only.kinds]:
        for shape, clusters in CLUSTERS.items():
            if only.clusters and shape not in only.clusters:
                continue
            for draws in only.draws:
                for examples in only.sizes:
                    rng = np.random.default_rng(
                        hashed_seed(seed, part, kind, shape, draws, examples)
                    )
                    yield Cell(kind, shape, clusters, draws, examples, rng)


def means(replications: int, seed: int, only: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for cell in cells("means", MEAN_KINDS, seed, only):
        names = ["cr2_t", "hall_t", "bootstrap_t", "guarded", "tail_augmented"]
        hits: dict[str, list[float]] = {k: [] for k in names}
        miss_low: dict[str, int] = dict.fromkeys(hits, 0)
        widths: dict[str, list[float]] = {k: [] for k in hits}
        for r in range(replications):
            study = cell.study(mean_study)
            d, truth = study.values["d"], study.truth["d"]
            boot_seed = hashed_seed(seed, r, cell.examples)
            results = {
                "cr2_t": clustered_mean_interval(d, study.clusters, level=LEVEL),
                "hall_t": hall_mean_interval(d, study.clusters, level=LEVEL),
                "bootstrap_t": bootstrap_t_mean_interval(
                    d,
                    study.clusters,
                    level=LEVEL,
                    seed=boot_seed,
                    samples=only.bootstrap_samples,
                    guard=False,
                ),
                "guarded": bootstrap_t_mean_interval(
                    d, study.clusters, level=LEVEL, seed=boot_seed, samples=only.bootstrap_samples
                ),
                "tail_augmented": tail_augmented_mean_interval(
                    d, study.clusters, level=LEVEL, seed=boot_seed, samples=only.bootstrap_samples
                ),
            }
            for name, res in results.items():
                hits[name].append(res.low <= truth <= res.high)
                miss_low[name] += truth > res.high
                widths[name].append(res.high - res.low)
        for name in hits:
            rows.append({**cell.labels(), "estimator": name,
                         "coverage": float(np.mean(hits[name])),
                         "truth_above": miss_low[name] / replications,
                         "width": float(np.mean(widths[name]))})  # fmt: skip
    return pd.DataFrame(rows)


def ladder(replications: int, seed: int, only: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for cell in cells("ladder", LADDER_KINDS, seed, only):
        out = {"cr2_t": [], "score": []}
        for _ in range(replications):
            s = cell.study(ladder_study)
            v = s.values
            diff = (v["p_var"].astype(float) - v["o_var"]) - (v["p_ref"].astype(float) - v["o_ref"])
            truth = s.truth["delta_vs_reference"]
            for name, res in (
                ("cr2_t", clustered_mean_interval(diff, s.clusters, level=LEVEL)),
                ("score", score_mean_interval(diff, s.clusters, level=LEVEL)),
            ):
                out[name].append((res.low <= truth + 1e-12 and truth - 1e-12 <= res.high,
                                  res.high - res.low))  # fmt: skip
        for name, got in out.items():
            arr = np.array(got, dtype=float)
            rows.append({**cell.labels(), "estimator": name,
                         "coverage": float(arr[:, 0].mean()),
                         "zero_width": float((arr[:, 1] <= 1e-12).mean()),
                         "width": float(arr[:, 1].mean())})  # fmt: skip
    return pd.DataFrame(rows)


def recovered(replications: int, seed: int, only: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for cell in cells("recovered", RECOVERED_KINDS, seed, only):
        share, points, loss, loss_exch, fieller, reported = [], [], [], [], [], []
        for _ in range(replications):
            s = cell.study(recovered_study)
            c, t, d = s.values["clean"], s.values["typo"], s.values["defended"]
            lost = c.mean() - t.mean()
            share.append((d.mean() - t.mean()) / lost if lost > 0 else math.nan)
            ps = paired_score(t, d, clusters=s.clusters, level=LEVEL)
            points.append(ps.low <= s.truth["points"] <= ps.high)
            ls = paired_score(c, t, clusters=s.clusters, level=LEVEL)
            loss.append(ls.low <= -s.truth["loss"] <= ls.high)
            lx = paired_score(c, t, clusters=s.clusters, level=LEVEL, df_model=DF_EXCHANGEABLE)
            loss_exch.append(lx.low <= -s.truth["loss"] <= lx.high)
            show = ls.high < 0
            f = fieller_interval(d.astype(float) - t, c.astype(float) - t,
                                 s.clusters, level=LEVEL)  # fmt: skip
            show = show and f.bounded
            reported.append(show)
            if show:
                fieller.append(f.low <= s.truth["share"] <= f.high)
        sh = np.array(share)
        rows.append({**cell.labels(),
                     "share_undefined": float(np.isnan(sh).mean()),
                     "share_outside_0_1": float(((sh < 0) | (sh > 1)).mean()),
                     "share_sd": float(np.nanstd(sh)),
                     "share_median": float(np.nanmedian(sh)),
                     "delta_typo_cov": float(np.mean(loss)),
                     "delta_typo_exch_cov": float(np.mean(loss_exch)),
                     "points_cov": float(np.mean(points)),
                     "share_reported": float(np.mean(reported)),
                     "fieller_cov": float(np.mean(fieller)) if fieller else math.nan})  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", nargs="+", default=["means", "ladder", "recovered"])
    parser.add_argument("--kinds", nargs="*", default=[], help="designs (default: all)")
    parser.add_argument(
        "--clusters", nargs="*", default=[], help="moderate / heavy (default: both)"
    )
    parser.add_argument("--draws", nargs="+", type=int, default=[1, 4])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--bootstrap-samples", type=int, default=999, help="of the bootstrap-t")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 500)
    se = math.sqrt(0.95 * 0.05 / args.replications)
    print(f"{args.replications} studies per cell; Monte Carlo SE of a 0.95 coverage: {se:.4f}")
    for part in args.part:
        table = {"means": means, "ladder": ladder, "recovered": recovered}[part](
            args.replications, args.seed, args
        )
        print(f"\n== {part}")
        if part == "recovered":
            print(table.round(3).to_string(index=False))
            continue
        keys = ["design", "clusters", "K", "estimator"]
        wide = table.pivot_table(index=keys, columns="examples", values="coverage", sort=False)
        print(wide.round(3).to_string())
        extra = "truth_above" if part == "means" else "zero_width"
        print(
            table.pivot_table(index=keys, columns="examples", values=extra, sort=False)
            .round(3)
            .to_string()
        )
        if part == "means":
            print("mean width / CR2 t's")
            width = table.pivot_table(index=keys, columns="examples", values="width", sort=False)
            base = width.xs("cr2_t", level="estimator")
            print(
                width.div(base.reindex(width.index.droplevel("estimator")).to_numpy())
                .round(2)
                .to_string()
            )


if __name__ == "__main__":
    main()
