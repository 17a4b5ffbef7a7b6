"""The typos themselves: which model made them, how many of each kind per benchmark (from the
perturb summaries) and a few highlighted examples of every kind found in the perturbed sets.

A reader who is told "accuracy fell by 4 points under typos" needs to see what the typos were:
``keyboard`` slips (``e->s``), romaji slips re-read as kana (``no->bo``), swapped letters and
kana-kanji conversion slips (機会 → 機械, reading キカイ) look nothing alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.registries import TYPO_MODELS
from evalpipe.report import html as h

# The operation kinds in the order the perturb stage lists them (data/perturbed/*.summary.json).
OPS = ("replace", "insert", "delete", "transpose", "conversion")
# Summary keys of the typo model, as `Probabilities.as_dict` writes them.
PROBABILITY_KEYS = tuple(f"{op}_prob" for op in OPS)
MODEL_SETTINGS = ("model", *PROBABILITY_KEYS)
# Examples per kind: enough to see the pattern, few enough to read.
EXAMPLES_PER_KIND = 4
OP_DESCRIPTIONS = {
    "replace": "one character replaced",
    "insert": "one character inserted",
    "delete": "one character deleted",
    "transpose": "two adjacent characters swapped",
    "conversion": "the word replaced by another with the same reading (kana-kanji conversion)",
}


def _text(value: Any) -> str | None:
    return None if h.is_missing(value) else str(value)


def changed_spans(edit: Mapping[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where an edit changed its occurrence: ``(start, end)`` in the original and the perturbed text.

    The record's ``position``, ``original_char`` and ``new_char`` place the change (an insertion
    has an empty span in the original, a deletion one in the perturbed text). When they do not
    match the texts (an older record, or none recorded), the span is what lies between the
    longest common prefix and suffix of the two texts.

    Parameters
    ----------
    edit:
        A perturbation record: ``original, perturbed`` and optionally ``position,
        original_char, new_char``.

    Returns
    -------
    tuple
        ``((start, end) in original, (start, end) in perturbed)``.

    Examples
    --------
    >>> changed_spans({"original": "the", "perturbed": "thr", "position": 2,
    ...                "original_char": "e", "new_char": "r"})
    ((2, 3), (2, 3))
    >>> changed_spans({"original": "です", "perturbed": "えです"})
    ((0, 0), (0, 1))
    """
    before = _text(edit.get("original")) or ""
    after = _text(edit.get("perturbed")) or ""
    pos = edit.get("position")
    old, new = _text(edit.get("original_char")) or "", _text(edit.get("new_char")) or ""
    if not h.is_missing(pos) and (old or new):
        i = int(pos)
        if before[i : i + len(old)] == old and after[i : i + len(new)] == new:
            return (i, i + len(old)), (i, i + len(new))
    prefix = 0
    while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(before), len(after)) - prefix
        and before[len(before) - 1 - suffix] == after[len(after) - 1 - suffix]
    ):
        suffix += 1
    return (prefix, len(before) - suffix), (prefix, len(after) - suffix)


def highlight(text: str, span: tuple[int, int]) -> str:
    """``text`` as HTML with ``span`` in ``<mark class="typo">`` (an empty span: a slot mark).

    Examples
    --------
    >>> highlight("thr", (2, 3))
    '<span class="typo-word">th<mark class="typo">r</mark></span>'
    """
    start, end = span
    inner = (
        f'<mark class="typo">{h.esc(text[start:end])}</mark>'
        if end > start
        else '<mark class="slot" title="here"></mark>'
    )
    return f'<span class="typo-word">{h.esc(text[:start])}{inner}{h.esc(text[end:])}</span>'


def _edits(frame: pd.DataFrame) -> Iterable[tuple[Any, Mapping[str, Any]]]:
    """``(row label, edit)`` for every perturbation of the frame in a stable order (example id,
    word rank, draw, then the edits as recorded)."""
    if "perturbations" not in frame.columns:
        return
    order = [c for c in ("example_id", "word_rank", "draw") if c in frame.columns]
    edits = frame["perturbations"]
    if order:  # sort the keys only: the edits column is large
        edits = edits.loc[frame[order].sort_values(order, kind="stable").index]
    for label, row_edits in edits.items():
        if isinstance(row_edits, list | tuple | np.ndarray):  # not None, nor NaN after a join
            for edit in row_edits:
                yield label, edit


