"""Coverage of the CR2 t interval of a clustered mean (``clustered_mean_interval``), the interval
of the perplexity log-ratio and of the ladder's difference of paired deltas, on studies whose
truth is known.

Run: python perf/mean_interval_coverage.py [--replications 1000] [--seed 0]

Each replication draws ``G`` examples (20, 40, 80, 300). Example g holds ``1 + floor(2 X)``
pairs, X ~ Lomax(shape) (``moderate`` shape 3, ``heavy`` shape 1.5: a few examples hold 20-60
pairs); its values are ``mu + u_g + e``, with an example effect ``u_g`` shared by its pairs and a
pair noise ``e`` (normal, or skewed: centred log-normal, as log-ratios of rare large changes are).
The truth is ``mu``. Prints coverage, bias and mean width per design and size. Nothing is
asserted; the figures go to docs/scoring.md.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalpipe.scoring.mean_interval import clustered_mean_interval

SIZES = (20, 40, 80, 300)
SHAPES = {"moderate": 3.0, "heavy": 1.5}


def _noise(rng: np.random.Generator, kind: str, size: int, scale: float) -> np.ndarray:
    if kind == "normal":
        return rng.normal(0.0, scale, size)
    draws = rng.lognormal(0.0, 1.0, size)  # skewed: mean exp(0.5), centred
    return scale * (draws - np.exp(0.5)) / np.sqrt((np.e - 1.0) * np.e)


def replicate(rng: np.random.Generator, *, examples: int, shape: float, noise: str) -> tuple:
    pairs = 1 + np.floor(2.0 * rng.pareto(shape, examples)).astype(int)
    clusters = np.repeat(np.arange(examples), pairs)
    effect = _noise(rng, noise, examples, 0.3)[clusters]
    values = 0.1 + effect + _noise(rng, noise, clusters.size, 0.2)
    r = clustered_mean_interval(values, clusters, level=0.95)
    return r.mean, r.low, r.high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for design, shape in SHAPES.items():
        for noise in ("normal", "skewed"):
            for examples in SIZES:
                out = np.array(
                    [
                        replicate(rng, examples=examples, shape=shape, noise=noise)
                        for _ in range(args.replications)
                    ],
                    dtype=float,
                )
                mean, low, high = out.T
                rows.append(
                    {
                        "design": design,
                        "noise": noise,
                        "examples": examples,
                        "coverage": float(np.mean((low <= 0.1) & (high >= 0.1))),
                        "bias": float(np.mean(mean) - 0.1),
                        "width": float(np.mean(high - low)),
                    }
                )
    pd.set_option("display.width", 160)
    print(pd.DataFrame(rows).round(4).to_string(index=False))


if __name__ == "__main__":
    main()
