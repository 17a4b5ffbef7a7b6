"""The impact tables in the report: per word (details), per operation type and script class
(marginal rows beside the estimates adjusted for word, example and benchmark).

The code is generic over the tables' columns: an interval method (``ci_method``, or any column
ending in ``method``) is shown when a table records one, and every column whose name contains
``adjusted`` is shown beside the marginal estimate it adjusts. A table without them renders as
before, with a sentence saying what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from evalpipe.report import html as h
from evalpipe.report.answer import (
    PDR_TITLE,
    PER_OCCURRENCE_TITLE,
    change,
    ci_label,
    ci_method,
    impact_label,
    most_harmful,
    pooled,
    records,
)
from evalpipe.report.controls import control_columns, with_control_ci
from evalpipe.report.svg import ForestRow, forest_plot

ADJUSTED = "adjusted"
X_LABEL = "accuracy perturbed - original (negative = typos hurt); hollow = small n"
X_LABEL_ADJUSTED = (
    "this kind minus the other kinds, same word and example (negative = costs more); "
    "hollow = small n"
)
ADJUSTED_TITLE = (
    "adjusted for word, example and benchmark: the accuracy change of this kind's typos minus "
    "that of the other kinds' typos of the same word on the same example; negative = this kind "
    "of typo costs more accuracy than the others"
)
DEFF_TITLE = "design effect: how much the example clusters widened the interval (1 = not at all)"

READ_ADJUSTED = (
    "Read the adjusted columns. A marginal row pools every pair whose typo was of this kind, and "
    "the words whose typos hurt most spread their pairs over every kind, so marginal rows differ "
    "by which words they happen to hold: they are confounded by the words. The adjusted estimate "
    "compares each kind with the other kinds on the same word and the same example (benchmark "
    "held fixed; docs/scoring.md): negative = this kind costs more accuracy than the others, an "
    "interval covering 0 = no evidence that the kind matters. The forest plots show it."
)
NO_ADJUSTED = (
    "Marginal rows only: each pools every pair whose typo was of this kind, and the words whose "
    "typos hurt most spread their pairs over every kind, so differences between kinds can come "
    "from the words alone (confounded by the words). Read them as a description, not as the "
    "effect of the kind; this table carries no adjusted estimate (no column named *adjusted*)."
)


def _words(name: str) -> str:
    return name.replace("_", " ").strip()


def adjusted_columns(frame: pd.DataFrame | None) -> list[str]:
    """The columns of ``frame`` whose names contain ``adjusted``, in table order."""
    if frame is None:
        return []
    return [str(c) for c in frame.columns if ADJUSTED in str(c).lower()]


def _tokens(name: str) -> list[str]:
    return name.lower().split("_")


def _is_p(name: str) -> bool:
    tokens = _tokens(name)
    return "p" in tokens or any(t.startswith(("pvalue", "pval")) for t in tokens)


def _rest(name: str, *drop: str) -> str:
    """``name``'s words without ``drop``, "adjusted" first (``p_holm_adjusted`` ->
    ``adjusted p holm``)."""
    words = [t for t in _tokens(name) if t not in drop]
    if ADJUSTED in words:
        words = [ADJUSTED] + [t for t in words if t != ADJUSTED]
    return " ".join(words)


def _interval_pairs(names: Sequence[str]) -> dict[str, str]:
    """``{low: high}`` for every name holding ``ci_low`` whose ``ci_high`` partner is present
    (``adjusted_ci_low`` / ``adjusted_ci_high`` as well as ``ci_low_adjusted`` / ...)."""
    present = set(names)
    return {
        n: n.replace("ci_low", "ci_high")
        for n in names
        if "ci_low" in n and n.replace("ci_low", "ci_high") in present
    }


def estimate_keys(frame: pd.DataFrame | None) -> tuple[str, str, str, bool]:
    """``(estimate, low, high, adjusted)``: the adjusted estimate and its interval when the
    table carries them, else the marginal ``delta, ci_low, ci_high``."""
    names = adjusted_columns(frame)
    pairs = _interval_pairs(names)
    deltas = [n for n in names if "delta" in _tokens(n)]
    if deltas and pairs:
        low = next(iter(pairs))
        return deltas[0], low, pairs[low], True
    return "delta", "ci_low", "ci_high", False


def extra_columns(frame: pd.DataFrame | None) -> tuple[list[h.Column], list[h.Column]]:
    """Columns a table shows only when present: ``(marginal extras, adjusted)``.

    Marginal extras: the interval method (``ci_method`` -> ``interval``, any other column ending
    in ``method``) and ``design_effect``. Adjusted (names containing ``adjusted``, either
    ``adjusted_x`` or ``x_adjusted``): a ``ci_low`` / ``ci_high`` pair becomes one interval
    column (key ``<low>|ci``, filled by :func:`with_intervals`) whose header names the method
    when an adjusted column holding ``method`` records one; a ``delta`` is the change against
    the other kinds under the report's sign convention; a name with a ``p`` token is a p-value;
    text stays text, integers have no decimals.
    """
    if frame is None:
        return [], []
    names = adjusted_columns(frame)
    pairs = _interval_pairs(names)
    highs = set(pairs.values())
    methods = [n for n in names if "method" in _tokens(n)]
    marginal = [
        h.text(str(c), "interval" if str(c) == "ci_method" else _words(str(c)))
        for c in frame.columns
        if str(c).endswith("method") and str(c) not in names
    ]
    if "design_effect" in frame.columns:
        marginal.append(h.num("design_effect", "design effect", 2, title=DEFF_TITLE))
    adjusted: list[h.Column] = []
    for name in names:
        if name in highs or name in methods:
            continue
        kind = frame[name].dtype
        if name in pairs:
            method = ci_method(frame, methods[0]) if len(methods) == 1 else None
            prefix = _rest(name, "ci", "low")
            adjusted.append(h.text(f"{name}|ci", ci_label(method, prefix=f"{prefix} ")))
        elif "delta" in _tokens(name):
            label = f"{_rest(name, 'delta')} change vs other kinds"
            adjusted.append(change(name, label, title=ADJUSTED_TITLE))
        elif _is_p(name):
            label = _rest(name).replace("holm", "Holm").replace(" bh", " BH")
            adjusted.append(h.Column(name, label, h.fmt_p, numeric=True))
        elif pd.api.types.is_bool_dtype(kind) or not pd.api.types.is_numeric_dtype(kind):
            adjusted.append(h.text(name, _rest(name)))
        elif pd.api.types.is_integer_dtype(kind):
            adjusted.append(h.num(name, _rest(name), 0))
        else:
            adjusted.append(h.num(name, _rest(name)))
    return marginal, adjusted


def with_intervals(rows: list[dict[str, Any]], frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows with the ``<low>|ci`` text of every adjusted interval pair."""
    pairs = _interval_pairs(adjusted_columns(frame))
    for row in rows:
        for low, high in pairs.items():
            row[f"{low}|ci"] = h.fmt_ci(row.get(low), row.get(high))
    return rows


