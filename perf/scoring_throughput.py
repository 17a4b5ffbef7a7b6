"""Scoring speed: parses per second per parser, and the robustness statistics on a large frame.

Run: python perf/scoring_throughput.py [--rows 20000]
Prints one line per measurement; nothing is asserted (speed is measured here, never in tests).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evalpipe.answers.parsers import parse_answer
from evalpipe.scoring.pairs import build_pairs
from evalpipe.scoring.scorer import score_frame
from evalpipe.scoring.summaries import build_reports

SAMPLES = {
    "mc_letter": (["The answer is (B).", "B. 4", "I think C because ...", "ＡＮＳＷＥＲ：Ｄ", ""],
                  {"labels": ["A", "B", "C", "D"]}),
    "mc_index": (["回答：3", "2", "12", "選択肢は 4 です"], {"labels": list("01234")}),
    "numeric": (["Step 1 ... #### 1,234", "**Answer: $18 per day.**", "no number"], {}),
    "bbh": (["So the answer is (C).", "(A)", "maybe"], {"format": "choice"}),
    "nli": (["entailment", "回答：矛盾", "I think it is neutral."], {}),
    "extractive": (["回答：徳川家康\n\n理由", "東京都"], {}),
    "json_label": (['ok {"label": "pos", "confidence": 0.8, "reason": "good"}', "positive"],
                   {"labels": ["positive", "negative"], "strict": False}),
}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    args = ap.parse_args()

    for name, (texts, options) in SAMPLES.items():
        batch = (texts * (args.rows // len(texts) + 1))[: args.rows]
        start = time.perf_counter()
        for text in batch:
            parse_answer(name, text, **options)
        elapsed = time.perf_counter() - start
        print(f"parse {name:11s} {args.rows / elapsed:10.0f} outputs/s")

    rng = np.random.default_rng(0)
    n_examples, n_words = args.rows // 11, 10
    rows = []
    for i in range(n_examples):
        for w in range(n_words + 1):
            variant = "original" if w == 0 else f"w{w}"
            right = rng.random() < (0.7 if w == 0 else 0.6)
            rows.append(
                (f"e{i}", variant, w, "The answer is (A)." if right else "(B)", 1 if w else 0)
            )
    frame = pd.DataFrame(
        rows, columns=["example_id", "variant", "word_rank", "output", "perturbed_occurrences"]
    )
    frame["benchmark"], frame["answer"], frame["prompt"] = "mmlu", "A", "x" * 300
    # the columns perturb writes per row and generate carries
    fired = frame["perturbed_occurrences"]
    frame = frame.assign(draw=0, subtask=None, language="english", occurrences=fired,
                         n_typos=fired, n_edited_chars=fired, finish_reason="stop",
                         op=fired.map({0: None, 1: "replace"}),
                         script=fired.map({0: None, 1: "latin"}))  # fmt: skip
    start = time.perf_counter()
    scored = score_frame(
        frame,
        parser="mc_letter",
        metric="exact_match",
        parser_options={"labels": ["A", "B", "C", "D"]},
    )
    score_s = time.perf_counter() - start
    start = time.perf_counter()
    build_reports(
        {"mmlu": scored},
        build_pairs({"mmlu": scored}, model="m"),
        classification={},
        level=0.95,
        margin=0.02,
    )
    report_s = time.perf_counter() - start
    print(f"score_frame  {len(frame)} rows in {score_s:.2f} s ({len(frame) / score_s:.0f} rows/s)")
    print(f"reports      {len(frame)} rows, {n_words} words, score intervals in {report_s:.2f} s")


if __name__ == "__main__":
    main()
