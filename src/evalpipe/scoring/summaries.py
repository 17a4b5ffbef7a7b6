"""The score stage's summaries: metrics, details and plot tables from the scored views and the
pairs table (pure; no file I/O). Every paired figure is a grouping of the pairs table
(:mod:`evalpipe.scoring.pairs`); the clean-prompt figures (base accuracy, strict accuracy,
classification, truncation) come from the views' original rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.arms import typo_rows
from evalpipe.scoring.metrics import classification_report
from evalpipe.scoring.names import ORIGINAL
from evalpipe.scoring.robustness import (
    RATE_COLUMNS,
    Originals,
    accuracy_by_rate,
    benchmark_summary,
    originals_of,
    word_table,
)
from evalpipe.scoring.transitions import noninferiority, transition_counts
from evalpipe.scoring.verdicts import alpha_of, verdict_rounded
from evalpipe.scoring.views import primary_views


def field_figures(pairs: pd.DataFrame, *, margin: float | None, level: float) -> dict[str, Any]:
    """The transitions, the answer-change rate and the gate of one view's pairs
    (:mod:`evalpipe.scoring.transitions`), under the names the details and metrics use."""
    gate = noninferiority(pairs, margin=margin, level=level)
    return {
        **{k: v for k, v in transition_counts(pairs).items() if k != "n"},
        "gate": gate["verdict"],
        "gate_margin": gate["margin"],
        "gate_lower_bound": gate["lower_bound"],
        "gate_upper_bound": gate["upper_bound"],
    }


DECIMALS = 4
# metrics/<model>/<view>.json keep only what a reader compares across commits, under short keys
# shared by every file: `dvc metrics show` prints one column per key over all metrics files, so
# one short row per (model, benchmark, method) fits a screen. Every figure is in the details
# files under data/scored/<model>/.
HEADLINE_KEYS = {
    "n": "n",
    "acc_orig": "accuracy_original",
    "acc_pert": "accuracy_perturbed",
    "delta": "delta",
    "pdr": "pdr",
    "unparsed": "unparsed_rate",
    "truncated": "truncated_rate",
    # the field's figures (evalpipe.scoring.transitions): answer changes and the gate; the
    # four-way transitions are in the details (every column widens `dvc metrics show`)
    "answer_change": "answer_change",
    "gate": "gate",
    # the clean accuracy over every example of the view, paired or not: the baseline that stays
    # put when a sweep changes where typos land (acc_orig is over the pairs only)
    "acc_all": "accuracy_base",
    "n_all": "n_examples",
    # the smallest accuracy change this view's pairs would show at 80% power: beside an
    # interval that holds 0 it says how large an effect the study could have missed
    "mde": "mde",
}
# Above this share of outputs cut at the generation budget, the stage warns: the scores then
# measure the budget as much as the model.
TRUNCATION_WARN_RATE = 0.05

WORD_PLOT_COLUMNS = [
    "label", "benchmark", "word", "word_rank", "n", "accuracy_original", "accuracy_perturbed",
    "accuracy_drop", "delta", "pdr", "flip_c2i", "flip_i2c", "mcnemar_p", "p_holm", "p_bh",
    "ci_low", "ci_high", "ci_method", "design_effect", "mde",
    "perturbed_occurrences", "per_occurrence_impact", "unparsed_rate",
]  # fmt: skip


@dataclass(frozen=True)
class ClassificationSetup:
    """How a classification benchmark is reported: its label space and whether unparsed /
    out-of-set predictions get an explicit "invalid" class."""

    labels: Sequence[str]
    explicit_invalid: bool = False


@dataclass(frozen=True)
class Reports:
    """Everything the score stage writes besides the scored frames.

    ``robustness`` / ``classification`` hold every figure per benchmark (the details files);
    ``headline`` the few keys of each benchmark's metrics file (:data:`HEADLINE_KEYS`).
    """

    robustness: dict[str, Any]
    classification: dict[str, Any]
    headline: dict[str, dict[str, Any]]
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


def answer_summary(scored: pd.DataFrame) -> dict[str, Any]:
    """How much of a benchmark's score is read from explicit answers, and how many outputs hit
    the generation budget.

    lm-evaluation-harness reports a strict-match and a flexible-extract score side by side; here
    ``accuracy_strict`` counts an original answer as correct only when its parse status is
    ``strict`` (an answer statement, ``#### N``, the bare label, a JSON label), while
    ``accuracy_flexible`` also credits fallback extractions (it equals ``accuracy_base``). The gap
    is the part of the score that comes from fallbacks.

    Parameters
    ----------
    scored : one benchmark's scored frame (``variant, correct, parse_status``; ``finish_reason``
        when the outputs carry it).

    Returns
    -------
    dict
        ``accuracy_strict``, ``accuracy_flexible`` (original rows; None without any),
        ``truncated`` (outputs, original and perturbed, with ``finish_reason == "length"``) and
        ``truncated_rate`` (None when the frame has no ``finish_reason`` column or no rows).

    Examples
    --------
    >>> frame = pd.DataFrame({"variant": ["original"] * 2, "correct": [True, True],
    ...                       "parse_status": ["strict", "fallback"],
    ...                       "finish_reason": ["stop", "length"]})
    >>> answer_summary(frame)
    {'accuracy_strict': 0.5, 'accuracy_flexible': 1.0, 'truncated': 1, 'truncated_rate': 0.5}
    """
    originals = scored.loc[scored["variant"] == ORIGINAL]
    correct = originals["correct"].astype(bool)
    strict = correct & (originals["parse_status"] == "strict")
    has_reason = "finish_reason" in scored.columns
    truncated = int((scored["finish_reason"] == "length").sum()) if has_reason else None
    return {
        "accuracy_strict": float(strict.mean()) if len(originals) else None,
        "accuracy_flexible": float(correct.mean()) if len(originals) else None,
        "truncated": truncated,
        "truncated_rate": None if truncated is None or not len(scored) else truncated / len(scored),
    }


def truncation_warnings(
    robustness: Mapping[str, Mapping[str, Any]], *, threshold: float = TRUNCATION_WARN_RATE
) -> list[str]:
    """One warning line per benchmark whose ``truncated_rate`` is above ``threshold`` and some of
    whose answers went unparsed: outputs cut at the budget but read (a spec's one-token label
    budget, set on purpose) cost nothing.

    >>> truncation_warnings({"gsm8k": {"truncated": 30, "truncated_rate": 0.3, "unparsed": 4}})
    ['warning: gsm8k: 30 outputs (30.0%) stopped at the generation budget (finish_reason=length)']
    >>> truncation_warnings({"jcommonsenseqa": {"truncated": 40, "truncated_rate": 1.0,
    ...                                         "unparsed": 0}})
    []
    """
    lines = []
    for name in sorted(robustness):
        rate = robustness[name].get("truncated_rate")
        if not robustness[name].get("unparsed"):
            continue
        if rate is not None and rate > threshold:
            lines.append(
                f"warning: {name}: {robustness[name].get('truncated')} outputs ({rate:.1%}) "
                "stopped at the generation budget (finish_reason=length)"
            )
    return lines


# The p printed beside an interval and the test it inverts (the interval excludes 0 exactly when
# the p is below 1 - level): rounded by verdicts.verdict_rounded, so the written figures agree
# as well.
VERDICT_COLUMNS = ("ci_low", "ci_high", "mcnemar_p")
# Columns whose reading is "below 1 - level" (the p, and Holm / BH's decisions at that alpha),
# kept on their side of alpha when rounded; the limits keep theirs of 0.
ALPHA_COLUMNS = ("mcnemar_p", "p_holm", "p_bh")


def rounded_frame(frame: pd.DataFrame, *, alpha: float | None = None) -> pd.DataFrame:
    """Float columns rounded to :data:`DECIMALS` (what the plot tables and metrics print).

    With ``alpha`` (1 - the confidence level), the :data:`VERDICT_COLUMNS` keep their side of 0
    (the limits) and of ``alpha`` (the p, and the Holm / BH decisions of :data:`ALPHA_COLUMNS`)
    when rounded
    (:func:`evalpipe.scoring.verdicts.verdict_rounded`).
    """
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].round(DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
    if alpha is not None:
        for column in (*VERDICT_COLUMNS, *ALPHA_COLUMNS[1:]):
            if column in out.columns and pd.api.types.is_float_dtype(frame[column]):
                threshold = alpha if column in ALPHA_COLUMNS else 0.0
                out[column] = verdict_rounded(
                    frame[column].to_numpy(dtype=float), threshold, DECIMALS
                )
    return out


def build_reports(
    scored: Mapping[str, pd.DataFrame],
    pairs: pd.DataFrame,
    *,
    classification: Mapping[str, ClassificationSetup],
    level: float,
    margin: float | None,
) -> Reports:
    """Metrics and plot tables for all views of one model.

    Parameters
    ----------
    scored : view name -> scored frame (:func:`~evalpipe.scoring.scorer.score_frame`).
    pairs : the model's pairs table (:func:`~evalpipe.scoring.pairs.build_pairs` of ``scored``).
        Of both, only the rows of the typo arm (``condition`` :data:`~evalpipe.arms.TYPO`) count.
    classification : the views with a label space, and how to report them.
    level : confidence level of the intervals (``scoring.confidence_level``).
    margin : the non-inferiority margin of every view's gate (``scoring.margin``; None: none).

    Returns
    -------
    Reports
        ``robustness`` / ``classification``: per view, rounded to 4 decimals, every figure
        (:func:`~evalpipe.scoring.robustness.benchmark_summary` plus :func:`answer_summary`;
        :func:`~evalpipe.scoring.metrics.classification_report` plus ``unparsed``);
        ``headline``: per view, :data:`HEADLINE_KEYS` (short names) from ``robustness``;
        ``word_accuracy_drop``: one row per (view, word) with a ``label`` "view: word";
        ``confusion``: one row per original row of a classification view (``benchmark,
        example_id, actual, predicted``, labels prefixed with the view so that label spaces
        do not mix); ``accuracy_by_rate``: paired accuracy change by typo rate over one view per
        benchmark.
    """
    # The typo arm only: a defence's or a control's rows never change these figures
    # (evalpipe.arms; their own tables read the other arms).
    scored = {name: typo_rows(frame) for name, frame in scored.items()}
    pairs = typo_rows(pairs)
    robustness: dict[str, Any] = {}
    class_metrics: dict[str, Any] = {}
    words, confusion = [], []
    by_view = pairs.groupby("view", sort=False).indices
    empty = np.zeros(0, dtype=np.int64)
    originals: dict[str, Originals] = {}
    for name in sorted(scored):
        frame = scored[name]
        # one view's rows at a time: at millions of pairs a copy of every view's is a second table
        view_pairs = pairs.iloc[by_view.get(name, empty)]
        originals[name] = originals_of(frame)
        table = word_table(view_pairs, originals=originals[name], level=level)
        summary = benchmark_summary(view_pairs, originals=originals[name], level=level, words=table)
        figures = field_figures(view_pairs, margin=margin, level=level)
        del view_pairs
        robustness[name] = rounded({**summary, **answer_summary(frame), **figures})
        for key in VERDICT_COLUMNS:
            threshold = alpha_of(level) if key == "mcnemar_p" else 0.0
            robustness[name][key] = rounded(verdict_rounded(summary[key], threshold, DECIMALS))
        if len(table):
            words.append(table.assign(label=name + ": " + table["word"]))
        setup = classification.get(name)
        if setup is None:
            continue
        rows = frame.loc[frame["variant"] == ORIGINAL]
        report = classification_report(
            rows["gold"].tolist(),
            rows["prediction"].tolist(),
            labels=list(setup.labels),
            explicit_invalid=setup.explicit_invalid,
        )
        report["unparsed"] = int((rows["parse_status"] == "unparsed").sum())
        class_metrics[name] = rounded(report)
        labels = {str(label) for label in setup.labels}
        predicted = [p if p in labels else "invalid" for p in rows["prediction"]]
        confusion.append(
            pd.DataFrame(
                {
                    "benchmark": name,
                    "example_id": rows["example_id"].astype(str).to_numpy(),
                    "actual": [f"{name}: {g}" for g in rows["gold"]],
                    "predicted": [f"{name}: {p}" for p in predicted],
                }
            )
        )
    word_frame = (
        pd.concat(words, ignore_index=True)[WORD_PLOT_COLUMNS]
        if words
        else pd.DataFrame(columns=WORD_PLOT_COLUMNS)
    )
    confusion_frame = (
        pd.concat(confusion, ignore_index=True)
        if confusion
        else pd.DataFrame(columns=["benchmark", "example_id", "actual", "predicted"])
    )
    # One view per benchmark, or a benchmark's examples would count once per scoring method.
    primary = sorted(primary_views(scored).values())
    primary_originals = sum((originals[v] for v in primary), Originals())
    # the primary views' rows in table order (the views are sorted): their concatenation
    rows = np.concatenate([by_view.get(v, empty) for v in primary]) if primary else empty
    rate = (
        accuracy_by_rate(pairs.iloc[rows].reset_index(drop=True), originals=primary_originals)
        if primary
        else pd.DataFrame(columns=RATE_COLUMNS)
    )
    return Reports(
        robustness=robustness,
        classification=class_metrics,
        headline={
            name: {short: summary.get(key) for short, key in HEADLINE_KEYS.items()}
            for name, summary in robustness.items()
        },
        word_accuracy_drop=rounded_frame(word_frame, alpha=alpha_of(level)),
        confusion=confusion_frame,
        accuracy_by_rate=rounded_frame(rate),
    )
