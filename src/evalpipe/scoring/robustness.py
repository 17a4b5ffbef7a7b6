"""Paired robustness statistics: original vs perturbed answers on the same examples.

For a target word, the pairs are the examples in which at least one typo fired (the perturb stage
writes a row only for those), each compared with the same example's original row
(:func:`evalpipe.scoring.pairing.pair_rows`). Per benchmark all (word, example) pairs are pooled; an
example then appears once per word that hit it, and the pooled interval and McNemar p account for
that through the design effect of the example clusters (:mod:`evalpipe.scoring.intervals`).

Definitions (REFERENCE.md §2):

- ``delta = accuracy_perturbed - accuracy_original`` (negative: the typos hurt);
- ``pdr = 1 - accuracy_perturbed / accuracy_original`` (PromptBench; None when accuracy_original
  is 0; negative when the typos help);
- ``flip_c2i`` / ``flip_i2c``: share of pairs that went correct -> incorrect / incorrect -> correct;
- ``mcnemar_p``: the p of the test the interval inverts: McNemar's score test (Tango's statistic
  at delta = 0, ``(b - c) / sqrt(b + c)``) on the counts divided by the design effect, normal
  reference for independent pairs, Student t on the clusters' degrees of freedom otherwise
  (:func:`evalpipe.scoring.intervals.paired_score`); 1.0 with no discordant pairs. The interval
  excludes 0 exactly when ``mcnemar_p < 1 - level``;
- ``mcnemar_exact_p``: the exact two-sided McNemar test, a binomial test of the discordant pairs
  against p = 0.5 (``scipy.stats.binomtest``), on the counts divided by the design effect
  (rounded); more conservative, so it can exceed 0.05 beside an interval that excludes 0;
- ``p_holm`` / ``p_bh`` (per-word table): ``mcnemar_p`` adjusted over the benchmark's words that
  can reach significance (Tarone's screening), Holm and Benjamini-Hochberg (Gilbert)
  (:mod:`evalpipe.scoring.multiple_testing`);
- ``ci_low, ci_high``: Tango's score interval of delta
  (:func:`evalpipe.scoring.intervals.paired_interval`), widened by the design effect of the example clusters; ``ci_method`` names it, ``design_effect``
  gives the factor (1: independent pairs);
- ``per_occurrence_impact`` (upstream): ``(acc_base - acc_merged) / perturbed_occurrences``, where
  acc_base is the accuracy of all original rows and acc_merged the same with the perturbed answers
  substituted for the examples this word perturbed (the others keep their original answers).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.errors import InputError
from evalpipe.scoring.intervals import (
    DEFAULT_METHOD,
    method_label,
    minimum_attainable_p,
    paired_score,
)
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
from evalpipe.scoring.pairing import pair_rows
from evalpipe.scoring.scorer import ORIGINAL, check_columns

RATE_BINS: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, float("inf"))


def pdr(accuracy_original: float | None, accuracy_perturbed: float | None) -> float | None:
    """Performance Drop Rate ``1 - acc_perturbed / acc_original``; None when undefined.

    >>> pdr(0.8, 0.4)
    0.5
    >>> pdr(0.0, 0.5) is None
    True
    """
    if accuracy_original is None or accuracy_perturbed is None or accuracy_original == 0:
        return None
    return 1.0 - accuracy_perturbed / accuracy_original


def mcnemar_exact(n_c2i: int, n_i2c: int) -> float:
    """Exact two-sided McNemar p from the discordant counts; 1.0 when there are none.

    >>> round(mcnemar_exact(8, 1), 4)
    0.0391
    """
    discordant = int(n_c2i) + int(n_i2c)
    if discordant == 0:
        return 1.0
    from scipy.stats import binomtest  # SciPy takes a second to import: only when needed

    return float(binomtest(int(n_c2i), discordant, 0.5, alternative="two-sided").pvalue)


def clustered_mcnemar(n_c2i: int, n_i2c: int, deff: float) -> float:
    """Exact McNemar p on the discordant counts divided by the design effect (rounded).

    Clustered pairs carry less information than their count; dividing by the design effect is the
    Rao-Scott correction of the counts. With ``deff`` 1 this is :func:`mcnemar_exact`.

    >>> mcnemar_clustered = clustered_mcnemar(16, 4, 2.0)
    >>> mcnemar_clustered == mcnemar_exact(8, 2)
    True
    """
    if deff <= 1.0:
        return mcnemar_exact(n_c2i, n_i2c)
    return mcnemar_exact(round(n_c2i / deff), round(n_i2c / deff))


def bootstrap_delta_ci(
    original: Sequence[bool] | np.ndarray,
    perturbed: Sequence[bool] | np.ndarray,
    *,
    samples: int,
    level: float,
    seed: int,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of ``mean(perturbed) - mean(original)`` over resampled pairs.

    No longer used by the tables (it collapses to [0, 0] when no pair flipped); kept as the
    "before" of ``perf/interval_coverage.py``.

    Each pair's difference is -1, 0 or +1, so resampling n pairs is drawing multinomial counts of
    the three values: exactly the pair bootstrap, in O(samples) memory instead of O(samples * n).

    Parameters
    ----------
    original, perturbed : paired correctness.
    samples : bootstrap resamples (``scoring.bootstrap_samples``).
    level : confidence level, e.g. 0.95.
    seed : RNG seed (use :func:`hashed_seed`).

    Returns
    -------
    (low, high), or (None, None) for no pairs or ``samples`` = 0.
    """
    o = np.asarray(original, dtype=bool)
    p = np.asarray(perturbed, dtype=bool)
    n = o.size
    if n == 0 or samples <= 0:
        return None, None
    if not 0 < level < 1:
        raise InputError(f"scoring.confidence_level: expected a value in (0, 1), got {level}")
    diff = p.astype(int) - o.astype(int)
    counts = np.array([(diff == -1).sum(), (diff == 0).sum(), (diff == 1).sum()], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / n, size=int(samples))
    deltas = (draws[:, 2] - draws[:, 0]) / n
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(deltas, [alpha, 1.0 - alpha])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedStats:
    """Paired comparison of original and perturbed correctness on the same examples."""

    n: int
    accuracy_original: float | None
    accuracy_perturbed: float | None
    delta: float | None
    pdr: float | None
    flip_c2i: float | None
    flip_i2c: float | None
    n_c2i: int
    n_i2c: int
    mcnemar_p: float
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    design_effect: float
    mcnemar_exact_p: float


