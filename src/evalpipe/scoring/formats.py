"""The format arms' figures (:mod:`evalpipe.benchmarks.formats`): per view and family of
variants, each variant's accuracy, the consistency rate, the worst-case accuracy per instance
and 1 - (max - min) of the accuracies, each with an interval, over the clean prompts of the
examples every variant of the family answered (paired on the example).

A family is the reference (the plain clean prompt, condition ``typo``) plus the variants of one
kind: ``order`` (option orders), ``labels`` (label sets), ``incorrect``. Per example:

- **accuracy** of a variant: its clean answer is correct (a mean of 0/1 per example; Wilson
  interval, one answer per example so nothing to cluster).
- **consistency**: every variant of the family chose the same original option (an unparsed
  answer is never consistent); for ``incorrect``, the option it names is not the one the model
  chose on the reference prompt (its own answer, as the Nejumi leaderboard scores it). Wilson.
- **worst_case**: the example is answered correctly under every variant (HELM's worst case per
  instance). Wilson.
- **spread**: ``1 - (max_v acc_v - min_v acc_v)`` over the family's accuracies, 1 when the format
  moves nothing. Its interval is a percentile bootstrap over examples (all variants of an
  example resampled together, hashed seed), whose coverage :func:`simulate_spread` checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.arms import TYPO, format_variant, original_choice, parse_format_variant
from evalpipe.scoring.intervals import wilson_interval
from evalpipe.scoring.names import ORIGINAL
from evalpipe.seeding import hashed_seed

COLUMNS = (
    "model", "benchmark", "family", "statistic", "variant", "estimate", "ci_low", "ci_high", "n",
)  # fmt: skip
REFERENCE = "reference"  # the variant name of the plain prompt in these tables
ALL = "all"  # the variant of a family-wide statistic
BOOTSTRAP = 2000


@dataclass(frozen=True)
class Answers:
    """One family's clean answers, paired: ``correct[e, v]`` and ``choice[e, v]`` (original
    option, -1 when unparsed) for example e and variant v (the reference first)."""

    family: str
    variants: list[str]
    correct: np.ndarray
    choice: np.ndarray


def family_answers(view: pd.DataFrame, labels: Sequence[str]) -> list[Answers]:
    """The families of one scored view: its clean rows of the typo arm and the format arms,
    examples kept where every variant of the family has an answer."""
    clean = view.loc[view["variant"] == ORIGINAL]
    reference = clean.loc[clean["condition"] == TYPO].drop_duplicates("example_id")
    names = sorted({f for c in clean["condition"].unique() if (f := format_variant(str(c)))})
    families: dict[str, list[str]] = {}
    for name in names:
        families.setdefault(parse_format_variant(name).family, []).append(name)
    out = []
    for family in ("order", "labels", "incorrect"):
        if family not in families:
            continue
        frames = [reference.set_index("example_id")]
        for name in families[family]:
            rows = clean.loc[clean["condition"] == f"format:{name}"].drop_duplicates("example_id")
            frames.append(rows.set_index("example_id"))
        common = sorted(set.intersection(*(set(f.index) for f in frames)))
        variants = [REFERENCE, *families[family]]
        correct = np.zeros((len(common), len(variants)), dtype=bool)
        choice = np.full((len(common), len(variants)), -1, dtype=np.int64)
        for v, (name, frame) in enumerate(zip(variants, frames, strict=True)):
            part = frame.loc[common]
            correct[:, v] = part["correct"].astype(bool).to_numpy()
            variant = None if name == REFERENCE else parse_format_variant(name)
            picks = [original_choice(p, variant=variant, labels=labels) for p in part["prediction"]]
            choice[:, v] = [-1 if c is None else c for c in picks]
        out.append(Answers(family, variants, correct, choice))
    return out


def consistent(answers: Answers) -> np.ndarray:
    """Per example: the family's variants agree (see the module docstring)."""
    c = answers.choice
    if answers.family == "incorrect":
        return (c[:, 1:] >= 0).all(axis=1) & (c[:, 1:] != c[:, [0]]).all(axis=1)
    return (c >= 0).all(axis=1) & (c == c[:, [0]]).all(axis=1)


def spread(correct: np.ndarray) -> float:
    """``1 - (max - min)`` of the variants' accuracies (columns of ``correct``)."""
    acc = correct.mean(axis=0)
    return float(1.0 - (acc.max() - acc.min()))


