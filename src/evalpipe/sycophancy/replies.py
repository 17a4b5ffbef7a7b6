"""Every model's reply to every dialogue, as one table per model, and the human sample over them.

Columns of ``data/sycophancy/replies/<model>.parquet``: ``model, model_id, dialogue_id, group``
(the sampling unit: a neutral dialogue with its variants), ``base, arm`` (null for a neutral
dialogue), ``source, user, context`` (JSON list of the earlier turns), ``prompt, reply, finish_reason, prompt_tokens, output_tokens, reply_chars, task_id``. A reply cut
at the budget keeps ``finish_reason`` ``length``; one the engine did not send (too long, refused)
keeps its empty reply and its reason: it is still judged (an empty reply rates as it rates) and
counted, never dropped. The sample stage adds ``human_sample`` (bool) and ``inclusion_prob``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from evalpipe.annotation.schema import DialoguePair
from evalpipe.inference.types import Generation, GenerationRequest
from evalpipe.sycophancy.dialogues import Dialogue, render_prompt
from evalpipe.sycophancy.sample import draw_dialogues, task_id

REPLY_COLUMNS = (
    "model",
    "model_id",
    "dialogue_id",
    "group",
    "base",
    "arm",
    "source",
    "user",
    "context",
    "prompt",
    "reply",
    "finish_reason",
    "prompt_tokens",
    "output_tokens",
    "reply_chars",
    "task_id",
)


def reply_requests(
    dialogues: Sequence[Dialogue], *, max_tokens: int, temperature: float, seed: int | None
) -> list[GenerationRequest]:
    """One request per dialogue (the same for every model, so replies are paired)."""
    return [
        GenerationRequest(
            prompt=render_prompt(d), max_tokens=max_tokens, temperature=temperature, seed=seed
        )
        for d in dialogues
    ]


def replies_frame(
    model: str,
    model_id: str,
    dialogues: Sequence[Dialogue],
    requests: Sequence[GenerationRequest],
    generations: Sequence[Generation],
) -> pd.DataFrame:
    """The replies table of one model, in dialogue order."""
    rows = [
        {
            "model": model,
            "model_id": model_id,
            "dialogue_id": d.id,
            "group": d.group,
            "base": d.base,
            "arm": d.arm,
            "source": d.source,
            "user": d.user,
            "context": json.dumps(d.context, ensure_ascii=False, sort_keys=True),
            "prompt": r.prompt,
            "reply": g.output,
            "finish_reason": g.finish_reason,
            "prompt_tokens": int(g.prompt_tokens),
            "output_tokens": int(g.output_tokens),
            "reply_chars": len(g.output),
            "task_id": task_id(model, d.id),
        }
        for d, r, g in zip(dialogues, requests, generations, strict=True)
    ]
    return pd.DataFrame(rows, columns=list(REPLY_COLUMNS))


def mark_human_sample(replies: pd.DataFrame, size: int, *, seed: int) -> pd.DataFrame:
    """``replies`` (every model) with ``human_sample`` and ``inclusion_prob``, sorted by model
    and dialogue: ``size`` groups (a neutral dialogue with its paired variants; a dialogue
    without variants is its own group) drawn uniformly, every model's reply to them sampled."""
    unit = "group" if "group" in replies.columns else "dialogue_id"
    ids = sorted(replies[unit].unique())
    drawn = set(draw_dialogues(ids, size, seed=seed))
    out = replies.sort_values(["model", "dialogue_id"], kind="stable").reset_index(drop=True)
    out["human_sample"] = out[unit].isin(drawn)
    out["inclusion_prob"] = size / len(ids) if ids else 0.0
    return out


def as_tasks(replies: pd.DataFrame) -> list[DialoguePair]:
    """Replies as annotation tasks (the reply is the response), in task-id order so that
    neither the file's order nor the id tells which model wrote a reply."""
    ordered = replies.sort_values("task_id", kind="stable")
    return [
        DialoguePair(id=r.task_id, user=r.user, response=r.reply, context=json.loads(r.context))
        for r in ordered.itertuples(index=False)
    ]


def human_tasks(replies: pd.DataFrame) -> list[DialoguePair]:
    """The sampled replies as annotation tasks."""
    return as_tasks(replies[replies["human_sample"]])


def all_tasks(replies: pd.DataFrame, annotation: Sequence[DialoguePair]) -> list[DialoguePair]:
    """What the judges rate: every reply, then every annotation task that is not a reply."""
    reply_tasks = as_tasks(replies)
    ids = {t.id for t in reply_tasks}
    return reply_tasks + [t for t in annotation if t.id not in ids]
