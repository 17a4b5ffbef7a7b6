"""Planted-truth studies for the means and ratios the arms report: the perplexity log-ratio (a
clustered mean of skewed per-pair values), the ladder's difference of two models' paired deltas
(rare flips), and the share of the typo loss a defence wins back. ``perf/arm_coverage.py`` runs
them (docs/scoring.md, "Arms' means and ratios"); :mod:`evalpipe.scoring.simulate` holds the
studies of the word and headline intervals.

Every study has ``G`` examples (20, 40, 80, 300). Example g holds ``n_g = min(cap, 1 + floor(s
X))`` target words, X ~ Lomax(tail) (shape 3, s = 2: 1.6 words per example; shape 1.5: a few
examples with 20-60), each with ``draws`` typo draws; the pairs of an example are one cluster.

- **Per-pair means** (:func:`mean_study`), designs of :data:`MEAN_KINDS`:
  ``surprisal``: a typo raises the surprisal of its word's tokens by X ~ Gamma(a, 4) nats per
  occurrence (1 + Poisson(0.3) occurrences), scaled by the example's fragility (log-normal with
  log-sd s, mean 1) and spread over the text's T_g ~ LogNormal(log 60, 0.6) tokens: ``d = f_g sum
  X / T_g``, right-skewed, truth ``E o E X E[1/T]``; a = 1, s = 0.3 (skew set so that the CR2 t
  interval covers about what an independent simulator's realistic surprisal design found,
  0.90-0.93), ``surprisal_extreme`` a = 0.6, s = 0.8 (a stress test); ``skewed_null``: ``u_g + e`` with centred
  log-normal example effects and pair noise, truth 0; ``symmetric``: the same with normal
  effects, truth 0.1; ``informative``: ``0.05 log n_g + u_g + e`` (skewed), so examples with more
  words have larger values and the truth is the pair-weighted ``0.05 E[n log n] / E[n]`` (exact,
  from the distribution of ``n_g``).
- **Ladder** (:func:`ladder_study`): per example an accuracy ``p_g ~ Beta(2.4, 1.6)`` and a
  fragility ``f_g = 2 Beta(0.5, 0.5)``; the reference's clean answer ``o_r ~ Bernoulli(p_g)``,
  the variant's the same (redrawn with probability 0.05). Per (word, draw) each model's answer is
  redrawn from ``p_g`` with probability ``noise`` (the same fresh answer for both), and a correct
  answer turns wrong when ``U < h f_g`` (``h_ref`` for the reference, ``h_var >= h_ref`` for the
  variant; the variant's U is the reference's with probability 0.7, so they mostly flip
  together, and the variant's extra loss comes as rare flips). Truth of
  ``delta_vs_reference``: ``-(h_var - h_ref) E[p]``. :data:`LADDER_KINDS`.
- **Recovered** (:func:`recovered_study`): clean answer per example as above; per pair the
  typo'd and the defended arm each redraw their answer from ``p_g`` with probability ``noise``
  (independently: the defence reruns the model), the typo turns a correct answer wrong when
  ``U < h f_g`` in both arms, and the defence undoes that with probability ``rho``. Truths: the points recovered ``h rho E[p]``, the share ``rho``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MEAN_KINDS = ("surprisal", "surprisal_extreme", "skewed_null", "symmetric", "informative")
SURPRISAL = {  # (sigma of the example's log-normal fragility, Gamma shape of a typo's nats)
    "surprisal": (0.3, 1.0),
    "surprisal_extreme": (0.8, 0.6),
}
LADDER_KINDS = {  # (h_ref, h_var, noise)
    "rare": (0.02, 0.06, 0.02),
    "rare_null": (0.02, 0.02, 0.02),
    "common": (0.10, 0.20, 0.10),
}
RECOVERED_KINDS = {  # (h, rho, noise)
    "rare": (0.10, 0.15, 0.05),
    "common": (0.30, 0.50, 0.10),
}
SIZES = (20, 40, 80, 300)
ACCURACY = 0.6  # E[p_g]: Beta(2.4, 1.6)
CAP = 60


@dataclass(frozen=True)
class Clusters:
    """Words per example: ``min(cap, 1 + floor(scale X))``, X ~ Lomax(tail)."""

    tail: float = 3.0
    scale: float = 2.0
    cap: int = CAP

    def draw(self, rng: np.random.Generator, examples: int) -> np.ndarray:
        words = 1 + np.floor(self.scale * rng.pareto(self.tail, examples)).astype(np.int64)
        return np.minimum(words, self.cap)

    def pmf(self) -> tuple[np.ndarray, np.ndarray]:
        """Values 1..cap of ``n_g`` and their probabilities (exact)."""
        k = np.arange(1, self.cap + 1, dtype=float)
        survival = (1.0 + (k - 1.0) / self.scale) ** -self.tail  # P(n >= k)
        upper = np.append(survival[1:], 0.0)
        return k, survival - upper


MODERATE = Clusters(3.0, 2.0)
HEAVY = Clusters(1.5, 2.0)


@dataclass
class Study:
    """One study's per-pair values (or answers), clusters and truth."""

    clusters: np.ndarray
    values: dict[str, np.ndarray]
    truth: dict[str, float]


