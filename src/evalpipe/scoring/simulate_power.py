"""A planted-truth simulator of a paired typo study, to check the power, the minimum detectable
effect and the plans of :mod:`evalpipe.scoring.power` against the test the tables really run.

Design (:class:`PowerDesign`): ``examples`` examples, each answered once on its clean prompt
(correct with probability ``accuracy``) and ``draws`` times with typos (the pairs of one example
share its clean answer and form one cluster). A typo'd answer flips the clean one's correctness
with probability ``c2i / accuracy`` (clean correct) or ``i2c / (1 - accuracy)`` (clean wrong),
where ``c2i = (psi - d) / 2`` and ``i2c = (psi + d) / 2`` give the planted effect ``d`` and
discordance ``psi`` (floored at ``|d|``). With probability ``shared`` an example's draws flip
together (one uniform for all of them), otherwise independently: the clustering the design effect
measures. Every simulated study goes through :func:`evalpipe.scoring.intervals.paired_scores`,
and the test rejects when its p is below ``1 - level`` (the interval then excludes 0).

The uniforms are drawn once per simulation (common random numbers), so power rises with ``|d|``
in every replicate and :func:`simulated_mde` can bisect on it. ``perf/power_check.py`` prints the
comparison over the sizes users run; docs/scoring.md ("Power and the minimum detectable effect")
quotes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalpipe.arms import TYPO
from evalpipe.scoring.intervals import paired_scores
from evalpipe.scoring.power import POWER, mde


@dataclass(frozen=True)
class PowerDesign:
    """One study design: sizes, clean accuracy, discordance and within-example sharing."""

    examples: int
    draws: int
    accuracy: float = 0.6
    discordance: float = 0.1
    shared: float = 0.0
    level: float = 0.95


@dataclass(frozen=True)
class Uniforms:
    """The random numbers of ``sims`` replicates of a design (reused at every effect)."""

    clean: np.ndarray  # (sims, examples)
    together: np.ndarray  # (sims, examples)
    common: np.ndarray  # (sims, examples)
    own: np.ndarray  # (sims, examples, draws)

    @classmethod
    def draw(cls, design: PowerDesign, sims: int, seed: int) -> Uniforms:
        rng = np.random.default_rng(seed)
        shape = (sims, design.examples)
        return cls(
            rng.random(shape),
            rng.random(shape),
            rng.random(shape),
            rng.random((*shape, design.draws)),
        )


@dataclass(frozen=True)
class Rejections:
    """What the simulated tables say at one effect: the share of replicates whose test
    rejected, and the mean design effect and degrees of freedom they printed."""

    power: float
    design_effect: float
    df: float


def outcomes(
    design: PowerDesign, effect: float, uniforms: Uniforms
) -> tuple[np.ndarray, np.ndarray]:
    """Clean and typo'd correctness, arrays of shape (sims, examples, draws), at ``effect``."""
    d = float(effect)
    psi = min(1.0, max(design.discordance, abs(d)))
    acc = design.accuracy
    c2i, i2c = (psi - d) / 2.0, (psi + d) / 2.0
    if c2i > acc + 1e-12 or i2c > 1.0 - acc + 1e-12:
        raise ValueError(f"effect {d} with discordance {psi} is impossible at accuracy {acc}")
    flip_correct = c2i / acc if acc > 0 else 0.0
    flip_wrong = i2c / (1.0 - acc) if acc < 1 else 0.0
    original = uniforms.clean < acc  # (sims, examples)
    together = (uniforms.together < design.shared)[..., None]
    u = np.where(together, uniforms.common[..., None], uniforms.own)
    flipped = u < np.where(original, flip_correct, flip_wrong)[..., None]
    o = np.broadcast_to(original[..., None], flipped.shape)
    return o, o ^ flipped


def simulate(design: PowerDesign, effect: float, uniforms: Uniforms) -> Rejections:
    """Run the tables' paired test on every replicate of ``design`` at the planted ``effect``."""
    o, p = outcomes(design, effect, uniforms)
    sims, g, m = o.shape
    clusters = np.broadcast_to(np.arange(sims * g).reshape(sims, g, 1), o.shape).ravel()
    size = g * m
    groups = [np.arange(s * size, (s + 1) * size) for s in range(sims)]
    scores = paired_scores(
        o.ravel(), p.ravel(), groups, clusters=clusters if m > 1 else None, level=design.level
    )
    alpha = 1.0 - design.level
    finite = [s.df for s in scores if math.isfinite(s.df)]
    return Rejections(
        power=float(np.mean([s.p_value < alpha for s in scores])),
        design_effect=float(np.mean([s.design_effect for s in scores])),
        df=float(np.mean(finite)) if finite else math.inf,
    )


def pilot_pairs(design: PowerDesign, effect: float, *, seed: int = 0) -> pd.DataFrame:
    """One simulated run of ``design`` as a pairs table (the columns ``evalpipe plan`` reads):
    view ``pilot``, one target word, ``draws`` pairs per example."""
    o, p = outcomes(design, effect, Uniforms.draw(design, 1, seed))
    g, m = o.shape[1:]
    return pd.DataFrame(
        {
            "view": "pilot",
            "cluster": np.repeat(np.arange(g), m),
            "word_rank": 1,
            "condition": TYPO,
            "correct_original": o.ravel(),
            "correct_perturbed": p.ravel(),
        }
    )


def simulated_mde(
    design: PowerDesign,
    *,
    sims: int = 400,
    seed: int = 0,
    target_power: float = POWER,
    sign: int = -1,
    bisections: int = 12,
) -> tuple[float, Rejections]:
    """The smallest planted ``|d|`` (of ``sign``: -1 a loss) whose simulated power reaches
    ``target_power``, and the simulated tables at it."""
    uniforms = Uniforms.draw(design, sims, seed)
    limit = design.accuracy if sign < 0 else 1.0 - design.accuracy
    lo, hi = 0.0, limit
    at_hi = simulate(design, sign * hi, uniforms)
    for _ in range(bisections):
        mid = (lo + hi) / 2.0
        result = simulate(design, sign * mid, uniforms)
        if result.power >= target_power:
            hi, at_hi = mid, result
        else:
            lo = mid
    return hi, at_hi


@dataclass(frozen=True)
class MdeCheck:
    """The formula's MDE beside the simulated one for one design."""

    design: PowerDesign
    simulated: float
    formula: float | None
    design_effect: float
    df: float

    @property
    def relative_error(self) -> float:
        if self.formula is None:
            return math.inf
        return abs(self.formula - self.simulated) / self.simulated


def check_mde(design: PowerDesign, *, sims: int = 400, seed: int = 0) -> MdeCheck:
    """Simulated MDE of ``design`` and :func:`evalpipe.scoring.power.mde` fed what its tables
    print at that effect: pairs, the design's discordance, the mean design effect and df."""
    found, tables = simulated_mde(design, sims=sims, seed=seed)
    formula = mde(
        n=design.examples * design.draws,
        discordance=design.discordance,
        design_effect=tables.design_effect,
        df=tables.df,
        level=design.level,
    )
    return MdeCheck(design, found, formula, tables.design_effect, tables.df)


def power_of_plan(design: PowerDesign, effect: float, *, sims: int = 400, seed: int = 0) -> float:
    """Simulated power of ``design`` at the planted ``effect`` (a plan fed back)."""
    return simulate(design, effect, Uniforms.draw(design, sims, seed)).power
