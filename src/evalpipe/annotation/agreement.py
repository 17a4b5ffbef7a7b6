"""Inter-annotator agreement on the 1-5 ordinal axes, with bootstrap confidence intervals.

Every statistic here is a function of *item-additive* sufficient statistics: each item contributes
a row of counts (per-pair confusion cells, Krippendorff coincidences, Gwet's per-item agreement,
agreeing pairs). The point estimate uses the column sums; a bootstrap resample is a vector of item
multiplicities, so all resamples of all statistics are one matrix product ``counts @ features``.
That keeps 10,000 items x 5 annotators x 4 axes x 1,000 resamples to about a second.

Statistics (per axis):

- quadratic weighted Cohen's kappa (Cohen 1968) for every annotator pair on the items both rated,
  with the category set fixed to 1-5 (``labels=[1, 2, 3, 4, 5]``: scikit-learn's
  ``cohen_kappa_score`` weights by category position, so unobserved categories would shrink a
  2-vs-5 disagreement). The headline ``kappa`` is the mean of the pairwise kappas weighted by each pair's
  number of shared items, over the pairs that share at least ``min_pair_overlap`` items. On a
  fully crossed design every pair has the same n and this is Light's kappa (Light 1971, the plain
  mean of pairwise kappas); on the sparse designs campaigns produce (each item rated by a few of
  many annotators), the plain mean lets a pair that shares one item weigh as much as a pair that
  shares hundreds. Why this estimator and not Conger's: docs/annotation-quality.md;
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

Undefined values are NaN here and ``null`` in reports, each with a reason (``undefined_reason``),
never an exception and never a 0.0 standing in for "not defined". A pair's kappa is undefined when
either annotator gave the same score to every shared item: the chance term then equals the
observed disagreement whatever the other annotator did, so the value is 0 by construction and
says nothing about agreement (the "0.00, CI 0.00-0.00" an admin page showed for a few items).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.annotation.schema import AXES, LABELS
from evalpipe.params_schema import default_of
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
class FeatureLayout:
    """Where each statistic's sums sit in a row of :func:`item_features` (per rater pair:
    confusion cells; then coincidences, Gwet's AC2 terms, raw agreement counts)."""

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


def item_features(values: np.ndarray) -> tuple[np.ndarray, FeatureLayout]:
    """Per item (row of ``values``: items x raters, 0 = not rated), the additive sums every
    agreement statistic is computed from, so a subset or a bootstrap resample of items is a sum
    of rows (:func:`stats_from_sums`)."""
    n, n_raters = values.shape
    pairs = list(combinations(range(n_raters), 2))
    layout = FeatureLayout(len(pairs))
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


def pairwise_kappa(conf: np.ndarray) -> np.ndarray:
    """Pairwise kappa ``(..., P)`` from confusions ``(..., P, Q, Q)``, NaN where either rater is
    constant on the shared items (kappa would be 0 or undefined by construction)."""
    kappa = _kappa_from_confusion(conf)
    varied_a = (conf.sum(axis=-1) > 0).sum(axis=-1) >= 2
    varied_b = (conf.sum(axis=-2) > 0).sum(axis=-1) >= 2
    return np.where(varied_a & varied_b, kappa, np.nan)


def _weighted_kappa_mean(
    pair_kappa: np.ndarray, pair_n: np.ndarray, eligible: np.ndarray
) -> np.ndarray:
    """Mean of ``pair_kappa`` (``(B, P)``) weighted by ``pair_n`` over eligible, defined pairs."""
    weight = np.where(eligible[None, :] & ~np.isnan(pair_kappa), pair_n, 0.0)
    total = weight.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (np.nan_to_num(pair_kappa) * weight).sum(axis=1) / total
    return np.where(total > 0, mean, np.nan)