def paired_stats(
    original: Sequence[bool] | np.ndarray,
    perturbed: Sequence[bool] | np.ndarray,
    *,
    clusters: Sequence[Any] | np.ndarray | None = None,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
) -> PairedStats:
    """Accuracy original vs perturbed, delta, PDR, flip rates, score interval and its test's p.

    ``mcnemar_p`` is the p of the score test the interval inverts (interval excludes 0 exactly
    when ``mcnemar_p < 1 - level``); ``mcnemar_exact_p`` the exact McNemar test beside it.

    Parameters
    ----------
    original, perturbed : correctness of the same examples without and with the typos.
    clusters : example code per pair when an example can appear in several pairs (several words,
        several typo draws); None for independent pairs.
    level : confidence level.
    method : interval method (:data:`evalpipe.scoring.intervals.METHODS`).

    Returns
    -------
    PairedStats

    Examples
    --------
    >>> s = paired_stats([True, True, False, True], [True, False, False, False])
    >>> s.accuracy_original, s.accuracy_perturbed, s.pdr, s.n_c2i
    (0.75, 0.25, 0.6666666666666667, 2)
    """
    o = np.asarray(original, dtype=bool)
    p = np.asarray(perturbed, dtype=bool)
    if o.shape != p.shape:
        raise ValueError(f"paired inputs differ in length: {o.size} vs {p.size}")
    n = int(o.size)
    n_c2i = int((o & ~p).sum())
    n_i2c = int((~o & p).sum())
    acc_o = float(o.mean()) if n else None
    acc_p = float(p.mean()) if n else None
    score = paired_score(o, p, clusters=clusters, level=level, method=method)
    deff = score.design_effect
    return PairedStats(
        n=n,
        accuracy_original=acc_o,
        accuracy_perturbed=acc_p,
        delta=None if n == 0 else acc_p - acc_o,
        pdr=pdr(acc_o, acc_p),
        flip_c2i=n_c2i / n if n else None,
        flip_i2c=n_i2c / n if n else None,
        n_c2i=n_c2i,
        n_i2c=n_i2c,
        mcnemar_p=score.p_value,
        ci_low=score.low,
        ci_high=score.high,
        ci_method=method_label(method, deff),
        design_effect=deff,
        mcnemar_exact_p=clustered_mcnemar(n_c2i, n_i2c, deff),
    )


def _originals(scored: pd.DataFrame, *, source: str) -> pd.DataFrame:
    originals = scored.loc[scored["variant"] == ORIGINAL]
    duplicated = originals["example_id"].duplicated(keep=False)
    if duplicated.any():
        first = originals.loc[duplicated, "example_id"].iloc[0]
        raise InputError(
            f"{source}: example_id {first!r} has more than one 'original' row; expected one"
        )
    return originals


