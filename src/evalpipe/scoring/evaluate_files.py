"""Scoring predictions made elsewhere: a zero-shot sentiment run's gold and predictions files.

A gold file holds ``{"text", "label"}`` lines; a predictions file holds the model's raw text, one
line per gold line, either under ``output`` or ``text`` in a JSON object (as such
``predictions.jsonl`` files often have it), as a bare JSON object the model printed, as a JSON string, or
as a plain line of text. Both files may carry an ``id``: then lines are matched by id, otherwise by
position.

An answer outside the label set is never turned into a default label such as "neutral": it
is counted as ``invalid`` and scored wrong (``strict`` mode), or shown as its own class in the
confusion matrix (``invalid-class`` mode), exactly as the pipeline's sentiment scoring does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.answers.parsers import json_label, normalise_gold
from evalpipe.errors import InputError, where
from evalpipe.scoring.metrics import classification_report

LABEL_SETS: dict[str, tuple[str, ...]] = {
    "2class": ("positive", "negative"),
    "3class": ("positive", "neutral", "negative"),
}
MODES = ("strict", "invalid-class")


@dataclass(frozen=True)
class GoldRow:
    line: int
    id: str | None
    text: str
    label: str


@dataclass(frozen=True)
class PredictionRow:
    line: int
    id: str | None
    output: str


def label_set(spec: str) -> tuple[str, ...]:
    """``2class``, ``3class`` or a comma-separated list of labels.

    >>> label_set("3class")
    ('positive', 'neutral', 'negative')
    >>> label_set("joy, anger")
    ('joy', 'anger')
    """
    if spec in LABEL_SETS:
        return LABEL_SETS[spec]
    labels = tuple(part.strip().lower() for part in spec.split(",") if part.strip())
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise InputError(
            f"--labels: expected 2class, 3class or at least two distinct comma-separated labels, "
            f"got {spec!r}"
        )
    return labels


def _lines(path: Path) -> list[tuple[int, str]]:
    if not path.exists():
        raise InputError(f"{path}: file not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc})") from exc
    return [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _optional_id(obj: dict[str, Any], path: Path, line: int) -> str | None:
    value = obj.get("id")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"{where(path, line=line, field='id')}: expected a string or integer")
    return str(value)


def read_gold(path: str | Path, *, labels: Sequence[str]) -> list[GoldRow]:
    """Read a gold JSONL file of ``{"text": str, "label": str}`` lines (``id`` optional).

    Labels are normalised like the pipeline's gold (lowercase, pos/neg/neu aliases); a label
    outside ``labels`` stops with the file, line and the expected labels.
    """
    path = Path(path)
    rows: list[GoldRow] = []
    for line, raw in _lines(path):
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where(path, line=line)}: not valid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise InputError(f"{where(path, line=line)}: expected a JSON object {{text, label}}")
        for name in ("text", "label"):
            if not isinstance(obj.get(name), str):
                raise InputError(f"{where(path, line=line, field=name)}: expected a string")
        label = normalise_gold("json_label", obj["label"], labels=list(labels))
        if label is None or label not in labels:
            raise InputError(
                f"{where(path, line=line, field='label')}: {obj['label']!r} is not one of "
                f"{', '.join(labels)}"
            )
        rows.append(GoldRow(line, _optional_id(obj, path, line), obj["text"], label))
    if not rows:
        raise InputError(f"{path}: no gold lines")
    return rows


def read_predictions(path: str | Path) -> list[PredictionRow]:
    """Read a predictions file: one model output per line, in any of the article's forms."""
    path = Path(path)
    rows: list[PredictionRow] = []
    for line, raw in _lines(path):
        try:
            obj: Any = json.loads(raw)
        except json.JSONDecodeError:
            obj = raw  # a plain line of model text
        ident = None
        if isinstance(obj, dict):
            ident = _optional_id(obj, path, line)
            for name in ("output", "text"):
                if name in obj:
                    if not isinstance(obj[name], str):
                        raise InputError(
                            f"{where(path, line=line, field=name)}: expected the model's text "
                            "as a string"
                        )
                    output = obj[name]
                    break
            else:
                output = raw  # the model's own JSON object
        elif isinstance(obj, str):
            output = obj
        else:
            output = raw
        rows.append(PredictionRow(line, ident, output))
    return rows