def _ordinal_delta2(marg: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal metric from the value marginals ``(..., Q)`` -> ``(..., Q, Q)``."""
    cum = np.cumsum(marg, axis=-1)
    lo = np.minimum(_K[:, None], _K[None, :])
    hi = np.maximum(_K[:, None], _K[None, :])
    between = cum[..., hi] - cum[..., lo] + marg[..., lo]  # sum of n_g for lo <= g <= hi
    return (between - (marg[..., lo] + marg[..., hi]) / 2.0) ** 2


def stats_from_sums(
    sums: np.ndarray, layout: FeatureLayout, eligible: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """All statistics for each row of ``sums`` (``(B, width)``), vectorised over rows.

    ``eligible`` (``(P,)`` bool) marks the pairs that enter the headline kappa; the bootstrap
    passes the point estimate's mask so every resample averages over the same pairs.
    """
    b = sums.shape[0]
    conf = sums[:, layout.conf].reshape(b, layout.n_pairs, Q, Q)
    pair_kappa = pairwise_kappa(conf)
    pair_n = conf.sum(axis=(-2, -1))
    if eligible is None:
        eligible = np.ones(layout.n_pairs, dtype=bool)
    mean_kappa = _weighted_kappa_mean(pair_kappa, pair_n, eligible)
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
        "pair_n": pair_n,
        "pair_conf": conf,
        "kappa": mean_kappa,
        "alpha": alpha,
        "ac2": ac2,
        "raw_agreement": raw,
        "within_one_agreement": within1,
        "n_items": sums[:, layout.ac2.start + 1],
    }


# --- public single-statistic functions -----------------------------------------------------


def quadratic_weighted_kappa(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> float:
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
    feats, layout = item_features(np.asarray(values, dtype=np.int8))
    return float(stats_from_sums(feats.sum(axis=0, keepdims=True), layout)[key][0])


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


DEFAULT_MIN_PAIR_OVERLAP: int = default_of("annotation.min_pair_overlap")
"""The schema default of ``annotation.min_pair_overlap``: pairs sharing fewer items stay out of the headline
kappa and out of annotator-outlier decisions (a kappa over a handful of items has a CI spanning
most of [-1, 1]: with 10 items and moderate agreement the 95% bootstrap CI is about +-0.3)."""

KAPPA_ESTIMATOR = "pair-size-weighted mean of pairwise quadratic weighted kappa"


def _pair_reason(conf: np.ndarray, a: str, b: str) -> str | None:
    """Why one pair's kappa is undefined (``conf`` is its ``(Q, Q)`` confusion), else None."""
    if conf.sum() == 0:
        return "no shared items"
    constant = [
        f"{name} gave {int(np.flatnonzero(marg)[0]) + 1} on all {int(conf.sum())} shared items"
        for name, marg in ((a, conf.sum(axis=1)), (b, conf.sum(axis=0)))
        if (marg > 0).sum() < 2
    ]
    return f"constant ratings: {'; '.join(constant)}" if constant else None


def _stat_reasons(entry: dict[str, Any], n_raters: int) -> dict[str, str]:
    """A reason for every statistic other than kappa that is None."""
    if n_raters < 2:
        why = "fewer than two annotators"
    elif entry["n_items"] == 0:
        why = "no item rated by two or more annotators"
    elif entry["constant"]:
        why = "constant ratings: every rating on this axis is the same"
    else:
        why = "no variation in the ratings to correct for chance"
    keys = ("alpha", "ac2", "raw_agreement", "within_one_agreement")
    return {k: why for k in keys if entry[k] is None}


def _kappa_reason(pairs: list[dict[str, Any]], n_raters: int, min_pair_overlap: int) -> str | None:
    if n_raters < 2:
        return "fewer than two annotators"
    largest = max((p["n"] for p in pairs), default=0)
    if largest == 0:
        return "no item rated by two or more annotators"
    if largest < min_pair_overlap:
        return (
            f"fewer than {min_pair_overlap} shared items in every annotator pair "
            f"(largest overlap {largest})"
        )
    eligible = [p for p in pairs if p["n"] >= min_pair_overlap]
    if all(p["kappa"] is None for p in eligible):
        return (
            f"constant ratings: in every pair with {min_pair_overlap}+ shared items an annotator "
            "gave one score to all of them"
        )
    return None


def agreement_report(
    long: pd.DataFrame,
    *,
    axes: Sequence[str] = AXES,
    n_boot: int = default_of("annotation.bootstrap_samples"),
    confidence_level: float = default_of("annotation.confidence_level"),
    seed: int = default_of("seed"),
    min_kappa: float = default_of("annotation.min_kappa"),
    target_kappa: float = default_of("annotation.target_kappa"),
    chunk: int = 250,
    min_pair_overlap: int = DEFAULT_MIN_PAIR_OVERLAP,
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
    min_pair_overlap:
        Annotator pairs sharing fewer items are listed in ``pairs`` but left out of ``kappa``.

    Returns
    -------
    dict
        ``{"axes": {axis: {...}}, "annotators": [...], "n_items": int, "bootstrap": {...},
        "thresholds": {...}, "kappa_estimator": str}``; per axis: ``kappa`` (pair-size-weighted
        mean of the pairwise kappas of the pairs with at least ``min_pair_overlap`` shared items),
        alpha, ac2, raw/within-one agreement, their CIs, n_items, ``pairs`` (a, b, kappa, n,
        ``in_headline``, ``undefined_reason``), ``n_pairs_in_headline``, constant flag, status,
        ``undefined_reason`` (``{statistic: why}`` for every statistic that is None) and
        ``kappa_note`` (why ``kappa`` is None, else None).
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
        feats, layout = item_features(patterns)
        n_pat = len(patterns)
        point_sums = (np.bincount(inverse, minlength=n_pat) @ feats)[None, :]
        pair_n = point_sums[0, layout.conf].reshape(layout.n_pairs, Q * Q).sum(axis=1)
        eligible = pair_n >= max(min_pair_overlap, 1)
        point = stats_from_sums(point_sums, layout, eligible)
        boot: dict[str, np.ndarray] = {}
        if idx is not None:
            sums = []
            for start in range(0, n_boot, chunk):
                part = inverse[idx[start : start + chunk]]
                part += (np.arange(len(part)) * n_pat)[:, None]
                counts = np.bincount(part.ravel(), minlength=len(part) * n_pat)
                sums.append(counts.reshape(len(part), n_pat).astype(np.float64) @ feats)
            boot = stats_from_sums(np.concatenate(sums, axis=0), layout, eligible)
        blocks.append((axis, mat, point, boot, eligible))
    lo_q, hi_q = 100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2
    out_axes: dict[str, Any] = {}
    for axis, mat, stats, boot, eligible in blocks:
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
                # An undefined estimate has no interval, whatever some resamples happen to give.
                entry[f"{key}_ci"] = (
                    [_num(np.percentile(values, lo_q)), _num(np.percentile(values, hi_q))]
                    if values.size and entry[key] is not None
                    else [None, None]
                )
        pair_kappa = stats["pair_kappa"]  # (1, P)
        pair_list = list(combinations(mat.raters, 2))
        entry["pairs"] = []
        for p, (a, b) in enumerate(pair_list):
            n = int(stats["pair_n"][0, p])
            k = _num(pair_kappa[0, p])
            entry["pairs"].append(
                {
                    "a": a,
                    "b": b,
                    "kappa": k,
                    "n": n,
                    "in_headline": bool(eligible[p] and k is not None),
                    "undefined_reason": None
                    if k is not None
                    else _pair_reason(stats["pair_conf"][0, p], a, b),
                }
            )
        entry["n_pairs_in_headline"] = sum(p["in_headline"] for p in entry["pairs"])
        entry["min_pair_overlap"] = int(min_pair_overlap)
        entry["status"] = kappa_status(
            entry["kappa"], min_kappa=min_kappa, target_kappa=target_kappa
        )
        kappa_note = (
            None
            if entry["kappa"] is not None
            else _kappa_reason(entry["pairs"], len(mat.raters), min_pair_overlap)
            or "not defined for these ratings"
        )
        entry["kappa_note"] = kappa_note
        reasons = _stat_reasons(entry, len(mat.raters))
        if kappa_note:
            reasons = {"kappa": kappa_note, **reasons}
        entry["undefined_reason"] = reasons
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
        "thresholds": {
            "min_kappa": min_kappa,
            "target_kappa": target_kappa,
            "min_pair_overlap": int(min_pair_overlap),
        },
        "kappa_estimator": KAPPA_ESTIMATOR,
    }


def pairwise_kappas(
    long: pd.DataFrame, *, axes: Sequence[str] = AXES
) -> dict[str, list[tuple[str, str, float, int]]]:
    """``{axis: [(a, b, kappa, n), ...]}``: every annotator pair's kappa (NaN if undefined) and
    number of shared items, without bootstrap."""
    out: dict[str, list[tuple[str, str, float, int]]] = {}
    for axis in axes:
        mat = rating_matrix(long, axis)
        feats, layout = item_features(mat.values)
        stats = stats_from_sums(feats.sum(axis=0, keepdims=True), layout)
        out[axis] = [
            (a, b, float(stats["pair_kappa"][0, p]), int(stats["pair_n"][0, p]))
            for p, (a, b) in enumerate(combinations(mat.raters, 2))
        ]
    return out


def annotator_kappas(
    long: pd.DataFrame,
    *,
    axes: Sequence[str] = AXES,
    min_pair_overlap: int = DEFAULT_MIN_PAIR_OVERLAP,
) -> dict[str, dict[str, float | None]]:
    """Each annotator's agreement with the others, per axis and overall (mean of the axes).

    Per axis: the mean of the annotator's pairwise kappas weighted by shared items, over the pairs
    with at least ``min_pair_overlap`` shared items and a defined kappa; ``None`` when there is no
    such pair (the annotator is then not judged).
    """
    out: dict[str, dict[str, float | None]] = {}
    raters = sorted(long["annotator_id"].unique())
    per: dict[str, dict[str, float]] = {r: {} for r in raters}
    for axis, pairs in pairwise_kappas(long, axes=axes).items():
        for r in raters:
            mine = [
                (k, n)
                for a, b, k, n in pairs
                if r in (a, b) and n >= min_pair_overlap and not math.isnan(k)
            ]
            total = sum(n for _, n in mine)
            per[r][axis] = sum(k * n for k, n in mine) / total if total else math.nan
    for r in raters:
        vals = [v for v in per[r].values() if not math.isnan(v)]
        out[r] = {axis: _num(per[r].get(axis, math.nan)) for axis in axes}
        out[r]["overall"] = _num(float(np.mean(vals))) if vals else None
    return out


def macro_f1_score(reference: Sequence[int], rater: Sequence[int]) -> float:
    """Macro-averaged F1 of ``rater`` against ``reference`` over the labels either uses.

    The same as ``sklearn.metrics.f1_score(reference, rater, average="macro",
    zero_division=0)``: a label that one side never uses gets F1 0.

    >>> macro_f1_score([1, 1, 2, 3], [1, 2, 2, 3])
    0.7778
    """
    a = np.asarray(reference)
    b = np.asarray(rater)
    f1s = []
    for label in sorted(set(a.tolist()) | set(b.tolist())):
        tp = float(np.sum((a == label) & (b == label)))
        pred = float(np.sum(b == label))
        true = float(np.sum(a == label))
        f1s.append(2 * tp / (pred + true) if tp else 0.0)
    return round(float(np.mean(f1s)), 4) if f1s else math.nan


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
        ``kappa`` (quadratic), ``raw_agreement``, ``within_one_agreement``, ``macro_f1``
        (:func:`macro_f1_score`, the reference as truth), ``mae`` (mean absolute difference in
        points), ``n``.
    """
    common = sorted(set(rater) & set(reference))
    if not common:
        return {
            "kappa": None,
            "raw_agreement": None,
            "within_one_agreement": None,
            "macro_f1": None,
            "mae": None,
            "n": 0,
        }
    a = np.array([rater[i] for i in common])
    b = np.array([reference[i] for i in common])
    return {
        "kappa": _num(quadratic_weighted_kappa(a, b)),
        "raw_agreement": _num(float(np.mean(a == b))),
        "within_one_agreement": _num(float(np.mean(np.abs(a - b) <= 1))),
        "macro_f1": _num(macro_f1_score(b.tolist(), a.tolist())),
        "mae": _num(float(np.mean(np.abs(a - b)))),
        "n": len(common),
    }