def word_table(
    scored: pd.DataFrame,
    *,
    level: float,
    source: str = "scored",
) -> pd.DataFrame:
    """Robustness per target word of one benchmark (the per-word plot data).

    Parameters
    ----------
    scored : one benchmark's scored frame.
    level : confidence level of the intervals.
    source : file name for error messages.

    Returns
    -------
    DataFrame
        One row per word: ``benchmark, word, word_rank``, the :class:`PairedStats` fields (``n``
        counting examples, each once however many typo draws it has; the counts and rates count
        pairs, one per draw),
        ``p_holm, p_bh`` (McNemar p adjusted over the benchmark's words),
        ``accuracy_drop`` (= -delta), ``perturbed_occurrences, accuracy_base, accuracy_merged,
        per_occurrence_impact, unparsed_rate``; sorted by word rank.
    """
    pairs = pair_rows(scored, source=source)
    benchmark = str(scored["benchmark"].iloc[0]) if len(scored) else ""
    originals = _originals(scored, source=source)
    base_correct = originals.set_index("example_id")["correct"].astype(bool)
    acc_base = float(base_correct.mean()) if len(base_correct) else None
    rows = []
    for (rank, word), group in pairs.groupby(["word_rank", "variant"], sort=True):
        stats = paired_stats(
            group["correct_original"].to_numpy(),
            group["correct_perturbed"].to_numpy(),
            clusters=group["cluster"].to_numpy(),
            level=level,
        )
        merged = base_correct.astype(float)
        # With several typo draws of one example its merged answer is the mean over its draws,
        # and the typos per draw are the mean over its draws: the impact of one draw's typos.
        by_example = group.groupby("example_id", sort=False)
        answers = by_example["correct_perturbed"].mean()
        merged.loc[answers.index.to_numpy()] = answers.to_numpy()
        acc_merged = float(merged.mean())
        occurrences = int(group["perturbed_occurrences"].sum())
        per_draw = float(by_example["perturbed_occurrences"].mean().sum())
        impact = (acc_base - acc_merged) / per_draw if per_draw and acc_base is not None else None
        rows.append(
            {
                "benchmark": benchmark,
                "word": str(word),
                "word_rank": int(rank),
                **asdict(stats),
                # examples, not pairs: K typo draws of one example are one observation of the word
                "n": int(group["cluster"].nunique()),
                "accuracy_drop": None if stats.delta is None else -stats.delta,
                "perturbed_occurrences": occurrences,
                "accuracy_base": acc_base,
                "accuracy_merged": acc_merged,
                "per_occurrence_impact": impact,
                "unparsed_rate": float(group["unparsed_perturbed"].mean()),
            }
        )
    columns = ["benchmark", "word", "word_rank", *PairedStats.__dataclass_fields__, "p_holm",
               "p_bh", "accuracy_drop", "perturbed_occurrences", "accuracy_base",
               "accuracy_merged", "per_occurrence_impact", "unparsed_rate"]  # fmt: skip
    table = pd.DataFrame(rows, columns=[c for c in columns if c not in ("p_holm", "p_bh")])
    # The family is the benchmark's words that can reach significance (Tarone's screening).
    raw = table["mcnemar_p"].to_numpy(dtype=float)
    floor = minimum_attainable_p(
        (table["n_c2i"] + table["n_i2c"]).to_numpy(dtype=float),
        table["design_effect"].to_numpy(dtype=float),
    )
    table["p_holm"] = holm(raw, min_p=floor, alpha=1.0 - level)
    table["p_bh"] = benjamini_hochberg(raw, min_p=floor, alpha=1.0 - level)
    return table[columns]


def benchmark_summary(
    scored: pd.DataFrame,
    *,
    level: float,
    words: pd.DataFrame | None = None,
    source: str = "scored",
) -> dict[str, Any]:
    """Robustness of one benchmark over all its (word, example) pairs, for the score stage's robustness details.

    The interval clusters the pairs on the example (one example is paired once per word that hit
    it), see :mod:`evalpipe.scoring.intervals`.

    Parameters
    ----------
    scored : one benchmark's scored frame.
    level : confidence level of the interval.
    words : its :func:`word_table` (computed when None), for the mean per-occurrence impact.
    source : file name for error messages.

    Returns
    -------
    dict
        ``n`` (pairs), ``n_examples, n_words``, the :class:`PairedStats` fields,
        ``accuracy_base`` (all original rows), ``mean_score_original`` /
        ``mean_score_perturbed`` (char_f1 or 1/0 on the pairs), ``per_occurrence_impact``
        (mean over words), ``unparsed`` (count over all rows) and ``unparsed_rate``.
    """
    pairs = pair_rows(scored, source=source)
    stats = paired_stats(
        pairs["correct_original"].to_numpy(),
        pairs["correct_perturbed"].to_numpy(),
        clusters=pairs["cluster"].to_numpy(),
        level=level,
    )
    originals = _originals(scored, source=source)
    if words is None:
        words = word_table(scored, level=level, source=source)
    impacts = words["per_occurrence_impact"].dropna() if len(words) else pd.Series(dtype=float)
    score_by_example = originals.set_index("example_id")["score"] if "score" in scored else None
    pert_scores = scored.loc[scored["variant"] != ORIGINAL, "score"] if "score" in scored else None
    unparsed = int((scored["parse_status"] == "unparsed").sum())
    summary = {
        "n_examples": len(originals),
        "n_words": int(pairs["variant"].nunique()),
        **asdict(stats),
        "accuracy_base": float(originals["correct"].astype(bool).mean())
        if len(originals)
        else None,
        "mean_score_original": (
            float(score_by_example.loc[pairs["example_id"]].mean())
            if score_by_example is not None and len(pairs)
            else None
        ),
        "mean_score_perturbed": (
            float(pert_scores.mean()) if pert_scores is not None and len(pert_scores) else None
        ),
        "per_occurrence_impact": float(impacts.mean()) if len(impacts) else None,
        "unparsed": unparsed,
        "unparsed_rate": unparsed / len(scored) if len(scored) else None,
    }
    return summary


