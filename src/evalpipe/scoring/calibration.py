"""Calibration of the choice probabilities, clean against typo'd: ``metrics/<model>/readouts.json``.

A benchmark scored by log-likelihood (``scoring.method: loglikelihood`` or ``both``) has, per
row, one log-likelihood per option (the ``ll_*`` columns). Its choice probabilities are the
softmax over the options of the score the view picks by: the total log-likelihood (view
``.ll``, lm-eval's ``acc``) or the log-likelihood per character (``.ll_norm``, ``acc_norm``), so
the option with the highest probability is the view's answer. Per typo pair (the perturbed row
and its example's clean row):

- **confidence** ``c``: the probability of the chosen option; **correct** ``y``: the row's answer
  is right (the scored view's ``correct``);
- **Brier score**: ``sum_k (p_k - o_k)^2`` over the options, ``o`` the one-hot of the gold option
  (the first accepted one when several are; 0 is perfect, 2 the worst);
- **ECE** (expected calibration error) over a set of rows: the confidences are put in
  :data:`BINS` fixed bins of equal width on [0, 1] (``[0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]``,
  the last one closed), and ``ECE = sum_b (n_b / n) |mean(y)_b - mean(c)_b|``
  = ``(1 / n) sum_b |sum_{i in b} (y_i - c_i)|``.

Both are reported on the clean side (the pairs' original rows, each counted once per pair, so
both sides weigh examples alike) and on the typo'd side, with the paired difference typo'd -
clean and its interval:

- Brier: the mean per-pair difference with the CR2 t interval, clustered on the example
  (:func:`evalpipe.scoring.mean_interval.clustered_mean_interval`);
- ECE, which is not a mean of per-pair values: the cluster basic bootstrap (examples resampled
  with replacement, both sides of every drawn pair kept together, the ECE difference recomputed;
  ``[2 d - q_high, 2 d - q_low]``, which corrects part of the plug-in ECE's small-sample bias
  that the percentile interval carries; seeded by the view's key). The plug-in ECE is biased
  upward by a amount that shrinks with the rows it is computed on, and the clean side has one
  distinct row per example while the typo'd side has one per pair: with several pairs per
  example the difference is biased downward and the interval covers less than its level
  (``pairs_per_example`` says how many there were; docs/scoring-studies.md has the figures).

- the **choice KL** ``KL(clean || typo'd) = sum_k p_k log(p_k / q_k)`` of the pair's choice
  probabilities: how far the typo moves the distribution over the options, right or wrong. When
  every option's continuation is one token (MMLU's `` A`` ... `` D``), it is the first answer
  token's distribution renormalised over the options' tokens. Its mean per pair comes with the
  cluster bootstrap-t interval (:func:`evalpipe.scoring.skewed_mean.bootstrap_t_mean_interval`:
  per-pair KLs are non-negative and right-skewed, as the perplexity log-ratios are).

``perf/calibration_coverage.py`` checks all three on :mod:`evalpipe.scoring.simulate_calibration`'s
studies with a known truth (docs/scoring-studies.md, "Calibration under typos").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.names import ORIGINAL, TYPO
from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval
from evalpipe.scoring.views import parse_view
from evalpipe.seeding import hashed_seed

BINS = 10
BOOTSTRAP_SAMPLES = 999
_CELLS = 2_000_000  # resamples x examples held in memory at once
BRIER_CI = "cr2_t"
KL_CI = "cluster_bootstrap_t"
ECE_CI = "cluster_basic_bootstrap"
KEYS = ["example_id", "variant", "word_rank", "draw"]
# One row per typo pair of a log-likelihood view (:func:`calibration_pairs`).
PAIR_COLUMNS = [
    "view", "benchmark", "language", "cluster", "example_id", "variant", "word_rank", "draw",
    "confidence_original", "correct_original", "brier_original",
    "confidence_perturbed", "correct_perturbed", "brier_perturbed", "choice_kl",
]  # fmt: skip


def choice_probabilities(
    logprobs: Sequence[float], continuations: Sequence[str], *, normalised: bool
) -> np.ndarray | None:
    """Softmax over the options of their log-likelihood (per character when ``normalised``).

    None when a log-likelihood is missing or none is finite (the row has no answer).

    >>> choice_probabilities([math.log(0.2), math.log(0.6)], [" A", " B"], normalised=False)
    array([0.25, 0.75])
    """
    values = np.asarray([float(v) for v in logprobs], dtype=float)
    if values.size == 0 or values.size != len(continuations) or np.isnan(values).any():
        return None
    if not np.isfinite(values).any():
        return None
    if normalised:
        values = values / np.asarray([max(1, len(str(c))) for c in continuations], dtype=float)
    top = values[np.isfinite(values)].max()
    weights = np.where(np.isfinite(values), np.exp(values - top), 0.0)
    return weights / weights.sum()


def choice_kl(clean: Sequence[float] | None, typo: Sequence[float] | None) -> float:
    """``KL(clean || typo'd) = sum_k p_k log(p_k / q_k)`` of one pair's choice probabilities, in
    nats; NaN when a side has none (or they differ in options), ``inf`` when the typo'd side
    gives 0 to an option the clean side does not.

    >>> round(choice_kl([0.5, 0.5], [0.9, 0.1]), 4)
    0.5108
    """
    if clean is None or typo is None or len(clean) != len(typo):
        return math.nan
    p, q = np.asarray(clean, dtype=float), np.asarray(typo, dtype=float)
    keep = p > 0
    if (q[keep] <= 0).any():
        return math.inf
    return float((p[keep] * np.log(p[keep] / q[keep])).sum())


def brier(probabilities: np.ndarray, gold: int) -> float:
    """Multi-class Brier score ``sum_k (p_k - [k == gold])^2``.

    >>> brier(np.array([0.25, 0.75]), 1)
    0.125
    """
    target = np.zeros_like(probabilities)
    target[gold] = 1.0
    return float(((probabilities - target) ** 2).sum())


def _bins(confidence: np.ndarray) -> np.ndarray:
    """The fixed equal-width bin of each confidence, 1.0 in the last bin."""
    return np.clip(np.floor(confidence * BINS).astype(int), 0, BINS - 1)


def ece(confidence: Sequence[float], correct: Sequence[float]) -> float | None:
    """Expected calibration error over :data:`BINS` fixed equal-width bins (None without rows).

    >>> ece([0.9, 0.9, 0.6, 0.65], [1, 0, 1, 1])
    0.3875
    """
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    if c.size == 0:
        return None
    sums = np.bincount(_bins(c), weights=y - c, minlength=BINS)
    return float(np.abs(sums).sum() / c.size)


def _gold_choice(extra: Any) -> int | None:
    if not isinstance(extra, str):
        return None
    golds = json.loads(extra).get("gold_choices") or []
    return int(golds[0]) if golds else None


def _row_readouts(frame: pd.DataFrame, *, normalised: bool) -> pd.DataFrame:
    """Per scored row: confidence, correct and Brier (NaN where the row has no probabilities)."""
    conf, brs, probs = [], [], []
    for logprobs, continuations, extra in zip(
        frame["ll_logprobs"], frame["ll_continuations"], frame["parse_extra"], strict=True
    ):
        p = None
        if logprobs is not None and continuations is not None:
            p = choice_probabilities(list(logprobs), list(continuations), normalised=normalised)
        gold = _gold_choice(extra)
        probs.append(None if p is None else p.tolist())
        if p is None:
            conf.append(math.nan)
            brs.append(math.nan)
            continue
        conf.append(float(p.max()))
        brs.append(brier(p, gold) if gold is not None and gold < p.size else math.nan)
    out = frame[KEYS].astype({"example_id": str, "variant": str})
    out = out.astype({"word_rank": "int64", "draw": "int32"})
    out["confidence"] = conf
    out["correct"] = frame["correct"].astype(float).to_numpy()
    out["brier"] = brs
    out["probabilities"] = probs
    return out


def calibration_pairs(pairs: pd.DataFrame, views: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each typo pair of every log-likelihood view with both rows' confidence, correct, Brier.

    Parameters
    ----------
    pairs : the model's pairs table (:data:`~evalpipe.scoring.names.PAIR_COLUMNS`).
    views : ``{view: scored frame}``; the log-likelihood views carry the ``ll_*`` columns.

    Returns
    -------
    DataFrame
        :data:`PAIR_COLUMNS`, sorted by view then the pairs' order.
    """
    parts = []
    for view in sorted(views):
        method = parse_view(view)[1]
        if method == "generate":
            continue
        frame = views[view]
        if "condition" in frame.columns:
            frame = frame.loc[frame["condition"].fillna(TYPO) == TYPO]
        rows = _row_readouts(frame, normalised=method == "loglikelihood_norm")
        originals = rows.loc[
            rows["variant"] == ORIGINAL,
            ["example_id", "confidence", "correct", "brier", "probabilities"],
        ]
        picked = pairs.loc[(pairs["view"] == view) & (pairs["condition"] == TYPO)]
        keyed = picked[["view", "benchmark", "language", "cluster", *KEYS]]
        keyed = keyed.merge(rows, on=KEYS, how="left", validate="one_to_one")
        keyed = keyed.merge(
            originals, on="example_id", how="left", suffixes=("_perturbed", "_original")
        )
        keyed["choice_kl"] = [
            choice_kl(o, t)
            for o, t in zip(
                keyed["probabilities_original"], keyed["probabilities_perturbed"], strict=True
            )
        ]
        parts.append(keyed)
    if not parts:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    return pd.concat(parts, ignore_index=True)[PAIR_COLUMNS]


def ece_difference_interval(
    conf_clean: np.ndarray,
    correct_clean: np.ndarray,
    conf_typo: np.ndarray,
    correct_typo: np.ndarray,
    clusters: np.ndarray,
    *,
    level: float,
    seed: int,
    samples: int = BOOTSTRAP_SAMPLES,
    basic: bool = True,
) -> tuple[float | None, float | None]:
    """Cluster bootstrap interval of ``ECE(typo'd) - ECE(clean)`` over paired rows.

    Each resample draws the G examples with replacement; a drawn example brings all its pairs
    (both sides), and both ECEs are recomputed on the resample. ``basic``: the basic bootstrap
    interval ``[2 d - q_high, 2 d - q_low]`` (``d`` the estimate), else the percentile one
    ``[q_low, q_high]``. (None, None) with fewer than two examples.
    """
    codes = np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    g = int(codes.max()) + 1 if codes.size else 0
    if g < 2:
        return None, None
    # Per example and bin: the sum of (y - c) on each side, so a resample's ECE is a product.
    cells = codes * BINS
    clean = np.bincount(
        cells + _bins(conf_clean), weights=correct_clean - conf_clean, minlength=g * BINS
    ).reshape(g, BINS)
    typo = np.bincount(
        cells + _bins(conf_typo), weights=correct_typo - conf_typo, minlength=g * BINS
    ).reshape(g, BINS)
    sizes = np.bincount(codes, minlength=g).astype(float)
    rng = np.random.default_rng(seed)
    block = max(1, min(samples, _CELLS // g))
    diffs = []
    for start in range(0, samples, block):
        draws = rng.multinomial(g, np.full(g, 1.0 / g), size=min(block, samples - start))
        draws = draws.astype(float)
        n = draws @ sizes
        diffs.append((np.abs(draws @ typo).sum(1) - np.abs(draws @ clean).sum(1)) / n)
    d = np.concatenate(diffs)
    alpha = 1.0 - level
    low, high = np.quantile(d, [alpha / 2, 1 - alpha / 2])
    if not basic:
        return float(low), float(high)
    n_all = sizes.sum()
    point = (np.abs(typo.sum(0)).sum() - np.abs(clean.sum(0)).sum()) / n_all
    return float(2 * point - high), float(2 * point - low)


def _figures(rows: pd.DataFrame, *, level: float, key: tuple[str, ...]) -> dict[str, Any]:
    conf_o = rows["confidence_original"].to_numpy(float)
    conf_p = rows["confidence_perturbed"].to_numpy(float)
    ok = np.isfinite(conf_o) & np.isfinite(conf_p)
    y_o = rows["correct_original"].to_numpy(float)[ok]
    y_p = rows["correct_perturbed"].to_numpy(float)[ok]
    clusters = rows["cluster"].to_numpy()[ok]
    conf_o, conf_p = conf_o[ok], conf_p[ok]
    b_o = rows["brier_original"].to_numpy(float)[ok]
    b_p = rows["brier_perturbed"].to_numpy(float)[ok]
    ece_o, ece_p = ece(conf_o, y_o), ece(conf_p, y_p)
    low, high = ece_difference_interval(
        conf_o, y_o, conf_p, y_p, clusters, level=level, seed=hashed_seed("calibration", *key)
    )
    brier_ok = np.isfinite(b_o) & np.isfinite(b_p)
    diff = clustered_mean_interval(b_p[brier_ok] - b_o[brier_ok], clusters[brier_ok], level=level)
    kl = rows["choice_kl"].to_numpy(float)[ok]
    kl_ok = np.isfinite(kl)
    kl_mean = bootstrap_t_mean_interval(
        kl[kl_ok], clusters[kl_ok], level=level, seed=hashed_seed("choice_kl", *key)
    )

    def mean(values: np.ndarray) -> float | None:
        return float(values.mean()) if values.size else None

    return {
        "n": int(ok.sum()),
        "n_examples": int(np.unique(clusters).size),
        "n_unscored": int((~ok).sum()),
        "pairs_per_example": float(ok.sum() / np.unique(clusters).size) if ok.any() else None,
        "bins": BINS,
        "accuracy_original": mean(y_o),
        "accuracy_perturbed": mean(y_p),
        "confidence_original": mean(conf_o),
        "confidence_perturbed": mean(conf_p),
        "ece_original": ece_o,
        "ece_perturbed": ece_p,
        "ece_delta": None if ece_o is None or ece_p is None else ece_p - ece_o,
        "ece_ci_low": low,
        "ece_ci_high": high,
        "ece_ci_method": ECE_CI,
        "n_brier": int(brier_ok.sum()),
        "brier_original": mean(b_o[brier_ok]),
        "brier_perturbed": mean(b_p[brier_ok]),
        "brier_delta": diff.mean,
        "brier_ci_low": diff.low,
        "brier_ci_high": diff.high,
        "brier_ci_method": BRIER_CI,
        "choice_kl": kl_mean.mean,
        "choice_kl_ci_low": kl_mean.low,
        "choice_kl_ci_high": kl_mean.high,
        "choice_kl_ci_method": KL_CI,
        "n_choice_kl_infinite": int((~kl_ok).sum()),
    }


def calibration_summary(table: pd.DataFrame, *, level: float) -> dict[str, Any]:
    """The calibration readouts per log-likelihood view.

    Parameters
    ----------
    table : :func:`calibration_pairs`.
    level : confidence level of the intervals.

    Returns
    -------
    dict
        ``{view: figures}``; figures: ``n`` (pairs with probabilities on both sides),
        ``n_examples``, ``n_unscored`` (pairs without them on a side), ``pairs_per_example``,
        ``bins``, accuracy and
        mean confidence per side, ``ece_original, ece_perturbed, ece_delta`` with
        ``ece_ci_low, ece_ci_high, ece_ci_method``, ``n_brier`` (pairs with a gold option),
        ``brier_original, brier_perturbed, brier_delta`` with ``brier_ci_low, brier_ci_high,
        brier_ci_method``, ``choice_kl`` (mean per-pair KL of the choice probabilities, clean
        -> typo'd, nats) with ``choice_kl_ci_low, choice_kl_ci_high, choice_kl_ci_method`` and
        ``n_choice_kl_infinite`` (pairs whose typo'd side gives 0 to an option the clean side
        does not: counted, left out of the mean).
    """
    return {
        str(view): _figures(rows, level=level, key=("view", str(view)))
        for view, rows in table.groupby("view", sort=True)
    }
