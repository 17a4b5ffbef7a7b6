"""The annotation formats (tasks, ratings, consensus) and their validation.

Tasks (input):  ``{id, user, response, context: [{turn, speaker, text}]}``
Annotations (output): ``{id, annotator_id, timestamp, annotations: {axis: 1-5},
confidence: {axis: 0-1}}``

Readers collect *every* problem (with ``file:line``) before raising one InputError, so a user
fixes a batch in one pass instead of one error per run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from evalpipe.annotation.raw_csv import csv_records
from evalpipe.errors import InputError, where
from evalpipe.jsonl_records import iter_json_lines, raise_problems, read_jsonl_records

AXES: tuple[str, ...] = ("social", "avoidant", "mechanical", "self")
LABELS: tuple[int, ...] = (1, 2, 3, 4, 5)
LABEL_NAMES: dict[int, str] = {1: "Absent", 2: "Slight", 3: "Moderate", 4: "Strong", 5: "Extreme"}
SPEAKERS: tuple[str, ...] = ("user", "ai")
CONSENSUS_ID = "consensus"
MARKERS_ID = "markers"
JUDGE_PREFIX = "llm:"
# An adjudicator's final rating of a disputed item (``adjudicated:<name>``): it settles the
# consensus, but it is not an independent rating, so it never enters inter-annotator agreement.
ADJUDICATED_PREFIX = "adjudicated:"

ANNOTATION_FIELDS = ("id", "annotator_id", "timestamp", "annotations", "confidence")
TASK_FIELDS = ("id", "user", "response", "context")
LONG_COLUMNS = ("id", "annotator_id", "axis", "score", "confidence")


@dataclass
class DialoguePair:
    """One task: a user utterance, the AI response to rate, and up to a few turns of context."""

    id: str
    user: str
    response: str
    context: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Annotation:
    """One annotator's ratings of one dialogue pair on the four axes."""

    id: str
    annotator_id: str
    timestamp: str
    annotations: dict[str, int]
    confidence: dict[str, float]
    # Seconds from opening the item to saving it (``annotation_duration``), where recorded.
    duration: float | None = None


def annotator_kind(annotator_id: str) -> str:
    """``"judge"`` for ``llm:<model>``, ``"adjudicated"`` for ``adjudicated:<name>``,
    ``"markers"``, ``"consensus"``, else ``"human"``."""
    if annotator_id.startswith(JUDGE_PREFIX):
        return "judge"
    if annotator_id.startswith(ADJUDICATED_PREFIX):
        return "adjudicated"
    if annotator_id == MARKERS_ID:
        return "markers"
    if annotator_id == CONSENSUS_ID:
        return "consensus"
    return "human"


def is_human(annotator_id: str) -> bool:
    """True for an independent human annotator (not an LLM judge, the marker rater, an
    adjudication or the consensus)."""
    return annotator_kind(annotator_id) == "human"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_timestamp(value: str) -> bool:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return False
    # Without a zone, batches from different annotators cannot be ordered.
    return parsed.tzinfo is not None


def validate_annotation(obj: Any, *, where: str) -> list[str]:
    """Every problem with one annotation record, each prefixed by ``where`` (e.g. ``file:3``).

    Parameters
    ----------
    obj:
        The decoded JSON value of one line.
    where:
        Location prefix for the messages.

    Returns
    -------
    list[str]
        Empty when the record is valid.

    >>> validate_annotation({"id": "d1"}, where="b.jsonl:1")[0]
    'b.jsonl:1: field "annotator_id": missing (expected a non-empty string)'
    """
    if not isinstance(obj, dict):
        return [f"{where}: expected a JSON object, got {type(obj).__name__}"]
    problems: list[str] = []
    for name in ("id", "annotator_id", "timestamp"):
        value = obj.get(name)
        if name not in obj:
            problems.append(f'{where}: field "{name}": missing (expected a non-empty string)')
        elif not isinstance(value, str) or not value.strip():
            problems.append(f'{where}: field "{name}": expected a non-empty string, got {value!r}')
    ts = obj.get("timestamp")
    if isinstance(ts, str) and ts.strip() and not _valid_timestamp(ts):
        problems.append(
            f'{where}: field "timestamp": expected ISO 8601 with a time zone '
            f'(e.g. "2025-01-01T10:00:00Z"), got {ts!r}'
        )
    duration = obj.get("annotation_duration")
    if duration is not None and (
        not _is_number(duration) or math.isnan(float(duration)) or float(duration) < 0
    ):
        problems.append(
            f'{where}: field "annotation_duration": expected seconds >= 0, got {duration!r}'
        )
    for name, check, expect in (
        ("annotations", _check_score, "an integer 1-5"),
        ("confidence", _check_confidence, "a number 0-1"),
    ):
        block = obj.get(name)
        if name not in obj:
            problems.append(
                f'{where}: field "{name}": missing (expected an object {{axis: {expect}}})'
            )
            continue
        if not isinstance(block, dict):
            problems.append(
                f'{where}: field "{name}": expected an object, got {type(block).__name__}'
            )
            continue
        for axis in block:
            if axis not in AXES:
                problems.append(
                    f'{where}: field "{name}.{axis}": unknown axis (expected one of {", ".join(AXES)})'
                )
        for axis in AXES:
            if axis not in block:
                problems.append(f'{where}: field "{name}.{axis}": missing (expected {expect})')
            else:
                problem = check(block[axis])
                if problem:
                    problems.append(f'{where}: field "{name}.{axis}": {problem}')
    return problems


