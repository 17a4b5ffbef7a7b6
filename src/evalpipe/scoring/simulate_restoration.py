"""Planted-truth studies of the restoration rate's interval (:mod:`evalpipe.scoring.restoration`).

Each study has ``G`` examples (20, 40, 80, 300); example g holds ``n_g`` eligible pairs (its
typo-changed draws: :class:`evalpipe.scoring.simulate_arms.Clusters`, moderate or heavy-tailed,
times the typo draws K). Example g restores with propensity ``p_g ~ Beta(rho c, (1 - rho) c)``
(``c`` the concentration: small c, examples restore all-or-nothing; large, pairs nearly
independent); each pair is restored when ``U < p_g`` and its answer is extractable (an
unextractable answer, probability ``u``, is a failure). Truth: ``rho (1 - u)`` (the
pair-weighted share, ``n_g`` independent of ``p_g``). :data:`KINDS` spans a mid rate, the
follow-up's headline (76%), and a rate near 1 (GSM8K's 95%).
"""

from __future__ import annotations

import numpy as np

from evalpipe.scoring.simulate_arms import Clusters

KINDS = {  # (rho, concentration, u)
    "mid": (0.5, 2.0, 0.05),
    "headline": (0.8, 2.0, 0.05),
    "near_one": (0.99, 4.0, 0.02),
    "independent": (0.8, 200.0, 0.05),
}


def restoration_study(
    kind: str, rng: np.random.Generator, *, examples: int, clusters: Clusters, draws: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """One study: per pair restored (0/1) and its example, and the truth."""
    rho, concentration, unextractable = KINDS[kind]
    pairs = np.repeat(np.arange(examples), clusters.draw(rng, examples) * draws)
    p = rng.beta(rho * concentration, (1.0 - rho) * concentration, examples)
    restored = (rng.random(pairs.size) < p[pairs]) & (rng.random(pairs.size) >= unextractable)
    return restored.astype(float), pairs, rho * (1.0 - unextractable)
