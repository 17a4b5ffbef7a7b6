"""The report's first screen: per language and model, the words whose typos cost most accuracy,
the benchmarks that lost most, and the unparsed / truncated answers that could distort both.

One sign convention holds for every signed column of the report: a change is perturbed minus
original, so a negative number is accuracy the typos cost (shown red). Figures whose natural sign
is the other way (the drop rate PDR) say "drop" in their name; the impact tables'
``per_occurrence_impact`` (positive = harm) is shown negated as the accuracy change per typo'd
occurrence (:func:`with_report_signs`).

Everything here takes rows and frames, never files, and returns HTML strings or row dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.report import html as h
from evalpipe.scoring.views import parse_view

POOLED = "pooled"
# Words per (language, model) on the first screen; the details section lists report.top_words.
FIRST_SCREEN_WORDS = 10
ALPHA = 0.05
# An unparsed or truncated share above this is named in a sentence under the tables: unparsed
# answers count as wrong, so a share this large can move an accuracy change by itself.
DISTORTION_SHARE = 0.10
UNKNOWN_LANGUAGE = "language not recorded"

CHANGE_TITLE = (
    "accuracy on the perturbed prompts minus accuracy on the same examples' original prompts; "
    "negative = the typos cost accuracy"
)
PER_OCCURRENCE_TITLE = (
    "accuracy change of the whole scope per typo'd occurrence of the word: "
    "-(n_c2i - n_i2c) / n_base / perturbed occurrences; negative = the typos cost accuracy "
    "(the impact tables store it with the opposite sign as per_occurrence_impact)"
)
PDR_TITLE = "Performance Drop Rate, 1 - perturbed / original; positive = accuracy dropped"
MDE_TITLE = (
    "minimum detectable effect: the smallest accuracy change (either sign) these pairs would "
    "show 80% of the time at the intervals' level, from their observed discordance and "
    "clustering; a smaller effect can hide behind an interval that holds 0"
)


def mde_column() -> h.Column:
    """The minimum detectable effect beside an interval."""
    return h.num("mde", "MDE (80% power)", title=MDE_TITLE)


def change(
    key: str, label: str = "accuracy change", digits: int = 3, *, title: str = CHANGE_TITLE
) -> h.Column:
    """A signed column under the report's convention (perturbed - original, negative = harm)."""
    return h.signed(key, label, digits, title=title)


def ci_label(method: str | None, prefix: str = "") -> str:
    """The header of an interval column, naming its method when the table records one."""
    label = f"{prefix}95% CI".strip()
    return f"{label} ({method})" if method else label


def ci_method(
    rows: pd.DataFrame | Sequence[Mapping[str, Any]] | None, key: str = "ci_method"
) -> str | None:
    """The interval method recorded in ``key`` (a column or row key), ``a / b`` when several,
    None when absent."""
    if rows is None:
        return None
    if isinstance(rows, pd.DataFrame):
        values = rows[key].tolist() if key in rows.columns else []
    else:
        values = [r.get(key) for r in rows]
    found = sorted({str(v) for v in values if not h.is_missing(v)})
    return " / ".join(found) or None


