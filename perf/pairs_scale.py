"""The pairs table at study scale: seconds and peak memory of the score stage's pairing and
groupings, of the impact stage and of the report stage, on synthetic scored views (11 benchmarks x
500 target words, about 1,000,000 perturbed prompts by default).

Each stage runs in its own process, like the DVC stages, on a temporary project folder laid out
as the pipeline's (``params.yaml``, ``data/scored/<model>/``, ``data/words/``, ``data/impact/``,
``plots/``, ``reports/``), and prints its wall time and peak resident memory:

- ``score``: read the scored views, ``build_pairs`` (pair once), ``build_reports`` (every paired
  figure of the score stage: per-word tables, headline summaries, accuracy by rate), write
  ``pairs.parquet``, the details, the headline metrics and the plot tables (parsing the outputs,
  ``score_frame``, is ``perf/scoring_throughput.py``'s and not counted here, nor is writing the
  scored views back);
- ``impact``: the impact stage itself (``stages/impact.py`` on the folder): the word, operation
  and script tables with the adjusted effects, the dose response, the top words and the model
  comparison;
- ``report``: the report stage itself (``stages/report.py build`` on the folder): its data
  loading, the HTML report and the SVG figures.

    python perf/pairs_scale.py                       # 11 x 1000 examples x 500 words
    python perf/pairs_scale.py --examples 200        # a quicker, smaller run
    python perf/pairs_scale.py --examples 200 --keep /tmp/pairs200   # keep the folder (reused
                                                     # by the next run: only the stages rerun)
    python perf/pairs_scale.py --outputs             # generate's outputs, the real score stage
    python perf/pairs_scale.py --outputs --examples 10000 --only score   # 10,000,000 prompts

With ``--outputs`` the folder holds synthetic generate outputs instead of scored views
(``data/outputs/<model>/<benchmark>.parquet`` with generate's columns, the answers as text such as
"The answer is (A).", and a local multiple-choice spec per benchmark under
``data/raw/benchmarks/``), and ``score`` is the score stage itself (``stages/score.py`` on the
folder: parsing, pairing, groupings and every file it writes, in the layout the impact and report
stages read). Runs over 2 GB belong under ``flock /tmp/evalpipe-bigmem.lock`` on a shared machine.

The seconds of a stage are its process's wall time (interpreter start and imports included).
Nothing is asserted; the figures go into the issue note (target: score + impact + report within
150 s and 8 GB on a 2-core machine).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parents[1]
MODEL = "synthetic"
OPS = np.array(["replace", "insert", "delete", "transpose", "conversion", "mixed"], dtype=object)
SCRIPTS = {"english": np.array(["latin", "digit", "other", "mixed"], dtype=object),
           "japanese": np.array(["hiragana", "katakana", "kanji", "latin", "mixed"], dtype=object)}  # fmt: skip
STAGES = ("score", "impact", "report")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _edits(ops: np.ndarray, words: np.ndarray) -> pa.Array:
    """One typo record per perturbed row (the perturb stage's ``perturbations`` column)."""
    n = ops.size
    single = np.where(ops == "mixed", "replace", ops).astype(object)
    word = np.char.add("w", words.astype(str)).astype(object)
    structs = pa.StructArray.from_arrays(
        [
            pa.array(np.full(n, "question", dtype=object), pa.string()),
            pa.array(np.zeros(n, dtype=np.int32), pa.int32()),
            pa.array(np.zeros(n, dtype=np.int32), pa.int32()),
            pa.array(np.full(n, 2, dtype=np.int32), pa.int32()),
            pa.array(word, pa.string()),
            pa.array(np.char.add(word.astype(str), "x").astype(object), pa.string()),
            pa.array(single, pa.string()),
            pa.array(np.ones(n, dtype=np.int32), pa.int32()),
            pa.array(np.full(n, "w", dtype=object), pa.string()),
            pa.array(np.full(n, "x", dtype=object), pa.string()),
            pa.array(np.full(n, "uniform", dtype=object), pa.string()),
            pa.array(np.full(n, None, dtype=object), pa.string()),
            pa.array(np.full(n, None, dtype=object), pa.string()),
        ],
        names=["field", "occurrence", "start", "end", "original", "perturbed", "op", "position",
               "original_char", "new_char", "rule", "keys", "reading"],
    )  # fmt: skip
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), structs)


