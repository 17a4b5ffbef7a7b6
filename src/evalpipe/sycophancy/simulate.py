"""Planted-truth simulator: do the sycophancy intervals cover what people would say?

A replication draws ``n_judged`` dialogues. Each dialogue has a latent pull towards sycophancy
``u ~ N(0, 1)`` shared by every model (so models are paired on it); model ``m``'s reply has the
latent ``shift_m + 0.8 u + 0.6 e`` (``e ~ N(0, 1)`` per reply) and its true 1-5 rating is 1 plus
the number of :data:`CUTS` the latent passes, so the scale piles up at 1 as the sycophancy axes
do (about 60 % of the ratings at 1 for ``shift = 0``). The human consensus of a reply is its true
rating (the estimand is what people say, by definition). A judge rates every reply as
``clip(round(truth + bias + noise * N(0, 1)), 1, 5)``. A uniform random ``n_human`` of the
dialogues are rated by people (every model's reply to them: the pipeline's sampling unit).

The truths (each model's mean rating and prevalence at ``threshold``, and their differences) are
computed once per design from :data:`TRUTH_DRAWS` latent draws with a fixed seed: a Monte Carlo
error of about 0.001, far inside the intervals' widths.

For the alternative annotator test, ``alt_test_replication`` adds ``n_annotators`` people per
item who each report ``clip(round(truth + annotator_noise * N(0, 1)), 1, 5)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.params_schema import default_of
from evalpipe.seeding import hashed_seed
from evalpipe.sycophancy.alt_test import alt_test
from evalpipe.sycophancy.ppi import MeanEstimate, classical_mean, ppi_mean

CUTS = (0.3, 1.0, 1.6, 2.2)
TRUTH_DRAWS = 2_000_000
STATISTICS = ("mean", "prevalence")


@dataclass(frozen=True)
class Design:
    """One simulated study. ``shifts``: one latent shift per model (the first two are compared
    in the paired difference); ``bias`` / ``noise``: the judge's planted error."""

    n_human: int = 50
    n_judged: int = 1000
    shifts: tuple[float, ...] = (0.0, 0.4)
    bias: float = 0.0
    noise: float = 0.7
    threshold: int = default_of("sycophancy.threshold")
    confidence: float = 0.95


def ratings_from_latent(latent: np.ndarray) -> np.ndarray:
    """1 plus the number of :data:`CUTS` below each latent value."""
    return 1 + np.searchsorted(np.asarray(CUTS), latent, side="left").astype(float)


def _draw_truth(rng: np.random.Generator, n: int, shifts: Sequence[float]) -> np.ndarray:
    u = rng.standard_normal(n)
    return np.stack(
        [ratings_from_latent(s + 0.8 * u + 0.6 * rng.standard_normal(n)) for s in shifts]
    )


def judge_ratings(rng: np.random.Generator, truth: np.ndarray, *, bias: float, noise: float):
    """The planted judge: truth plus bias plus Gaussian noise, rounded and clipped to 1-5."""
    return np.clip(np.round(truth + bias + noise * rng.standard_normal(truth.shape)), 1, 5)


def truths(design: Design) -> dict[str, float]:
    """The estimands: ``mean:<m>``, ``prevalence:<m>`` per model index and ``mean:diff``,
    ``prevalence:diff`` (model 0 minus model 1)."""
    rng = np.random.default_rng(hashed_seed("sycophancy-truth", design.shifts))
    t = _draw_truth(rng, TRUTH_DRAWS, design.shifts)
    out: dict[str, float] = {}
    for m in range(len(design.shifts)):
        out[f"mean:{m}"] = float(t[m].mean())
        out[f"prevalence:{m}"] = float((t[m] >= design.threshold).mean())
    out["mean:diff"] = out["mean:0"] - out["mean:1"]
    out["prevalence:diff"] = out["prevalence:0"] - out["prevalence:1"]
    return out


def _statistic(values: np.ndarray, statistic: str, threshold: int) -> np.ndarray:
    return values if statistic == "mean" else (values >= threshold).astype(float)


Reference = Callable[[np.ndarray, np.ndarray, np.ndarray, float], tuple[float, float, float]]
"""Another implementation run on the same draws: (y, f, f_unlabelled, confidence) -> (estimate,
low, high); the perf script passes ``ppi_py``'s ``ppi_mean_ci``."""


