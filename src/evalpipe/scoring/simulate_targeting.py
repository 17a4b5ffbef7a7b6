"""Simulated targeting studies with a known truth, for the coverage of the attribution-vs-random
gap (paired Tango interval) and the restoration rates (Wilson) of
:mod:`evalpipe.scoring.targeting` (``perf/targeting_coverage.py`` prints the table;
``tests/test_targeting_coverage.py`` checks a small case).

Each example has ``n`` eligible words (uniform in ``words``); each word is *critical* with
probability ``critical`` (a typo in any critical word breaks the answer, the clean answer is
right with probability ``clean_right``). The occlusion ranking sees each word's criticality
through noise (``noise``: the importance is the indicator plus a normal draw of that scale), so
the targeted rows hit critical words more often than the random rows, by an amount the noise
sets. The truth of each figure is its expectation over examples, computed from ``truth_examples``
simulated examples of the same model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalpipe.arms import ORIGINAL, TYPO, count_variant, restored, targeted


@dataclass(frozen=True)
class TargetingModel:
    """The simulated model's settings (see the module docstring)."""

    words: tuple[int, int] = (8, 30)
    critical: float = 0.1
    clean_right: float = 0.8
    noise: float = 0.5
    k: int = 4
    restore: tuple[int, ...] = (1, 2, 3)


def _example(rng: np.random.Generator, model: TargetingModel) -> dict:
    n = int(rng.integers(model.words[0], model.words[1] + 1))
    critical = rng.random(n) < model.critical
    right = bool(rng.random() < model.clean_right)
    importance = critical + model.noise * rng.standard_normal(n)
    order = rng.permutation(n)  # the random order
    by_importance = np.argsort(-importance, kind="stable")
    return {"critical": critical, "right": right, "order": order, "rank": by_importance}


def _correct(ex: dict, edited: np.ndarray) -> bool:
    return ex["right"] and not ex["critical"][edited].any()


def simulate_pairs(rng: np.random.Generator, examples: int, model: TargetingModel) -> pd.DataFrame:
    """A pairs table (the columns :func:`evalpipe.scoring.targeting.targeting_tables` reads) of
    ``examples`` simulated examples."""
    rows = []
    k = model.k
    for i in range(examples):
        ex = _example(rng, model)
        base = dict(view="sim", method="generate", example_id=str(i), draw=0,
                    correct_original=ex["right"])  # fmt: skip
        random_k = ex["order"][:k]
        rows.append({**base, "condition": TYPO, "variant": count_variant(k),
                     "correct_perturbed": _correct(ex, random_k)})  # fmt: skip
        rows.append({**base, "condition": targeted("most"), "variant": count_variant(k),
                     "correct_perturbed": _correct(ex, ex["rank"][:k])})  # fmt: skip
        position = {int(w): j for j, w in enumerate(ex["rank"])}
        by_rank = sorted(random_k.tolist(), key=lambda w: position[w])
        for r in model.restore:
            kept = {
                "most": by_rank[r:],
                "random": random_k[: k - r].tolist(),
                "least": by_rank[: k - r],
            }
            for how, words in kept.items():
                rows.append({**base, "condition": restored(how, r),
                             "variant": count_variant(k - r),
                             "correct_perturbed": _correct(ex, np.asarray(words, dtype=int))})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["correct_original"] = frame["correct_original"].astype(bool)
    frame["correct_perturbed"] = frame["correct_perturbed"].astype(bool)
    assert ORIGINAL not in set(frame["variant"])  # pairs only: the clean rows are folded in
    return frame


def truths(model: TargetingModel, *, truth_examples: int = 40_000, seed: int = 0) -> dict:
    """The expected gap (targeted minus random accuracy) and restoration rates of ``model``:
    ``{"gap": g, ("restore", how, r): rate}``."""
    rng = np.random.default_rng(seed)
    pairs = simulate_pairs(rng, truth_examples, model)
    random_k = pairs.loc[pairs["condition"] == TYPO].set_index("example_id")
    most = pairs.loc[pairs["condition"] == targeted("most")].set_index("example_id")
    out: dict = {
        "gap": float(most["correct_perturbed"].mean() - random_k["correct_perturbed"].mean())
    }
    broken = random_k.index[random_k["correct_original"] & ~random_k["correct_perturbed"]]
    for r in model.restore:
        for how in ("most", "random", "least"):
            arm = pairs.loc[pairs["condition"] == restored(how, r)].set_index("example_id")
            out[("restore", how, r)] = float(arm.loc[broken, "correct_perturbed"].mean())
    return out