def make_views(
    folder: Path,
    *,
    benchmarks: int,
    examples: int,
    words: int,
    hit: float,
    draws: int = 1,
    flips: Callable[..., np.ndarray] | None = None,
    outputs: bool = False,
) -> int:
    """Write a project folder with synthetic scored views, the word lists and the params;
    return the number of perturbed rows.

    ``draws``: typo draws per (example, word) hit (one perturbed row each). ``flips``: which
    perturbed rows changed correctness, ``flips(rng, benchmark, example, word, correct)`` with
    the benchmark's index, each row's example and word index (0-based) and its example's
    original correctness; None: 12% of rows at random (``perf/verdict_agreement.py`` plants
    word effects with it). ``outputs``: write the generate stage's outputs instead
    (``data/outputs/<model>/<benchmark>.parquet``, the answers as text for the score stage to
    parse) and a local spec per benchmark (``data/raw/benchmarks/<benchmark>/spec.yaml``)."""
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(list("abcdefghij klmnopqrstuvwxyz"), size=4000))
    scored = folder / "data" / "scored" / MODEL
    scored.mkdir(parents=True, exist_ok=True)
    (folder / "data" / "words").mkdir(parents=True, exist_ok=True)
    total = 0
    summaries = {}
    for b in range(benchmarks):
        name = f"bench{b:02d}"
        language = "english" if b < 6 else "japanese"
        ids = np.array([f"{name}-{i:05d}" for i in range(examples)], dtype=object)
        # which (example, word) pairs a typo hit; frequent words hit more examples
        rates = hit * 2.0 * np.linspace(1.0, 0.05, words) / np.linspace(1.0, 0.05, words).mean() / 2
        hits = rng.random((examples, words)) < rates[None, :]
        ex, w = np.nonzero(hits)
        draw = np.tile(np.arange(draws, dtype=np.int32), ex.size)
        ex, w = np.repeat(ex, draws), np.repeat(w, draws)
        n = ex.size
        total += n
        correct = rng.random(examples) < 0.6
        flip = rng.random(n) < 0.12 if flips is None else flips(rng, b, ex, w, correct[ex])
        fired = rng.integers(1, 4, n)
        lengths = rng.integers(200, 1500, examples)
        rows = examples + n
        example = np.r_[np.arange(examples), ex]
        rank = np.r_[np.zeros(examples, dtype=np.int64), w + 1]
        right = np.r_[correct, correct[ex] ^ flip]
        status = np.where(rng.random(rows) < 0.05, "unparsed", "strict").astype(object)
        ops = rng.choice(OPS, n)
        prediction = np.where(status == "unparsed", None, np.where(right, "A", "B")).astype(object)
        frame = pd.DataFrame(
            {
                "benchmark": name,
                "example_id": ids[example],
                "variant": np.where(rank == 0, "original", np.char.add("w", rank.astype(str))),
                "word_rank": rank,
                "draw": np.r_[np.zeros(examples, dtype=np.int32), draw],
                "condition": "typo",  # the plain typo arm (evalpipe.arms)
                "subtask": None,
                "language": language,
                "n_typos": np.r_[np.zeros(examples, dtype=np.int32), fired.astype(np.int32)],
                "n_edited_chars": np.r_[np.zeros(examples, dtype=np.int32), fired.astype(np.int32)],
                "op": np.r_[np.full(examples, None, dtype=object), ops],
                "script": np.r_[
                    np.full(examples, None, dtype=object), rng.choice(SCRIPTS[language], n)
                ],
                "occurrences": np.r_[np.zeros(examples, dtype=np.int64), fired + 1],
                "perturbed_occurrences": np.r_[np.zeros(examples, dtype=np.int64), fired],
                # the edited words' tokens before / after (generate's counts): the token split
                "tokens_before": np.r_[np.zeros(examples, dtype=np.int32), fired.astype(np.int32)],
                "tokens_after": np.r_[
                    np.zeros(examples, dtype=np.int32),
                    (fired + rng.integers(0, 3, n)).astype(np.int32),
                ],
                "prompt": [text[: int(k)] for k in lengths[example]],
                "output": "The answer is (A).",
                "finish_reason": np.where(rng.random(rows) < 0.02, "length", "stop").astype(object),
                "answer": "A",
                "gold": "A",
                "prediction": prediction,
                "parse_status": status,
                "correct": right & (status != "unparsed"),
                "score": (right & (status != "unparsed")).astype(float),
            }
        )
        if outputs:
            frame = _as_outputs(frame, language)
            _write_spec(folder, name, language)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        del frame
        edits = pa.concat_arrays(
            [pa.nulls(examples, _edits(ops[:1], w[:1]).type), _edits(ops, w + 1)]
        )
        table = table.append_column("perturbations", edits)
        target = folder / "data" / "outputs" / MODEL if outputs else scored
        target.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target / f"{name}.parquet")
        del table
        operations = {op: int((ops == op).sum()) for op in OPS if op != "mixed"}
        summaries[name] = {"benchmark": name, "language": language, "model": "uniform",
                           "operations": operations, "occurrences": int(fired.sum() + n),
                           "perturbed_occurrences": int(fired.sum()), "draws": draws}  # fmt: skip
    summary_dir = folder / "data" / "outputs" / MODEL if outputs else scored
    (summary_dir / "perturbation.json").write_text(json.dumps(summaries, indent=1, sort_keys=True))
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
        ).to_parquet(folder / "data" / "words" / f"{language}.parquet")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["models"] = {MODEL: {"name": "tiny-random"}}
    params["benchmarks"]["suites"] = {
        f"bench{b:02d}": "english" if b < 6 else "japanese" for b in range(benchmarks)
    }
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (folder / "rows.txt").write_text(str(total))
    return total


