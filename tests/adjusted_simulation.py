"""A planted-effect generator of impact pairs, for the adjusted operation and script effects.

Every example of every benchmark holds a random subset of the words; each (example, word) pair
gets one kind of typo drawn from the word's own mix of kinds (so kinds and words are associated,
as in real data where short words get different typos than long ones). An originally correct
example flips to wrong with probability ``noise + fragility * (word_harm + kind_harm)``; an
originally wrong one flips to right with probability ``noise``. The fragility (mean 1) is shared
by all the words of an example, so one example's pairs are correlated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

KINDS = ("replace", "insert", "delete", "mixed")


def simulate_pairs(
    seed: int,
    *,
    examples: Sequence[int] = (300, 120, 40),
    words: int = 60,
    harmful_words: int = 8,
    word_harm: float = 0.35,
    kind_harm: Mapping[str, float] | None = None,
    kinds: Sequence[str] = KINDS,
    hit_rate: float = 0.15,
    noise: float = 0.02,
    second_typo_harm: float = 0.0,
    fragility_tilt: float = 0.0,
    draws: int = 1,
    hit_spread: float = 0.0,
    model: str = "m",
    language: str = "english",
) -> pd.DataFrame:
    """Pairs with the pairs table's columns the impact tables read (``op`` holds the kind).

    Parameters
    ----------
    seed : random seed.
    examples : examples per benchmark (unequal sizes).
    words : target words; the first ``harmful_words`` cost ``word_harm`` each.
    word_harm : flip probability a harmful word adds on correct examples.
    kind_harm : extra flip probability per kind (the planted operation effect); none by default.
    kinds : the kinds of typo.
    hit_rate : probability that a word occurs in an example.
    noise : symmetric flip probability of every pair.
    second_typo_harm : extra flip probability of a pair with two typos; ``mixed`` pairs always
        have two (two kinds), the others one or two at random.
    fragility_tilt : how much more often the first kind is drawn on fragile examples: its
        probability gains ``fragility_tilt * (fragility - 1)`` (clipped to [0, 1]), the other
        kinds share the rest in their proportions. 0: kinds independent of the example.
    draws : typo draws per (example, word): each is a pair of its own (kind and flip drawn
        anew), as with ``perturb.samples_per_word`` > 1.
    hit_spread : standard deviation of a log-normal factor on each example's hit rate (mean 1):
        heavy-tailed counts of words per example. 0: every example has ``hit_rate``.
    """
    rng = np.random.default_rng(seed)
    typo_rng = np.random.default_rng([seed, 1])
    kind_harm = dict(kind_harm or {})
    harm = np.zeros(words)
    harm[:harmful_words] = word_harm
    # Harmful words lean to the first kind, the others to the last: a marginal row of the first
    # kind collects more of the harmful words' pairs.
    mix = rng.dirichlet(np.ones(len(kinds)) * 2.0, size=words)
    lean = np.zeros(len(kinds))
    lean[0] = 1.0
    mix[:harmful_words] = 0.5 * mix[:harmful_words] + 0.5 * lean
    tail = np.zeros(len(kinds))
    tail[-1] = 1.0
    mix[harmful_words:] = 0.7 * mix[harmful_words:] + 0.3 * tail
    extra = np.array([kind_harm.get(k, 0.0) for k in kinds])
    frames = []
    for b, n in enumerate(examples):
        base = rng.beta(3.0, 2.0, size=n)
        correct = rng.random(n) < base
        fragility = rng.gamma(2.0, 0.5, size=n)
        spread = np.ones(n)
        if hit_spread:
            z = np.random.default_rng([seed, 2, b]).normal(size=n)
            spread = np.exp(hit_spread * z - hit_spread**2 / 2.0)
        hits = rng.random((n, words)) < hit_rate * spread[:, None]
        ex, w = np.nonzero(hits)
        if draws > 1:
            ex, w = np.repeat(ex, draws), np.repeat(w, draws)
        if fragility_tilt:
            first = np.clip(mix[w, 0] + fragility_tilt * (fragility[ex] - 1.0), 0.0, 1.0)
            rest = mix[w, 1:] / mix[w, 1:].sum(axis=1, keepdims=True) * (1.0 - first)[:, None]
            probs = np.column_stack([first, rest])
            kind = (rng.random(ex.size)[:, None] > probs.cumsum(axis=1)).sum(axis=1)
            kind = np.minimum(kind, len(kinds) - 1).astype(np.int64)
        else:
            kind = np.array([rng.choice(len(kinds), p=mix[j]) for j in w], dtype=np.int64)
        typos = np.where(
            np.asarray(kinds)[kind] == "mixed", 2, 1 + (typo_rng.random(ex.size) < 0.5)
        ).astype(np.int64)
        added = extra[kind] + second_typo_harm * (typos - 1)
        p_c2i = np.clip(noise + fragility[ex] * (harm[w] + added), 0.0, 1.0)
        flip = np.where(correct[ex], rng.random(ex.size) < p_c2i, rng.random(ex.size) < noise)
        frames.append(
            pd.DataFrame(
                {
                    "model": model,
                    "language": language,
                    "benchmark": f"bench{b}",
                    "example_id": [f"e{i:04d}" for i in ex],
                    "cluster": b * 1_000_000 + ex,  # the example, as cluster_codes numbers it
                    "variant": [f"w{j}" for j in w],
                    "word_rank": w + 1,
                    "occurrences": typos,
                    "perturbed_occurrences": typos,
                    "correct_original": correct[ex],
                    "correct_perturbed": correct[ex] ^ flip,
                    "parse_status_perturbed": "strict",
                    "op": np.asarray(kinds)[kind],
                    "script": None,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