def align(
    gold: Sequence[GoldRow], predictions: Sequence[PredictionRow], *, gold_path: str, pred_path: str
) -> list[tuple[GoldRow, PredictionRow]]:
    """Pair gold and prediction lines by ``id`` when both files carry ids, else by position."""
    if all(g.id is not None for g in gold) and all(p.id is not None for p in predictions):
        by_id: dict[str, PredictionRow] = {}
        for p in predictions:
            if p.id in by_id:
                raise InputError(f"{where(pred_path, line=p.line, field='id')}: duplicate {p.id!r}")
            by_id[p.id] = p  # type: ignore[index]
        missing = [g for g in gold if g.id not in by_id]
        if missing:
            g = missing[0]
            raise InputError(
                f"{where(pred_path)}: no prediction for id {g.id!r} ({gold_path}:{g.line}) "
                f"and {len(missing) - 1} more"
            )
        return [(g, by_id[g.id]) for g in gold]  # type: ignore[index]
    if len(gold) != len(predictions):
        raise InputError(
            f"{pred_path}: {len(predictions)} prediction lines for {len(gold)} gold lines in "
            f"{gold_path}; expected one per gold line (or an `id` on every line of both files)"
        )
    return list(zip(gold, predictions, strict=True))


def evaluate_predictions(
    pairs: Sequence[tuple[GoldRow, PredictionRow]],
    *,
    labels: Sequence[str],
    mode: str = "strict",
    n_errors: int = 20,
) -> dict[str, Any]:
    """Accuracy, macro P/R/F1, per-class figures, confusion matrix and the first errors.

    Parameters
    ----------
    pairs : aligned gold and prediction rows.
    labels : the label space.
    mode : "strict": only a JSON label counts; anything else is invalid and wrong.
        "invalid-class": a single label word in prose is accepted as a fallback, and invalid
        answers get their own column in the confusion matrix.
    n_errors : how many errors to preview.

    Returns
    -------
    dict
        The classification report plus ``mode, labels, parse_status`` counts and
        ``errors: {count, preview: [...]}``.

    Examples
    --------
    >>> g = [GoldRow(1, None, "良い", "positive"), GoldRow(2, None, "普通", "neutral")]
    >>> p = [PredictionRow(1, None, '{"label": "pos"}'), PredictionRow(2, None, "neutral?")]
    >>> r = evaluate_predictions(list(zip(g, p)), labels=LABEL_SETS["3class"])
    >>> r["accuracy"], r["invalid"]
    (0.5, 1)
    """
    if mode not in MODES:
        raise InputError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
    strict = mode == "strict"
    parsed = [json_label(p.output, labels=list(labels), strict=strict) for _, p in pairs]
    report = classification_report(
        [g.label for g, _ in pairs],
        [r.prediction for r in parsed],
        labels=list(labels),
        explicit_invalid=not strict,
    )
    statuses = {"strict": 0, "fallback": 0, "unparsed": 0}
    for r in parsed:
        statuses[r.status] += 1
    errors = [
        {
            "gold_line": g.line,
            "prediction_line": p.line,
            "id": g.id,
            "text": g.text,
            "gold": g.label,
            "pred": r.prediction,
            "parse_status": r.status,
            "confidence": r.extra.get("confidence"),
            "reason": r.extra.get("reason"),
            "output": p.output,
        }
        for (g, p), r in zip(pairs, parsed, strict=True)
        if r.prediction != g.label
    ]
    report.update(
        mode=mode,
        labels=list(labels),
        parse_status=statuses,
        errors={"count": len(errors), "preview": errors[:n_errors]},
    )
    return report
