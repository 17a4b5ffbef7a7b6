"""Targeting's figures from a model's pairs table (``perturb.targeting: importance``;
docs/perturbation.md, "Targeting").

- ``attribution``: per view, order (``most`` / ``least``) and dose k, the targeted k-row against
  the random k-row of the same example (both paired with their clean rows): their accuracies,
  the gap ``targeted - random`` with the paired score interval of the project
  (:func:`evalpipe.scoring.intervals.paired_interval`, Tango by default), and the *fidelity*:
  among the examples where exactly one of the two rows lost the clean answer's correctness,
  the share where the targeted row did (Wilson interval); 0.5 is a ranking no better than
  chance.
- ``restoration``: per view, order (``most`` / ``random`` / ``least``) and r, among the
  examples whose clean answer is right and whose random k-row is wrong, the share the row with
  r words put back answers right (Wilson interval).

Only the first draw's rows are read (the targeted arms are built from it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evalpipe.arms import COUNT_PREFIX, RESTORED, TARGETED, TYPO
from evalpipe.scoring.intervals import paired_interval, wilson_interval

_KEY = ["view", "method", "example_id"]


def _k(variant: pd.Series) -> pd.Series:
    return variant.astype(str).str.slice(len(COUNT_PREFIX)).astype(int)


def _rate(successes: int, n: int, level: float) -> dict[str, Any]:
    if not n:
        return {"rate": None, "ci_low": None, "ci_high": None}
    low, high = wilson_interval(float(successes), float(n), level=level)
    return {"rate": successes / n, "ci_low": float(low), "ci_high": float(high)}


def targeting_tables(pairs: pd.DataFrame, *, level: float) -> dict[str, pd.DataFrame]:
    """The ``attribution`` and ``restoration`` tables (one row per view, method, order and k
    or r) of one model's pairs."""
    rows = pairs.loc[pairs["draw"] == 0]
    condition = rows["condition"].astype(str)
    count = rows["variant"].astype(str).str.startswith(COUNT_PREFIX)
    random = rows.loc[(condition == TYPO) & count].assign(k=lambda f: _k(f["variant"]))
    random = random[[*_KEY, "k", "correct_original", "correct_perturbed"]]
    attribution, restoration = [], []
    parts = condition.str.split(":", expand=True)
    if parts.shape[1] < 2:
        parts = parts.reindex(columns=[0, 1, 2])
    for (view, method, how), group in rows.loc[parts[0] == TARGETED].groupby(
        [rows["view"], rows["method"], parts[1]], sort=True
    ):
        group = group.assign(k=_k(group["variant"]))
        joined = group[[*_KEY, "k", "correct_perturbed"]].merge(
            random, on=[*_KEY, "k"], suffixes=("_targeted", "_random")
        )
        for k, at in joined.groupby("k", sort=True):
            t = at["correct_perturbed_targeted"].to_numpy(bool)
            r = at["correct_perturbed_random"].to_numpy(bool)
            low, high, _ = paired_interval(r, t, level=level)
            targeted_costlier = int((~t & r).sum())
            discordant = targeted_costlier + int((t & ~r).sum())
            fidelity = _rate(targeted_costlier, discordant, level)
            attribution.append({
                "view": view, "method": method, "order": how, "k": int(k), "n": len(at),
                "accuracy_targeted": float(t.mean()), "accuracy_random": float(r.mean()),
                "gap": float(t.mean() - r.mean()), "ci_low": low, "ci_high": high,
                "discordant": discordant, "targeted_costlier": targeted_costlier,
                "fidelity": fidelity["rate"], "fidelity_low": fidelity["ci_low"],
                "fidelity_high": fidelity["ci_high"],
            })  # fmt: skip
    restored_rows = rows.loc[parts[0] == RESTORED]
    if not restored_rows.empty:
        kept = _k(restored_rows["variant"])
        r_of = parts.loc[restored_rows.index, 2].astype(int)
        restored_rows = restored_rows.assign(
            order=parts.loc[restored_rows.index, 1], r=r_of, k=kept + r_of
        )
        broken = random.loc[random["correct_original"] & ~random["correct_perturbed"], [*_KEY, "k"]]
        for (view, method, how, r), group in restored_rows.groupby(
            ["view", "method", "order", "r"], sort=True
        ):
            at = group.merge(broken, on=[*_KEY, "k"])
            successes = int(at["correct_perturbed"].to_numpy(bool).sum())
            restoration.append({
                "view": view, "method": method, "order": how, "r": int(r),
                "k": int(group["k"].iloc[0]), "n": len(at), "restored": successes,
                **_rate(successes, len(at), level),
            })  # fmt: skip
    return {
        "attribution": pd.DataFrame(attribution),
        "restoration": pd.DataFrame(restoration),
    }


def targeting_summary(pairs: pd.DataFrame, *, level: float) -> dict | None:
    """metrics/<model>/targeting.json: both tables as lists of records; None without
    targeted rows."""
    arms = {str(c).split(":")[0] for c in pairs["condition"].dropna().unique()}
    if not arms & {TARGETED, RESTORED}:
        return None  # nothing to read: no copy of a pairs table of millions of rows
    tables = targeting_tables(pairs, level=level)
    if tables["attribution"].empty and tables["restoration"].empty:
        return None
    return {
        "level": level,
        **{
            name: [
                {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in rec.items()}
                for rec in table.to_dict("records")
            ]
            for name, table in tables.items()
        },
    }