def replication(
    design: Design, rng: np.random.Generator, *, reference: Reference | None = None
) -> list[dict[str, Any]]:
    """One study's estimates: a row per (target, statistic, estimator) with the interval.

    Estimators: ``ppi`` (the pipeline's: PPI++ with leave-one-out weights and the t interval),
    ``ppi_plugin`` (the reference package's form: plug-in weight, normal interval), ``human``
    (humans alone, t interval), ``judge`` (the judge alone over every reply), and
    ``reference`` when given.
    """
    truth = _draw_truth(rng, design.n_judged, design.shifts)
    judge = judge_ratings(rng, truth, bias=design.bias, noise=design.noise)
    labelled = np.zeros(design.n_judged, dtype=bool)
    labelled[rng.choice(design.n_judged, size=design.n_human, replace=False)] = True
    rows: list[dict[str, Any]] = []
    for statistic in STATISTICS:
        y_all = _statistic(truth, statistic, design.threshold)
        f_all = _statistic(judge, statistic, design.threshold)
        targets = {str(m): (y_all[m], f_all[m]) for m in range(len(design.shifts))}
        targets["diff"] = (y_all[0] - y_all[1], f_all[0] - f_all[1])
        for target, (y, f) in targets.items():
            c = design.confidence
            estimates = {
                "ppi": ppi_mean(
                    y[labelled],
                    f[labelled],
                    f[~labelled],
                    confidence=c,
                    crossfit=True,
                    small_sample=True,
                ),
                "ppi_plugin": ppi_mean(y[labelled], f[labelled], f[~labelled], confidence=c),
                "human": classical_mean(y[labelled], confidence=c, small_sample=True),
                "judge": classical_mean(f, confidence=c, n_judged=design.n_judged),
            }
            if reference is not None:
                point, low, high = reference(y[labelled], f[labelled], f[~labelled], c)
                estimates["reference"] = MeanEstimate(
                    point, low, high, float("nan"), design.n_human, design.n_judged
                )
            for estimator, est in estimates.items():
                rows.append(
                    {
                        "target": target,
                        "statistic": statistic,
                        "estimator": estimator,
                        "estimate": est.estimate,
                        "ci_low": est.ci_low,
                        "ci_high": est.ci_high,
                        "effective_n": est.effective_n,
                    }
                )
    return rows


def coverage(
    design: Design, *, replications: int, seed: int = 0, reference: Reference | None = None
) -> pd.DataFrame:
    """Coverage of the planted truths over ``replications`` studies.

    Returns one row per (target, statistic, estimator): ``truth``, ``coverage``, ``bias`` (mean
    estimate minus truth), ``width`` (mean), ``effective_n`` (mean; PPI and humans only).
    """
    rng = np.random.default_rng(hashed_seed("sycophancy-sim", seed, design))
    truth = truths(design)
    rows = []
    for _ in range(replications):
        rows.extend(replication(design, rng, reference=reference))
    frame = pd.DataFrame(rows)
    frame["truth"] = [
        truth[f"{s}:{t}"] for s, t in zip(frame["statistic"], frame["target"], strict=True)
    ]
    frame["covered"] = (frame["ci_low"] <= frame["truth"]) & (frame["truth"] <= frame["ci_high"])
    frame["width"] = frame["ci_high"] - frame["ci_low"]
    frame["error"] = frame["estimate"] - frame["truth"]
    grouped = frame.groupby(["target", "statistic", "estimator"], sort=True)
    out = grouped.agg(
        truth=("truth", "first"),
        coverage=("covered", "mean"),
        bias=("error", "mean"),
        width=("width", "mean"),
        effective_n=("effective_n", "mean"),
    ).reset_index()
    out.insert(0, "n_judged", design.n_judged)
    out.insert(0, "n_human", design.n_human)
    out.insert(0, "judge_bias", design.bias)
    return out


SIZES = ((20, 200), (50, 1000), (100, 2000), (200, 5000))
"""(human-rated, judge-rated) dialogues: the sizes users run, from a pilot to a full study."""


def coverage_table(
    *,
    biases: Sequence[float] = (0.0, 0.6),
    replications: int = 1000,
    seed: int = 0,
    reference: Reference | None = None,
) -> pd.DataFrame:
    """:func:`coverage` over :data:`SIZES` and judge biases (the perf script's table)."""
    frames = [
        coverage(
            replace(Design(), n_human=n, n_judged=big_n, bias=b),
            replications=replications,
            seed=seed,
            reference=reference,
        )
        for b in biases
        for n, big_n in SIZES
    ]
    return pd.concat(frames, ignore_index=True)


def alt_test_replication(
    rng: np.random.Generator,
    *,
    n_items: int,
    n_annotators: int,
    annotator_noise: float,
    bias: float,
    noise: float,
    epsilon: float,
) -> dict[str, Any]:
    """One alternative annotator test on planted people and a planted judge."""
    truth = _draw_truth(rng, n_items, (0.5,))[0]
    people = np.clip(
        np.round(truth + annotator_noise * rng.standard_normal((n_annotators, n_items))), 1, 5
    )
    judge = judge_ratings(rng, truth, bias=bias, noise=noise)
    items = [f"i{i}" for i in range(n_items)]
    humans = {f"h{a}": dict(zip(items, people[a], strict=True)) for a in range(n_annotators)}
    result = alt_test(dict(zip(items, judge, strict=True)), humans, epsilon=epsilon)
    return {"winning_rate": result.winning_rate, "verdict": result.verdict}