def _centred_lognormal(rng: np.random.Generator, size: int, scale: float) -> np.ndarray:
    draws = rng.lognormal(0.0, 1.0, size)
    return scale * (draws - math.exp(0.5)) / math.sqrt((math.e - 1.0) * math.e)


def _pairs(rng: np.random.Generator, examples: int, clusters: Clusters, draws: int) -> np.ndarray:
    words = clusters.draw(rng, examples)
    return np.repeat(np.arange(examples), words * draws)


def mean_truth(kind: str, clusters: Clusters) -> float:
    """The pair-weighted mean of the design (module docstring)."""
    if kind in SURPRISAL:
        return 1.3 * (SURPRISAL[kind][1] * 4.0) * math.exp(-math.log(60.0) + 0.6**2 / 2.0)
    if kind == "skewed_null":
        return 0.0
    if kind == "symmetric":
        return 0.1
    if kind == "informative":
        k, p = clusters.pmf()
        return float(0.05 * (p * k * np.log(k)).sum() / (p * k).sum())
    raise ValueError(f"mean design: expected one of {', '.join(MEAN_KINDS)}, got {kind!r}")


def mean_study(
    kind: str, rng: np.random.Generator, *, examples: int, clusters: Clusters, draws: int
) -> Study:
    """One study of per-pair values ``d`` (module docstring)."""
    cl = _pairs(rng, examples, clusters, draws)
    n = cl.size
    if kind in SURPRISAL:
        sigma, shape = SURPRISAL[kind]
        tokens = rng.lognormal(math.log(60.0), 0.6, examples)
        fragility = rng.lognormal(-sigma * sigma / 2.0, sigma, examples)  # mean 1
        occurrences = 1 + rng.poisson(0.3, n)
        extra = rng.gamma(shape * occurrences, 4.0)  # a sum of Gamma(shape, 4) per occurrence
        values = fragility[cl] * extra / tokens[cl]
    elif kind in ("skewed_null", "informative"):
        values = _centred_lognormal(rng, examples, 0.3)[cl] + _centred_lognormal(rng, n, 0.2)
        if kind == "informative":
            words = np.bincount(cl, minlength=examples) / draws
            values = values + 0.05 * np.log(words)[cl]
    elif kind == "symmetric":
        values = 0.1 + rng.normal(0.0, 0.3, examples)[cl] + rng.normal(0.0, 0.2, n)
    else:
        raise ValueError(f"mean design: expected one of {', '.join(MEAN_KINDS)}, got {kind!r}")
    return Study(cl, {"d": values}, {"d": mean_truth(kind, clusters)})


def _examples(rng: np.random.Generator, examples: int) -> tuple[np.ndarray, np.ndarray]:
    p = rng.beta(ACCURACY * 4.0, (1.0 - ACCURACY) * 4.0, examples)
    fragility = 2.0 * rng.beta(0.5, 0.5, examples)
    return p, fragility


def ladder_study(
    kind: str, rng: np.random.Generator, *, examples: int, clusters: Clusters, draws: int
) -> Study:
    """One ladder comparison: per pair the four answers (module docstring)."""
    h_ref, h_var, noise = LADDER_KINDS[kind]
    cl = _pairs(rng, examples, clusters, draws)
    n = cl.size
    p, fragility = _examples(rng, examples)
    o_ref = rng.random(examples) < p
    o_var = np.where(rng.random(examples) < 0.05, rng.random(examples) < p, o_ref)
    fresh = rng.random(n) < p[cl]
    a_ref = np.where(rng.random(n) < noise, fresh, o_ref[cl])
    a_var = np.where(rng.random(n) < noise, fresh, o_var[cl])
    u = rng.random(n)
    u_var = np.where(rng.random(n) < 0.7, u, rng.random(n))
    p_ref = a_ref & ~(u < h_ref * fragility[cl])
    p_var = a_var & ~(u_var < h_var * fragility[cl])
    return Study(
        cl,
        {"o_ref": o_ref[cl], "p_ref": p_ref, "o_var": o_var[cl], "p_var": p_var},
        {"delta_vs_reference": -(h_var - h_ref) * ACCURACY},
    )


def recovered_study(
    kind: str, rng: np.random.Generator, *, examples: int, clusters: Clusters, draws: int
) -> Study:
    """One defence arm: per pair the clean, typo'd and defended answers (module docstring)."""
    h, rho, noise = RECOVERED_KINDS[kind]
    cl = _pairs(rng, examples, clusters, draws)
    n = cl.size
    p, fragility = _examples(rng, examples)
    clean = rng.random(examples) < p
    fresh = rng.random(n) < p[cl]
    a = np.where(rng.random(n) < noise, fresh, clean[cl])
    a_def = np.where(rng.random(n) < noise, rng.random(n) < p[cl], clean[cl])
    hit = rng.random(n) < h * fragility[cl]
    typo = a & ~hit
    defended = a_def & ~(hit & (rng.random(n) >= rho))
    return Study(
        cl,
        {"clean": clean[cl], "typo": typo, "defended": defended},
        {"points": h * rho * ACCURACY, "share": rho, "loss": h * ACCURACY},
    )
