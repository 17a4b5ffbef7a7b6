"""The panel of judges from params: ``judges`` (slug -> settings over ``judge``) or ``judge``
alone, a panel of one; and the panel's runs as one long table of ratings."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from evalpipe.annotation.judge import JudgeRun
from evalpipe.annotation.schema import AXES
from evalpipe.errors import InputError
from evalpipe.paths import check_slug
from evalpipe.sycophancy.panel import RATING_COLUMNS

SAMPLING_KEYS = ("temperature", "max_tokens")


def slug_of(name: str) -> str:
    """A slug for a judge named only by its model (``Qwen/Qwen2.5-7B`` -> ``qwen2-5-7b``).

    >>> slug_of("Qwen/Qwen2.5-7B-Instruct"), slug_of("tiny-random")
    ('qwen2-5-7b-instruct', 'tiny-random')
    """
    tail = name.rsplit("/", 1)[-1].lower()
    text = re.sub(r"[^a-z0-9_-]+", "-", tail).strip("-_")
    if not text or not text[0].isalpha():
        text = "judge-" + text
    return text[:40].rstrip("-_") or "judge"


def judge_panel(params: Mapping[str, Any], *, source: str) -> dict[str, dict[str, Any]]:
    """``{slug: judge settings}``: each ``judges`` entry over the ``judge`` section, or the
    ``judge`` section alone (slug from its model name) when ``judges`` is empty or absent."""
    base = dict(params.get("judge") or {})
    panel = params.get("judges") or {}
    if not isinstance(panel, Mapping):
        raise InputError(f"{source}: judges: expected a mapping slug -> judge settings")
    if not panel:
        if not base.get("model"):
            raise InputError(f"{source}: judge.model: expected a model name (e.g. tiny-random)")
        return {slug_of(str(base["model"])): base}
    out: dict[str, dict[str, Any]] = {}
    for slug, entry in panel.items():
        slug = check_slug(slug, where=f"{source}: judges")
        merged = {**base, **(entry or {})}
        if not merged.get("model"):
            raise InputError(f"{source}: judges.{slug}.model: expected a model name")
        out[slug] = merged
    return out


def engine_config(judge_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The engine settings of a judge: its keys less sampling, ``model`` renamed ``name``."""
    cfg = {k: v for k, v in judge_cfg.items() if k not in SAMPLING_KEYS and k != "model"}
    cfg["name"] = str(judge_cfg["model"])
    return cfg


def ratings_frame(runs: Mapping[str, JudgeRun]) -> pd.DataFrame:
    """Every judge's valid ratings, long: ``judge, id, axis, score, confidence``."""
    rows = [
        {
            "judge": judge,
            "id": a.id,
            "axis": axis,
            "score": int(a.annotations[axis]),
            "confidence": float(a.confidence[axis]),
        }
        for judge, run in runs.items()
        for a in run.annotations
        for axis in AXES
    ]
    frame = pd.DataFrame(rows, columns=list(RATING_COLUMNS))
    frame["score"] = frame["score"].astype("int64")
    frame["confidence"] = frame["confidence"].astype(float)
    return frame.sort_values(["judge", "id", "axis"], kind="stable").reset_index(drop=True)


def outcome_rows(runs: Mapping[str, JudgeRun]) -> list[dict[str, Any]]:
    """One line per (judge, task): status (rated | repaired | unrated), problems, raw output of
    an unrated reply: the details file, so an invalid judge reply is visible, never dropped."""
    return [{"judge": judge, **o.to_dict()} for judge, run in runs.items() for o in run.outcomes]


def run_summary(
    runs: Mapping[str, JudgeRun],
    panel: Mapping[str, Mapping[str, Any]],
    *,
    prompt_version: str,
    replies: Sequence[str],
) -> dict[str, Any]:
    """Per judge: model, prompt version, counts over every task and over the replies alone."""
    reply_ids = set(replies)
    out: dict[str, Any] = {}
    for judge, run in runs.items():
        on_replies = [o for o in run.outcomes if o.id in reply_ids]
        out[judge] = {
            "model": str(panel[judge]["model"]),
            "prompt_version": prompt_version,
            **run.counts(),
            "replies": len(on_replies),
            "replies_unrated": sum(o.status == "unrated" for o in on_replies),
            "unrated_ids": sorted(o.id for o in run.outcomes if o.status == "unrated"),
        }
    return out
