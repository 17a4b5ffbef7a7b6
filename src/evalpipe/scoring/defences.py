"""The defences figures: per defence arm, what it restored, what it broke, the accuracy it won
back and what it cost (docs/defences.md). A grouping of the pairs table plus the defend stage's
counts and the scored views' token counts.

For an arm ``c`` (``warned``, ``corrected:<corrector>``) the pairs table holds, per typo'd row,
``c`` on the clean prompt (``*_original``) and ``c`` on the typo'd prompt (``*_perturbed``); the
plain arm :data:`~evalpipe.scoring.names.TYPO` holds the same row without the defence. Joined on
(view, example_id, variant, word_rank, draw):

- ``delta_typo``: plain typo'd vs plain clean (the loss the defence should win back),
- ``delta_defended``: ``c`` on the typo'd prompt vs plain clean (what is left of it),
- ``delta_defended_clean``: ``c`` on the clean prompt vs plain clean (what the defence costs
  when there is nothing to correct),
- ``recovered_points``: the accuracy won back, ``acc_defended - acc_typo``, a paired difference
  of two arms on the same typo'd prompts, with the headline's interval;
- ``recovered``: the share of the loss won back, ``recovered_points / (acc_clean - acc_typo)``,
  with Fieller's interval (:func:`evalpipe.scoring.ratio_interval.fieller_interval`), reported
  only where the loss's interval excludes 0 and Fieller's interval is bounded; otherwise null,
  and ``recovered_basis`` says why (a ratio over a loss that may be 0 has no interval: it swings
  outside [0, 1] and is undefined in many small studies).

Each delta has the paired interval of the headline (:func:`~evalpipe.scoring.intervals.
paired_interval`, clustered on the example). Restoration and overcorrection come from the defend
stage's counts (:func:`evalpipe.defences.correction_counts`): ``restoration`` = restored typo'd
words / typo'd words; ``overcorrection`` = words changed per clean prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.arms import is_spread_arm
from evalpipe.scoring.intervals import paired_interval
from evalpipe.scoring.names import ORIGINAL, TYPO
from evalpipe.scoring.ratio_interval import fieller_interval
from evalpipe.scoring.summaries import rounded
from evalpipe.scoring.views import parse_view

PAIR_KEY = ["view", "example_id", "variant", "word_rank", "draw"]
USAGE_COLUMNS = ["rows", "prompt_tokens", "output_tokens", "prompt_chars"]


def arms(pairs: pd.DataFrame) -> list[str]:
    """The defence arms of a pairs table (every condition but the plain typo'd one and the
    run-to-run spread's), sorted."""
    if "condition" not in pairs.columns:
        return []
    conditions = pairs["condition"].dropna().unique()
    return sorted(c for c in conditions if c != TYPO and not is_spread_arm(c))


def usage_table(scored: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per view and condition: rows and the summed prompt / output tokens and prompt characters
    of the evaluated model (the cost side of a defence)."""
    parts = []
    for view, frame in scored.items():
        if "condition" not in frame.columns or frame.empty:
            continue
        counts = pd.DataFrame(
            {
                "condition": frame["condition"].astype(str),
                "rows": 1,
                "prompt_tokens": pd.to_numeric(frame["prompt_tokens"]).fillna(0),
                "output_tokens": pd.to_numeric(frame["output_tokens"]).fillna(0),
                "prompt_chars": frame["prompt"].astype(str).str.len(),
            }
        )
        sums = counts.groupby("condition", sort=True).sum().reset_index()
        sums.insert(0, "view", view)
        parts.append(sums)
    if not parts:
        return pd.DataFrame(columns=["view", "condition", *USAGE_COLUMNS])
    return pd.concat(parts, ignore_index=True)


def _accuracy_block(joined: pd.DataFrame, *, level: float) -> dict[str, Any]:
    clean = joined["correct_original_plain"].to_numpy(dtype=bool)
    typo = joined["correct_perturbed_plain"].to_numpy(dtype=bool)
    defended = joined["correct_perturbed"].to_numpy(dtype=bool)
    defended_clean = joined["correct_original"].to_numpy(dtype=bool)
    clusters = joined["cluster"].to_numpy()
    out: dict[str, Any] = {"n": len(joined), "n_examples": int(joined["cluster"].nunique())}
    if not len(joined):
        return out
    acc = {
        "acc_clean": float(clean.mean()),
        "acc_typo": float(typo.mean()),
        "acc_defended": float(defended.mean()),
        "acc_defended_clean": float(defended_clean.mean()),
    }
    out.update(acc)
    for name, arm in (
        ("delta_typo", typo),
        ("delta_defended", defended),
        ("delta_defended_clean", defended_clean),
    ):
        low, high, _deff = paired_interval(clean, arm, clusters=clusters, level=level)
        out[name] = float(arm.mean() - clean.mean())
        out[f"{name}_ci"] = [low, high]
    out.update(recovered_figures(clean, typo, defended, clusters, loss_high=out["delta_typo_ci"][1],
                          level=level))  # fmt: skip
    return out


# ``recovered_basis``: whether the share is reported, and if not, why.
SHARE = "share"
LOSS_NOT_SHOWN = "points only: the loss's interval includes 0"
SHARE_UNBOUNDED = "points only: the share's interval is unbounded"


def recovered_figures(
    clean: np.ndarray,
    typo: np.ndarray,
    defended: np.ndarray,
    clusters: np.ndarray,
    *,
    loss_high: float | None,
    level: float,
) -> dict[str, Any]:
    """The points won back with their interval, and the share only where it is estimable."""
    low, high, _deff = paired_interval(typo, defended, clusters=clusters, level=level)
    out: dict[str, Any] = {
        "recovered_points": float(defended.mean() - typo.mean()),
        "recovered_points_ci": [low, high],
        "recovered": None,
        "recovered_ci": [None, None],
        "recovered_basis": LOSS_NOT_SHOWN,
    }
    if loss_high is None or not loss_high < 0:
        return out
    ratio = fieller_interval(
        defended.astype(float) - typo, clean.astype(float) - typo, clusters, level=level
    )
    if not ratio.bounded:
        out["recovered_basis"] = SHARE_UNBOUNDED
        return out
    out.update(
        recovered=ratio.estimate, recovered_ci=[ratio.low, ratio.high], recovered_basis=SHARE
    )
    return out


def _correction_block(counts: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Restoration and overcorrection from the defend stage's counts of some benchmarks."""
    if not counts:
        return {}
    total = {k: sum(int(c.get(k, 0)) for c in counts) for k in counts[0]}
    clean, typo, prompts = total["clean_prompts"], total["typo_prompts"], total["prompts"]
    return {
        "restoration": total["restored_words"] / total["edited_words"]
        if total["edited_words"]
        else None,
        "edited_words": total["edited_words"],
        "restored_words": total["restored_words"],
        "overcorrection": total["clean_words_changed"] / clean if clean else None,
        "false_changes_per_typo_prompt": total["false_changes"] / typo if typo else None,
        "unsupported_prompts": total["unsupported_prompts"],
        "corrector_tokens_per_prompt": total["corrector_tokens"] / prompts if prompts else None,
        "corrector_chars_per_prompt": total["chars_read"] / prompts if prompts else None,
    }


def _cost_block(usage: pd.DataFrame, views: list[str], arm: str) -> dict[str, Any]:
    """Mean extra prompt / output tokens and prompt characters per prompt of the arm over the
    plain prompts, for the evaluated model."""
    rows = usage.loc[usage["view"].isin(views)]
    sums = rows.groupby("condition")[USAGE_COLUMNS].sum()
    if arm not in sums.index or TYPO not in sums.index:
        return {}
    a, t = sums.loc[arm], sums.loc[TYPO]
    if not a["rows"] or not t["rows"]:
        return {}
    return {
        f"extra_{k}_per_prompt": float(a[k] / a["rows"] - t[k] / t["rows"])
        for k in ("prompt_tokens", "output_tokens", "prompt_chars")
    }


def defence_figures(
    pairs: pd.DataFrame,
    *,
    usage: pd.DataFrame,
    corrections: Mapping[str, Mapping[str, Mapping[str, Any]]],
    level: float,
) -> dict[str, Any]:
    """Every defence figure of one model: per view and pooled per (language, method).

    Parameters
    ----------
    pairs : the model's pairs table (with ``condition``).
    usage : :func:`usage_table` of the model's scored views.
    corrections : ``{benchmark: {corrector: counts}}`` of the defend stage.
    level : confidence level of the intervals.

    Returns
    -------
    dict
        ``{"arms": [...], "views": {view: {arm: figures}}, "pooled": {"<language>"` or
        ``"<language>.<method>": {arm: figures}}}``; ``arms`` empty when no defence ran.
    """
    names = arms(pairs)
    out: dict[str, Any] = {"arms": names, "level": level, "views": {}, "pooled": {}}
    if not names:
        return out
    plain = pairs.loc[
        pairs["condition"] == TYPO, [*PAIR_KEY, "correct_original", "correct_perturbed"]
    ]
    plain = plain.rename(
        columns={
            "correct_original": "correct_original_plain",
            "correct_perturbed": "correct_perturbed_plain",
        }
    )
    for arm in names:
        corrector = arm.split(":", 1)[1] if arm.startswith("corrected:") else None
        rows = pairs.loc[pairs["condition"] == arm]
        joined = rows.merge(plain, on=PAIR_KEY, how="inner", validate="one_to_one")
        joined = joined.loc[joined["variant"] != ORIGINAL]
        for view, group in joined.groupby("view", sort=True):
            benchmark = str(group["benchmark"].iloc[0])
            block = _accuracy_block(group, level=level)
            if corrector is not None:
                found = corrections.get(benchmark, {}).get(corrector)
                block.update(_correction_block([found] if found else []))
            block.update(_cost_block(usage, [str(view)], arm))
            out["views"].setdefault(str(view), {})[arm] = block
        methods = np.array([parse_view(str(v))[1] for v in joined["view"]], dtype=object)
        for (language, method), group in joined.groupby(
            [joined["language"].astype(str), methods], sort=True
        ):
            key = language if method == "generate" else f"{language}.{method}"
            block = _accuracy_block(group, level=level)
            if corrector is not None:
                per_benchmark = [
                    corrections.get(b, {}).get(corrector)
                    for b in sorted(group["benchmark"].astype(str).unique())
                ]
                block.update(_correction_block([f for f in per_benchmark if f]))
            block.update(_cost_block(usage, sorted(group["view"].astype(str).unique()), arm))
            out["pooled"].setdefault(key, {})[arm] = block
    return rounded(out)