def impact_forest(
    frame: pd.DataFrame,
    *,
    title: str,
    key: str = "word",
    estimate: str = "delta",
    low: str = "ci_low",
    high: str = "ci_high",
    x_label: str = X_LABEL,
) -> str:
    """Forest plot of accuracy changes with their intervals; note = frequency rank, n, Holm p."""
    rows = []
    for row in records(frame):
        note_parts = []
        if key == "word" and row.get("rank") is not None:
            note_parts.append(f"rank {int(row['rank'])}")
        if row.get("n") is not None:
            note_parts.append(f"n {int(row['n'])}")
        if row.get("p_holm") is not None and estimate == "delta":
            note_parts.append(f"p_holm {h.fmt_p(row['p_holm'])}")
        rows.append(
            ForestRow(
                label=impact_label(row, key),
                estimate=row.get(estimate),
                low=row.get(low),
                high=row.get(high),
                note=" · ".join(note_parts),
                weak=bool(row.get("small_n")),
            )
        )
    return forest_plot(rows, title=title, x_label=x_label, note_width=200)


def impact_columns(key: str, frame: pd.DataFrame | None = None) -> list[h.Column]:
    """Columns of a per-word / per-operation / per-script table; ``frame`` adds the interval
    method and the adjusted estimates it carries, right after the marginal interval."""
    first = [h.text("model", "model"), h.text("scope", "scope"), h.text(key, key)]
    if key == "word":
        first += [h.text("lemma", "lemma"), h.text("pos", "pos"), h.num("rank", "freq. rank", 0)]
        first += [h.num("frequency_score", "freq. score", 2)]
    else:
        first += [h.num("n_words", "words", 0)]
    extras, adjusted = extra_columns(frame)
    marginal = "marginal " if adjusted else ""
    return [
        *first,
        h.num("occurrences", "occurrences", 0),
        h.num("perturbed_occurrences", "perturbed occ.", 0),
        h.num("n", "n", 0),
        h.num("accuracy_original", "acc. original"),
        h.num("accuracy_perturbed", "acc. perturbed"),
        change("delta", f"{marginal}accuracy change"),
        h.num("ci_low", "CI low"),
        h.num("ci_high", "CI high"),
        *extras,
        h.Column("p_holm", "p Holm", h.fmt_p, numeric=True),
        *adjusted,
        *control_columns(frame),
        h.num("pdr", "drop rate (PDR)", title=PDR_TITLE),
        h.num("flip_c2i", "flip c→i"),
        h.num("flip_i2c", "flip i→c"),
        h.Column("mcnemar_p", "McNemar p", h.fmt_p, numeric=True),
        h.Column("p_bh", "p BH", h.fmt_p, numeric=True),
        change(
            "accuracy_change_per_occurrence",
            "accuracy change per typo'd occ.",
            4,
            title=PER_OCCURRENCE_TITLE,
        ),
        h.num("unparsed_rate", "unparsed (perturbed)", 3),
        h.num("n_benchmarks", "benchmarks", 0),
        h.Column("small_n", "small n", lambda v: "n/a" if h.is_missing(v) else h.fmt_num(bool(v))),
    ]


def _small(row: Mapping[str, Any]) -> str:
    return "flag" if row.get("small_n") is True or row.get("small_n") == 1 else ""


