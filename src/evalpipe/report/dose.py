"""What a typo study reports beside the accuracy change: the dose-response by number of edited
words (the count design) and the four-way transitions with the answer-change rate per view.

Both sections are omitted when they have nothing to show: the dose-response section needs
perturbed sets of the count design (``design: count`` in a perturb summary) and
``data/impact/dose.parquet``; the transitions section needs the transition counts of
``data/scored/<model>/robustness_details.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalpipe.report import html as h
from evalpipe.report.data import by_model

COUNT_DESIGN = "count"
TRANSITION_KEYS = ("right_right", "right_wrong", "wrong_right", "wrong_wrong")
TRANSITION_LABELS = {
    "right_right": "right → right",
    "right_wrong": "right → wrong",
    "wrong_right": "wrong → right",
    "wrong_wrong": "wrong → wrong",
}


def count_summaries(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The perturb summaries of the count design, by benchmark."""
    return {
        name: s
        for name, s in sorted(summaries.items())
        if isinstance(s, Mapping) and s.get("design") == COUNT_DESIGN
    }


def shortfall_rows(summaries: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (benchmark, k) of the count design: rows made, examples short of k eligible
    words (no row, never padded) and the targeting check of the benchmark's edits.

    Examples
    --------
    >>> s = {"b": {"design": "count", "language": "english", "examples": 3, "draws": 1,
    ...      "counts": [1, 8], "rows_by_k": {"1": 3, "8": 1}, "shortfall": {"1": 0, "8": 2},
    ...      "eligible_words": 12, "targeting": {"edits": 11, "inside_target": 11, "share": 1.0}}}
    >>> [(r["k"], r["rows"], r["shortfall"]) for r in shortfall_rows(s)]
    [(1, 3, 0), (8, 1, 2)]
    """
    rows = []
    for name, s in count_summaries(summaries).items():
        made = s.get("rows_by_k") or {}
        short = s.get("shortfall") or {}
        targeting = s.get("targeting") or {}
        for k in s.get("counts") or []:
            rows.append(
                {
                    "benchmark": str(s.get("benchmark") or name),
                    "language": s.get("language"),
                    "k": int(k),
                    "examples": s.get("examples"),
                    "draws": s.get("draws"),
                    "eligible_words": s.get("eligible_words"),
                    "rows": made.get(str(k)),
                    "shortfall": short.get(str(k)),
                    "targeting": (
                        f"{targeting.get('inside_target')}/{targeting.get('edits')}"
                        if targeting
                        else None
                    ),
                }
            )
    return rows


def _dose_table(frame: pd.DataFrame, table_id: str) -> str:
    rows = frame.to_dict("records")
    return h.table(
        [
            h.text("model", "model"),
            h.text("language", "language"),
            h.text("benchmark", "benchmark"),
            h.num("n_typos", "edited words (k)", 0),
            h.num("n", "pairs", 0),
            h.num("n_examples", "examples", 0),
            h.num("accuracy_original", "accuracy, clean"),
            h.num("accuracy_perturbed", "accuracy, typo'd"),
            h.signed("delta", "change"),
            h.text("ci", "interval (paired, clustered on the example)"),
            h.num("answer_change", "answer changed"),
        ],
        rows,
        sortable=True,
        table_id=table_id,
    )


def dose_section(
    dose: pd.DataFrame | None, summaries: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """Accuracy by number of edited words, pooled per language and per benchmark, with the
    shortfall counts; None (section omitted) without count-design perturbed sets.

    Parameters
    ----------
    dose : ``data/impact/dose.parquet`` (:data:`evalpipe.scoring.transitions.DOSE_COLUMNS`).
    summaries : ``{benchmark: perturb summary}`` (the count design's carry ``shortfall``).

    Returns
    -------
    str or None
        HTML.
    """
    chosen = count_summaries(summaries)
    if not chosen:
        return None
    parts = [
        '<p class="note">The count design (docs/perturbation.md): exactly k distinct eligible '
        "words of each example edited, one character operation each, for each k of "
        "<code>perturb.counts</code>; the edits are nested (k=1's edit is one of k=2's). Each row "
        "compares the pairs with k edits with their own clean prompts (paired, clustered on the "
        "example); k = 0 anchors the curve at the clean accuracy. An example with fewer than k "
        "eligible words has no k row (shortfall below), so the examples behind each k can "
        "differ.</p>"
    ]
    if dose is None or dose.empty:
        parts.append(
            h.missing("data/impact/dose.parquet is missing or empty (`dvc repro impact`).")
        )
    else:
        frame = dose.copy()
        frame["ci"] = [
            "n/a" if h.is_missing(lo) else h.fmt_ci(lo, hi)
            for lo, hi in zip(frame["ci_low"], frame["ci_high"], strict=True)
        ]
        pooled = frame.loc[frame["scope"] == "pooled"]
        per_benchmark = frame.loc[frame["scope"] != "pooled"]
        parts.append("<h3>Pooled per language</h3>" + _dose_table(pooled, "dose-pooled"))
        if len(per_benchmark):
            parts.append("<h3>Per benchmark</h3>" + _dose_table(per_benchmark, "dose-benchmarks"))
    parts.append(
        "<h3>Eligible words and shortfall</h3>"
        '<p class="note">Per benchmark and k: the rows made, the examples (times draws) with '
        "fewer than k eligible words (left out, never padded), and the targeting check: edits "
        "that lie inside the word they were meant for, out of all edits "
        "(data/perturbed/&lt;benchmark&gt;.summary.json).</p>"
        + h.table(
            [
                h.text("benchmark", "benchmark"),
                h.text("language", "language"),
                h.num("k", "k", 0),
                h.num("examples", "examples", 0),
                h.num("draws", "draws", 0),
                h.num("eligible_words", "eligible words", 0),
                h.num("rows", "rows", 0),
                h.num("shortfall", "shortfall", 0),
                h.text("targeting", "edits on target"),
            ],
            shortfall_rows(chosen),
            sortable=True,
            table_id="dose-shortfall",
        )
    )
    return "".join(parts)


def transition_rows(robustness: Mapping[str, Any] | None, model: str) -> list[dict[str, Any]]:
    """One row per (model, view) with transition counts: the four cells, their shares, the
    answer-change rate and the gate verdict.

    Examples
    --------
    >>> rows = transition_rows({"m": {"b": {"n": 4, "right_right": 1, "right_wrong": 2,
    ...     "wrong_right": 0, "wrong_wrong": 1, "answer_change": 0.5}}}, "m")
    >>> rows[0]["right_wrong"], rows[0]["right_wrong_rate"]
    (2, 0.5)
    """
    rows = []
    for slug, views in sorted(by_model(robustness, model).items()):
        for view, stats in sorted(views.items()):
            if not all(k in stats for k in TRANSITION_KEYS):
                continue
            n = stats.get("n") or sum(int(stats[k]) for k in TRANSITION_KEYS)
            row = {"model": slug, "view": view, "n": n}
            for key in TRANSITION_KEYS:
                row[key] = stats[key]
                row[f"{key}_rate"] = stats[key] / n if n else None
            row["answer_change"] = stats.get("answer_change")
            row["gate"] = stats.get("gate")
            rows.append(row)
    return rows


def transitions_section(robustness: Mapping[str, Any] | None, model: str) -> str | None:
    """The four-way transition table and the answer-change rate per view; None (omitted) when
    no view carries the transition counts.

    Parameters
    ----------
    robustness : ``{model: {view: details}}`` (data/scored/<model>/robustness_details.json).
    model : the label of a flat (single-model) details mapping.
    """
    rows = transition_rows(robustness, model)
    if not rows:
        return None
    columns = [h.text("model", "model"), h.text("view", "view"), h.num("n", "pairs", 0)]
    for key in TRANSITION_KEYS:
        columns += [
            h.num(key, TRANSITION_LABELS[key], 0),
            h.num(f"{key}_rate", f"{TRANSITION_LABELS[key]} share", 3),
        ]
    columns += [h.num("answer_change", "answer changed"), h.text("gate", "gate")]
    return (
        '<p class="note">Every typo\'d prompt against its clean prompt (all typo rows of the view '
        "pooled: every word, every draw, every k): right → wrong are the answers typos broke, "
        "wrong → right those they fixed; the answer-change rate counts every changed parsed answer, "
        "right or wrong (an answer that became unparsed counts). Gate: non-inferiority at "
        "<code>scoring.margin</code> (docs/scoring.md).</p>"
        + h.table(columns, rows, sortable=True, table_id="transitions", scroll=True)
    )
