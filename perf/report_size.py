"""How big and how slow the report gets at study scale: 500 words per language, 2 languages,
pooled + per-benchmark rows (9 benchmarks), 3 operations, 4 scripts.

    python perf/report_size.py [--words 500] [--benchmarks 9]

Prints the build time and the size of the HTML (the sortable tables list every row) and of the
largest SVG image plot.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evalpipe.report import ReportData, ReportOptions, build_figures, build_report


def synthetic_words(n_words: int, n_benchmarks: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for language, per_lang in (
        ("english", n_benchmarks // 2),
        ("japanese", n_benchmarks - n_benchmarks // 2),
    ):
        scopes = ["pooled"] + [f"bench{i}" for i in range(per_lang)]
        for scope in scopes:
            for rank in range(1, n_words + 1):
                n = int(rng.integers(3, 400))
                delta = float(rng.normal(-0.02, 0.05))
                half = 1.96 * 0.5 / np.sqrt(n)
                rows.append(
                    {
                        "model": "m@abc",
                        "language": language,
                        "source": "wordfreq",
                        "scope": scope,
                        "word": f"w{rank}",
                        "variant": f"w{rank}",
                        "lemma": None,
                        "pos": None,
                        "rank": rank,
                        "frequency_score": 10.0 / rank,
                        "occurrences": n * 2,
                        "perturbed_occurrences": n,
                        "n": n,
                        "accuracy_original": 0.6,
                        "accuracy_perturbed": 0.6 + delta,
                        "delta": delta,
                        "ci_low": delta - half,
                        "ci_high": delta + half,
                        "pdr": -delta / 0.6,
                        "flip_c2i": 0.1,
                        "flip_i2c": 0.05,
                        "n_c2i": 10,
                        "n_i2c": 5,
                        "mcnemar_p": 0.3,
                        "p_holm": 1.0,
                        "p_bh": 0.9,
                        "per_occurrence_impact": delta / n,
                        "small_n": n < 30,
                    }
                )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--benchmarks", type=int, default=9)
    args = parser.parse_args()
    words = synthetic_words(args.words, args.benchmarks)
    data = ReportData(provenance={"models": ["m@abc"]}, words=words)
    start = time.perf_counter()
    page = build_report(data, ReportOptions())
    built = time.perf_counter() - start
    start = time.perf_counter()
    figures = build_figures(data, ReportOptions(), languages=["english", "japanese"])
    drawn = time.perf_counter() - start
    print(f"word rows: {len(words):,}")
    print(f"report: {built:.2f} s, {len(page.encode('utf-8')) / 1e6:.1f} MB")
    largest = max(len(s.encode("utf-8")) for s in figures.values())
    print(f"figures: {drawn:.2f} s, largest SVG {largest / 1e3:.1f} kB")


if __name__ == "__main__":
    main()
