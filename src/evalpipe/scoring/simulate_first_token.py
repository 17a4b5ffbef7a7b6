"""Planted-truth studies for the first-token KL (:mod:`evalpipe.scoring.first_token_kl`):
``perf/first_token_kl_coverage.py`` runs them (docs/scoring-studies.md, "First-token KL").

Each study has G examples over a vocabulary of :data:`VOCAB` first tokens. Example g has clean
logits ``z_g ~ N(0, SCALE^2)`` per token and a shift ``a_g ~ N(0, SHIFT^2)`` per token that every
typo of that example shares (the pairs of one example are correlated, as real ones are); each of
its ``draws`` typo'd prompts has logits ``z_g + a_g + NOISE * e`` (``e ~ N(0, 1)`` per token).
The backend's answer is each side's top ``k`` tokens with their log-softmax values; the per-pair
figure is :func:`~evalpipe.scoring.first_token_kl.first_token_kl` of the two top-k lists. The
truth is its expectation, the mean over :data:`TRUTH_EXAMPLES` examples' pairs (:func:`truth`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalpipe.scoring.first_token_kl import first_token_kl

VOCAB = 40
SCALE = 2.0
SHIFT = 0.8
NOISE = 0.5
SIZES = (40, 80, 300)
TRUTH_EXAMPLES = 20_000


@dataclass(frozen=True)
class FirstTokenStudy:
    """One simulated model: per pair its example and first-token KL."""

    clusters: np.ndarray
    kl: np.ndarray


def _top(logits: np.ndarray, k: int) -> list[tuple[str, float]]:
    logp = logits - logits.max()
    logp = logp - np.log(np.exp(logp).sum())
    order = np.argsort(-logp, kind="stable")[:k]
    return [(f"t{int(i)}", float(logp[i])) for i in order]


def first_token_study(rng: np.random.Generator, *, examples: int, draws: int, k: int):
    """One study of ``examples`` examples with ``draws`` typo'd prompts each, top ``k``."""
    clusters, kls = [], []
    for g in range(examples):
        z = rng.normal(0.0, SCALE, VOCAB)
        shift = rng.normal(0.0, SHIFT, VOCAB)
        clean = _top(z, k)
        for _ in range(draws):
            typo = _top(z + shift + rng.normal(0.0, NOISE, VOCAB), k)
            clusters.append(g)
            kls.append(first_token_kl(clean, typo))
    return FirstTokenStudy(np.asarray(clusters), np.asarray(kls, dtype=float))


def truth(k: int, *, seed: int = 0, examples: int = TRUTH_EXAMPLES) -> float:
    """The expected per-pair first-token KL at top ``k`` (one draw per example suffices: the
    expectation does not depend on how many pairs share an example)."""
    study = first_token_study(np.random.default_rng(seed), examples=examples, draws=1, k=k)
    return float(study.kl.mean())