# What the generate stage writes besides the scored columns (evalpipe.inference.generate's
# OUTPUT_COLUMNS), for a multiple-choice benchmark answered with "The answer is (X)."
_ANSWERS = {"A": "The answer is (A).", "B": "The answer is (B).", None: "I am not sure."}


def _as_outputs(frame: pd.DataFrame, language: str) -> pd.DataFrame:
    """A synthetic scored view as the generate stage's outputs: the scored columns dropped, each
    answer written as text the ``choice_letter`` parser reads back (unparsed rows as text it
    cannot read), and generate's bookkeeping columns."""
    prediction = frame["prediction"]
    text = np.where(
        prediction.isna(), _ANSWERS[None], np.where(prediction == "A", _ANSWERS["A"], _ANSWERS["B"])
    )
    n = len(frame)
    out = frame.drop(columns=["gold", "prediction", "parse_status", "correct", "score"])
    out["output"] = pd.Series(text, dtype=object)
    out["prompt_hash"] = [f"{i:016x}" for i in range(n)]
    out["prompt_tokens"] = out["prompt"].str.len().to_numpy() // 4
    out["output_tokens"] = np.full(n, 6, dtype=np.int64)
    out["model"] = MODEL
    out["model_id"] = MODEL
    out["from_cache"] = False
    out["task_type"] = "mc"
    out["answers"] = None
    out["labels"] = None
    return out


def _write_spec(folder: Path, name: str, language: str) -> None:
    """A local multiple-choice benchmark spec for ``name`` (the score stage reads its answer
    type and labels)."""
    spec = folder / "data" / "raw" / "benchmarks" / name / "spec.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(
        f"include: [{language}, local]\n"
        "description: synthetic multiple choice (perf/pairs_scale.py)\n"
        "task_type: mc\n"
        f"version: {name} v1\n"
        "labels: [A, B, C, D]\n"
        "sources:\n  files: {reader: json, test: [test.jsonl]}\n"
        "mapping: {id: id, fields: {Question: question}, choices: choices, answer: answer}\n"
        "answer: {type: choice_letter, digit_map: null}\n",
        encoding="utf-8",
    )


def run_score_stage(folder: Path) -> str:
    """The score stage itself (``stages/score.py`` on the folder): parsing, pairing, groupings
    and every file it writes."""
    from stages.score import main as stage

    args = ["--params", str(folder / "params.yaml"), "--root", str(folder)]
    stage.main(args, standalone_mode=False)
    pairs = pq.ParquetFile(folder / "data" / "scored" / MODEL / "pairs.parquet").metadata.num_rows
    return f"{pairs} pairs"


def run_score(folder: Path) -> str:
    """The score stage after parsing: pair, group, write (as ``stages.score.score_model``)."""
    from evalpipe import atomic
    from evalpipe.paths import ProjectPaths
    from evalpipe.scoring.pairs import build_pairs
    from evalpipe.scoring.summaries import build_reports

    paths = ProjectPaths(folder)
    start = time.perf_counter()
    scored_dir = paths.scored_dir(MODEL)
    scored = {
        p.stem: pd.read_parquet(p).drop(columns="perturbations")
        for p in sorted(scored_dir.glob("bench*.parquet"))
    }
    read = time.perf_counter() - start
    t = time.perf_counter()
    pairs = build_pairs(scored, model=MODEL, source_dir=str(scored_dir))
    paired = time.perf_counter() - t
    t = time.perf_counter()
    reports = build_reports(scored, pairs, classification={}, level=0.95, margin=0.02)
    grouped = time.perf_counter() - t
    t = time.perf_counter()
    atomic.write_parquet(paths.pairs(MODEL), pairs)
    atomic.write_json(paths.scored_details("robustness", MODEL), reports.robustness)
    atomic.write_json(paths.scored_details("classification", MODEL), reports.classification)
    for name, headline in reports.headline.items():
        atomic.write_json(paths.headline_metrics(name, MODEL), headline)
    plots = paths.model_plots(MODEL)
    atomic.write_csv(plots / "word_accuracy_drop.csv", reports.word_accuracy_drop)
    atomic.write_csv(plots / "confusion.csv", reports.confusion)
    atomic.write_csv(plots / "accuracy_by_rate.csv", reports.accuracy_by_rate)
    written = time.perf_counter() - t
    return (
        f"(read {read:.1f}, build_pairs {paired:.1f}, groupings {grouped:.1f}, "
        f"write {written:.1f}); {len(pairs)} pairs"
    )