def pick_typo_examples(
    perturbed: Mapping[str, pd.DataFrame], *, per_kind: int = EXAMPLES_PER_KIND
) -> dict[str, list[dict[str, Any]]]:
    """A few examples of every typo kind found in the perturbed sets, chosen deterministically.

    Per kind, each benchmark's candidates are its edits in (example id, word rank, draw) order,
    one per distinct (original, perturbed) pair; the benchmarks (by name) then take turns, so a
    kind made in English and Japanese shows both.

    Parameters
    ----------
    perturbed:
        ``{benchmark: scored rows}`` (one model's rows of data/scored/<model>/<benchmark>.parquet,
        which carry the perturb stage's records) with ``perturbations`` (and
        ``example_id``, ``word_rank``, optionally ``draw`` and ``language``).
    per_kind:
        Examples per kind at most.

    Returns
    -------
    dict
        ``{op: [example]}`` for the kinds present, in :data:`OPS` order (unknown kinds after, by
        name); an example has ``benchmark, example_id, field, op, rule, keys, reading,
        original, perturbed, original_html, perturbed_html``.
    """
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name in sorted(perturbed):
        seen: set[tuple[str, str, str]] = set()
        per_op: dict[str, list[dict[str, Any]]] = {}
        frame = perturbed[name]
        if not frame.index.is_unique:  # rows are looked up by label below
            frame = frame.reset_index(drop=True)
        full = 0  # kinds with per_kind examples: when all are, the rest cannot change the choice
        for label, edit in _edits(frame):
            op = _text(edit.get("op")) or "unknown"
            chosen = per_op.setdefault(op, [])
            if len(chosen) >= per_kind:
                continue
            key = (op, _text(edit.get("original")) or "", _text(edit.get("perturbed")) or "")
            if key in seen:
                continue
            seen.add(key)
            row = frame.loc[label]
            span_a, span_b = changed_spans(edit)
            chosen.append(
                {
                    "benchmark": str(row.get("benchmark") or name),
                    "language": _text(row.get("language")),
                    "example_id": _text(row.get("example_id")),
                    "field": _text(edit.get("field")),
                    "op": op,
                    "rule": _text(edit.get("rule")),
                    "keys": _text(edit.get("keys")),
                    "reading": _text(edit.get("reading")),
                    "original": key[1],
                    "perturbed": key[2],
                    "original_html": highlight(key[1], span_a),
                    "perturbed_html": highlight(key[2], span_b),
                }
            )
            full += len(chosen) == per_kind
            if full == len(OPS) and set(per_op) <= set(OPS):
                break
        for op, chosen in per_op.items():
            found.setdefault(op, {})[name] = chosen
    ordered = [op for op in OPS if op in found] + sorted(set(found) - set(OPS))
    out: dict[str, list[dict[str, Any]]] = {}
    for op in ordered:
        queues = [list(found[op][name]) for name in sorted(found[op])]
        picked: list[dict[str, Any]] = []
        while len(picked) < per_kind and any(queues):
            for queue in queues:
                if queue and len(picked) < per_kind:
                    picked.append(queue.pop(0))
        out[op] = picked
    return out


def _breakdown(value: Any) -> str | None:
    """``{kind: {reason: n}}`` or ``{reason: n}`` as ``kind: reason n, ...`` (non-zero only)."""
    if not isinstance(value, Mapping):
        return None
    parts = []
    for key in sorted(value):
        inner = value[key]
        if isinstance(inner, Mapping):
            parts += [f"{key}: {k} {v}" for k, v in sorted(inner.items()) if v]
        elif inner:
            parts.append(f"{key} {inner}")
    return ", ".join(parts) or None


