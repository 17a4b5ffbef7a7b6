"""Impact stage speed: the three impact tables on a synthetic study of realistic size.

Run: python perf/impact_speed.py [--benchmarks 9] [--examples 1000] [--words 500]
         [--hits 30]
Each example is hit by ``--hits`` of the ``--words`` target words. Prints one line per
measurement; nothing is asserted (speed is measured here, never in tests).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalpipe.scoring.word_impact import ImpactSettings
from tests.scoring_fixtures import impact_of

OPS = ("replace", "insert", "delete")


def synthetic(benchmarks: int, examples: int, words: int, hits: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    scored, perturbed, languages = {}, {}, {}
    for b in range(benchmarks):
        name = f"bench{b}"
        language = "english" if b < benchmarks // 2 else "japanese"
        correct = rng.random(examples) < 0.6
        ids = np.array([f"{name}-{i:05d}" for i in range(examples)])
        ranks = np.concatenate(
            [rng.choice(words, size=hits, replace=False) + 1 for _ in range(examples)]
        )
        example = np.repeat(np.arange(examples), hits)
        flipped = rng.random(example.size) < 0.15
        fired = rng.integers(1, 4, size=example.size)
        rows = pd.DataFrame({
            "benchmark": name, "example_id": ids[example], "variant": [f"w{r}" for r in ranks],
            "word_rank": ranks, "correct": correct[example] ^ flipped, "model": "m",
            "parse_status": "strict", "occurrences": fired + 1, "perturbed_occurrences": fired,
        })  # fmt: skip
        originals = pd.DataFrame({
            "benchmark": name, "example_id": ids, "variant": "original", "word_rank": 0,
            "correct": correct, "model": "m", "parse_status": "strict", "occurrences": 0,
            "perturbed_occurrences": 0,
        })  # fmt: skip
        scored[name] = pd.concat([originals, rows], ignore_index=True)
        perturbed[name] = pd.DataFrame({
            "benchmark": name, "example_id": rows["example_id"], "word_rank": rows["word_rank"],
            "perturbations": [
                [{"op": OPS[(k + j) % 3], "original_char": "a", "new_char": "b"} for j in range(f)]
                for k, f in enumerate(fired)
            ],
        })  # fmt: skip
        languages[name] = language
    word_list = pd.DataFrame({
        "rank": np.arange(1, words + 1), "word": [f"w{r}" for r in range(1, words + 1)],
        "lemma": None, "pos": None, "score": np.linspace(10, 1, words), "source": "synthetic",
    })  # fmt: skip
    return scored, perturbed, {"english": word_list, "japanese": word_list}, languages


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--benchmarks", type=int, default=9)
    ap.add_argument("--examples", type=int, default=1000)
    ap.add_argument("--words", type=int, default=500)
    ap.add_argument("--hits", type=int, default=30)
    args = ap.parse_args()
    scored, perturbed, words, languages = synthetic(
        args.benchmarks, args.examples, args.words, args.hits
    )
    pairs = sum(len(f) for f in scored.values()) - args.benchmarks * args.examples
    start = time.perf_counter()
    # The pairs tables the score stage would write, then build_impact on them.
    word_table, operations, scripts = impact_of(
        scored, perturbed, words, languages=languages,
        settings=ImpactSettings(level=0.95, small_n=30),
    )  # fmt: skip
    seconds = time.perf_counter() - start
    print(
        f"build_impact: {args.benchmarks} benchmarks x {args.examples} examples, {pairs} pairs, "
        f"{len(word_table)} word rows, {len(operations)} operation rows, {len(scripts)} script "
        f"rows, pairs tables and impact tables: {seconds:.1f} s"
    )


if __name__ == "__main__":
    main()
