"""Dialogues every model answers: the rating spec's task format, read and turned into prompts.

A dialogue file is JSONL, one ``{id, user, response, context}`` per line (the annotation tasks'
format: ``response`` is optional here and ignored, since every model writes its own; ``context``
the earlier turns ``{turn, speaker: user | ai, text}``). A paired variant of a dialogue (the same
request carrying the user's opinion, a follow-up "are you sure?") adds ``base`` (the neutral
dialogue's id) and ``arm`` (a label): each model's change from the neutral reply is an estimate
of its own. ``sample`` names the 30 bundled sample
dialogues. A line without a user turn (``user`` missing or blank), a bad context or a repeated id
stops the run with every problem listed (file:line and field): a dialogue is never skipped.

The prompt is the user turn alone when there are no earlier turns; otherwise the earlier turns
as a transcript, then the user turn, so that every engine (one user message plus its chat
template) sees the whole conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalpipe.annotation.schema import SPEAKERS, sample_tasks_path
from evalpipe.errors import InputError
from evalpipe.jsonl_records import read_jsonl_records

SAMPLE = "sample"
SPEAKER_NAMES = {"user": "User", "ai": "Assistant"}


@dataclass(frozen=True)
class Dialogue:
    """One dialogue; a paired variant names its neutral dialogue (``base``) and its ``arm``."""

    id: str
    user: str
    context: list[dict[str, Any]] = field(default_factory=list)
    source: str = SAMPLE
    base: str | None = None
    arm: str | None = None

    @property
    def group(self) -> str:
        """The sampling unit: a neutral dialogue together with its variants."""
        return self.base or self.id


def dialogue_path(entry: str) -> Path:
    """The file of one ``sycophancy.dialogues`` entry (``sample``: the bundled dialogues)."""
    return sample_tasks_path() if entry == SAMPLE else Path(entry)


def _problems(obj: Any, *, where: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where}: expected a JSON object {{id, user, context}}"]
    problems = []
    if not isinstance(obj.get("id"), str) or not obj["id"].strip():
        problems.append(f'{where}: field "id": expected a non-empty string, got {obj.get("id")!r}')
    if not isinstance(obj.get("user"), str) or not obj["user"].strip():
        problems.append(
            f'{where}: field "user": every dialogue needs a user turn (a non-empty string), '
            f"got {obj.get('user')!r}"
        )
    base, arm = obj.get("base"), obj.get("arm")
    if base is not None and (not isinstance(base, str) or not base.strip()):
        problems.append(f'{where}: field "base": expected the id of another dialogue, got {base!r}')
    if (base is None) != (arm is None) or (arm is not None and not str(arm).strip()):
        problems.append(
            f'{where}: fields "base" and "arm": a paired variant names both its neutral '
            f"dialogue and its arm (e.g. opinion), got base={base!r}, arm={arm!r}"
        )
    context = obj.get("context", [])
    if not isinstance(context, list):
        return [*problems, f'{where}: field "context": expected a list of {{turn, speaker, text}}']
    for i, turn in enumerate(context):
        ok = (
            isinstance(turn, dict)
            and isinstance(turn.get("turn"), int)
            and turn.get("speaker") in SPEAKERS
            and isinstance(turn.get("text"), str)
        )
        if not ok:
            problems.append(
                f'{where}: field "context[{i}]": expected {{turn: integer, speaker: user | ai, '
                f"text: string}}, got {turn!r}"
            )
    return problems


def read_dialogues(entry: str) -> list[Dialogue]:
    """Read one dialogue file (or ``sample``); InputError listing every problem.

    Parameters
    ----------
    entry:
        A path, or ``sample``.

    Returns
    -------
    list[Dialogue]
        In file order, ``source`` the entry.
    """
    path = dialogue_path(entry)
    if not path.exists():
        raise InputError(f"sycophancy.dialogues: file {entry!r} not found")
    out = []
    for _, obj in read_jsonl_records(path, _problems):
        context = sorted(obj.get("context", []), key=lambda t: t["turn"])
        out.append(
            Dialogue(obj["id"], obj["user"], context, entry, obj.get("base"), obj.get("arm"))
        )
    return out


def read_all(entries: list[str]) -> list[Dialogue]:
    """Every file's dialogues; an id repeated across files is an error (replies are keyed on it)."""
    out: list[Dialogue] = []
    first: dict[str, str] = {}
    for entry in entries:
        for d in read_dialogues(entry):
            if d.id in first:
                raise InputError(
                    f"sycophancy.dialogues: dialogue id {d.id!r} is in both {first[d.id]!r} "
                    f"and {entry!r}"
                )
            first[d.id] = entry
            out.append(d)
    if not out:
        raise InputError("sycophancy.dialogues: no dialogue to answer")
    plain = {d.id for d in out if d.base is None}
    wrong = [
        f"dialogue {d.id!r} ({d.source}): base {d.base!r} is not a dialogue without a base"
        for d in out
        if d.base is not None and d.base not in plain
    ]
    if wrong:
        raise InputError("sycophancy.dialogues: " + "; ".join(wrong))
    return out


def render_prompt(dialogue: Dialogue) -> str:
    """The user message a model answers.

    >>> render_prompt(Dialogue("a", "Is it good?", [{"turn": 1, "speaker": "ai", "text": "Hi"}]))
    'Conversation so far:\\nAssistant: Hi\\n\\nUser: Is it good?'
    """
    if not dialogue.context:
        return dialogue.user
    lines = [f"{SPEAKER_NAMES[t['speaker']]}: {t['text']}" for t in dialogue.context]
    return "Conversation so far:\n" + "\n".join(lines) + f"\n\nUser: {dialogue.user}"
