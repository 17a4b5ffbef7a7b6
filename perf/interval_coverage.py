"""Coverage of the word-table intervals on planted-effect studies, beside a percentile bootstrap.

Run: python perf/interval_coverage.py [--replications 1000] [--noise 0.5]
         [--background-harm 0.0] [--draws 1] [--bootstrap 1000] [--methods ...] [--seed 0]

Each replication draws a study with known truth (:mod:`evalpipe.scoring.simulate`: 4 benchmarks of
600/300/120/40 examples, 60 words with 5-500 expected pairs, 10% of them with a planted harm of
0.3) and runs the estimators of ``data/impact/words.parquet`` on it. Prints, per interval method
and n-band of the word's pairs: rows, coverage of the true delta, mean width, zero-width
intervals, BH rejections and false ones (Tarone-screened BH of the score p, and plain BH of the
exact McNemar p), planted words whose interval excludes 0 and that BH rejects,
rows whose interval and p disagree (score p, and the exact McNemar p); then the BH false
discovery rate and Holm's family-wise error rate, on the design and under the global null (no
planted word). The comparison method is the clustered,
stratified percentile bootstrap (``cluster_bootstrap``). Nothing is
asserted (figures go to docs/scoring-studies.md; the tests run a fast small case). Last, the headline
deltas (per benchmark, all words' pairs, one example paired once per word): coverage with the
example clusters' design effect and ignoring it.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from evalpipe.scoring.intervals import METHODS
from evalpipe.scoring.simulate import BOOTSTRAP, Design, run, run_headline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument(
        "--noise",
        type=float,
        default=0.5,
        help="share of perturbed answers redrawn from the example's accuracy",
    )
    parser.add_argument(
        "--background-harm",
        type=float,
        default=0.0,
        help="harm of the words without a planted effect",
    )
    parser.add_argument("--draws", type=int, default=1, help="typo draws per (example, word)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--methods", nargs="+", default=[BOOTSTRAP, *METHODS])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-null", action="store_true", help="the planted design only")
    parser.add_argument(
        "--skip-headline",
        action="store_true",
        help="word rows only (perf/headline_coverage.py has the headline designs)",
    )
    args = parser.parse_args()  # fmt: skip

    pd.set_option("display.width", 200)
    studies = (("design", 0.1),) if args.skip_null else (("design", 0.1), ("global null", 0.0))
    for label, planted in studies:
        design = Design(
            noise=args.noise,
            planted_share=planted,
            # The global null plants nothing anywhere, background effects included.
            background_harm=args.background_harm if planted else 0.0,
            draws=args.draws,
        )
        methods = args.methods if planted else [m for m in args.methods if m != BOOTSTRAP][:1]
        start = time.perf_counter()
        bands, fdr = run(
            design,
            replications=args.replications,
            seed=args.seed,
            methods=methods,
            bootstrap_samples=args.bootstrap,
        )
        seconds = time.perf_counter() - start
        print(
            f"\n== {label}: {args.replications} replications, noise {args.noise}, "
            f"background harm {design.background_harm}, draws {args.draws} ({seconds:.0f} s)"
        )
        print(bands.round(4).to_string(index=False))
        print(fdr.round(4).to_string(index=False))
        if planted and not args.skip_headline:
            start = time.perf_counter()
            headline = run_headline(design, replications=args.replications, seed=args.seed)
            print(f"\n-- headline deltas (all words' pairs per benchmark, clustered on the "
                  f"example; {time.perf_counter() - start:.0f} s)")  # fmt: skip
            print(headline.round(4).to_string(index=False))


if __name__ == "__main__":
    main()
