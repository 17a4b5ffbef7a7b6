"""The rates a study plan starts from, read off a pilot run's pairs table, and the plans of a
list of draw counts (``evalpipe plan``; :mod:`evalpipe.scoring.power` computes them).

Per view of the pilot's typo arm: the clean accuracy on its pairs, the discordance (share of
pairs whose correctness changed), the observed change, and the within-example correlation of the
pairs' changes (the intraclass correlation implied by the design effect of the pairs of one
(example, target word), i.e. of its typo draws; 0, and said so, when the pilot had one draw).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalpipe.arms import typo_rows
from evalpipe.errors import InputError
from evalpipe.scoring.intervals import cluster_correction
from evalpipe.scoring.power import Plan, examples_needed, icc_from
from evalpipe.scoring.scorer import check_columns

PILOT_COLUMNS = ["view", "cluster", "word_rank", "condition", "correct_original",
                 "correct_perturbed"]  # fmt: skip


@dataclass(frozen=True)
class Rates:
    """What a plan needs to know about the outcomes: where they come from (``source``: a view
    of a pilot, or ``stated``), clean accuracy, discordance, the observed change, the
    within-example correlation of the draws and whether it was measured."""

    source: str
    accuracy: float | None
    discordance: float
    effect: float | None = None
    icc: float = 0.0
    icc_measured: bool = False
    pairs: int = 0
    pilot_draws: float = 1.0


def pilot_rates(pairs: pd.DataFrame, *, source: str = "pairs table") -> list[Rates]:
    """:class:`Rates` per view of a pilot run's pairs table (its typo arm).

    Examples
    --------
    >>> frame = pd.DataFrame({"view": "mmlu", "cluster": [0, 0, 1, 1], "word_rank": 1,
    ...     "condition": "typo", "correct_original": [True, True, True, False],
    ...     "correct_perturbed": [False, False, True, False]})
    >>> r = pilot_rates(frame)[0]
    >>> r.source, r.accuracy, r.discordance, r.effect, r.pilot_draws
    ('mmlu', 0.75, 0.5, -0.5, 2.0)
    """
    check_columns(pairs, PILOT_COLUMNS, source=source)
    pairs = typo_rows(pairs)
    if not len(pairs):
        raise InputError(f"{source}: no pairs of the typo arm (condition 'typo'): nothing to plan")
    out = []
    for view, rows in pairs.groupby("view", sort=True):
        o = rows["correct_original"].to_numpy(dtype=bool)
        p = rows["correct_perturbed"].to_numpy(dtype=bool)
        diff = p.astype(float) - o.astype(float)
        span = int(rows["word_rank"].max()) + 1
        units = rows["cluster"].to_numpy(dtype=np.int64) * span + rows["word_rank"].to_numpy(
            dtype=np.int64
        )
        n_units = int(np.unique(units).size)
        draws = len(rows) / n_units
        measured = draws > 1
        icc = icc_from(cluster_correction(diff, units).variance_ratio, draws) if measured else 0.0
        out.append(
            Rates(
                source=str(view),
                accuracy=float(o.mean()),
                discordance=float((o != p).mean()),
                effect=float(diff.mean()),
                icc=icc,
                icc_measured=measured,
                pairs=len(rows),
                pilot_draws=draws,
            )
        )
    return out


def stated_rates(
    *, accuracy: float | None, discordance: float | None, effect: float, icc: float
) -> Rates:
    """:class:`Rates` from numbers a user states; without a discordance, every flip is taken to
    go the effect's way (discordance = ``|effect|``, the least a change of ``effect`` needs)."""
    for name, value in (("--accuracy", accuracy), ("--discordance", discordance), ("--icc", icc)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise InputError(f"{name}: expected a share in [0, 1], got {value}")
    psi = abs(effect) if discordance is None else float(discordance)
    return Rates("stated rates", accuracy, psi, icc=float(icc), icc_measured=icc > 0)


def check_target(rates: Rates, effect: float) -> None:
    """The target effect must be possible at the rates' clean accuracy: a loss cannot exceed
    the clean accuracy, a gain the clean error rate."""
    if not 0 < abs(effect) < 1 or not math.isfinite(effect):
        raise InputError(f"--effect: expected a change of accuracy in (-1, 1), not 0; got {effect}")
    acc = rates.accuracy
    if acc is None:
        return
    if effect < 0 and -effect > acc:
        raise InputError(
            f"--effect {effect}: a loss larger than the clean accuracy ({acc:.4g}) of "
            f"{rates.source} is impossible"
        )
    if effect > 0 and effect > 1 - acc:
        raise InputError(
            f"--effect {effect}: a gain larger than the clean error rate ({1 - acc:.4g}) of "
            f"{rates.source} is impossible"
        )


def plans(
    rates: Rates, *, effect: float, draws: Sequence[int], level: float, target_power: float
) -> list[Plan]:
    """One :class:`~evalpipe.scoring.power.Plan` per draw count, at the rates' discordance
    (floored at ``|effect|``) and within-example correlation."""
    check_target(rates, effect)
    return [
        examples_needed(
            effect=effect,
            discordance=max(rates.discordance, abs(effect)),
            draws=int(m),
            icc=rates.icc,
            level=level,
            target_power=target_power,
        )
        for m in draws
    ]
