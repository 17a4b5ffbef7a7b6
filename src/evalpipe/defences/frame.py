"""A corrector over a perturbed set: its field texts, the defended rows, and what the edits did.

The defend stage reads ``data/perturbed/<benchmark>.parquet`` (clean and typo'd rows), asks each
corrector about every perturbable field text (:func:`field_texts`), keeps the edits
:func:`~evalpipe.defences.correct.allowed` lets through (:func:`kept_corrections`) and writes the
rows again with the corrected texts (:func:`defended_rows`): the perturbed set's columns, plus
``condition`` (``corrected:<corrector>``) and ``corrections`` (one record per edit, offsets into
the text the corrector read). :func:`correction_counts` compares the edits with the typos the
row's ``perturbations`` record: the restoration and overcorrection counts of the defences metrics.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa

from evalpipe.defences.correct import Correction, allowed, apply
from evalpipe.errors import InputError
from evalpipe.perturb.eligibility import RowContext

CORRECTION_TYPE = pa.struct(
    [
        ("field", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("original", pa.string()),
        ("corrected", pa.string()),
    ]
)
ORIGINAL = "original"
COUNT_KEYS = (
    "prompts",
    "clean_prompts",
    "typo_prompts",
    "unsupported_prompts",
    "edited_words",
    "restored_words",
    "clean_words_changed",
    "typo_words_changed",
    "false_changes",
    "chars_read",
)


class FieldText(NamedTuple):
    """One perturbable field of one row: what a corrector reads."""

    row: int  # position in the perturbed frame
    field: str
    text: str
    language: str


def _fields(value: Any, *, source: str, row: int) -> dict[str, str]:
    if isinstance(value, dict):
        return value
    try:
        fields = json.loads(value)
    except (TypeError, json.JSONDecodeError):
        fields = None
    if not isinstance(fields, dict):
        raise InputError(f"{source}, row {row}, column 'fields': expected a JSON object string")
    return fields


def field_texts(rows: pd.DataFrame, *, source: str = "perturbed set") -> list[FieldText]:
    """Every perturbable field text of ``rows`` (``fields``, ``perturbable``, ``language``), in
    row order, then field order.

    >>> rows = pd.DataFrame({"fields": ['{"q": "Teh cat", "c": "x"}'], "perturbable": [["q"]],
    ...                      "language": ["english"]})
    >>> field_texts(rows)
    [FieldText(row=0, field='q', text='Teh cat', language='english')]
    """
    out = []
    for i, (value, perturbable, language) in enumerate(
        zip(rows["fields"], rows["perturbable"], rows["language"], strict=True)
    ):
        fields = _fields(value, source=source, row=i)
        for name in list(perturbable) if perturbable is not None else []:
            text = fields.get(name)
            if isinstance(text, str) and text:
                out.append(FieldText(i, str(name), text, str(language)))
    return out


def _row_context(rows: pd.DataFrame, i: int) -> tuple[RowContext, list[str]]:
    row = {c: rows[c].iloc[i] for c in ("labels", "choices", "answer", "answers") if c in rows}
    protected = rows["protected"].iloc[i] if "protected" in rows.columns else None
    strings = [] if protected is None or isinstance(protected, float) else list(protected)
    return RowContext.from_row(row), [str(s) for s in strings if s]


def kept_corrections(
    rows: pd.DataFrame,
    texts: Sequence[FieldText],
    proposed: Sequence[Sequence[Correction]],
) -> list[list[Correction]]:
    """The proposed edits of each field text that the protection rules keep
    (:func:`~evalpipe.defences.correct.allowed` with the row's option labels, gold texts and
    ``protected`` strings)."""
    if len(texts) != len(proposed):
        raise ValueError("texts and proposed edits must have the same length")
    contexts: dict[int, tuple[RowContext, list[str]]] = {}
    out = []
    for text, edits in zip(texts, proposed, strict=True):
        if text.row not in contexts:
            contexts[text.row] = _row_context(rows, text.row)
        row, protected = contexts[text.row]
        out.append(allowed(text.text, edits, row=row, protected=protected, language=text.language))
    return out


def defended_rows(
    rows: pd.DataFrame,
    texts: Sequence[FieldText],
    corrections: Sequence[Sequence[Correction]],
    *,
    condition: str,
) -> pd.DataFrame:
    """``rows`` with each perturbable field corrected, ``condition`` set and the edits recorded.

    Returns
    -------
    DataFrame
        The columns of ``rows`` (``fields`` re-encoded as the perturbed sets encode them), plus
        ``condition`` and ``corrections`` (a list of ``{field, start, end, original, corrected}``
        per row; offsets into the field text before correction).
    """
    out = rows.copy()
    fields = [_fields(v, source="rows", row=i) for i, v in enumerate(rows["fields"])]
    records: list[list[dict[str, Any]]] = [[] for _ in range(len(rows))]
    for text, edits in zip(texts, corrections, strict=True):
        fields[text.row] = {**fields[text.row], text.field: apply(text.text, edits)}
        records[text.row] += [
            {"field": text.field, **e._asdict()} for e in sorted(edits, key=lambda e: e.start)
        ]
    out["fields"] = [json.dumps(f, ensure_ascii=False, sort_keys=True) for f in fields]
    out["condition"] = condition
    out["corrections"] = records
    return out.reset_index(drop=True)


def typo_spans(perturbations: Any) -> dict[str, list[tuple[int, int, str]]]:
    """Each field's typos as ``(start, end, original word)`` in the typo'd text: the records'
    offsets (into the clean text) shifted by the length changes of the edits before them.

    >>> typo_spans([{"field": "q", "start": 0, "end": 3, "original": "the", "perturbed": "th"},
    ...             {"field": "q", "start": 8, "end": 11, "original": "cat", "perturbed": "cta"}])
    {'q': [(0, 2, 'the'), (7, 10, 'cat')]}
    """
    by_field: dict[str, list[dict[str, Any]]] = {}
    for record in list(perturbations) if perturbations is not None else []:
        by_field.setdefault(str(record["field"]), []).append(record)
    out = {}
    for name, records in by_field.items():
        shift, spans = 0, []
        for r in sorted(records, key=lambda r: int(r["start"])):
            start = int(r["start"]) + shift
            spans.append((start, start + len(r["perturbed"]), str(r["original"])))
            shift += len(r["perturbed"]) - (int(r["end"]) - int(r["start"]))
        out[name] = spans
    return out


def _touching(edit: Correction, start: int, end: int) -> bool:
    if edit.start == edit.end:
        return start <= edit.start <= end
    return edit.start < end and start < edit.end


def restored(text: str, span: tuple[int, int, str], edits: Sequence[Correction]) -> bool:
    """Whether the corrections turn one typo'd word back into the original word exactly.

    The region compared is the typo's span widened to every edit touching it: restored when the
    corrected region equals the region with the typo undone.

    >>> text = "Teh cat"
    >>> restored(text, (0, 3, "The"), [Correction(0, 3, "Teh", "The")])
    True
    >>> restored(text, (0, 3, "The"), [Correction(0, 3, "Teh", "Ten")])
    False
    >>> restored(text, (0, 3, "The"), [])
    False
    """
    start, end, original = span
    touching = [e for e in edits if _touching(e, start, end)]
    if not touching:
        return text[start:end] == original
    low = min(start, *(e.start for e in touching))
    high = max(end, *(e.end for e in touching))
    clean = text[low:start] + original + text[end:high]
    shifted = [e._replace(start=e.start - low, end=e.end - low) for e in touching]
    return apply(text[low:high], shifted) == clean


def correction_counts(
    rows: pd.DataFrame,
    texts: Sequence[FieldText],
    corrections: Sequence[Sequence[Correction]],
    *,
    supported: Callable[[str], bool],
) -> dict[str, int]:
    """What a corrector did to one perturbed set, as counts (:data:`COUNT_KEYS`).

    ``edited_words`` / ``restored_words``: typo'd words (perturbation records of the typo'd
    rows) and those the corrections turned back exactly; ``clean_words_changed``: edits on the
    clean rows (``variant`` original; every one is an overcorrection); ``typo_words_changed``:
    edits on the typo'd rows, of which ``false_changes`` touch no typo; ``unsupported_prompts``:
    rows of a language the corrector does not read (left unchanged); ``chars_read``: characters
    of the texts the corrector read.

    Examples
    --------
    >>> rows = pd.DataFrame({"variant": ["original", "the"], "language": "english",
    ...     "perturbations": [[], [{"field": "q", "start": 0, "end": 3, "original": "The",
    ...                            "perturbed": "Teh"}]]})
    >>> texts = [FieldText(0, "q", "The cta", "english"), FieldText(1, "q", "Teh cta", "english")]
    >>> fix = [[Correction(4, 7, "cta", "cat")],
    ...        [Correction(0, 3, "Teh", "The"), Correction(4, 7, "cta", "cat")]]
    >>> counts = correction_counts(rows, texts, fix, supported=lambda lang: True)
    >>> counts["restored_words"], counts["clean_words_changed"], counts["false_changes"]
    (1, 1, 1)
    """
    counts = dict.fromkeys(COUNT_KEYS, 0)
    variants = rows["variant"].tolist()
    languages = rows["language"].tolist()
    counts["prompts"] = len(rows)
    counts["clean_prompts"] = sum(v == ORIGINAL for v in variants)
    counts["typo_prompts"] = len(rows) - counts["clean_prompts"]
    counts["unsupported_prompts"] = sum(not supported(str(lang)) for lang in languages)
    by_row: dict[int, dict[str, tuple[str, Sequence[Correction]]]] = {}
    for text, edits in zip(texts, corrections, strict=True):
        by_row.setdefault(text.row, {})[text.field] = (text.text, edits)
        counts["chars_read"] += len(text.text)
        if variants[text.row] == ORIGINAL:
            counts["clean_words_changed"] += len(edits)
        else:
            counts["typo_words_changed"] += len(edits)
    perturbations = rows["perturbations"].tolist()
    for i, variant in enumerate(variants):
        if variant == ORIGINAL:
            continue
        spans = typo_spans(perturbations[i])
        fields = by_row.get(i, {})
        for name, field_spans in spans.items():
            field_text, edits = fields.get(name, ("", ()))
            counts["edited_words"] += len(field_spans)
            counts["restored_words"] += sum(restored(field_text, s, edits) for s in field_spans)
            counts["false_changes"] += sum(
                not any(_touching(e, s, t) for s, t, _ in field_spans) for e in edits
            )
    return counts


def add_counts(total: Mapping[str, int], more: Mapping[str, int]) -> dict[str, int]:
    """Two count dicts added key by key."""
    return {k: int(total.get(k, 0)) + int(more.get(k, 0)) for k in COUNT_KEYS}


def defended_table(frame: pd.DataFrame, perturbed: pa.Schema) -> pa.Table:
    """Defended rows as Arrow with the perturbed set's column types (so generate carries them
    like plain rows), ``condition`` a string and ``corrections`` a list of
    :data:`CORRECTION_TYPE`."""
    arrays, fields = [], []
    for field in perturbed:
        if field.name in frame.columns and field.name not in ("condition", "corrections"):
            fields.append(field)
            arrays.append(pa.array(frame[field.name].tolist(), field.type, from_pandas=True))
    for name, kind in (("condition", pa.string()), ("corrections", pa.list_(CORRECTION_TYPE))):
        fields.append(pa.field(name, kind))
        arrays.append(pa.array(frame[name].tolist() if len(frame) else [], kind))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
