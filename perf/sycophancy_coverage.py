"""Coverage of the sycophancy estimates on planted studies, beside ppi_py and the judge alone.

Run: python perf/sycophancy_coverage.py [--replications 1000] [--seed 0] [--biases 0.0 0.6]

Each replication draws a study with known truth (:mod:`evalpipe.sycophancy.simulate`: two models
paired on the dialogues, ratings piled up at 1, a judge with planted bias and noise 0.7, a uniform
random human sample) at the sizes users run (20-200 human-rated, 200-5,000 judge-rated
dialogues). Prints per size, judge bias, target (model 0, model 1, their paired difference) and
statistic the coverage and mean width of: ``ppi`` (the pipeline's PPI++: leave-one-out weights,
t interval), ``ppi_plugin`` (the same estimator in the reference package's form), ``ppi_py``
(the package itself, ``ppi_mean_ci``, on the same draws, when installed), ``human`` (the human
sample alone) and ``judge`` (the judge alone). Then the alternative annotator test's acceptance
rate for an unbiased and a biased judge. Nothing is asserted; the tests run small cases.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evalpipe.sycophancy.simulate import alt_test_replication, coverage_table


def _ppi_py_reference():
    try:
        import ppi_py
    except ImportError:
        return None

    def reference(y, f, fu, confidence):
        low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=1 - confidence)
        point = ppi_py.ppi_mean_pointestimate(y, f, fu)
        return (float(np.ravel(point)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0]))

    return reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--biases", type=float, nargs="+", default=[0.0, 0.6])
    parser.add_argument("--alt-replications", type=int, default=100)
    args = parser.parse_args()

    reference = _ppi_py_reference()
    started = time.perf_counter()
    table = coverage_table(
        biases=args.biases, replications=args.replications, seed=args.seed, reference=reference
    )
    table["estimator"] = table["estimator"].replace({"reference": "ppi_py"})
    wide = table.pivot_table(
        index=["judge_bias", "n_human", "n_judged", "target", "statistic"],
        columns="estimator",
        values=["coverage", "width"],
    )
    order = [
        e for e in ("ppi", "ppi_plugin", "ppi_py", "human", "judge") if e in set(table["estimator"])
    ]
    wide = wide.reindex(columns=pd.MultiIndex.from_product([["coverage", "width"], order]))
    pd.set_option("display.width", 200)
    print(
        f"coverage of the planted truth, {args.replications} replications per row (95% intervals)"
    )
    print(wide.round(3).to_string())
    if reference is None:
        print("(ppi_py not installed: pip install ppi-python for its column)")
    gain = table[table["estimator"].isin(["ppi", "human"])].pivot_table(
        index=["judge_bias", "n_human", "n_judged", "statistic"],
        columns="estimator",
        values="width",
    )
    print("\nmean width, humans alone / PPI (how much the judge narrows the interval):")
    print((gain["human"] / gain["ppi"]).round(2).to_string())

    rng = np.random.default_rng(args.seed)
    print("\nalternative annotator test (epsilon 0.15, 4 annotators with noise 0.6, 80 items):")
    for bias, noise in ((0.0, 0.3), (0.0, 0.6), (0.6, 0.6), (1.0, 0.3)):
        runs = [
            alt_test_replication(
                rng,
                n_items=80,
                n_annotators=4,
                annotator_noise=0.6,
                bias=bias,
                noise=noise,
                epsilon=0.15,
            )
            for _ in range(args.alt_replications)
        ]
        accepted = np.mean([r["verdict"] == "accept" for r in runs])
        rate = np.mean([r["winning_rate"] for r in runs])
        print(
            f"  judge bias {bias:+.1f} noise {noise:.1f}: accepted {accepted:.2f}, mean winning rate {rate:.2f}"
        )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
