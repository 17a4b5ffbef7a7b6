"""Assemble the score stage's metrics and plot tables from scored frames (pure; no file I/O)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalpipe.scoring.metrics import classification_report
from evalpipe.scoring.robustness import accuracy_by_rate, benchmark_summary, word_table
from evalpipe.scoring.scorer import ORIGINAL

DECIMALS = 4

WORD_COLUMNS = [
    "label", "benchmark", "word", "word_rank", "n", "accuracy_original", "accuracy_perturbed",
    "accuracy_drop", "delta", "pdr", "flip_c2i", "flip_i2c", "mcnemar_p", "p_holm", "p_bh",
    "ci_low", "ci_high",
    "perturbed_occurrences", "per_occurrence_impact", "unparsed_rate",
]  # fmt: skip
RATE_COLUMNS = ["perturbation_rate", "bin", "n", "accuracy_original", "accuracy_perturbed", "delta"]


@dataclass(frozen=True)
class ClassificationSetup:
    """How a classification benchmark is reported: its label space and whether unparsed /
    out-of-set predictions get an explicit "invalid" class."""

    labels: Sequence[str]
    explicit_invalid: bool = False


@dataclass(frozen=True)
class Reports:
    """Everything the score stage writes besides the scored frames."""

    robustness: dict[str, Any]
    classification: dict[str, Any]
    word_accuracy_drop: pd.DataFrame
    confusion: pd.DataFrame
    accuracy_by_rate: pd.DataFrame


def rounded(value: Any, decimals: int = DECIMALS) -> Any:
    """Round floats (recursively) and turn NaN / inf into None, for small diff-friendly JSON.

    >>> rounded({"a": 0.123456, "b": [float("nan"), 2]})
    {'a': 0.1235, 'b': [None, 2]}
    """
    if isinstance(value, Mapping):
        return {str(k): rounded(v, decimals) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, decimals) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if hasattr(value, "item"):  # numpy scalar
        return rounded(value.item(), decimals)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        result = round(value, decimals)
        return 0.0 if result == 0 else result  # no "-0.0" in diffs
    return value


def _round_frame(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].round(DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
    return out


def build_reports(
    scored: Mapping[str, pd.DataFrame],
    *,
    classification: Mapping[str, ClassificationSetup],
    seed: int,
    samples: int,
    level: float,
) -> Reports:
    """Metrics and plot tables for all benchmarks.

    Parameters
    ----------
    scored : benchmark name -> scored frame (:func:`~evalpipe.scoring.scorer.score_frame`).
    classification : the benchmarks with a label space, and how to report them.
    seed, samples, level : bootstrap settings (``seed``, ``scoring.bootstrap_samples``,
        ``scoring.confidence_level``).

    Returns
    -------
    Reports
        ``robustness`` / ``classification``: per benchmark, rounded to 4 decimals;
        ``word_accuracy_drop``: one row per (benchmark, word) with a ``label`` "benchmark: word";
        ``confusion``: one row per original row of a classification benchmark (``benchmark,
        example_id, actual, predicted``, labels prefixed with the benchmark so that label spaces
        do not mix); ``accuracy_by_rate``: paired accuracy change by typo rate over all benchmarks.
    """
    robustness: dict[str, Any] = {}
    class_metrics: dict[str, Any] = {}
    words, confusion, frames = [], [], []
    for name in sorted(scored):
        frame = scored[name]
        source = f"data/scored/{name}.parquet"
        table = word_table(frame, seed=seed, samples=samples, level=level, source=source)
        robustness[name] = rounded(
            benchmark_summary(
                frame, seed=seed, samples=samples, level=level, words=table, source=source
            )
        )
        if len(table):
            words.append(table.assign(label=name + ": " + table["word"]))
        frames.append(frame)
        setup = classification.get(name)
        if setup is None:
            continue
        originals = frame.loc[frame["variant"] == ORIGINAL]
        report = classification_report(
            originals["gold"].tolist(),
            originals["prediction"].tolist(),
            labels=list(setup.labels),
            explicit_invalid=setup.explicit_invalid,
        )
        report["unparsed"] = int((originals["parse_status"] == "unparsed").sum())
        class_metrics[name] = rounded(report)
        labels = {str(label) for label in setup.labels}
        predicted = [p if p in labels else "invalid" for p in originals["prediction"]]
        confusion.append(
            pd.DataFrame(
                {
                    "benchmark": name,
                    "example_id": originals["example_id"].astype(str).to_numpy(),
                    "actual": [f"{name}: {g}" for g in originals["gold"]],
                    "predicted": [f"{name}: {p}" for p in predicted],
                }
            )
        )
    word_frame = (
        pd.concat(words, ignore_index=True)[WORD_COLUMNS]
        if words
        else pd.DataFrame(columns=WORD_COLUMNS)
    )
    confusion_frame = (
        pd.concat(confusion, ignore_index=True)
        if confusion
        else pd.DataFrame(columns=["benchmark", "example_id", "actual", "predicted"])
    )
    rate_columns = ["benchmark", "example_id", "variant", "prompt", "perturbed_occurrences",
                    "correct"]  # fmt: skip
    rate_input = [f[rate_columns] for f in frames if set(rate_columns) <= set(f.columns)]
    rate = (
        accuracy_by_rate(pd.concat(rate_input, ignore_index=True))
        if rate_input
        else pd.DataFrame(columns=RATE_COLUMNS)
    )
    return Reports(
        robustness=robustness,
        classification=class_metrics,
        word_accuracy_drop=_round_frame(word_frame),
        confusion=confusion_frame,
        accuracy_by_rate=_round_frame(rate),
    )