def with_report_signs(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` plus the report's same-sign view of ``per_occurrence_impact``.

    Examples
    --------
    >>> with_report_signs({"per_occurrence_impact": 0.002})["accuracy_change_per_occurrence"]
    -0.002
    """
    out = dict(record)
    impact = out.get("per_occurrence_impact")
    out["accuracy_change_per_occurrence"] = None if h.is_missing(impact) else -float(impact)
    return out


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts, NaN as None, with the report's sign view added."""
    return [
        with_report_signs({k: (None if h.is_missing(v) else v) for k, v in row.items()})
        for row in frame.to_dict(orient="records")
    ]


def impact_label(row: Mapping[str, Any], key: str) -> str:
    """A word as typo'd (its variant) with lemma and part of speech; other keys as they are."""
    label = str(row.get(key))
    if key == "word" and row.get("variant") and row.get("variant") != row.get("word"):
        label = str(row["variant"])
    if key == "word":
        lemma, pos = row.get("lemma"), row.get("pos")
        extra = [str(x) for x in (lemma if lemma != row.get("word") else None, pos) if x]
        if extra:
            label += f" ({' · '.join(extra)})"
    return label


def most_harmful(
    frame: pd.DataFrame, *, top: int, key: str = "word", estimate: str = "delta"
) -> pd.DataFrame:
    """The ``top`` rows with the most negative ``estimate``: rows flagged ``small_n`` after the
    others (as the impact tables sort), missing estimates last, ties by ``key``."""
    small = frame["small_n"].fillna(False).astype(bool) if "small_n" in frame else False
    order = frame.assign(_s=small, _d=frame[estimate].astype(float).fillna(np.inf))
    order = order.sort_values(["_s", "_d", key], kind="stable")
    return order.drop(columns=["_s", "_d"]).head(top)


def pooled(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows pooled over a language's benchmarks (all rows when the table has no scope)."""
    return frame[frame["scope"] == POOLED] if "scope" in frame.columns else frame


def _pct(value: Any) -> str:
    return "n/a" if h.is_missing(value) else f"{float(value):.0%}"


def _language(value: Any) -> str:
    return UNKNOWN_LANGUAGE if h.is_missing(value) or value in ("", "n/a") else str(value)


def benchmark_rows(
    headline: Sequence[Mapping[str, Any]], parse: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Headline rows with unparsed and truncated shares per prompt kind, most lost first.

    Parameters
    ----------
    headline:
        Rows of :func:`evalpipe.report.accuracy.headline_rows` (``model, benchmark, language, n,
        accuracy_original, accuracy_perturbed, delta, delta_ci, ...``).
    parse:
        Rows of :func:`evalpipe.report.accuracy.parse_status_rows` (``model, benchmark, prompts,
        n, unparsed_share, truncated``): the generated answers of each benchmark.

    Returns
    -------
    list of dict
        The headline row plus ``unparsed_original, unparsed_perturbed, truncated_original,
        truncated_perturbed`` (shares; None where the scored rows are absent or the view scores
        log-likelihoods, which parse nothing), ``unparsed_all, truncated_all`` (the score
        stage's rates over every answer, when the scored rows are absent) and their text
        ``unparsed_shares, truncated_shares``; sorted by delta (missing last), then name.
    """
    shares: dict[tuple[str, str, str], Mapping[str, Any]] = {
        (str(r["model"]), str(r["benchmark"]), str(r["prompts"])): r for r in parse
    }
    out = []
    for row in headline:
        benchmark, method = parse_view(str(row["benchmark"]))
        entry = dict(row)
        for kind in ("original", "perturbed"):
            found = (
                shares.get((str(row["model"]), benchmark, kind)) if method == "generate" else None
            )
            n = found.get("n") if found else None
            entry[f"unparsed_{kind}"] = found.get("unparsed_share") if found else None
            entry[f"truncated_{kind}"] = found["truncated"] / n if found and n else None
        for what, rate in (("unparsed", "unparsed_rate"), ("truncated", "truncated_rate")):
            orig, pert = entry[f"{what}_original"], entry[f"{what}_perturbed"]
            if orig is not None or pert is not None:
                entry[f"{what}_shares"] = f"{_pct(orig)} / {_pct(pert)}"
            elif not h.is_missing(row.get(rate)):
                # no scored rows: the score stage's rate over every answer of the view
                entry[f"{what}_all"] = row[rate]
                entry[f"{what}_shares"] = f"{_pct(row[rate])} of all answers"
        out.append(entry)
    return sorted(
        out,
        key=lambda r: (
            h.is_missing(r.get("delta")),
            0.0 if h.is_missing(r.get("delta")) else float(r["delta"]),
            str(r["benchmark"]),
        ),
    )


BENCHMARK_COLUMNS = [
    h.text("benchmark", "benchmark"),
    h.num("n", "pairs", 0, title="paired (example, word) comparisons"),
    h.num("accuracy_original", "acc. original"),
    h.num("accuracy_perturbed", "acc. perturbed"),
    change("delta"),
    h.text("delta_ci", "95% CI"),
    mde_column(),
    h.Column("mcnemar_p", "McNemar p", h.fmt_p, numeric=True),
    h.text(
        "unparsed_shares",
        "unparsed: original / perturbed",
        title="share of answers no parser read (counted wrong)",
    ),
    h.text(
        "truncated_shares",
        "truncated: original / perturbed",
        title="share of answers cut at the token budget",
    ),
]


def word_columns(method: str | None) -> list[h.Column]:
    """Columns of the first screen's word table."""
    return [
        h.text("label", "word"),
        h.num("rank", "freq. rank", 0),
        h.num("n", "pairs", 0, title="examples in which the word carried a typo"),
        change("delta"),
        h.text("ci", ci_label(method)),
        mde_column(),
        h.Column("p_holm", "p Holm", h.fmt_p, numeric=True, title="McNemar p, Holm-adjusted"),
        h.num("unparsed_rate", "unparsed, perturbed", title="share of the perturbed answers"),
        h.Column("small_n", "small n", lambda v: "n/a" if h.is_missing(v) else h.fmt_num(bool(v))),
    ]


def word_rows(frame: pd.DataFrame, *, top: int) -> list[dict[str, Any]]:
    """The ``top`` most harmful pooled words of one (language, model, word list)."""
    rows = []
    for row in records(most_harmful(pooled(frame), top=top)):
        rows.append(
            {
                **row,
                "label": impact_label(row, "word"),
                "ci": h.fmt_ci(row.get("ci_low"), row.get("ci_high")),
            }
        )
    return rows


def word_summary(frame: pd.DataFrame) -> str:
    """One sentence: the most harmful word and how many words lost accuracy at Holm p < ALPHA."""
    rows = pooled(frame)
    if "delta" not in rows.columns:
        return ""
    measured = rows[rows["delta"].notna()]
    if not len(measured):
        return "No word has a measured accuracy change yet."
    harmful = measured["delta"].astype(float) < 0
    if "p_holm" in measured.columns:
        significant = int((harmful & (measured["p_holm"].astype(float) < ALPHA)).sum())
        count = f"{significant} of {len(measured)} words lost accuracy at Holm p < {ALPHA}"
    else:
        count = f"{int(harmful.sum())} of {len(measured)} words lost accuracy"
    small = (
        measured["small_n"].fillna(False).astype(bool)
        if "small_n" in measured.columns
        else pd.Series(False, index=measured.index)
    )
    if small.all():
        # a headline from a handful of pairs (one pair: -1.000) would be noise
        return (
            f"Every word has fewer paired examples than impact.small_n: too few to name the "
            f"most harmful one (the table lists them, flagged). {count}."
        )
    best = records(most_harmful(measured[~small], top=1))[0]
    if float(best["delta"]) >= 0:
        return f"No word's typos lowered accuracy. {count}."
    ci = h.fmt_ci(best.get("ci_low"), best.get("ci_high"))
    first = (
        f"Most harmful: {impact_label(best, 'word')}, accuracy change "
        f"{h.fmt_signed(best.get('delta'))} {ci}, Holm p {h.fmt_p(best.get('p_holm'))}"
    )
    return f"{first}. {count}."


def _holds_zero(row: Mapping[str, Any]) -> bool:
    low, high = row.get("ci_low"), row.get("ci_high")
    return not h.is_missing(low) and not h.is_missing(high) and float(low) <= 0 <= float(high)


def power_sentences(bench: Sequence[Mapping[str, Any]], words: pd.DataFrame | None) -> list[str]:
    """Before a reader concludes "no effect": per benchmark whose interval holds 0, the smallest
    effect the study could see (its ``mde``), and the same for the words, summarised."""
    out = []
    for row in bench:
        if _holds_zero(row) and not h.is_missing(row.get("mde")):
            out.append(
                f"{row['benchmark']}: no change shown (the interval holds 0), but this study "
                f"could not see an effect smaller than {float(row['mde']) * 100:.1f} points."
            )
    if words is not None and {"mde", "ci_low", "ci_high"} <= set(words.columns):
        rows = pooled(words)
        quiet = rows[[_holds_zero(r) for r in records(rows)]]
        sizes = quiet["mde"].dropna().astype(float)
        if len(sizes):
            out.append(
                f"{len(quiet)} of {len(rows)} words show no change (interval holds 0); for "
                f"them this study could not see an effect smaller than "
                f"{sizes.min() * 100:.1f}-{sizes.max() * 100:.1f} points (median "
                f"{sizes.median() * 100:.1f})."
            )
    return out


def distortion_sentences(
    bench: Sequence[Mapping[str, Any]], words: pd.DataFrame | None
) -> list[str]:
    """Sentences naming every benchmark (and the count of words) whose unparsed or truncated
    share exceeds :data:`DISTORTION_SHARE`. A truncated share is named only beside unparsed
    answers of the same prompts: an answer cut at its budget but read (a spec's one-token
    label budget, set on purpose) distorts nothing."""
    out = []
    for row in bench:
        parts = []
        for key, what in (
            ("unparsed_original", "unparsed on original prompts"),
            ("unparsed_perturbed", "unparsed on perturbed prompts"),
            ("truncated_original", "truncated on original prompts"),
            ("truncated_perturbed", "truncated on perturbed prompts"),
            ("unparsed_all", "unparsed over all answers"),
            ("truncated_all", "truncated over all answers"),
        ):
            value = row.get(key)
            if key.startswith("truncated"):
                unparsed = row.get(key.replace("truncated", "unparsed", 1))
                if h.is_missing(unparsed) or float(unparsed) == 0:
                    continue
            if not h.is_missing(value) and float(value) > DISTORTION_SHARE:
                parts.append(f"{float(value):.0%} {what}")
        if parts:
            out.append(f"{row['benchmark']}: {', '.join(parts)}.")
    if words is not None and "unparsed_rate" in words.columns:
        rows = pooled(words)
        high = int((rows["unparsed_rate"].astype(float) > DISTORTION_SHARE).sum())
        if high:
            out.append(
                f"{high} of {len(rows)} words have more than {DISTORTION_SHARE:.0%} unparsed "
                "answers on their perturbed prompts."
            )
    return out


def answer_section(
    *,
    words: pd.DataFrame | None,
    headline: Sequence[Mapping[str, Any]],
    parse: Sequence[Mapping[str, Any]],
    top: int = FIRST_SCREEN_WORDS,
) -> str:
    """The first screen: the study's answer per language and model.

    Parameters
    ----------
    words:
        ``data/impact/words.parquet`` (None when absent).
    headline:
        Headline rows with their ``language`` (:func:`evalpipe.report.accuracy.headline_rows`).
    parse:
        Parse-status rows (:func:`evalpipe.report.accuracy.parse_status_rows`).
    top:
        Words per (language, model, word list).

    Returns
    -------
    str
        HTML: per (language, model) a sentence, the most harmful words (accuracy change with its
        interval and Holm p), the benchmarks by accuracy lost, and the unparsed / truncated shares
        that could distort both.
    """
    bench = benchmark_rows(headline, parse)
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    if words is not None and len(words):
        frame = words.assign(
            language=words["language"].map(_language) if "language" in words else UNKNOWN_LANGUAGE,
            model=words["model"].astype(str) if "model" in words else "model",
            source=words["source"].fillna("n/a").astype(str) if "source" in words else "n/a",
        )
        for (lang, model), rows in frame.groupby(["language", "model"], sort=True):
            groups.setdefault((lang, model), {"words": None, "bench": []})["words"] = rows
    for row in bench:
        key = (_language(row.get("language")), str(row["model"]))
        groups.setdefault(key, {"words": None, "bench": []})["bench"].append(row)
    intro = (
        '<p class="note">Per language and model: the words whose typos cost most accuracy '
        "(pooled over the language's benchmarks), the benchmarks that lost most, and the share of "
        "answers that no parser read or that hit the token budget (both count as wrong, so a "
        "large share can move an accuracy change by itself). Accuracy change = perturbed - "
        "original on the same examples: negative = the typos cost accuracy. Details, typo kinds "
        "and provenance follow below.</p>"
    )
    if not groups:
        return intro + h.missing(
            "No answer yet: data/impact/words.parquet and data/scored/<model>/"
            "robustness_details.json are both missing (run `dvc repro`)."
        )
    parts = [intro]
    for (lang, model), group in sorted(groups.items()):
        parts.append(f"<h3>{h.esc(lang)} · {h.esc(model)}</h3>")
        frame = group["words"]
        if frame is None and words is not None and not len(words):
            # the count design edits k words per row: no row belongs to one word
            parts.append(
                h.missing(
                    f"{lang}: no per-word rows for {model}: with perturb.design: count each "
                    "prompt has k words edited at once, so the answer is the accuracy change by "
                    "number of typo'd words (the section \"Dose-response: accuracy by number "
                    "of typo'd words\" below); the benchmarks follow."
                )
            )
        elif frame is None:
            parts.append(
                h.missing(
                    f"{lang}: no per-word rows for {model} (data/impact/words.parquet is missing, "
                    "or no target word of this language was typo'd)."
                )
            )
        else:
            sources = sorted(set(frame["source"]))
            for src in sources:
                rows = frame[frame["source"] == src]
                if len(sources) > 1:
                    parts.append(f"<h4>word list {h.esc(src)}</h4>")
                if summary := word_summary(rows):
                    parts.append(f"<p><b>{h.esc(summary)}</b></p>")
                parts.append(
                    h.table(
                        word_columns(ci_method(rows)),
                        word_rows(rows, top=top),
                        table_id=f"answer-words-{h.slug(lang, model, src)}",
                        row_class=lambda r: "flag" if r.get("small_n") else "",
                    )
                )
        if group["bench"]:
            method = ci_method(group["bench"])
            columns = [
                c if c.key != "delta_ci" else h.text("delta_ci", ci_label(method))
                for c in BENCHMARK_COLUMNS
            ]
            parts.append(
                "<p>Benchmarks, most accuracy lost first:</p>"
                + h.table(
                    columns, group["bench"], table_id=f"answer-benchmarks-{h.slug(lang, model)}"
                )
            )
        else:
            parts.append(h.missing(f"No benchmark figures for {model} in {lang}."))
        unseen = power_sentences(group["bench"], frame)
        if unseen:
            parts.append(
                '<p class="note">What the study could not see (80% power): '
                + h.esc(" ".join(unseen))
                + "</p>"
            )
        warnings = distortion_sentences(group["bench"], frame)
        known = any(
            not h.is_missing(r.get(k))
            for r in group["bench"]
            for k in ("unparsed_original", "unparsed_perturbed", "unparsed_all")
        )
        if warnings:
            parts.append(
                '<p class="missing">Could distort the figures above (more than '
                f"{DISTORTION_SHARE:.0%} unparsed or truncated): "
                + h.esc(" ".join(warnings))
                + "</p>"
            )
        elif known:
            parts.append(
                f'<p class="note">Unparsed and truncated answers stay at or below '
                f"{DISTORTION_SHARE:.0%} everywhere here.</p>"
            )
    return "".join(parts)