def run_stage(name: str, folder: Path) -> str:
    if name == "score":
        if (folder / "data" / "outputs" / MODEL).is_dir():
            return run_score_stage(folder)
        return run_score(folder)
    args = ["--params", str(folder / "params.yaml"), "--root", str(folder)]
    if name == "impact":
        from stages.impact import main as stage
    else:
        from stages.report import main as stage

        args = ["build", *args]
    stage.main(args, standalone_mode=False)
    return ""


@click.command()
@click.option("--benchmarks", default=11, show_default=True)
@click.option("--examples", default=1000, show_default=True, help="examples per benchmark")
@click.option("--words", default=500, show_default=True, help="target words per benchmark")
@click.option("--hit", default=0.18, show_default=True, help="mean share of examples a word hits")
@click.option(
    "--keep",
    type=click.Path(path_type=Path),
    default=None,
    help="Project folder to keep (made when it holds no views yet; else its views are reused).",
)
@click.option(
    "--outputs",
    is_flag=True,
    help="Write synthetic generate outputs and time the real score stage (parsing included) "
    "instead of the pairing and groupings of synthetic scored views.",
)
@click.option(
    "--only",
    "only",
    type=click.Choice(STAGES),
    multiple=True,
    help="Run only these stages (repeatable); default: all three.",
)
@click.option("--stage", type=click.Choice(STAGES), default=None, hidden=True)
@click.option("--folder", type=click.Path(path_type=Path), default=None, hidden=True)
def main(benchmarks, examples, words, hit, keep, outputs, only, stage, folder) -> None:
    """Time the pairs table's stages at study scale."""
    if stage is not None:
        start = time.perf_counter()
        detail = run_stage(stage, folder)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        # one line the parent parses: seconds in the stage's code, CPU seconds of the process,
        # peak resident MB, detail
        click.echo(
            f"@@ {time.perf_counter() - start:.3f} {usage.ru_utime + usage.ru_stime:.3f} "
            f"{_peak_mb():.0f} {detail}"
        )
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        if (folder / "rows.txt").exists():
            n = int((folder / "rows.txt").read_text())
            click.echo(f"synthetic: reusing {folder} ({n} perturbed prompts)")
        else:
            start = time.perf_counter()
            n = make_views(
                folder,
                benchmarks=benchmarks,
                examples=examples,
                words=words,
                hit=hit,
                outputs=outputs,
            )
            made = "generate outputs" if outputs else "scored views"
            click.echo(
                f"synthetic {made}: {benchmarks} benchmarks x {examples} examples x {words} "
                f"words -> {n} perturbed prompts ({time.perf_counter() - start:.0f} s to make)"
            )
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        total, total_cpu, peak = 0.0, 0.0, 0.0
        for name in [s for s in STAGES if not only or s in only]:
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, __file__, "--stage", name, "--folder", str(folder)],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
            )
            wall = time.perf_counter() - start
            if out.returncode:
                raise click.ClickException(f"stage {name} failed:\n{out.stderr[-3000:]}")
            line = next(x for x in out.stdout.splitlines() if x.startswith("@@ "))
            inner, cpu, mb, detail = [*line[3:].split(" ", 3), ""][:4]
            total += wall
            total_cpu += float(cpu)
            peak = max(peak, float(mb))
            click.echo(
                f"{name:7s} {wall:6.1f} s (in the stage's code {float(inner):.1f}; CPU "
                f"{float(cpu):.1f} s) peak {float(mb):6.0f} MB {detail}".rstrip()
            )
        click.echo(
            f"total   {total:6.1f} s (CPU {total_cpu:.1f} s), peak {peak:.0f} MB "
            "(target: 150 s, 8192 MB; on a loaded machine the CPU seconds compare better)"
        )


if __name__ == "__main__":
    main()
