"""How long agreement statistics take: 10,000 items x 5 annotators x 4 axes, 1,000 resamples.

    python perf/agreement_speed.py [--items 10000] [--annotators 5] [--bootstrap 1000]

Prints the time of ``agreement_report`` (pairwise quadratic kappa, ordinal alpha, AC2, raw and
within-one agreement, bootstrap CIs of all of them) and of the whole quality run
(``run_quality``: agreement, consensus, outliers, consistency rules). Target: < 10 s for the first.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evalpipe.annotation.agreement import agreement_report
from evalpipe.annotation.quality_run import QualitySettings, run_quality
from evalpipe.annotation.schema import AXES, Annotation, to_long_frame


def synthetic(n_items: int, n_annotators: int, seed: int = 0) -> list[Annotation]:
    """Skewed-toward-1 true scores plus +-1 noise, one annotator biased upward."""
    rng = np.random.default_rng(seed)
    true = rng.choice(5, size=(n_items, len(AXES)), p=[0.5, 0.2, 0.15, 0.1, 0.05]) + 1
    out = []
    for r in range(n_annotators):
        noise = rng.choice([-1, 0, 1], size=true.shape, p=[0.15, 0.7, 0.15]) + (r == 0)
        scores = np.clip(true + noise, 1, 5)
        conf = np.round(rng.uniform(0.5, 1.0, size=true.shape), 2)
        for i in range(n_items):
            out.append(
                Annotation(
                    id=f"item_{i:06d}",
                    annotator_id=f"ann_{r:03d}",
                    timestamp="2025-01-01T00:00:00Z",
                    annotations={a: int(scores[i, k]) for k, a in enumerate(AXES)},
                    confidence={a: float(conf[i, k]) for k, a in enumerate(AXES)},
                )
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--annotators", type=int, default=5)
    ap.add_argument("--bootstrap", type=int, default=1000)
    args = ap.parse_args()
    annotations = synthetic(args.items, args.annotators)
    long = to_long_frame(annotations)
    t0 = time.perf_counter()
    report = agreement_report(long, n_boot=args.bootstrap, seed=42)
    t1 = time.perf_counter()
    settings = QualitySettings(bootstrap_samples=args.bootstrap)
    run_quality(annotations, [], settings)
    t2 = time.perf_counter()
    print(
        f"{args.items} items x {args.annotators} annotators x {len(AXES)} axes, "
        f"{args.bootstrap} bootstrap resamples"
    )
    print(f"agreement_report (all statistics + CIs): {t1 - t0:.2f} s")
    print(f"run_quality (agreement + consensus + outliers + rules): {t2 - t1:.2f} s")
    for axis, v in report["axes"].items():
        print(
            f"  {axis:<10} kappa {v['kappa']:.3f} {v['kappa_ci']}  alpha {v['alpha']:.3f}  "
            f"ac2 {v['ac2']:.3f}  raw {v['raw_agreement']:.3f}"
        )


if __name__ == "__main__":
    main()