def _check_score(value: Any) -> str | None:
    if not _is_int(value):
        return f"expected an integer 1-5, got {value!r}"
    if value not in LABELS:
        return f"score {value} outside 1-5"
    return None


def _check_confidence(value: Any) -> str | None:
    if not _is_number(value) or (isinstance(value, float) and math.isnan(value)):
        return f"expected a number 0-1, got {value!r}"
    if not 0.0 <= float(value) <= 1.0:
        return f"confidence {value} outside 0-1"
    return None


def annotation_from_dict(obj: Mapping[str, Any]) -> Annotation:
    """Build an Annotation from a record that :func:`validate_annotation` accepted."""
    return Annotation(
        id=obj["id"],
        annotator_id=obj["annotator_id"],
        timestamp=obj["timestamp"],
        annotations={axis: int(obj["annotations"][axis]) for axis in AXES},
        confidence={axis: float(obj["confidence"][axis]) for axis in AXES},
        duration=(
            float(obj["annotation_duration"])
            if obj.get("annotation_duration") is not None
            else None
        ),
    )


def annotation_to_dict(a: Annotation) -> dict[str, Any]:
    """The output (annotation) record, keys and axes in a fixed order (byte-stable JSONL)."""
    return {
        "id": a.id,
        "annotator_id": a.annotator_id,
        "timestamp": a.timestamp,
        "annotations": {axis: int(a.annotations[axis]) for axis in AXES},
        "confidence": {axis: float(a.confidence[axis]) for axis in AXES},
    }


def task_to_dict(t: DialoguePair) -> dict[str, Any]:
    """The input (task) record."""
    return {"id": t.id, "user": t.user, "response": t.response, "context": list(t.context)}


def _iter_records(path: Path, problems: list[str]) -> Iterable[tuple[int, Any]]:
    """Annotation objects of a JSONL batch, or of a raw CSV (``.csv``: the filtering
    protocol's ``dialogue_id, annotator_id, social, avoidant, mechanical, self, timestamp``)."""
    if path.suffix.lower() != ".csv":
        yield from iter_json_lines(path, problems)
        return
    if not path.exists():
        problems.append(f"{path}: file not found")
        return
    for rowno, rec in csv_records(path, axes=AXES):
        if isinstance(rec, str):
            problems.append(f"{where(path, line=rowno)}: {rec}")
        else:
            yield rowno, rec


def validate_task(obj: Any, *, where: str) -> list[str]:
    """Every problem with one task record (the task input format)."""
    if not isinstance(obj, dict):
        return [f"{where}: expected a JSON object, got {type(obj).__name__}"]
    problems: list[str] = []
    for name in ("id", "user", "response"):
        if name not in obj:
            problems.append(f'{where}: field "{name}": missing (expected a string)')
        elif not isinstance(obj[name], str) or (name == "id" and not obj[name].strip()):
            problems.append(
                f'{where}: field "{name}": expected a non-empty string, got {obj[name]!r}'
            )
    context = obj.get("context", [])
    if not isinstance(context, list):
        problems.append(f'{where}: field "context": expected a list of {{turn, speaker, text}}')
        return problems
    for i, turn in enumerate(context):
        loc = f'{where}: field "context[{i}]'
        if not isinstance(turn, dict):
            problems.append(f'{loc}": expected an object {{turn, speaker, text}}')
            continue
        if not _is_int(turn.get("turn")):
            problems.append(f'{loc}.turn": expected an integer, got {turn.get("turn")!r}')
        if turn.get("speaker") not in SPEAKERS:
            problems.append(f'{loc}.speaker": expected "user" or "ai", got {turn.get("speaker")!r}')
        if not isinstance(turn.get("text"), str):
            problems.append(f'{loc}.text": expected a string, got {turn.get("text")!r}')
    return problems


