"""The pairs table at study scale: seconds and peak memory of the score stage's pairing and
groupings and of the impact stage, on synthetic scored views (11 benchmarks x 500 target words,
about 1,000,000 perturbed prompts by default).

Each stage runs in its own process, like the DVC stages, reading and writing Parquet in a
temporary folder, and prints its wall time and peak resident memory:

- ``score``: read the scored views, ``build_pairs`` (pair once), ``build_reports`` (every paired
  figure of the score stage: per-word tables, headline summaries, accuracy by rate), write
  ``pairs.parquet`` and the details (parsing the outputs, ``score_frame``, is
  ``perf/scoring_throughput.py``'s and not counted here);
- ``impact``: read the pairs' columns and the details, ``build_impact`` (words, operations,
  scripts with the adjusted effects), ``model_comparison``, ``top_words``.

    python perf/pairs_scale.py                       # 11 x 1000 examples x 500 words
    python perf/pairs_scale.py --examples 200        # a quicker, smaller run

Nothing is asserted; the figures go into the issue note (target: score + impact + report within
150 s and 8 GB on a 2-core machine).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OPS = np.array(["replace", "insert", "delete", "transpose", "conversion", "mixed"], dtype=object)
SCRIPTS = {"english": np.array(["latin", "digit", "other", "mixed"], dtype=object),
           "japanese": np.array(["hiragana", "katakana", "kanji", "latin", "mixed"], dtype=object)}  # fmt: skip


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_views(folder: Path, *, benchmarks: int, examples: int, words: int, hit: float) -> int:
    """Write synthetic scored views and the word lists; return the number of perturbed rows."""
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(list("abcdefghij klmnopqrstuvwxyz"), size=4000))
    (folder / "scored").mkdir(parents=True, exist_ok=True)
    (folder / "words").mkdir(parents=True, exist_ok=True)
    total = 0
    for b in range(benchmarks):
        name = f"bench{b:02d}"
        language = "english" if b < 6 else "japanese"
        ids = np.array([f"{name}-{i:05d}" for i in range(examples)], dtype=object)
        # which (example, word) pairs a typo hit; frequent words hit more examples
        rates = hit * 2.0 * np.linspace(1.0, 0.05, words) / np.linspace(1.0, 0.05, words).mean() / 2
        hits = rng.random((examples, words)) < rates[None, :]
        ex, w = np.nonzero(hits)
        n = ex.size
        total += n
        correct = rng.random(examples) < 0.6
        flip = rng.random(n) < 0.12
        fired = rng.integers(1, 4, n)
        lengths = rng.integers(200, 1500, examples)
        rows = examples + n
        example = np.r_[np.arange(examples), ex]
        rank = np.r_[np.zeros(examples, dtype=np.int64), w + 1]
        right = np.r_[correct, correct[ex] ^ flip]
        status = np.where(rng.random(rows) < 0.05, "unparsed", "strict").astype(object)
        frame = pd.DataFrame(
            {
                "benchmark": name,
                "example_id": ids[example],
                "variant": np.where(rank == 0, "original", np.char.add("w", rank.astype(str))),
                "word_rank": rank,
                "draw": np.zeros(rows, dtype=np.int32),
                "subtask": None,
                "language": language,
                "n_typos": np.r_[np.zeros(examples, dtype=np.int32), fired.astype(np.int32)],
                "n_edited_chars": np.r_[np.zeros(examples, dtype=np.int32), fired.astype(np.int32)],
                "op": np.r_[np.full(examples, None, dtype=object), rng.choice(OPS, n)],
                "script": np.r_[
                    np.full(examples, None, dtype=object), rng.choice(SCRIPTS[language], n)
                ],
                "occurrences": np.r_[np.zeros(examples, dtype=np.int64), fired + 1],
                "perturbed_occurrences": np.r_[np.zeros(examples, dtype=np.int64), fired],
                "prompt": [text[: int(k)] for k in lengths[example]],
                "output": "The answer is (A).",
                "finish_reason": np.where(rng.random(rows) < 0.02, "length", "stop").astype(object),
                "answer": "A",
                "gold": "A",
                "prediction": np.where(status == "unparsed", None, "A").astype(object),
                "parse_status": status,
                "correct": right & (status != "unparsed"),
                "score": (right & (status != "unparsed")).astype(float),
            }
        )
        frame.to_parquet(folder / "scored" / f"{name}.parquet")
    for language in ("english", "japanese"):
        pd.DataFrame(
            {
                "rank": np.arange(1, words + 1),
                "word": [f"w{r}" for r in range(1, words + 1)],
                "lemma": None,
                "pos": None,
                "score": np.linspace(9.0, 1.0, words),
                "source": "synthetic",
            }
        ).to_parquet(folder / "words" / f"{language}.parquet")
    return total


def run_score(folder: Path) -> str:
    from evalpipe import atomic
    from evalpipe.scoring.pairs import build_pairs
    from evalpipe.scoring.summaries import build_reports

    start = time.perf_counter()
    scored = {p.stem: pd.read_parquet(p) for p in sorted((folder / "scored").glob("*.parquet"))}
    read = time.perf_counter() - start
    t = time.perf_counter()
    pairs = build_pairs(scored, model="synthetic")
    paired = time.perf_counter() - t
    t = time.perf_counter()
    reports = build_reports(scored, pairs, classification={}, level=0.95, margin=0.02)
    grouped = time.perf_counter() - t
    t = time.perf_counter()
    atomic.write_parquet(folder / "pairs.parquet", pairs)
    atomic.write_json(folder / "robustness_details.json", reports.robustness)
    written = time.perf_counter() - t
    return (
        f"score   {time.perf_counter() - start:6.1f} s (read {read:.1f}, build_pairs {paired:.1f}, "
        f"groupings {grouped:.1f}, write {written:.1f}); {len(pairs)} pairs; "
        f"peak {_peak_mb():.0f} MB"
    )


def run_impact(folder: Path) -> str:
    from evalpipe.scoring.comparison import model_comparison
    from evalpipe.scoring.word_impact import (
        IMPACT_PAIR_COLUMNS,
        ImpactSettings,
        build_impact,
        top_words,
    )

    start = time.perf_counter()
    pairs = pd.read_parquet(folder / "pairs.parquet", columns=IMPACT_PAIR_COLUMNS)
    details = json.loads((folder / "robustness_details.json").read_text())
    words = {lang: pd.read_parquet(folder / "words" / f"{lang}.parquet")
             for lang in ("english", "japanese")}  # fmt: skip
    n_base = pd.DataFrame(
        [("synthetic", view, stats["n_examples"]) for view, stats in details.items()],
        columns=["model", "view", "n_base"],
    )
    read = time.perf_counter() - start
    t = time.perf_counter()
    table, operations, scripts = build_impact(
        pairs, words, n_base=n_base, settings=ImpactSettings(level=0.95, small_n=30)
    )
    for language in words:
        top_words(table, language=language, top_n=20)
    model_comparison({"synthetic": details})
    built = time.perf_counter() - t
    return (
        f"impact  {time.perf_counter() - start:6.1f} s (read {read:.1f}, tables {built:.1f}); "
        f"{len(table)} word rows, {len(operations)} operation rows, {len(scripts)} script rows; "
        f"peak {_peak_mb():.0f} MB"
    )


@click.command()
@click.option("--benchmarks", default=11, show_default=True)
@click.option("--examples", default=1000, show_default=True, help="examples per benchmark")
@click.option("--words", default=500, show_default=True, help="target words per benchmark")
@click.option("--hit", default=0.18, show_default=True, help="mean share of examples a word hits")
@click.option("--stage", type=click.Choice(["score", "impact"]), default=None, hidden=True)
@click.option("--folder", type=click.Path(path_type=Path), default=None, hidden=True)
def main(benchmarks, examples, words, hit, stage, folder) -> None:
    """Time the pairs table's stages at study scale."""
    if stage is not None:
        click.echo(run_score(folder) if stage == "score" else run_impact(folder))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        n = make_views(folder, benchmarks=benchmarks, examples=examples, words=words, hit=hit)
        click.echo(
            f"synthetic: {benchmarks} benchmarks x {examples} examples x {words} words -> "
            f"{n} perturbed prompts ({time.perf_counter() - start:.0f} s to make)"
        )
        env = {"PYTHONPATH": str(ROOT / "src")}
        for name in ("score", "impact"):
            out = subprocess.run(
                [sys.executable, __file__, "--stage", name, "--folder", str(folder)],
                capture_output=True,
                text=True,
                env={**__import__("os").environ, **env},
                check=True,
            )
            click.echo(out.stdout.strip())


if __name__ == "__main__":
    main()