def spread_interval(
    correct: np.ndarray, *, level: float, seed: int, samples: int = BOOTSTRAP
) -> tuple[float, float]:
    """Interval of :func:`spread` from a bootstrap over examples (each resampled with all its
    variants; ``samples`` resamples, vectorised).

    The lower end is the percentile bootstrap's (``1 -`` the upper quantile of max - min). The
    upper end is not: max - min is biased upwards, so its percentile interval misses a spread of
    exactly 1 (no format effect) every time. The upper end is ``1 - d``, ``d`` the largest
    distance from 0 of any pair's percentile interval of ``acc_v - acc_w`` at level ``1 -
    (1 - level) / pairs`` (Bonferroni; 0 when every pair's interval holds 0), so it reaches 1
    with at least the stated confidence when no variant differs.
    """
    n, k = correct.shape
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(samples, n))
    acc = correct.astype(float)[idx].mean(axis=1)  # samples x variants
    values = 1.0 - (acc.max(axis=1) - acc.min(axis=1))
    alpha = 1.0 - level
    low = float(np.quantile(values, alpha / 2.0))
    pairs = [(v, w) for v in range(k) for w in range(v + 1, k)]
    d = 0.0
    for v, w in pairs:
        diff = acc[:, v] - acc[:, w]
        a = alpha / len(pairs) / 2.0
        lo, hi = float(np.quantile(diff, a)), float(np.quantile(diff, 1.0 - a))
        d = max(d, lo, -hi)
    return low, max(low, 1.0 - d)


def _share(values: Any, level: float) -> tuple[float, float, float]:
    hits = np.asarray(values, dtype=bool)
    n = hits.size
    low, high = wilson_interval(float(hits.sum()), float(n), level=level)
    return float(hits.mean()), float(low), float(high)


def family_rows(answers: Answers, *, level: float, seed: int) -> list[dict[str, Any]]:
    """The table rows of one family (without ``model`` and ``benchmark``)."""
    n = answers.correct.shape[0]
    if n == 0:
        return []
    rows = []
    for v, name in enumerate(answers.variants):
        est, low, high = _share(answers.correct[:, v], level)
        rows.append(("accuracy", name, est, low, high))
    rows.append(("consistency", ALL, *_share(consistent(answers), level)))
    rows.append(("worst_case", ALL, *_share(answers.correct.all(axis=1), level)))
    low, high = spread_interval(answers.correct, level=level, seed=seed)
    rows.append(("spread", ALL, spread(answers.correct), low, high))
    return [
        {
            "family": answers.family,
            "statistic": stat,
            "variant": name,
            "estimate": est,
            "ci_low": low,
            "ci_high": high,
            "n": n,
        }
        for stat, name, est, low, high in rows
    ]


def format_table(
    scored: Mapping[str, pd.DataFrame],
    *,
    model: str,
    labels_of: Callable[[str], Sequence[str] | None],
    level: float,
) -> pd.DataFrame:
    """Every view's format figures (``COLUMNS``; ``benchmark`` is the view's name), in a stable
    order; empty when no view holds a format arm. ``labels_of(view)`` is the benchmark's labels
    (None: not a choice benchmark)."""
    out: list[dict[str, Any]] = []
    for view in sorted(scored):
        frame = scored[view]
        if (
            "condition" not in frame.columns
            or not frame["condition"].astype(str).str.startswith("format:").any()
        ):
            continue
        labels = labels_of(view)
        if not labels:
            continue
        for answers in family_answers(frame, labels):
            seed = hashed_seed("formats", model, view, answers.family)
            for row in family_rows(answers, level=level, seed=seed):
                out.append({"model": model, "benchmark": view, **row})
    table = pd.DataFrame(out, columns=list(COLUMNS))
    table["n"] = table["n"].astype("int64")
    return table


def simulate_spread(
    *,
    examples: int,
    accuracies: Sequence[float],
    level: float,
    reps: int,
    seed: int,
    samples: int = 500,
) -> dict[str, float]:
    """Coverage of the spread interval with a known truth: per example a latent ability ``u``
    ~ N(0, 1); variant v answers correctly when ``u + e_v < t_v`` (``e_v`` ~ N(0, 1)
    independent), ``t_v`` set so that variant v's accuracy is ``accuracies[v]`` (the variants
    correlate through ``u``, as formats of one question do). Truth: ``1 - (max - min)``."""
    from statistics import NormalDist

    rng = np.random.default_rng(seed)
    thresholds = np.array([NormalDist(0, 2**0.5).inv_cdf(a) for a in accuracies])
    truth = 1.0 - (max(accuracies) - min(accuracies))
    covered, estimates = 0, []
    for r in range(reps):
        u = rng.standard_normal((examples, 1))
        correct = (u + rng.standard_normal((examples, len(accuracies)))) < thresholds
        low, high = spread_interval(correct, level=level, seed=seed + r + 1, samples=samples)
        covered += low <= truth <= high
        estimates.append(spread(correct))
    return {
        "truth": truth,
        "coverage": covered / reps,
        "bias": float(np.mean(estimates) - truth),
    }
