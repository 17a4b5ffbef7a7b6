"""A second planted-truth generator for the perplexity ratio and the headline delta, built apart
from :mod:`evalpipe.scoring.simulate_arms` (its own distributions and its own link between an
example's length and its number of target words), so an interval is not tuned to one generator.
``perf/skew_coverage.py`` runs it (docs/scoring.md, "Arms' means and ratios").

Every study has ``G`` examples; example g holds ``n_g = min(cap, Z)`` target words, Z ~ Zipf(a)
(``a`` 3: realistic, mostly 1-2 words; ``a`` 2.2: heavy, a few examples with 20-50), each with
``draws`` typo draws; the pairs of an example are one cluster.

- **Perplexity log-ratio** (:func:`perplexity_study`): the example's text has ``T_g = 30 n_g^0.7
  L_g`` tokens (L_g ~ LogNormal(0, 0.5): longer texts hold more target words, so examples with
  many pairs have small log-ratios), a fragility ``s_g ~ Gamma(1.5, 1/1.5)`` (mean 1); a typo on
  word j costs ``6 s_g W_j V_jk`` nats (``W_j ~ LogNormal`` with log-sd ``sigma_w``, shared by
  the word's draws; ``V_jk ~ LogNormal(0.5)``; both of mean 1) and sometimes makes the text more
  likely (``- E_jk``, E ~ Exponential(0.5)); per pair ``d = (6 s_g W_j V_jk - E_jk) / T_g``.
  Truth, pair-weighted: ``5.5 E[1/L] E[n^0.3] / (30 E[n])``, exact from the pmf of ``n_g``.
- **Rare flips** (:func:`flips_study`): per example a difficulty ``b_g ~ N(0, 1.2)``, accuracy
  ``p_g = logistic(1 - b_g)``, a clean answer ``o_g ~ Bernoulli(p_g)`` and a fragility ``f_g ~
  Gamma(0.5, 2)`` (mean 1, most examples robust, a few fragile); per pair a correct answer
  turns wrong with probability ``min(1, h f_g)`` and a wrong one right with probability
  ``h_back``. Truth: ``-E[p] E[min(1, h f)] + (1 - E[p]) h_back`` (:func:`flips_truth`; n_g is
  independent of the rest, so the pair-weighted truth is the example-weighted one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

SIZES = (20, 40, 80, 300)
CAP = 50
WORDS = {"realistic": 3.0, "heavy": 2.2}  # Zipf exponent of words per example
SKEW = {"realistic": 0.8, "strong": 1.2}  # log-sd of a word's typo cost
FLIPS = {"rare": (0.03, 0.005), "common": (0.15, 0.02)}  # (h, h_back)


@dataclass(frozen=True)
class SkewStudy:
    """One study: cluster code per pair, the per-pair values and the truth."""

    clusters: np.ndarray
    values: dict[str, np.ndarray]
    truth: float


def words_pmf(a: float, cap: int = CAP) -> tuple[np.ndarray, np.ndarray]:
    """Values 1..cap of ``n_g`` and their probabilities (Zipf(a), the tail folded onto cap)."""
    k = np.arange(1, cap + 1, dtype=float)
    p = k**-a / special.zeta(a)
    p[-1] = special.zeta(a, cap) / special.zeta(a)  # P(Z >= cap)
    return k, p


def _words(rng: np.random.Generator, examples: int, a: float) -> np.ndarray:
    return np.minimum(rng.zipf(a, examples), CAP)


def perplexity_truth(words: str) -> float:
    """The pair-weighted mean log-ratio of :func:`perplexity_study` (module docstring)."""
    k, p = words_pmf(WORDS[words])
    return 5.5 * math.exp(0.125) * float((p * k**0.3).sum()) / (30.0 * float((p * k).sum()))


def perplexity_study(
    rng: np.random.Generator, *, examples: int, draws: int, words: str, skew: str
) -> SkewStudy:
    """Per-pair log-ratios ``d`` of one study (module docstring)."""
    n_g = _words(rng, examples, WORDS[words])
    tokens = 30.0 * n_g**0.7 * rng.lognormal(0.0, 0.5, examples)
    fragility = rng.gamma(1.5, 1.0 / 1.5, examples)
    sigma = SKEW[skew]
    word_ex = np.repeat(np.arange(examples), n_g)
    cost = rng.lognormal(-sigma * sigma / 2.0, sigma, word_ex.size)
    cl = np.repeat(word_ex, draws)
    n = cl.size
    per_draw = rng.lognormal(-0.125, 0.5, n)
    d = (6.0 * fragility[cl] * np.repeat(cost, draws) * per_draw - rng.exponential(0.5, n)) / (
        tokens[cl]
    )
    return SkewStudy(cl, {"d": d}, perplexity_truth(words))


def flips_truth(kind: str) -> float:
    """``E[acc_typo - acc_clean]`` of :func:`flips_study`: ``-E[p] E[min(1, h f)] + (1 - E[p])
    h_back``, by Gauss-Hermite quadrature over the difficulty and the gamma cdf for the cap."""
    h, back = FLIPS[kind]
    x, w = np.polynomial.hermite_e.hermegauss(80)
    accuracy = float((w / w.sum() * (1.0 / (1.0 + np.exp(-(1.0 - 1.2 * x))))).sum())
    top = 1.0 / h  # f above this always flips
    partial = stats.gamma.cdf(top, 1.5, scale=2.0) * 0.5 * 2.0  # E[f; f < top] = k th cdf_{k+1}
    flip = h * partial + stats.gamma.sf(top, 0.5, scale=2.0)
    return -accuracy * flip + (1.0 - accuracy) * back


def flips_study(
    rng: np.random.Generator, *, examples: int, draws: int, words: str, kind: str
) -> SkewStudy:
    """Clean and typo'd correctness per pair (module docstring)."""
    h, back = FLIPS[kind]
    n_g = _words(rng, examples, WORDS[words])
    p = 1.0 / (1.0 + np.exp(-(1.0 - rng.normal(0.0, 1.2, examples))))
    clean = rng.random(examples) < p
    fragility = rng.gamma(0.5, 2.0, examples)
    cl = np.repeat(np.arange(examples), n_g * draws)
    u = rng.random(cl.size)
    typo = np.where(clean[cl], u >= np.minimum(1.0, h * fragility[cl]), u < back)
    return SkewStudy(cl, {"clean": clean[cl], "typo": typo}, flips_truth(kind))
