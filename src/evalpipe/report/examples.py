"""The examples section: the first wrong answers on perturbed prompts per benchmark (flips
first), the field texts with each edit marked, both outputs and how they parsed."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.arms import typo_rows
from evalpipe.report import html as h
from evalpipe.report.data import ORIGINAL, ReportData, ReportOptions


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, np.ndarray):
        return list(value)
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return []
        return parsed if isinstance(parsed, list) else []
    return []


def _fields(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"text": value}
        if isinstance(parsed, dict):
            return {str(k): str(v) for k, v in parsed.items()}
    return {}


def highlight_edits(text: str, edits: Sequence[Mapping[str, Any]]) -> tuple[str, str, list[str]]:
    """Original and perturbed text as HTML with every edited word marked.

    Parameters
    ----------
    text:
        The field as in the benchmark (offsets refer to it).
    edits:
        Perturbations of this field: ``start, end, original, perturbed, op``.

    Returns
    -------
    tuple
        ``(original_html, perturbed_html, problems)``: ``<del>`` marks the original word,
        ``<ins>`` its typo; an edit whose offsets do not match ``text`` is listed in
        ``problems`` and left unmarked.
    """
    problems = []
    ordered = sorted(edits, key=lambda e: (int(e["start"]), int(e["end"])))
    before, after = [], []
    cursor = 0
    for e in ordered:
        start, end = int(e["start"]), int(e["end"])
        if start < cursor or text[start:end] != e.get("original"):
            problems.append(
                f"edit {e.get('original')!r} at {start}:{end} does not match the text; not marked"
            )
            continue
        plain = h.esc(text[cursor:start])
        title = h.esc(f"{e.get('op', '')}: {e.get('original')} → {e.get('perturbed')}")
        before.append(f'{plain}<del class="edit" title="{title}">{h.esc(e["original"])}</del>')
        after.append(f'{plain}<ins class="edit" title="{title}">{h.esc(e["perturbed"])}</ins>')
        cursor = end
    tail = h.esc(text[cursor:])
    return "".join(before) + tail, "".join(after) + tail, problems


def pick_examples(
    pairs: pd.DataFrame | None,
    scored: pd.DataFrame,
    *,
    limit: int,
    whole: Callable[[Sequence[int]], Mapping[int, pd.Series]] | None = None,
) -> list[tuple[pd.Series, pd.Series]]:
    """The first wrong answers on perturbed prompts, flips (original right, perturbed wrong) first.

    Parameters
    ----------
    pairs:
        The pairs of one view (``model, example_id, word_rank, draw, correct_original,
        correct_perturbed``; ``data/scored/<model>/pairs.parquet``): which answers to show.
    scored:
        The view's scored rows of the same models (``model`` = slug): the texts, looked up by
        key, the original row by (model, example_id), the perturbed one by (model, example_id,
        word_rank, draw).
    limit:
        Examples at most.
    whole:
        ``whole(positions) -> {position: row}``: the whole rows at positions of ``scored``
        when ``scored`` holds only the key columns (the report stage's
        :class:`evalpipe.report.inputs.ScoredRows`); None: ``scored``'s own rows.

    Returns
    -------
    list
        ``(original_row, perturbed_row)`` of the scored rows in a stable order (flip first, then
        example_id, word_rank, draw; ties in the pairs' order); a pair whose rows the scored
        view lacks is left out.
    """
    needed = {"model", "example_id", "word_rank", "correct_original", "correct_perturbed"}
    if (
        limit <= 0
        or pairs is None
        or not needed <= set(pairs.columns)
        or not {"variant", "example_id", "word_rank"} <= set(scored.columns)
    ):
        return []
    wrong = pairs[~pairs["correct_perturbed"].astype(bool)]
    if not len(wrong):
        return []
    wrong = wrong.assign(_flip=(~wrong["correct_original"].astype(bool)).astype(int))
    sort = ["_flip", "example_id"] + [c for c in ("word_rank", "draw") if c in wrong.columns]
    wrong = wrong.sort_values(sort, kind="stable")
    model = (
        scored["model"].astype(str) if "model" in scored.columns else pd.Series("", scored.index)
    )
    is_original = (scored["variant"].astype(str) == ORIGINAL).to_numpy()
    keys = ["example_id", "word_rank"] + (
        ["draw"] if "draw" in scored.columns and "draw" in wrong.columns else []
    )
    # The lookups on the key columns only (the texts are taken for the rows shown): the first
    # original row per (model, example_id), the first arm row per (model, *keys).
    lookup = pd.DataFrame({"_model": model.to_numpy(), **{k: scored[k].to_numpy() for k in keys}})
    lookup["_pos"] = np.arange(len(scored))
    originals = lookup[is_original].drop_duplicates(["_model", "example_id"])
    originals = originals.set_index(["_model", "example_id"])["_pos"]
    arms = lookup[~is_original].drop_duplicates(["_model", *keys])
    arms = arms.set_index(["_model", *keys])["_pos"]

    chosen = []
    for pair in wrong.itertuples(index=False):
        fields = pair._asdict()
        key = (str(fields["model"]), *(fields[k] for k in keys))
        base = (str(fields["model"]), fields["example_id"])
        if key in arms.index and base in originals.index:
            chosen.append(((int(originals.loc[base]), base), (int(arms.loc[key]), key)))
            if len(chosen) == limit:
                break
    rows = whole([p for pair in chosen for p, _ in pair]) if whole is not None and chosen else {}

    def row(position: int, name: tuple) -> pd.Series:
        found = (rows[position] if whole is not None else scored.iloc[position]).copy()
        found["_model"] = model.iloc[position]
        found.name = name
        return found

    return [(row(*original), row(*arm)) for original, arm in chosen]


def _output_block(label: str, row: Mapping[str, Any]) -> str:
    status = row.get("parse_status")
    verdict = "correct" if bool(row.get("correct")) else "wrong"
    return (
        f"<div><b>{h.esc(label)}</b> — parsed as "
        f"<code>{h.esc(h.fmt_num(row.get('prediction')) if h.is_missing(row.get('prediction')) else row.get('prediction'))}</code> "
        f"({h.esc(status)}, {verdict}, finish {h.esc(row.get('finish_reason'))})"
        f'<pre class="text">{h.esc(row.get("output"))}</pre></div>'
    )


def _slip(edit: Mapping[str, Any]) -> str:
    """``op``, with the key path of a keyboard / romaji slip or the reading of a conversion."""
    extra = [
        f"{label}{edit[key]}"
        for key, label in (("keys", ""), ("reading", "reading "))
        if not h.is_missing(edit.get(key))
    ]
    return ", ".join([str(edit.get("op")), *extra])


def examples_section(data: ReportData, options: ReportOptions) -> str:
    """Original vs perturbed inputs with the edits highlighted, the outputs and their parses."""
    if not data.scored:
        return h.missing("data/scored/*.parquet are missing: no examples to show.")
    parts = [
        '<p class="note">The first wrong answers on perturbed prompts per benchmark, answers that '
        "flipped from right to wrong first. <del class='edit'>struck</del> = the word in the "
        "benchmark, <ins class='edit'>underlined</ins> = its typo.</p>"
    ]
    if data.pairs is None:
        return h.missing(
            "data/scored/<model>/pairs.parquet is missing: run `dvc repro score` for examples."
        )
    typo = typo_rows(data.pairs)  # the examples show the plain typo'd prompts
    if "correct_perturbed" in typo.columns:  # and wrong answers only: split those by view
        typo = typo.loc[~typo["correct_perturbed"].astype(bool).to_numpy()]
    by_view = dict(tuple(typo.groupby("view", sort=False))) if len(typo) else {}
    for bench in sorted(data.scored):
        source = data.scored_rows.get(bench)
        pairs = pick_examples(
            by_view.get(bench),
            data.scored[bench],
            limit=options.examples_per_benchmark,
            whole=None if source is None else source.rows,
        )
        parts.append(f"<h3>{h.esc(bench)}</h3>")
        if not pairs:
            parts.append('<p class="note">No wrong answer on a perturbed prompt.</p>')
            continue
        for original, perturbed in pairs:
            fields = _fields(original.get("fields"))
            edits = [dict(e) for e in _as_list(perturbed.get("perturbations"))]
            blocks = []
            for name in sorted({str(e.get("field")) for e in edits}):
                before, after, problems = highlight_edits(
                    fields.get(name, ""), [e for e in edits if str(e.get("field")) == name]
                )
                blocks.append(
                    f"<div><b>{h.esc(name)}</b>"
                    f'<div class="pair"><pre class="text">{before}</pre>'
                    f'<pre class="text">{after}</pre></div>'
                    + "".join(h.missing(p) for p in problems)
                    + "</div>"
                )
            ops = ", ".join(f"{e.get('original')}→{e.get('perturbed')} ({_slip(e)})" for e in edits)
            prompt = perturbed.get("prompt")
            parts.append(
                '<div class="example">'
                f"<div><b>{h.esc(perturbed.get('model', ''))}</b> · example "
                f"<code>{h.esc(perturbed.get('example_id'))}</code> · target word "
                f"<b>{h.esc(perturbed.get('variant'))}</b> · gold "
                f"<code>{h.esc(perturbed.get('gold', perturbed.get('answer')))}</code> · edits: "
                f"{h.esc(ops)}</div>"
                '<div class="pair"><b>original</b><b>perturbed</b></div>'
                + "".join(blocks)
                + '<div class="pair">'
                + _output_block("original output", original)
                + _output_block("perturbed output", perturbed)
                + "</div>"
                + (
                    f'<details><summary>full perturbed prompt</summary><pre class="text">'
                    f"{h.esc(prompt)}</pre></details>"
                    if isinstance(prompt, str)
                    else ""
                )
                + "</div>"
            )
    return "".join(parts)