def read_tasks(path: str | os.PathLike[str]) -> list[DialoguePair]:
    """Read and validate a tasks JSONL file.

    Parameters
    ----------
    path:
        JSONL file, one ``{id, user, response, context}`` per line.

    Returns
    -------
    list[DialoguePair]
        In file order.

    Raises
    ------
    InputError
        Listing every problem (``file:line``), including duplicate ids.
    """
    return [
        DialoguePair(
            id=obj["id"],
            user=obj["user"],
            response=obj["response"],
            context=list(obj.get("context", [])),
        )
        for _, obj in read_jsonl_records(path, validate_task)
    ]


def read_annotations(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    task_ids: Iterable[str] | None = None,
) -> list[Annotation]:
    """Read and validate one or more annotation JSONL batches.

    Parameters
    ----------
    paths:
        One path or several; records keep file order, files keep the given order.
    task_ids:
        The task set; an annotation whose id is not in it is a problem (completeness check).

    Returns
    -------
    list[Annotation]

    Raises
    ------
    InputError
        Listing every problem with ``file:line``: bad JSON, missing fields, scores outside 1-5
        or not integers, confidences outside 0-1, unknown axes, bad timestamps, duplicate
        (id, annotator_id) across all files, ids absent from the task set.
    """
    out, problems = collect_annotations(paths, task_ids=task_ids)
    raise_problems(problems, "annotation batches")
    return out


def collect_annotations(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    task_ids: Iterable[str] | None = None,
) -> tuple[list[Annotation], list[str]]:
    """Like :func:`read_annotations`, but return the valid records and the problems instead of
    raising, so a quality gate can list format errors next to its other findings.

    Returns
    -------
    (annotations, problems)
        The records that passed, in file order; one ``file:line: ...`` message per problem.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    known = set(task_ids) if task_ids is not None else None
    problems: list[str] = []
    out: list[Annotation] = []
    seen: dict[tuple[str, str], str] = {}
    for raw_path in paths:
        path = Path(raw_path)
        for lineno, obj in _iter_records(path, problems):
            loc = where(path, line=lineno)
            found = validate_annotation(obj, where=loc)
            if found:
                problems.extend(found)
                continue
            key = (obj["id"], obj["annotator_id"])
            if key in seen:
                problems.append(
                    f"{loc}: duplicate (id, annotator_id) = {key!r} (first at {seen[key]})"
                )
                continue
            seen[key] = loc
            if known is not None and obj["id"] not in known:
                problems.append(f'{loc}: field "id": {obj["id"]!r} is not in the task set')
                continue
            out.append(annotation_from_dict(obj))
    return out, problems


def to_long_frame(annotations: Iterable[Annotation]) -> pd.DataFrame:
    """One row per (id, annotator_id, axis): columns ``id, annotator_id, axis, score, confidence``."""
    rows = [
        (a.id, a.annotator_id, axis, int(a.annotations[axis]), float(a.confidence[axis]))
        for a in annotations
        for axis in AXES
    ]
    frame = pd.DataFrame(rows, columns=list(LONG_COLUMNS))
    frame["score"] = frame["score"].astype("int64")
    frame["confidence"] = frame["confidence"].astype("float64")
    return frame


def sample_tasks_path() -> Path:
    """The bundled sample tasks (30 dialogue pairs rated by the sample batches)."""
    return Path(__file__).resolve().parent / "samples" / "tasks.jsonl"


def tasks_or_sample(tasks_path: str | Path, *, default: str | Path) -> tuple[Path, bool]:
    """The task file to read: ``tasks_path``, or the bundled sample tasks while it is the
    project's ``default`` path and that file does not exist yet.

    Parameters
    ----------
    tasks_path : the task file asked for
    default : the project's task file (only its absence falls back to the samples)

    Returns
    -------
    (path, True when it is the bundled sample tasks)

    Raises
    ------
    InputError
        ``tasks_path`` is not the default and does not exist.
    """
    path = Path(tasks_path)
    if path.exists():
        return path, False
    if str(tasks_path) != str(default):
        raise InputError(f"{path}: task file not found")
    return sample_tasks_path(), True
