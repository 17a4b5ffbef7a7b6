"""How big and how slow the report gets at study scale: 500 words per language, 2 languages,
pooled + per-benchmark rows (9 benchmarks), 3 operations, 4 scripts.

    python perf/report_size.py [--words 500] [--benchmarks 9] [--perturbed-rows 500000]

Prints the build time and the size of the HTML (the sortable tables list every row), of the
largest SVG image plot, and the time the typo section takes to pick its examples from a perturbed
set of that many rows (English-like: no conversions, so every row is read).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evalpipe.report import ReportData, ReportOptions, build_figures, build_report
from evalpipe.report.typos import typos_section


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


def synthetic_perturbed(n_rows: int, seed: int = 0) -> pd.DataFrame:
    """A perturbed set shaped like perturb's: one edit per row, four kinds, few distinct typos."""
    rng = np.random.default_rng(seed)
    templates = [
        {"op": "replace", "original": "the", "perturbed": "thr", "position": 2,
         "original_char": "e", "new_char": "r", "rule": "qwerty", "keys": "e->r"},
        {"op": "insert", "original": "and", "perturbed": "anmd", "position": 2,
         "original_char": None, "new_char": "m", "rule": "qwerty", "keys": "n->nm"},
        {"op": "delete", "original": "of", "perturbed": "f", "position": 0,
         "original_char": "o", "new_char": None, "rule": "keyboard", "keys": None},
        {"op": "transpose", "original": "with", "perturbed": "wtih", "position": 1,
         "original_char": "it", "new_char": "ti", "rule": "adjacent", "keys": None},
    ]  # fmt: skip
    picks = rng.integers(0, len(templates), n_rows)
    return pd.DataFrame(
        {
            "benchmark": "mmlu",
            "example_id": [f"{i // 50:06d}" for i in range(n_rows)],
            "word_rank": [i % 50 + 1 for i in range(n_rows)],
            "language": "english",
            "perturbations": [[{"field": "question", **templates[k]}] for k in picks],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--benchmarks", type=int, default=9)
    parser.add_argument("--perturbed-rows", type=int, default=500_000)
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
    perturbed = {"mmlu": synthetic_perturbed(args.perturbed_rows)}
    start = time.perf_counter()
    section = typos_section(summaries={}, perturbed=perturbed)
    picked = time.perf_counter() - start
    shown = section.count('<span class="typo-word">') // 2  # original and perturbed per example
    print(
        f"typo section: {picked:.2f} s for {args.perturbed_rows:,} perturbed rows "
        f"({shown} examples shown)"
    )


if __name__ == "__main__":
    main()
