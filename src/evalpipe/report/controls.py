"""Why a word's typos hurt: the matched control (harm beyond a matched random word) and the
accuracy change by how a typo re-tokenised its word. Each section is omitted when its data is
absent (the control arm is off by default; the token split needs the model's tokenizer)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalpipe.report import html as h
from evalpipe.report.answer import change, records

HARM = "harm_beyond_control"
HARM_TITLE = (
    "accuracy with the same typos on matched random words of the same example minus accuracy "
    "with the typos on this word (paired, same examples); positive = this word's typos cost "
    "more than typos on comparable words"
)
SPLIT_TITLE = "tokens the typo'd words gained under the model's tokenizer (after - before)"


def control_columns(frame: pd.DataFrame | None) -> list[h.Column]:
    """The word table's matched-control columns, when the table carries them (else none)."""
    if frame is None or HARM not in frame.columns:
        return []
    return [
        h.signed(HARM, "harm beyond matched control", title=HARM_TITLE),
        h.text(f"{HARM}|ci", "control 95% CI"),
        h.num("control_n", "control n", 0),
        h.num("control_unmatched", "no control", 0),
    ]


def with_control_ci(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with the ``harm_beyond_control|ci`` text."""
    for row in rows:
        if HARM in row:
            row[f"{HARM}|ci"] = h.fmt_ci(row.get("harm_ci_low"), row.get("harm_ci_high"))
    return rows


def _matched_note(summaries: Mapping[str, Mapping[str, Any]]) -> str:
    parts = []
    total = matched = 0
    for name, summary in sorted(summaries.items()):
        control = summary.get("control") if isinstance(summary, Mapping) else None
        if not isinstance(control, Mapping):
            continue
        total += int(control.get("rows") or 0)
        matched += int(control.get("matched") or 0)
        reasons = control.get("unmatched_reasons") or {}
        why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
        parts.append(
            f"{h.esc(name)}: {int(control.get('matched') or 0)}/{int(control.get('rows') or 0)}"
            + (f" (unmatched: {h.esc(why)})" if why else "")
        )
    if not parts:
        return ""
    share = f"{matched / total:.1%}" if total else "n/a"
    return (
        f"<p>Typo'd rows with a matched control: {matched} of {total} ({share}); "
        + "; ".join(parts)
        + ".</p>"
    )


def control_section(
    words: pd.DataFrame | None, summaries: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """The matched-control section, or None when the word table has no control columns."""
    if words is None or HARM not in words.columns:
        return None
    rows = words.loc[(words["scope"] == "pooled") & words[HARM].notna()]
    rows = rows.sort_values(["model", "language", HARM], ascending=[True, True, False])
    columns = [
        h.text("model", "model"),
        h.text("language", "language"),
        h.text("variant", "word"),
        h.num("rank", "freq. rank", 0),
        h.num("n", "n", 0),
        change("delta", "accuracy change (typo)"),
        h.num("accuracy_perturbed", "acc. typo"),
        h.num("accuracy_control", "acc. control"),
        *control_columns(words),
        h.num("split_matched", "same token count", 2),
    ]
    body = [
        '<p class="note">Each typo\'d prompt has a control prompt: the same typo model, as many '
        "edits, on random words of the same example matched on content/function word, frequency "
        "band, script and length (docs/perturbation.md). Harm beyond matched control = accuracy "
        "of the control prompts minus accuracy of the typo prompts on the same examples "
        "(paired score interval, clustered on the example; docs/scoring.md): positive = the "
        "word's own typos cost more than typos on comparable words; an interval covering 0 = no "
        "evidence that the word matters beyond any word of its kind. Same token count: share of "
        "controls whose edited words had as many tokens under the model's tokenizer as the "
        "target's (the perturb stage matches a model-independent proxy).</p>",
        _matched_note(summaries),
        h.table(columns, with_control_ci(records(rows)), sortable=True, table_id="control-words"),
    ]
    return "".join(body)


def token_split_section(split: pd.DataFrame | None) -> str | None:
    """Accuracy change by extra tokens of the typo'd words, or None without counts."""
    if split is None or split.empty:
        return None
    ordered = split.assign(_pooled=split["scope"] != "pooled").sort_values(
        ["model", "language", "_pooled", "benchmark"], kind="stable", na_position="first"
    )
    rows = records(ordered.drop(columns="_pooled"))
    for row in rows:
        row["ci"] = h.fmt_ci(row.get("ci_low"), row.get("ci_high"))
        row["where"] = row.get("benchmark") or "pooled"
    columns = [
        h.text("model", "model"),
        h.text("language", "language"),
        h.text("where", "scope"),
        h.text("extra_tokens", "extra tokens", title=SPLIT_TITLE),
        h.num("n", "pairs", 0),
        h.num("n_examples", "examples", 0),
        h.num("tokens_before", "tokens before", 2),
        h.num("accuracy_original", "acc. original"),
        h.num("accuracy_perturbed", "acc. perturbed"),
        change("delta"),
        h.text("ci", "95% CI"),
        h.num("answer_change", "answer change"),
    ]
    return (
        '<p class="note">Each typo\'d prompt by how many tokens its edited words gained under the '
        "model's tokenizer (summed over the prompt's edits; a word is tokenised with its leading "
        "space). Accuracy change = perturbed - original on the same examples, paired score "
        "interval clustered on the example. Benchmarks and words differ between the bins, so "
        "read the bins as a description, not as the effect of a split.</p>"
        + h.table(columns, rows, sortable=True, table_id="token-split-rows", scroll=True)
    )
