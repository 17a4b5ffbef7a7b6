"""Inter-annotator agreement on the 1-5 ordinal axes, with bootstrap confidence intervals.

Every statistic here is a function of *item-additive* sufficient statistics: each item contributes
a row of counts (per-pair confusion cells, Krippendorff coincidences, Gwet's per-item agreement,
agreeing pairs). The point estimate uses the column sums; a bootstrap resample is a vector of item
multiplicities, so all resamples of all statistics are one matrix product ``counts @ features``.
That keeps 10,000 items x 5 annotators x 4 axes x 1,000 resamples to about a second.

Statistics (per axis):

- quadratic weighted Cohen's kappa for every annotator pair on the items both rated, with the
  category set fixed to 1-5 (REFERENCE §5: positional labels would shrink a 2-vs-5 disagreement),
  and the unweighted mean over pairs;
- Krippendorff's alpha, ordinal metric, missing ratings allowed (Krippendorff 2011, "Computing
  Krippendorff's alpha-reliability", coincidence-matrix form);
- Gwet's AC2 with quadratic weights for several raters and missing ratings (Gwet 2014, Handbook of
  Inter-Rater Reliability, 4th ed.; the formula of ``irrCAC::gwet.ac1.raw``):
  ``p_a = mean_i sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))`` over items with ``r_i >= 2``, where
  ``r*_ik = sum_l w_kl r_il``; ``pi_k = mean_i r_ik / r_i`` over items with ``r_i >= 1``;
  ``p_e = T_w / (q (q - 1)) * sum_k pi_k (1 - pi_k)`` with ``T_w = sum_kl w_kl``;
  ``AC2 = (p_a - p_e) / (1 - p_e)``; weights ``w_kl = 1 - (k - l)^2 / (q - 1)^2``;
- raw and within-one agreement: the share of rater pairs (pooled over items) that agree exactly /
  differ by at most one point; robust to the kappa paradox on skewed axes.

Undefined values (constant ratings, no overlapping items) are NaN here and ``null`` in reports,
never an exception.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.annotation.schema import AXES, LABELS
from evalpipe.seeding import hashed_seed

Q = len(LABELS)
_K = np.arange(Q)
# Disagreement weights for kappa ((k-l)^2 / (q-1)^2) and agreement weights for AC2 (1 - that).
QUADRATIC_DISAGREEMENT = ((_K[:, None] - _K[None, :]) ** 2) / (Q - 1) ** 2
QUADRATIC_AGREEMENT = 1.0 - QUADRATIC_DISAGREEMENT


@dataclass(frozen=True)
class RatingMatrix:
    """Ratings of one axis: ``values[i, r]`` is 1-5, or 0 where rater r did not rate item i."""

    items: list[str]
    raters: list[str]
    values: np.ndarray


def rating_matrix(
    long: pd.DataFrame, axis: str, *, items: Sequence[str] | None = None
) -> RatingMatrix:
    """Pivot the long frame (``id, annotator_id, axis, score``) to an item x rater matrix.

    Parameters
    ----------
    long:
        One row per (id, annotator_id, axis).
    axis:
        Which axis.
    items:
        Row order; defaults to the sorted ids present.

    Returns
    -------
    RatingMatrix
        Raters sorted by id; 0 marks a missing rating.
    """
    sub = long[long["axis"] == axis]
    item_list = sorted(sub["id"].unique()) if items is None else list(items)
    raters = sorted(sub["annotator_id"].unique())
    values = np.zeros((len(item_list), len(raters)), dtype=np.int8)
    if len(sub):
        row = pd.Index(item_list).get_indexer(sub["id"])
        col = pd.Index(raters).get_indexer(sub["annotator_id"])
        keep = row >= 0
        values[row[keep], col[keep]] = sub["score"].to_numpy()[keep]
    return RatingMatrix(item_list, raters, values)


# --- item-additive features -------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    n_pairs: int

    @property
    def conf(self) -> slice:
        return slice(0, self.n_pairs * Q * Q)

    @property
    def coinc(self) -> slice:
        start = self.n_pairs * Q * Q
        return slice(start, start + Q * Q)

    @property
    def ac2(self) -> slice:  # a_i, [r_i >= 2], pi_i1..pi_i5, [r_i >= 1]
        start = self.coinc.stop
        return slice(start, start + 2 + Q + 1)

    @property
    def raw(self) -> slice:  # agreeing pairs, pairs within one point, all pairs
        start = self.ac2.stop
        return slice(start, start + 3)

    @property
    def width(self) -> int:
        return self.raw.stop


def _item_features(values: np.ndarray) -> tuple[np.ndarray, _Layout]:
    n, n_raters = values.shape
    pairs = list(combinations(range(n_raters), 2))
    layout = _Layout(len(pairs))
    feats = np.zeros((n, layout.width), dtype=np.float64)
    rows = np.arange(n)
    for p, (a, b) in enumerate(pairs):
        both = (values[:, a] > 0) & (values[:, b] > 0)
        code = (values[:, a].astype(np.int64) - 1) * Q + (values[:, b].astype(np.int64) - 1)
        feats[rows[both], p * Q * Q + code[both]] = 1.0
    counts = np.stack([(values == k).sum(axis=1) for k in LABELS], axis=1).astype(np.float64)
    m = counts.sum(axis=1)
    pairable = m >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        coinc = counts[:, :, None] * counts[:, None, :] - np.eye(Q)[None] * counts[:, :, None]
        coinc = coinc / (m - 1)[:, None, None]
    coinc[~pairable] = 0.0
    feats[:, layout.coinc] = coinc.reshape(n, Q * Q)
    weighted = counts @ QUADRATIC_AGREEMENT  # r*_ik (weights are symmetric)
    with np.errstate(divide="ignore", invalid="ignore"):
        a_i = (counts * (weighted - 1)).sum(axis=1) / (m * (m - 1))
        pi_i = counts / m[:, None]
    s = layout.ac2.start
    feats[:, s] = np.where(pairable, a_i, 0.0)
    feats[:, s + 1] = pairable
    feats[:, s + 2 : s + 2 + Q] = np.where((m >= 1)[:, None], pi_i, 0.0)
    feats[:, s + 2 + Q] = m >= 1
    s = layout.raw.start
    feats[:, s] = (counts * (counts - 1)).sum(axis=1) / 2
    feats[:, s + 1] = feats[:, s] + (counts[:, :-1] * counts[:, 1:]).sum(axis=1)
    feats[:, s + 2] = m * (m - 1) / 2
    return feats, layout


def _kappa_from_confusion(conf: np.ndarray) -> np.ndarray:
    """Quadratic weighted kappa from confusion matrices ``(..., Q, Q)``; NaN where undefined."""
    total = conf.sum(axis=(-2, -1))
    rows = conf.sum(axis=-1)
    cols = conf.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / total[..., None, None]
        observed_d = (conf * QUADRATIC_DISAGREEMENT).sum(axis=(-2, -1))
        expected_d = (expected * QUADRATIC_DISAGREEMENT).sum(axis=(-2, -1))
        kappa = 1.0 - observed_d / expected_d
    return np.where((total >= 1) & (expected_d > 1e-12), kappa, np.nan)


def _ordinal_delta2(marg: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal metric from the value marginals ``(..., Q)`` -> ``(..., Q, Q)``."""
    cum = np.cumsum(marg, axis=-1)
    lo = np.minimum(_K[:, None], _K[None, :])
    hi = np.maximum(_K[:, None], _K[None, :])
    between = cum[..., hi] - cum[..., lo] + marg[..., lo]  # sum of n_g for lo <= g <= hi
    return (between - (marg[..., lo] + marg[..., hi]) / 2.0) ** 2


