"""Speed, memory and size of the perturb stage at full benchmark scale, on synthetic inputs.

Inputs are generated offline and reproducibly: words drawn from wordfreq with their frequencies
(numpy Generator with a fixed seed), shaped like the benchmarks they stand for:

- english: MMLU scale, 14,042 examples, a ~70-word question (perturbable) and four short choices
  (not perturbable), 500 target words (wordfreq's top 500).
- japanese: JSQuAD scale, 4,442 examples, a ~440-character context and a ~60-character question
  (both perturbable, so ~500 characters), 500 target words: wordfreq's top 500 matched by surface
  ("surface" list), and a BCCWJ-like list of the 500 most frequent (lemma, POS) pairs of the
  synthetic text itself, matched by UniDic lemma ("lemma" list).

Each case runs in a fresh subprocess so its peak RSS (ru_maxrss) is its own; for Japanese it
includes the pages of the mmapped UniDic dictionary (~210 MiB). Timed: perturbation (including
UniDic tokenisation) and the Parquet write, as wall time and as process CPU time: on a shared,
oversubscribed machine the wall time mostly measures the wait for a core (the 1-minute load
average is printed), while the CPU time measures the code. Also: scaling from 1k to 14k examples, and
the speed ratio against a straightforward per-word regex loop (one case-insensitive \\b regex per
target word, searched in every example) on the same input.

    python perf/perturb_speed.py            # everything (a few minutes on 2 cores)
    python perf/perturb_speed.py --quick    # smaller scales, for a smoke run
    python perf/perturb_speed.py --upstream DIR   # also the upstream study, side by side
    python perf/perturb_speed.py --upstream DIR --alone-only --language japanese  # one input
    python perf/perturb_speed.py --models [--files DIR]   # typo models side by side

With ``--models``, the typo models run side by side on MMLU and JSQuAD at full size with
wordfreq's top 500 words: ``uniform`` (replace/insert/delete 0.2 each, the default) against
``keyboard`` with transpositions (and, for Japanese, conversions) at the same total rate of 0.6,
split in MulTypo's operation mix (see ``HUMAN_MIX``). Inputs: the publishers' files in
``DIR/mmlu`` and ``DIR/jsquad`` (default data/raw/benchmarks, the layout of ``benchmarks.source:
files``) when they are there, else the synthetic MMLU- and JSQuAD-shaped inputs above (the line
says which). Each (input, model) runs in a fresh process, alternating, ``--repeats`` times; the
medians of the perturbation CPU and wall time are printed with their ratio, then a chi-square
test of the drawn operation kinds (and no typo) against the configured probabilities.

With ``--upstream DIR`` (a checkout of Maxel31/typo-robustness-analysis, branch
refactor/module-reorganization; never part of this repository) both implementations run as whole
processes (interpreter start-up and imports included) on the same examples and the same 500 words,
alternating, and the medians are compared. No figure about the upstream code is printed without
running it here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.perturb import Probabilities, perturb_frame
from evalpipe.perturb.ops import occurrence_digest
from evalpipe.words import read_wordfreq, word_list

PROBS = Probabilities(0.2, 0.2, 0.2)
# perturb_frame's worker processes (--jobs; the outputs do not depend on it)
try:
    from evalpipe.perturb.parallel import usable_cores

    JOBS = usable_cores()  # as the stage
except ImportError:  # --baseline-src: a checkout without worker processes
    JOBS = 1


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended (perturb_frame's workers)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


SEED = 42

# The upstream study's perturbation (github.com/Maxel31/typo-robustness-analysis, branch
# refactor/module-reorganization), run from a checkout given with --upstream: its own
# generate_perturbed_data on the same examples and the same word list, one JSON file per word.
UPSTREAM_DRIVER = """
import json, sys
from pathlib import Path
from src.perturbation.benchmark_perturbator import OriginalBenchmarkData, generate_perturbed_data
inp, out = Path(sys.argv[1]), Path(sys.argv[2])
spec = json.loads((inp / "upstream.json").read_text(encoding="utf-8"))
data = OriginalBenchmarkData(spec["name"], spec["language"], spec["text_field"], spec["examples"])
generate_perturbed_data(data, spec["words"], None, out, 0.2, 0.2, 0.2, 42, case_sensitive=False)
"""
# The upstream's perturbation alone, in-process: its perturb_benchmark for every word (what
# generate_perturbed_data calls), timed after start-up and input reading, without the JSON files.
UPSTREAM_ALONE_DRIVER = """
import json, sys, time
from pathlib import Path
from src.perturbation.benchmark_perturbator import BenchmarkPerturbator, OriginalBenchmarkData
inp = Path(sys.argv[1])
spec = json.loads((inp / "upstream.json").read_text(encoding="utf-8"))
data = OriginalBenchmarkData(spec["name"], spec["language"], spec["text_field"], spec["examples"])
p = BenchmarkPerturbator(data.benchmark_name, data.language, 0.2, 0.2, 0.2, 42)
t0, c0 = time.perf_counter(), time.process_time()
rows = 0
for i, word in enumerate(spec["words"]):
    out = p.perturb_benchmark(data.examples, word, data.text_field, i, False, data.search_end_field)
    rows += len(out.examples)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "rows": rows}))