def impact_groups(frame: pd.DataFrame) -> list[tuple[tuple[str, str], pd.DataFrame]]:
    """``((language, source), rows)`` groups in a stable order."""
    frame = frame.copy()
    for col in ("language", "source"):
        if col not in frame.columns:
            frame[col] = "n/a"
        frame[col] = frame[col].fillna("n/a").astype(str)
    return [
        ((str(lang), str(src)), group)
        for (lang, src), group in frame.groupby(["language", "source"], sort=True)
    ]


def words_section(words: pd.DataFrame | None, *, languages: Sequence[str], top: int) -> str:
    """Most harmful words per language: forest plots and a sortable table of every row.

    ``languages`` are the languages of the evaluated benchmarks: one without word rows is named.
    """
    if words is None:
        return h.missing(
            "data/impact/words.parquet is missing: the per-word impact tables (stage that "
            "writes data/impact/) have not run, so there is no per-word answer yet."
        )
    method = ci_method(words)
    body = [
        '<p class="note">Accuracy change = accuracy perturbed - accuracy original on the examples '
        "in which the word carried at least one typo (negative = the typos cost accuracy); "
        f"intervals: {h.esc(method or 'as docs/scoring.md describes')}. Rows flagged small n "
        "(shaded, hollow points) rest on few examples. p Holm / p BH: McNemar p adjusted over all "
        "words of the table.</p>"
    ]
    with_rows = {lang for (lang, _), _ in impact_groups(words)}
    for lang in sorted(set(languages) - with_rows):
        body.append(
            h.missing(
                f"{lang}: no per-word rows (no target word of this language was typo'd in "
                "any evaluated example)."
            )
        )
    for (lang, src), group in impact_groups(words):
        body.append(f"<h3>{h.esc(lang)} · word list {h.esc(src)}</h3>")
        top_rows = pooled(group)
        for model, mrows in top_rows.groupby("model", sort=True) if len(top_rows) else []:
            chosen = most_harmful(mrows, top=top)
            title = f"{lang} ({src}), {model}: {len(chosen)} most harmful words, pooled"
            body.append(f"<figure>{impact_forest(chosen, title=title)}</figure>")
        ordered = most_harmful(group, top=len(group))
        body.append(
            f"<p>All {len(ordered)} rows (pooled and per benchmark); click a header to sort.</p>"
            + h.table(
                impact_columns("word", group),
                with_control_ci(with_intervals(records(ordered), group)),
                sortable=True,
                table_id=f"words-{h.slug(lang, src)}",
                row_class=_small,
                scroll=True,
            )
        )
    return "".join(body)


def kinds_section(operations: pd.DataFrame | None, scripts: pd.DataFrame | None) -> str:
    """Operation types and script classes: marginal rows beside the adjusted estimates."""
    body = []
    for name, frame, key in (
        ("operations", operations, "operation"),
        ("scripts", scripts, "script"),
    ):
        what = "operation type" if key == "operation" else "script class"
        if frame is not None and key not in frame.columns and "op" in frame.columns:
            frame = frame.rename(columns={"op": key})
        body.append(f"<h3>By {what}</h3>")
        if frame is None:
            body.append(h.missing(f"data/impact/{name}.parquet is missing."))
            continue
        estimate, low, high, adjusted = estimate_keys(frame)
        body.append(f'<p class="note">{h.esc(READ_ADJUSTED if adjusted else NO_ADJUSTED)}</p>')
        for (lang, src), group in impact_groups(frame):
            top_rows = pooled(group)
            for model, mrows in top_rows.groupby("model", sort=True) if len(top_rows) else []:
                # Plot the estimate to read; where no adjusted estimate exists (no word's typos
                # fell into this kind and another: nothing to compare), the marginal one.
                use = adjusted and bool(mrows[estimate].notna().any())
                keys = (estimate, low, high) if use else ("delta", "ci_low", "ci_high")
                chosen = most_harmful(mrows, top=len(mrows), key=key, estimate=keys[0])
                kind = "adjusted change vs other kinds" if use else "marginal accuracy change"
                if adjusted and not use:
                    body.append(
                        f'<p class="note">{h.esc(lang)}, {h.esc(model)}: no adjusted estimate '
                        f"(no word's typos fell into this {h.esc(what)} and another, so there "
                        "is nothing to compare); the plot shows the marginal rows.</p>"
                    )
                body.append(
                    "<figure>"
                    + impact_forest(
                        chosen,
                        title=f"{lang} ({src}), {model}: {kind} by {what}, pooled",
                        key=key,
                        estimate=keys[0],
                        low=keys[1],
                        high=keys[2],
                        x_label=X_LABEL_ADJUSTED if use else X_LABEL,
                    )
                    + "</figure>"
                )
            ordered = most_harmful(group, top=len(group), key=key, estimate=estimate)
            body.append(
                h.table(
                    impact_columns(key, group),
                    with_control_ci(with_intervals(records(ordered), group)),
                    sortable=True,
                    table_id=f"{name}-{h.slug(lang, src)}",
                    row_class=_small,
                )
            )
    return "".join(body)