def _stats_from_sums(sums: np.ndarray, layout: _Layout) -> dict[str, np.ndarray]:
    """All statistics for each row of ``sums`` (``(B, width)``), vectorised over rows."""
    b = sums.shape[0]
    conf = sums[:, layout.conf].reshape(b, layout.n_pairs, Q, Q)
    pair_kappa = _kappa_from_confusion(conf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean_kappa = np.nanmean(pair_kappa, axis=1) if layout.n_pairs else np.full(b, np.nan)
    coinc = sums[:, layout.coinc].reshape(b, Q, Q)
    marg = coinc.sum(axis=-1)
    total = marg.sum(axis=-1)
    delta2 = _ordinal_delta2(marg)
    with np.errstate(divide="ignore", invalid="ignore"):
        d_obs = (coinc * delta2).sum(axis=(-2, -1))
        d_exp = (marg[:, :, None] * marg[:, None, :] * delta2).sum(axis=(-2, -1)) / (total - 1)
        alpha = np.where(d_exp > 1e-12, 1.0 - d_obs / d_exp, np.nan)
        s = layout.ac2.start
        p_a = sums[:, s] / sums[:, s + 1]
        pi = sums[:, s + 2 : s + 2 + Q] / sums[:, s + 2 + Q][:, None]
        t_w = QUADRATIC_AGREEMENT.sum()
        p_e = t_w / (Q * (Q - 1)) * (pi * (1 - pi)).sum(axis=1)
        ac2 = (p_a - p_e) / (1 - p_e)
        s = layout.raw.start
        raw = sums[:, s] / sums[:, s + 2]
        within1 = sums[:, s + 1] / sums[:, s + 2]
    return {
        "pair_kappa": pair_kappa,
        "pair_n": conf.sum(axis=(-2, -1)),
        "kappa": mean_kappa,
        "alpha": alpha,
        "ac2": ac2,
        "raw_agreement": raw,
        "within_one_agreement": within1,
        "n_items": sums[:, layout.ac2.start + 1],
    }


# --- public single-statistic functions -----------------------------------------------------


def quadratic_weighted_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's kappa with quadratic weights over the fixed categories 1-5.

    Parameters
    ----------
    a, b:
        Paired ratings (1-5) of the same items by two raters.

    Returns
    -------
    float
        NaN when undefined (no items, or both raters constant on the same category).

    >>> round(quadratic_weighted_kappa([1, 2, 5], [1, 2, 2]), 3)
    0.27
    """
    a_arr = np.asarray(a, dtype=np.int64)
    b_arr = np.asarray(b, dtype=np.int64)
    if a_arr.shape != b_arr.shape:
        raise ValueError("a and b must have the same length")
    conf = np.bincount((a_arr - 1) * Q + (b_arr - 1), minlength=Q * Q).reshape(Q, Q)
    return float(_kappa_from_confusion(conf.astype(np.float64)))


def _single(values: np.ndarray, key: str) -> float:
    feats, layout = _item_features(np.asarray(values, dtype=np.int8))
    return float(_stats_from_sums(feats.sum(axis=0, keepdims=True), layout)[key][0])


def krippendorff_alpha_ordinal(values: np.ndarray) -> float:
    """Krippendorff's alpha (ordinal) of an item x rater matrix with 0 for missing ratings.

    Returns NaN when there is no variation (e.g. every rating is the same).
    """
    return _single(values, "alpha")


def gwet_ac2(values: np.ndarray) -> float:
    """Gwet's AC2 with quadratic weights of an item x rater matrix with 0 for missing ratings."""
    return _single(values, "ac2")


# --- the report -------------------------------------------------------------------------------


def _num(x: float, digits: int = 4) -> float | None:
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else round(x, digits)


def bootstrap_indices(n_items: int, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, n_items)`` item indices drawn with replacement, one resample per row."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_items, size=(n_boot, n_items), dtype=np.int32)


def kappa_status(kappa: float | None, *, min_kappa: float, target_kappa: float) -> str:
    """``"target"`` (>= target_kappa), ``"pass"`` (>= min_kappa), ``"fail"`` or ``"undefined"``."""
    if kappa is None or math.isnan(kappa):
        return "undefined"
    if kappa >= target_kappa:
        return "target"
    return "pass" if kappa >= min_kappa else "fail"


def agreement_report(
    long: pd.DataFrame,
    *,
    axes: Sequence[str] = AXES,
    n_boot: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    min_kappa: float = 0.60,
    target_kappa: float = 0.80,
    chunk: int = 250,
) -> dict[str, Any]:
    """Agreement statistics per axis among the annotators present in ``long``.

    Parameters
    ----------
    long:
        Columns ``id, annotator_id, axis, score`` (human annotators only, as a rule).
    axes:
        Axes to report.
    n_boot:
        Bootstrap resamples over items (0 = no intervals).
    confidence_level:
        Central interval width, e.g. 0.95.
    seed:
        Base seed; the resampling stream is seeded by hashing it with a fixed key.
    min_kappa, target_kappa:
        Thresholds for each axis's ``status``.
    chunk:
        Resamples per step (bounds memory).

    Returns
    -------
    dict
        ``{"axes": {axis: {...}}, "annotators": [...], "n_items": int, "bootstrap": {...}}``;
        per axis: kappa (mean pairwise), alpha, ac2, raw/within-one agreement, their CIs, n_items,
        pairs (kappa and n for each annotator pair), constant flag and status.
    """
    items = sorted(long["id"].unique())
    idx = (
        bootstrap_indices(len(items), n_boot, hashed_seed(seed, "agreement-bootstrap"))
        if n_boot > 0 and items
        else None
    )
    blocks = []
    for axis in axes:
        mat = rating_matrix(long, axis, items=items)
        # Items with the same ratings contribute the same features: work on the distinct rating
        # rows and count how often each is drawn (a bincount), instead of a matrix over items.
        patterns, inverse = np.unique(mat.values, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1).astype(np.int64)
        feats, layout = _item_features(patterns)
        n_pat = len(patterns)
        point = _stats_from_sums((np.bincount(inverse, minlength=n_pat) @ feats)[None, :], layout)
        boot: dict[str, np.ndarray] = {}
        if idx is not None:
            sums = []
            for start in range(0, n_boot, chunk):
                part = inverse[idx[start : start + chunk]]
                part += (np.arange(len(part)) * n_pat)[:, None]
                counts = np.bincount(part.ravel(), minlength=len(part) * n_pat)
                sums.append(counts.reshape(len(part), n_pat).astype(np.float64) @ feats)
            boot = _stats_from_sums(np.concatenate(sums, axis=0), layout)
        blocks.append((axis, mat, point, boot))
    lo_q, hi_q = 100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2
    out_axes: dict[str, Any] = {}
    for axis, mat, stats, boot in blocks:
        rated = mat.values[mat.values > 0]
        entry: dict[str, Any] = {
            "n_items": int(stats["n_items"][0]),
            "n_ratings": int(rated.size),
            "constant": bool(rated.size > 0 and np.all(rated == rated[0])),
        }
        for key in ("kappa", "alpha", "ac2", "raw_agreement", "within_one_agreement"):
            entry[key] = _num(stats[key][0])
            if boot:
                values = boot[key]
                values = values[~np.isnan(values)]
                entry[f"{key}_ci"] = (
                    [_num(np.percentile(values, lo_q)), _num(np.percentile(values, hi_q))]
                    if values.size
                    else [None, None]
                )
        pairs = list(combinations(mat.raters, 2))
        entry["pairs"] = [
            {
                "a": a,
                "b": b,
                "kappa": _num(stats["pair_kappa"][0, p]),
                "n": int(stats["pair_n"][0, p]),
            }
            for p, (a, b) in enumerate(pairs)
        ]
        entry["status"] = kappa_status(
            entry["kappa"], min_kappa=min_kappa, target_kappa=target_kappa
        )
        if len(mat.raters) < 2:
            entry["note"] = "fewer than two annotators: no agreement to measure"
        elif entry["constant"]:
            entry["note"] = "all ratings equal: kappa and alpha undefined (no variation)"
        out_axes[axis] = entry
    return {
        "axes": out_axes,
        "annotators": sorted(long["annotator_id"].unique()),
        "n_items": len(items),
        "bootstrap": {"samples": int(n_boot), "confidence_level": confidence_level},
        "thresholds": {"min_kappa": min_kappa, "target_kappa": target_kappa},
    }


def annotator_kappas(
    long: pd.DataFrame, *, axes: Sequence[str] = AXES
) -> dict[str, dict[str, float | None]]:
    """Each annotator's mean pairwise kappa with the others, per axis and overall (mean of axes)."""
    out: dict[str, dict[str, float | None]] = {}
    raters = sorted(long["annotator_id"].unique())
    per: dict[str, dict[str, float]] = {r: {} for r in raters}
    for axis in axes:
        mat = rating_matrix(long, axis)
        feats, layout = _item_features(mat.values)
        pk = _stats_from_sums(feats.sum(axis=0, keepdims=True), layout)["pair_kappa"][0]
        for r in mat.raters:
            vals = [pk[p] for p, pair in enumerate(combinations(mat.raters, 2)) if r in pair]
            vals = [v for v in vals if not math.isnan(v)]
            per[r][axis] = float(np.mean(vals)) if vals else math.nan
    for r in raters:
        vals = [v for v in per[r].values() if not math.isnan(v)]
        out[r] = {axis: _num(per[r].get(axis, math.nan)) for axis in axes}
        out[r]["overall"] = _num(float(np.mean(vals))) if vals else None
    return out


def rater_vs_reference(
    rater: dict[str, int], reference: dict[str, int]
) -> dict[str, float | int | None]:
    """Agreement of one rater (e.g. the LLM judge) with reference scores on their common items.

    Parameters
    ----------
    rater, reference:
        ``{item_id: score 1-5}``.

    Returns
    -------
    dict
        ``kappa`` (quadratic), ``raw_agreement``, ``within_one_agreement``, ``n``.
    """
    common = sorted(set(rater) & set(reference))
    if not common:
        return {"kappa": None, "raw_agreement": None, "within_one_agreement": None, "n": 0}
    a = np.array([rater[i] for i in common])
    b = np.array([reference[i] for i in common])
    return {
        "kappa": _num(quadratic_weighted_kappa(a, b)),
        "raw_agreement": _num(float(np.mean(a == b))),
        "within_one_agreement": _num(float(np.mean(np.abs(a - b) <= 1))),
        "n": len(common),
    }