"""


def _vocab(language: str, size: int) -> tuple[list[str], np.ndarray]:
    cand = read_wordfreq(language).sort_values(["score", "word"], ascending=[False, True])
    cand = cand.head(size)
    p = cand["score"].to_numpy(dtype="float64")
    return cand["word"].tolist(), p / p.sum()


def _rows(name: str, language: str, fields: list[dict], choices: list | None) -> pd.DataFrame:
    n = len(fields)
    return pd.DataFrame(
        {
            "benchmark": [name] * n,
            "example_id": [f"{i:06d}" for i in range(n)],
            "subtask": [None] * n,
            "language": [language] * n,
            "task_type": ["mc" if choices else "extractive_qa"] * n,
            "fields": [json.dumps(f, ensure_ascii=False, sort_keys=True) for f in fields],
            "perturbable": [sorted(k for k in f if k != "choices_text") for f in fields],
            "choices": choices if choices else [None] * n,
            "answer": ["A"] * n,
            "answers": [["A"]] * n,
            "labels": [["A", "B", "C", "D"]] * n if choices else [None] * n,
        }
    )


def english_input(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """MMLU-shaped synthetic examples and the top-500 English wordfreq list."""
    words, p = _vocab("english", 20000)
    rng = np.random.default_rng(SEED)
    lengths = rng.integers(30, 111, size=n)
    draws = rng.choice(len(words), size=int(lengths.sum()) + 20 * n, p=p)
    fields, choices, k = [], [], 0
    for length in lengths:
        toks = [words[j] for j in draws[k : k + length]]
        k += length
        toks[0] = toks[0].capitalize()
        sentence = " ".join(toks)
        # commas and a question mark, roughly where a real question has them
        sentence = re.sub(r"((?:\S+ ){12})", r"\1, ", sentence).replace(" , ", ", ")
        fields.append({"question": sentence + "?"})
        opts = []
        for _ in range(4):
            opts.append(" ".join(words[j] for j in draws[k : k + 5]))
            k += 5
        choices.append(opts)
    bench = _rows("mmlu_synthetic", "english", fields, choices)
    return bench, word_list("english", "wordfreq", raw_dir=".", top_n=500)


def japanese_input(n: int, kind: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """JSQuAD-shaped synthetic examples and a 500-word list (surface or lemma entries)."""
    words, p = _vocab("japanese", 20000)
    rng = np.random.default_rng(SEED + 1)
    draws = rng.choice(len(words), size=n * 320, p=p)
    fields, k = [], 0

    def text(chars: int) -> str:
        nonlocal k
        out, size = [], 0
        while size < chars:
            piece = "".join(words[j] for j in draws[k : k + 12]) + "。"
            k += 12
            out.append(piece)
            size += len(piece)
        return "".join(out)[:chars]

    for _ in range(n):
        fields.append({"context": text(440), "question": text(60)})
    bench = _rows("jsquad_synthetic", "japanese", fields, None)
    if kind == "surface":
        return bench, word_list("japanese", "wordfreq", raw_dir=".", top_n=500)
    from collections import Counter

    from evalpipe.perturb import Tokenizer

    tok = Tokenizer()
    counts: Counter[tuple[str, str]] = Counter()
    for f in fields[:500]:
        for t in tok.tokens(f["context"]):
            if t.lemma and len(t.lemma) >= 2:
                counts[(t.lemma, "-".join(t.pos.split("-")[:2]))] += 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:500]
    wl = pd.DataFrame(
        {
            "rank": range(1, len(top) + 1),
            "word": [k[0] for k, _ in top],
            "lemma": [k[0] for k, _ in top],
            "pos": [k[1] for k, _ in top],
            "score": [float(c) for _, c in top],
        }
    )
    return bench, wl


def naive_english(bench: pd.DataFrame, words: pd.DataFrame) -> int:
    """The straightforward loop: one regex per word, searched in every example; returns rows."""
    texts = [json.loads(f)["question"] for f in bench["fields"]]
    ids = bench["example_id"].tolist()
    rows = 0
    total = PROBS.total
    for word in words["word"]:
        pattern = re.compile(r"\b" + re.escape(word) + r"\b", re.IGNORECASE)
        for example_id, text in zip(ids, texts, strict=True):
            matches = list(pattern.finditer(text))
            if not matches:
                continue
            rng = random.Random(occurrence_digest(SEED, "b", example_id, word, "question", 0))
            pieces, cursor, fired = [], 0, 0
            for m in matches:
                w = m.group()
                if rng.random() < total:
                    i = rng.randrange(len(w))
                    op = rng.choices(("replace", "insert", "delete"), (0.2, 0.2, 0.2))[0]
                    c = rng.choice("abcdefghijklmnopqrstuvwxyz")
                    w = (
                        w[:i] + c + w[i + 1 :]
                        if op == "replace"
                        else w[:i] + c + w[i:]
                        if op == "insert"
                        else w[:i] + w[i + 1 :]
                    )
                    fired += 1
                pieces.append(text[cursor : m.start()] + w)
                cursor = m.end()
            if fired:
                rows += 1
                json.dumps({"question": "".join(pieces) + text[cursor:]}, ensure_ascii=False)
    return rows


def run_case(case: str, n: int, naive: bool) -> dict:
    """One measurement (in this process): build input, perturb, write, report."""
    if case == "english":
        bench, words = english_input(n)
    else:
        bench, words = japanese_input(n, case.split("-")[1])
    rss_input = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    result = perturb_frame(bench, words, probabilities=PROBS, seed=SEED)
    t1, c1 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.parquet"
        atomic.write_parquet(out, result.table)
        t2, c2 = time.perf_counter(), time.process_time()
        size = out.stat().st_size
    s = result.summary
    report = {
        "case": case,
        "examples": n,
        "chars": int(bench["fields"].str.len().sum()),
        "target_words": s["target_words"],
        "occurrences": s["occurrences"],
        "perturbed_occurrences": s["perturbed_occurrences"],
        "rows": s["rows"],
        "perturb_s": t1 - t0,
        "write_s": t2 - t1,
        "total_s": t2 - t0,
        "perturb_cpu_s": c1 - c0,
        "total_cpu_s": c2 - c0,
        "load": load,
        "bytes": size,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_after_input_mib": rss_input,
    }
    if naive:
        t3, c3 = time.perf_counter(), time.process_time()
        report["naive_rows"] = naive_english(bench, words)
        report["naive_s"] = time.perf_counter() - t3
        report["naive_cpu_s"] = time.process_time() - c3
    return report


def _child(case: str, n: int, naive: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--child", case, str(n)] + (["--naive"] if naive else [])
    proc = subprocess.run(
        cmd, capture_output=True, text=True, check=True, env={**os.environ, "TQDM_DISABLE": "1"}
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _line(r: dict) -> str:
    return (
        f"{r['case']:<16} {r['examples']:>5} ex {r['chars'] / 1e6:5.2f}M chars "
        f"{r['occurrences']:>7,} occ {r['perturbed_occurrences']:>7,} pert {r['rows']:>7,} rows"
        f" | wall {r['perturb_s']:5.2f}+{r['write_s']:4.2f}={r['total_s']:5.2f}s"
        f" | CPU {r['perturb_cpu_s']:5.2f}+{r['total_cpu_s'] - r['perturb_cpu_s']:4.2f}="
        f"{r['total_cpu_s']:5.2f}s | {r['occurrences'] / r['perturb_cpu_s']:>7,.0f} occ/s "
        f"{r['rows'] / r['total_cpu_s']:>6,.0f} rows/s per CPU s | {r['bytes'] / 1e6:4.1f} MB"
        f" | peak RSS {r['peak_rss_mib']:4.0f} MiB (input {r['rss_after_input_mib']:.0f})"
        f" | load {r['load']:.1f}"
    )


def side_by_side_input(case: str, n: int, folder: Path) -> None:
    """The same examples and word list for both sides: one perturbable text field per example
    (upstream perturbs a single field: Japanese context and question are joined)."""
    if case == "english":
        bench, words = english_input(n)
        field = "question"
    else:
        bench, words = japanese_input(n, "surface")
        field = "text"
        bench["fields"] = [
            json.dumps({"text": f["context"] + f["question"]}, ensure_ascii=False)
            for f in map(json.loads, bench["fields"])
        ]
        bench["perturbable"] = [["text"]] * len(bench)
    atomic.write_parquet(folder / "bench.parquet", bench)
    atomic.write_parquet(folder / "words.parquet", words)
    examples = [
        {**json.loads(f), "choices": c, "answer": a}
        for f, c, a in zip(bench["fields"], bench["choices"], bench["answer"], strict=True)
    ]
    spec = {
        "name": bench["benchmark"].iloc[0],
        "language": "english" if case == "english" else "japanese",
        "text_field": field,
        "examples": [{k: v for k, v in e.items() if v is not None} for e in examples],
        "words": words["word"].tolist(),
    }
    (folder / "upstream.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")


def evalpipe_side(inp: Path, out: Path) -> None:
    """What the perturb stage does, in a fresh process: read, perturb, write Parquet."""
    bench = pd.read_parquet(inp / "bench.parquet")
    words = pd.read_parquet(inp / "words.parquet")
    result = perturb_frame(bench, words, probabilities=PROBS, seed=SEED, jobs=JOBS)
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_parquet(out / "perturbed.parquet", result.table)


def evalpipe_alone(inp: Path) -> dict:
    """perturb_frame alone, in-process, after start-up and reading (the table stays in memory,
    as the upstream's objects do)."""
    bench = pd.read_parquet(inp / "bench.parquet")
    words = pd.read_parquet(inp / "words.parquet")
    t0, c0 = time.perf_counter(), _cpu()
    result = perturb_frame(bench, words, probabilities=PROBS, seed=SEED, jobs=JOBS)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    return {"wall": wall, "cpu": cpu, "rows": result.table.num_rows, "jobs": JOBS}


def _alone(cmd: list[str], **kw) -> dict:
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _timed(cmd: list[str], **kw) -> tuple[float, float]:
    """Wall and CPU seconds of a whole child process (start-up and imports included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _tree_size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def side_by_side(
    upstream: Path, cases: list[tuple[str, int]], repeats: int, *, whole: bool = True
) -> None:
    """Both implementations as whole processes on the same input, alternating, ``repeats``
    times each; prints the median wall and CPU time of each side and their ratio."""
    if not (upstream / "src" / "perturbation" / "benchmark_perturbator.py").exists():
        sys.exit(f"{upstream}: not a checkout of Maxel31/typo-robustness-analysis")
    env = {**os.environ, "TQDM_DISABLE": "1"}
    up_env = {**env, "PYTHONPATH": str(upstream)}
    for case, n in cases:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            side_by_side_input(case, n, tmp)
            runs: dict[str, list[tuple[float, float]]] = {"evalpipe": [], "upstream": []}
            sizes = {}
            for i in range(repeats if whole else 0):
                for side in ("evalpipe", "upstream"):
                    out = tmp / f"{side}-{i}"
                    if side == "evalpipe":
                        cmd = [sys.executable, __file__, "--side", str(tmp), str(out)]
                        cmd += ["--jobs", str(JOBS)]
                        runs[side].append(_timed(cmd, env=env))
                    else:
                        cmd = [sys.executable, "-c", UPSTREAM_DRIVER, str(tmp), str(out)]
                        runs[side].append(_timed(cmd, env=up_env, cwd=upstream))
                    sizes[side] = _tree_size(out)
                    shutil.rmtree(out)
            if whole:
                med = {
                    side: (
                        statistics.median(w for w, _ in r),
                        statistics.median(c for _, c in r),
                    )
                    for side, r in runs.items()
                }
                (ew, ec), (uw, uc) = med["evalpipe"], med["upstream"]
                print(
                    f"{case} ({n} examples, 500 words, median of {repeats}, whole process both): "
                    f"evalpipe {ew:.2f} s wall / {ec:.2f} s CPU, {sizes['evalpipe'][1] / 1e6:.1f} MB "
                    f"in {sizes['evalpipe'][0]} file; upstream {uw:.2f} s wall / {uc:.2f} s CPU, "
                    f"{sizes['upstream'][1] / 1e6:.0f} MB in {sizes['upstream'][0]} files -> "
                    f"{uw / ew:.1f}x (wall), {uc / ec:.1f}x (CPU), "
                    f"{sizes['upstream'][1] / sizes['evalpipe'][1]:.0f}x smaller | load "
                    f"{os.getloadavg()[0]:.1f}"
                )
            alone: dict[str, list[dict]] = {"evalpipe": [], "upstream": []}
            for _ in range(repeats):
                cmd = [sys.executable, __file__, "--alone", str(tmp), "--jobs", str(JOBS)]
                alone["evalpipe"].append(_alone(cmd, env=env))
                cmd = [sys.executable, "-c", UPSTREAM_ALONE_DRIVER, str(tmp)]
                alone["upstream"].append(_alone(cmd, env=up_env, cwd=upstream))
            (ew, ec), (uw, uc) = (
                (
                    statistics.median(r["wall"] for r in alone[side]),
                    statistics.median(r["cpu"] for r in alone[side]),
                )
                for side in ("evalpipe", "upstream")
            )
            print(
                f"{case} perturbation alone (in-process, median of {repeats}): evalpipe "
                f"perturb_frame (jobs={JOBS}) {ew:.2f} s wall / {ec:.2f} s CPU (workers "
                f"included); upstream perturb_benchmark "
                f"x 500 words {uw:.2f} s wall / {uc:.2f} s CPU -> "
                f"{uw / ew:.1f}x (wall), {uc / ec:.1f}x (CPU) | load {os.getloadavg()[0]:.1f}"
            )


# English rows (originals included) per MMLU-shaped example with the top 500 words, measured
# at 14,042 examples (314,627 rows): --rows asks for about that many rows. The count design
# (doses 1, 2, 4, 8: about one row per dose and the original) and the words design with its
# matched control (a control row for most typo rows) make other numbers of rows per example.
ROWS_PER_EXAMPLE = 314_627 / 14_042
ROWS_PER_EXAMPLE_OF = {"words": ROWS_PER_EXAMPLE, "count": 5.0, "control": 2 * ROWS_PER_EXAMPLE}
COUNT_DOSES = (1, 2, 4, 8)  # the default perturb.counts


def run_rows_case(n: int, mode: str, out: Path, design: str = "words") -> dict:
    """English, n MMLU-shaped examples: the stage's path (``streamed``: rows to the Parquet file
    row group by row group) or the whole table written at once (``in-memory``), for the
    ``words`` design, the ``count`` design or the words design with its matched ``control``."""
    bench, words = english_input(n)
    rss_input = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu()
    if design == "count":
        from evalpipe.perturb.count import perturb_count_frame
        from evalpipe.perturb.eligibility import from_params

        kw = dict(
            probabilities=PROBS,
            seed=SEED,
            counts=COUNT_DOSES,
            eligibility=from_params({"design": "count"}),
        )
        if mode == "streamed":
            from evalpipe.perturb.parquet_sink import parquet_row_groups

            with parquet_row_groups(out) as sink:
                perturb_count_frame(bench, sink=sink, **kw)
        else:
            atomic.write_parquet(out, perturb_count_frame(bench, **kw).table)
    elif design == "control":
        kw = dict(probabilities=PROBS, seed=SEED)
        if mode == "streamed":
            from evalpipe.perturb.control import perturb_with_controls
            from evalpipe.perturb.parquet_sink import parquet_row_groups

            with parquet_row_groups(out) as sink:
                perturb_with_controls(bench, words, sink=sink, jobs=JOBS, **kw)
        else:
            from evalpipe.perturb.control import add_controls

            result = perturb_frame(bench, words, jobs=JOBS, **kw)
            table = add_controls(result.table, bench, words, **kw)[0]
            atomic.write_parquet(out, table)
    elif mode == "streamed":
        from evalpipe.perturb.parquet_sink import parquet_row_groups

        with parquet_row_groups(out) as sink:
            perturb_frame(bench, words, probabilities=PROBS, seed=SEED, sink=sink, jobs=JOBS)
    else:
        result = perturb_frame(bench, words, probabilities=PROBS, seed=SEED)
        atomic.write_parquet(out, result.table)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    md5 = hashlib.md5()
    with open(out, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            md5.update(block)
    return {
        "mode": mode,
        "design": design,
        "examples": n,
        # every row of the file (the control's summary counts the typo rows)
        "rows": pq.ParquetFile(out).metadata.num_rows,
        "wall": wall,
        "cpu": cpu,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_after_input_mib": rss_input,
        "bytes": out.stat().st_size,
        "md5": md5.hexdigest(),
        "load": load,
    }


def rows_scale(
    rows: int, same_bytes: bool, baseline_src: Path | None, design: str = "words"
) -> None:
    """About ``rows`` perturbed English rows through the stage's streamed path, each mode in a
    fresh process; with ``same_bytes`` also the whole table written at once (with
    ``baseline_src``: by the code of that checkout's ``src``) and the two files' MD5s."""
    n = max(1, round(rows / ROWS_PER_EXAMPLE_OF[design]))
    modes = ["streamed", "in-memory"] if same_bytes else ["streamed"]
    results = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("PERF_TMP")) as tmp:
        for mode in modes:
            env = {**os.environ, "TQDM_DISABLE": "1"}
            if mode == "in-memory" and baseline_src is not None:
                env["PYTHONPATH"] = os.pathsep.join([str(baseline_src), env.get("PYTHONPATH", "")])
            out = Path(tmp) / f"{mode}.parquet"
            cmd = [sys.executable, __file__, "--rows-child", str(n), mode, str(out)]
            cmd += ["--jobs", str(JOBS), "--design", design]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            results.append(r)
            out.unlink()
            print(
                f"english {design:<7} {r['mode']:<9} {r['examples']:>9,} ex {r['rows']:>11,} rows "
                f"| perturb + write: wall {r['wall']:7.1f} s, CPU {r['cpu']:7.1f} s | peak RSS "
                f"{r['peak_rss_mib']:7,.0f} MiB (input {r['rss_after_input_mib']:,.0f}) | "
                f"{r['bytes'] / 1e6:7.1f} MB md5 {r['md5']} | load {r['load']:.1f}",
                flush=True,
            )
    if same_bytes:
        same = results[0]["md5"] == results[1]["md5"]
        print(
            f"streamed vs in-memory{' (' + str(baseline_src) + ')' if baseline_src else ''}: "
            f"{'byte-identical' if same else 'DIFFERENT BYTES'}"
        )


# MulTypo (2025)'s operation mix, delete .28 / insert .15 / replace .28 / transpose .28, at the
# uniform default's total rate (0.6); Japanese moves 0.1 of it to conversions (JWTD's kanji
# conversion class), taken evenly from the others' shares.
HUMAN_MIX = {
    "english": dict(replace=0.17, insert=0.09, delete=0.17, transpose=0.17, conversion=0.0),
    "japanese": dict(replace=0.14, insert=0.08, delete=0.14, transpose=0.14, conversion=0.10),
}
UNIFORM = dict(replace=0.2, insert=0.2, delete=0.2, transpose=0.0, conversion=0.0)


def real_or_synthetic(name: str, files: Path | None) -> tuple[pd.DataFrame, str]:
    """The publisher's files of ``name`` under ``files`` if present, else the synthetic input."""
    if files is not None and (files / name).is_dir():
        from evalpipe.benchmarks import get_spec, load_benchmark

        bench, _ = load_benchmark(get_spec(name), source="files", files_dir=files)
        return bench, f"{name} publisher files ({bench.attrs['evalpipe']['dataset_version']})"
    if name == "mmlu":
        return english_input(14042)[0], "synthetic MMLU-shaped input (no publisher files)"
    return japanese_input(4442, "surface")[0], "synthetic JSQuAD-shaped input (no publisher files)"


def run_model_case(name: str, model: str, files: Path | None) -> dict:
    bench, what = real_or_synthetic(name, files)
    language = str(bench["language"].iloc[0])
    words = word_list(language, "wordfreq", raw_dir=".", top_n=500)
    mix = UNIFORM if model == "uniform" else HUMAN_MIX[language]
    probs = Probabilities(**mix, model=model)
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    result = perturb_frame(bench, words, probabilities=probs, seed=SEED)
    t1, c1 = time.perf_counter(), time.process_time()
    return {
        "input": what,
        "examples": len(bench),
        "perturb_s": t1 - t0,
        "perturb_cpu_s": c1 - c0,
        "load": load,
        "probabilities": {k: v for k, v in mix.items()},
        "summary": result.summary,
    }


def _model_child(name: str, model: str, files: Path | None) -> dict:
    cmd = [sys.executable, __file__, "--models-child", name, model, str(files or "")]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, check=True, env={**os.environ, "TQDM_DISABLE": "1"}
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def chi_square_line(report: dict) -> str:
    """Drawn kinds (and no typo) against the configured probabilities: Pearson's chi-square."""
    from scipy.stats import chisquare

    s = report["summary"]
    probs = report["probabilities"]
    n = s["occurrences"]
    kinds = [k for k in probs if probs[k] > 0]
    observed = [s["drawn"][k] for k in kinds] + [n - sum(s["drawn"].values())]
    expected = [n * probs[k] for k in kinds] + [n * (1 - sum(probs.values()))]
    stat, p = chisquare(observed, expected)
    shares = ", ".join(
        f"{k} {o / n:.4f} (p={probs[k]:.2f})" for k, o in zip(kinds, observed, strict=False)
    )
    return (
        f"  drawn shares of {n:,} occurrences: {shares}, none {observed[-1] / n:.4f}; "
        f"chi-square {stat:.2f} on {len(observed) - 1} df, p = {p:.3f}"
    )


def models_side_by_side(files: Path | None, repeats: int) -> None:
    for name in ("mmlu", "jsquad"):
        runs: dict[str, list[dict]] = {"uniform": [], "keyboard": []}
        for k in range(repeats):
            order = ("uniform", "keyboard") if k % 2 == 0 else ("keyboard", "uniform")
            for model in order:
                runs[model].append(_model_child(name, model, files))
        u, kb = runs["uniform"][0], runs["keyboard"][0]
        print(f"-- {name}: {u['input']}, {u['examples']:,} examples x 500 words, {repeats} runs")
        med = {
            m: (
                statistics.median(r["perturb_cpu_s"] for r in rs),
                statistics.median(r["perturb_s"] for r in rs),
            )
            for m, rs in runs.items()
        }
        for model, rs in runs.items():
            s = rs[0]["summary"]
            ops = ", ".join(f"{k} {v:,}" for k, v in s["operations"].items() if v)
            print(
                f"  {model:<8} CPU {med[model][0]:6.2f} s, wall {med[model][1]:6.2f} s | "
                f"{s['perturbed_occurrences']:,}/{s['occurrences']:,} occurrences perturbed: {ops}"
            )
        print(
            f"  keyboard / uniform: {med['keyboard'][0] / med['uniform'][0]:.2f}x CPU, "
            f"{med['keyboard'][1] / med['uniform'][1]:.2f}x wall (target <= 1.5x) | load "
            f"{os.getloadavg()[0]:.1f}"
        )
        s = kb["summary"]
        print(
            f"  keyboard rules: {json.dumps(s['operations_by_rule'], ensure_ascii=False)}; "
            f"fallback to the uniform rule: {s['keyboard_fallback']}; skipped: {s['skipped']}"
        )
        print("  uniform:")
        print("  " + chi_square_line(u))
        print("  keyboard:")
        print("  " + chi_square_line(kb))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller scales for a smoke run")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--naive", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--side", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument(
        "--upstream",
        type=Path,
        metavar="DIR",
        help="a checkout of the upstream study (Maxel31/typo-robustness-analysis, branch "
        "refactor/module-reorganization): also time it side by side on the same input",
    )
    ap.add_argument("--repeats", type=int, default=3, help="side-by-side runs per side")
    ap.add_argument(
        "--alone-only",
        action="store_true",
        help="with --upstream: only the perturbation-alone comparison (in-process), then stop",
    )
    ap.add_argument(
        "--language",
        choices=("english", "japanese"),
        help="with --upstream: only this language's input (default: both)",
    )
    ap.add_argument("--models", action="store_true", help="typo models side by side (only)")
    ap.add_argument(
        "--files",
        type=Path,
        default=Path("data/raw/benchmarks"),
        metavar="DIR",
        help="publisher files (DIR/mmlu, DIR/jsquad) for --models; synthetic input otherwise",
    )
    ap.add_argument("--models-child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument(
        "--rows",
        type=int,
        metavar="N",
        help="only: about N perturbed English rows (MMLU-shaped examples, as many as needed) "
        "through the stage's streamed path; wall, CPU, peak RSS",
    )
    ap.add_argument(
        "--same-bytes",
        action="store_true",
        help="with --rows: also write the whole table at once and compare the files' MD5s",
    )
    ap.add_argument(
        "--baseline-src",
        type=Path,
        metavar="DIR",
        help="with --same-bytes: the whole-table run imports evalpipe from DIR (another "
        "checkout's src/)",
    )
    ap.add_argument(
        "--design",
        choices=("words", "count", "control"),
        default="words",
        help="with --rows: the words design, the count design (doses 1, 2, 4, 8) or the words "
        "design with its matched control",
    )
    ap.add_argument("--rows-child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--alone", type=Path, help=argparse.SUPPRESS)
    ap.add_argument(
        "--jobs",
        type=int,
        default=JOBS,
        help="perturb_frame's worker processes (default: the usable cores, as the stage)",
    )
    args = ap.parse_args()
    globals()["JOBS"] = args.jobs
    if args.rows_child:
        n, mode, out = args.rows_child
        print(json.dumps(run_rows_case(int(n), mode, Path(out), args.design)))
        return
    if args.rows:
        rows_scale(args.rows, args.same_bytes, args.baseline_src, args.design)
        return
    if args.alone:
        print(json.dumps(evalpipe_alone(args.alone)))
        return
    if args.models_child:
        name, model, files = args.models_child
        print(json.dumps(run_model_case(name, model, Path(files) if files else None)))
        return
    if args.models:
        models_side_by_side(args.files, args.repeats)
        return
    if args.side:
        evalpipe_side(Path(args.side[0]), Path(args.side[1]))
        return
    if args.child:
        print(json.dumps(run_case(args.child[0], int(args.child[1]), args.naive)))
        return
    en_n, ja_n = (2000, 600) if args.quick else (14042, 4442)
    upstream_cases = [
        (case, n)
        for case, n in (("english", en_n), ("japanese", ja_n))
        if args.language in (None, case)
    ]
    if args.upstream and args.alone_only:
        print("== perturbation alone, side by side with the upstream study's code ==")
        side_by_side(args.upstream, upstream_cases, args.repeats, whole=False)
        return
    print("== full scale ==")
    full = {}
    for case, n in (("english", en_n), ("japanese-surface", ja_n), ("japanese-lemma", ja_n)):
        full[case] = r = _child(case, n)
        print(_line(r))
    if args.upstream:
        print("== side by side with the upstream study's code ==")
        side_by_side(args.upstream, upstream_cases, args.repeats)
    else:
        print("(no --upstream DIR: no comparison with the upstream study's code)")
    print("== scaling, english ==")
    scales = [500, 1000, 2000] if args.quick else [1000, 2000, 4000, 8000, 14042]
    for n in scales:
        r = _child("english", n)
        print(_line(r) + f" | {1e6 * r['total_cpu_s'] / n:.0f} CPU us/example")
    print("== against a per-word regex loop, english (perturbation only) ==")
    n = 1000 if args.quick else 14042
    r = _child("english", n, naive=True)
    print(
        f"{n} examples x {r['target_words']} words: per-word loop {r['naive_cpu_s']:.2f} s CPU "
        f"({r['naive_s']:.2f} s wall, {r['naive_rows']:,} rows), evalpipe "
        f"{r['perturb_cpu_s']:.2f} s CPU ({r['perturb_s']:.2f} s wall, {r['rows']:,} rows incl. "
        f"originals): {r['naive_cpu_s'] / r['perturb_cpu_s']:.1f}x by CPU, "
        f"{r['naive_s'] / r['perturb_s']:.1f}x by wall"
    )


if __name__ == "__main__":
    main()
