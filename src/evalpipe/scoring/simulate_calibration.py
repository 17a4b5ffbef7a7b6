"""Planted-truth studies for the calibration readouts (:mod:`evalpipe.scoring.calibration`):
``perf/calibration_coverage.py`` runs them (docs/scoring-studies.md, "Calibration under typos").

Each study has G examples with ``options`` choices. Example g has logits ``z_g ~ N(0, scale^2)``
per option; the model's clean probabilities are ``p = softmax(z_g)`` and the gold option is drawn
from ``q = softmax(temperature * z_g)`` (temperature > 1: the model is under-confident, < 1:
over-confident). Each of its ``draws`` typo'd prompts has logits ``shrink * z_g + noise * e``
(``e ~ N(0, 1)`` per option: a typo blurs the model's reading) and the same gold, so the pair
shares the example's truth. Confidence is ``max p``, correct is ``gold == argmax p``.

Truths (the estimands at infinitely many examples, with the fixed bins of
:func:`evalpipe.scoring.calibration.ece`): ``ECE = sum_b P(b) |E[q_argmax | b] - E[c | b]|`` and
``Brier = E[sum_k p_k^2 - 2 sum_k q_k p_k + 1]``, per side, and the choice KL ``E[KL(p || p')]``
of the clean and the typo'd probabilities, computed by :func:`truth` from
expected rather than drawn correctness on a large sample of examples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalpipe.scoring.calibration import BINS

KINDS = {  # (temperature, shrink, noise): clean calibration and what a typo does
    "overconfident_blur": (0.6, 0.7, 0.8),
    "calibrated_blur": (1.0, 0.8, 0.6),
    "underconfident_shift": (1.6, 0.5, 0.5),
}
SIZES = (40, 80, 300, 1000)
OPTIONS = 4
SCALE = 1.5


@dataclass(frozen=True)
class CalibrationStudy:
    """One simulated model: per pair both sides' confidence, correct and Brier."""

    clusters: np.ndarray
    conf_clean: np.ndarray
    correct_clean: np.ndarray
    brier_clean: np.ndarray
    conf_typo: np.ndarray
    correct_typo: np.ndarray
    brier_typo: np.ndarray
    kl: np.ndarray  # KL(clean || typo'd) of the pair's choice probabilities


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _side(p: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = np.arange(p.shape[0])
    chosen = p.argmax(axis=1)
    brier = (p**2).sum(axis=1) - 2 * p[rows, gold] + 1
    return p.max(axis=1), (chosen == gold).astype(float), brier


def _logits(kind: str, rng: np.random.Generator, examples: int, draws: int):
    temperature, shrink, noise = KINDS[kind]
    z = rng.normal(0.0, SCALE, size=(examples, OPTIONS))
    typo = shrink * z[:, None, :] + noise * rng.normal(size=(examples, draws, OPTIONS))
    return z, typo.reshape(examples * draws, OPTIONS), _softmax(temperature * z)


def calibration_study(
    kind: str, rng: np.random.Generator, *, examples: int, draws: int
) -> CalibrationStudy:
    """One study of :data:`KINDS` ``kind``: ``examples`` examples, ``draws`` typo pairs each."""
    z, typo, q = _logits(kind, rng, examples, draws)
    cum = q.cumsum(axis=1)
    gold = np.minimum((rng.random((examples, 1)) > cum).sum(axis=1), OPTIONS - 1)
    clusters = np.repeat(np.arange(examples), draws)
    p = _softmax(z)
    conf_c, correct_c, brier_c = (np.repeat(v, draws) for v in _side(p, gold))
    conf_t, correct_t, brier_t = _side(_softmax(typo), gold[clusters])
    return CalibrationStudy(
        clusters=clusters,
        conf_clean=conf_c,
        correct_clean=correct_c,
        brier_clean=brier_c,
        conf_typo=conf_t,
        correct_typo=correct_t,
        brier_typo=brier_t,
        kl=_kl(p[clusters], _softmax(typo)),
    )


def _kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return (p * np.log(p / q)).sum(axis=1)


def _expected(p: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    conf, chosen = p.max(axis=1), p.argmax(axis=1)
    hit = q[np.arange(p.shape[0]), chosen]
    bins = np.clip(np.floor(conf * BINS).astype(int), 0, BINS - 1)
    gap = np.bincount(bins, weights=hit - conf, minlength=BINS)
    brier = (p**2).sum(axis=1) - 2 * (q * p).sum(axis=1) + 1
    return float(np.abs(gap).sum() / p.shape[0]), float(brier.mean())


def truth(kind: str, *, examples: int = 400_000, seed: int = 0) -> dict[str, float]:
    """``ece_clean, ece_typo, brier_clean, brier_typo`` and the two deltas of ``kind``."""
    rng = np.random.default_rng(seed)
    z, typo, q = _logits(kind, rng, examples, 1)
    ece_c, brier_c = _expected(_softmax(z), q)
    ece_t, brier_t = _expected(_softmax(typo), q)
    return {
        "choice_kl": float(_kl(_softmax(z), _softmax(typo)).mean()),
        "ece_clean": ece_c,
        "ece_typo": ece_t,
        "ece_delta": ece_t - ece_c,
        "brier_clean": brier_c,
        "brier_typo": brier_t,
        "brier_delta": brier_t - brier_c,
    }