def accuracy_by_rate(scored: pd.DataFrame, *, bins: Sequence[float] = RATE_BINS) -> pd.DataFrame:
    """Paired accuracy change by perturbation rate: the share of prompt characters changed by typos.

    Each fired operation changes one character, so a perturbed row's rate is ``100 *
    perturbed_occurrences / len(prompt)`` (percent). Every perturbed row is compared with its own
    example's original row, and a bin reports the mean paired difference. Pooling unpaired rows
    instead confounds rate with benchmark: typo rate tracks prompt length, which differs by
    benchmark, so two benchmarks where typos change nothing gave a curve falling from 0.88 to 0.30.
    Paired, each difference is within one example (hence within its benchmark), and an input with
    no effect gives a flat line at 0.

    Parameters
    ----------
    scored : scored rows of one or more benchmarks (``benchmark, example_id, variant, prompt,
        perturbed_occurrences, correct``).
    bins : bin edges in percent (right-closed).

    Returns
    -------
    DataFrame
        One row per non-empty bin: ``perturbation_rate`` (mean rate in the bin, percent), ``bin``
        (its label), ``n`` (pairs), ``accuracy_original`` and ``accuracy_perturbed`` (on those
        pairs), ``delta`` (their difference, the plotted value). A first row ``bin`` "0" anchors
        the curve: all original rows, delta 0.

    Raises
    ------
    InputError
        A perturbed row without its original or an example with two
        (:func:`evalpipe.scoring.pairing.pair_rows`, which makes the pairs).
    """
    columns = ["perturbation_rate", "bin", "n", "accuracy_original", "accuracy_perturbed", "delta"]
    check_columns(
        scored,
        ("benchmark", "example_id", "variant", "prompt", "perturbed_occurrences", "correct"),
        source="scored",
    )
    joined = pair_rows(scored, carry=("prompt",), source="scored")
    lengths = joined["prompt"].fillna("").astype(str).str.len().clip(lower=1)
    pairs = pd.DataFrame(
        {
            "rate": (100.0 * joined["perturbed_occurrences"].astype(float) / lengths).to_numpy(),
            "perturbed": joined["correct_perturbed"].to_numpy(),
            "original": joined["correct_original"].to_numpy(),
        }
    )
    originals = scored.loc[scored["variant"] == ORIGINAL, ["correct"]].rename(
        columns={"correct": "original"}
    )
    edges = list(bins)
    labels = []
    for lo, hi in itertools.pairwise(edges):
        labels.append(f"({lo:g}, {hi:g}]" if np.isfinite(hi) else f">{lo:g}")
    pairs = pairs.loc[pairs["rate"] > 0]
    pairs["bin"] = pd.cut(pairs["rate"], edges, labels=labels, right=True).astype(str)
    table = (
        pairs.groupby("bin", sort=False)
        .agg(
            perturbation_rate=("rate", "mean"),
            n=("rate", "size"),
            accuracy_original=("original", "mean"),
            accuracy_perturbed=("perturbed", "mean"),
        )
        .reset_index()
    )
    table["delta"] = table["accuracy_perturbed"] - table["accuracy_original"]
    base = float(originals["original"].astype(bool).mean()) if len(originals) else np.nan
    anchor = pd.DataFrame(
        [{"perturbation_rate": 0.0, "bin": "0", "n": len(originals), "accuracy_original": base,
          "accuracy_perturbed": base, "delta": 0.0}]
    )  # fmt: skip
    order = {label: i for i, label in enumerate(labels)}
    table["_order"] = table["bin"].map(order)
    table = table.sort_values("_order", kind="stable").drop(columns="_order")
    table = pd.concat([anchor, table], ignore_index=True) if len(originals) else table
    return table[columns].reset_index(drop=True)