def summary_rows(summaries: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per benchmark: typo model, its probabilities and the operations made per kind.

    Parameters
    ----------
    summaries:
        ``{benchmark: perturb summary}`` (data/scored/<model>/perturbation.json).

    Returns
    -------
    list of dict
        ``benchmark, language, model, <op>_prob, <op> (count), operations (total),
        perturbed_occurrences, occurrences, draws, rules, keyboard_fallback, skipped``; a figure an
        older summary lacks is None (shown as n/a).
    """
    rows = []
    for name in sorted(summaries):
        s = summaries[name] or {}
        ops = s["operations"] if isinstance(s.get("operations"), Mapping) else {}
        counts = {op: ops.get(op) for op in OPS}
        row: dict[str, Any] = {
            "benchmark": str(s.get("benchmark") or name),
            "language": s.get("language"),
            # a summary without `model` was drawn with the default model
            "model": s.get("model") or (TYPO_MODELS.default if ops else None),
            **{k: s.get(k) for k in PROBABILITY_KEYS},
            **counts,
            "operations": sum(v for v in ops.values() if isinstance(v, int | float))
            if ops
            else None,
            "perturbed_occurrences": s.get("perturbed_occurrences"),
            "occurrences": s.get("occurrences"),
            "draws": s.get("draws"),
            "rules": _breakdown(s.get("operations_by_rule")),
            "keyboard_fallback": _breakdown(s.get("keyboard_fallback")),
            "skipped": _breakdown(s.get("skipped")),
        }
        rows.append(row)
    return rows


def summary_columns() -> list[h.Column]:
    """Columns of the per-benchmark typo table (also used by the revision comparison)."""
    return [
        h.text("benchmark", "benchmark"),
        h.text("language", "language"),
        h.text("model", "typo model"),
        *[h.num(f"{op}_prob", f"{op} p", 3) for op in OPS],
        *[h.num(op, op, 0) for op in OPS],
        h.num("operations", "typos made", 0),
        h.num("occurrences", "occurrences", 0),
        h.num("draws", "draws", 0),
        h.text("rules", "how the new text was chosen"),
        h.text("keyboard_fallback", "keyboard fallback (uniform rule)"),
        h.text("skipped", "drawn but not made"),
    ]


def _examples_table(op: str, examples: list[dict[str, Any]]) -> str:
    rows = [
        {
            **e,
            "slip": e["keys"] or (f"reading {e['reading']}" if e["reading"] else None),
            "where": f"{e['example_id']} · {e['field']}",
        }
        for e in examples
    ]
    return h.table(
        [
            h.text("benchmark", "benchmark"),
            h.markup("original_html", "original"),
            h.markup("perturbed_html", "perturbed"),
            h.text("rule", "rule"),
            h.text("slip", "key path / reading"),
            h.text("where", "example · field"),
        ],
        rows,
        table_id=f"typo-examples-{h.slug(op)}",
    )


def typos_section(
    *,
    summaries: Mapping[str, Mapping[str, Any]],
    perturbed: Mapping[str, pd.DataFrame],
    per_kind: int = EXAMPLES_PER_KIND,
) -> str:
    """The typo model and counts per benchmark, then highlighted examples of every kind.

    Parameters
    ----------
    summaries:
        ``{benchmark: perturb summary}`` (data/scored/<model>/perturbation.json, the score
        stage's copy of data/perturbed/<benchmark>.summary.json; may be empty: said so).
    perturbed:
        ``{benchmark: one model's scored rows}`` with the ``perturbations`` records.
    per_kind:
        Examples shown per kind.

    Returns
    -------
    str
        HTML.
    """
    parts = []
    rows = summary_rows(summaries)
    if rows:
        models = sorted({str(r["model"]) for r in rows if r["model"]})
        parts.append(
            f'<p class="note">Typo model{"s" if len(models) > 1 else ""}: '
            f"<b>{h.esc(', '.join(models) or 'n/a')}</b> (docs/perturbation.md). Per benchmark, "
            "the probability of each kind per occurrence (p) and the typos made of each kind "
            "(data/scored/&lt;model&gt;/perturbation.json, the perturb stage's summaries as the "
            "score stage passes them on): a drawn replacement or insertion "
            "with no eligible place becomes a deletion, and a drawn transposition or conversion "
            "with nothing to make is left out (drawn but not made).</p>"
            + h.table(summary_columns(), rows, sortable=True, table_id="typo-counts", scroll=True)
        )
    else:
        parts.append(
            h.missing(
                "data/scored/<model>/perturbation.json is missing: no typo counts "
                "(`dvc repro score`)."
            )
        )
    examples = pick_typo_examples(perturbed, per_kind=per_kind)
    if not examples:
        parts.append(
            h.missing(
                "No scored rows with typo records (data/scored/<model>/<benchmark>.parquet): "
                "no examples."
            )
        )
        return "".join(parts)
    parts.append(
        f'<p class="note">Up to {per_kind} examples per kind: each benchmark\'s first distinct '
        "typos in example order, the benchmarks taking turns. "
        '<mark class="typo">marked</mark> = the characters that changed '
        '(<mark class="slot"></mark> = where a character was inserted or deleted); the key path '
        "is the keyboard or romaji slip (e.g. <code>e-&gt;s</code>, <code>no-&gt;bo</code>), the "
        "reading that of a conversion.</p>"
    )
    counted = {op for r in rows for op in OPS if r.get(op)}
    for op, chosen in examples.items():
        parts.append(
            f"<h3>{h.esc(op)}: {h.esc(OP_DESCRIPTIONS.get(op, 'as recorded'))}</h3>"
            + _examples_table(op, chosen)
        )
    absent = [op for op in OPS if op in counted and op not in examples]
    if absent:
        parts.append(
            h.missing(
                f"Counted in the summaries but not in the scored rows read: {', '.join(absent)}."
            )
        )
    return "".join(parts)
