"""Paired robustness statistics: original vs perturbed answers on the same examples.

For a target word, the pairs are the examples in which at least one typo fired (the perturb stage
writes a row only for those), each compared with the same example's original row: the rows of the
pairs table (:func:`evalpipe.scoring.pairs.build_pairs`). Every function here groups those rows;
none pairs again. Per benchmark all (word, example) pairs are pooled; an
example then appears once per word that hit it, and the pooled interval and McNemar p account for
that through the design effect of the example clusters (:mod:`evalpipe.scoring.intervals`).

Definitions (PromptBench's PDR, McNemar's test, the upstream per-word impact; docs/scoring.md):

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

from evalpipe.scoring.intervals import (
    DEFAULT_METHOD,
    distinct_per_group,
    method_label,
    minimum_attainable_p,
    paired_score,
    paired_scores,
)
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
from evalpipe.scoring.names import ORIGINAL
from evalpipe.scoring.power import mde_many

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


def _binomtest_two_sided(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``scipy.stats.binomtest(k, n, 0.5).pvalue`` of many (k, n) at once, by the same steps
    (SciPy's search for the other tail, on arrays): the same numbers, without a Python call per
    pair. ``n`` >= 1, 0 <= ``k`` <= ``n``."""
    from scipy.stats import binom  # SciPy takes a second to import: only when needed

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    p = 0.5
    d = binom.pmf(k, n, p)
    rerr = 1 + 1e-7
    low = k < p * n  # the other tail lies above the mode
    sign = np.where(low, -1.0, 1.0)
    target = np.where(low, -d * rerr, d * rerr)
    lo = np.where(low, np.ceil(p * n), 0.0)
    hi = np.where(low, n, np.floor(p * n))
    found = np.full(k.shape, np.nan)
    while True:
        active = np.isnan(found) & (lo < hi)
        if not active.any():
            break
        mid = lo + (hi - lo) // 2
        value = sign * binom.pmf(np.where(active, mid, 0.0), n, p)
        below = active & (value < target)
        above = active & (value > target)
        found = np.where(active & ~below & ~above, mid, found)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(above, mid - 1, hi)
    last = sign * binom.pmf(lo, n, p)
    ix = np.where(np.isnan(found), np.where(last <= target, lo, lo - 1), found)
    y_low = n - ix + (d * rerr == binom.pmf(ix, n, p))
    p_low = binom.cdf(k, n, p) + binom.sf(n - y_low, n, p)
    p_high = binom.cdf(ix, n, p) + binom.sf(k - 1, n, p)
    pval = np.where(low, p_low, p_high)
    return np.where(k == p * n, 1.0, np.minimum(1.0, pval))


# Exact p-values already computed, per (n_c2i, n_i2c): thousands of words share small counts.
_EXACT: dict[tuple[int, int], float] = {}


def mcnemar_exact_many(n_c2i: Sequence[int], n_i2c: Sequence[int]) -> list[float]:
    """:func:`mcnemar_exact` of many count pairs (the same numbers, computed together).

    >>> [round(p, 4) for p in mcnemar_exact_many([8, 0, 3], [1, 0, 3])]
    [0.0391, 1.0, 1.0]
    """
    keys = [(int(c), int(i)) for c, i in zip(n_c2i, n_i2c, strict=True)]
    todo = sorted({key for key in keys if key not in _EXACT and key[0] + key[1] > 0})
    if todo:
        if len(_EXACT) + len(todo) > 65536:
            _EXACT.clear()
        k = np.array([c for c, _ in todo])
        n = np.array([c + i for c, i in todo])
        _EXACT.update(zip(todo, _binomtest_two_sided(k, n).tolist(), strict=True))
    return [1.0 if c + i == 0 else _EXACT[(c, i)] for c, i in keys]


def mcnemar_exact(n_c2i: int, n_i2c: int) -> float:
    """Exact two-sided McNemar p from the discordant counts; 1.0 when there are none.

    A binomial test of ``n_c2i`` among the discordant pairs against p = 0.5
    (``scipy.stats.binomtest``'s two-sided p).

    >>> round(mcnemar_exact(8, 1), 4)
    0.0391
    """
    return mcnemar_exact_many([n_c2i], [n_i2c])[0]


def clustered_mcnemar(n_c2i: int, n_i2c: int, deff: float) -> float:
    """Exact McNemar p on the discordant counts divided by the design effect (rounded).

    Clustered pairs carry less information than their count; dividing by the design effect is the
    Rao-Scott correction of the counts. With ``deff`` 1 this is :func:`mcnemar_exact`.

    >>> mcnemar_clustered = clustered_mcnemar(16, 4, 2.0)
    >>> mcnemar_clustered == mcnemar_exact(8, 2)
    True
    """
    return clustered_mcnemar_many([n_c2i], [n_i2c], [deff])[0]


def clustered_mcnemar_many(
    n_c2i: Sequence[int], n_i2c: Sequence[int], deff: Sequence[float]
) -> list[float]:
    """:func:`clustered_mcnemar` of many rows at once."""
    counts = [
        (c, i) if d <= 1.0 else (round(c / d), round(i / d))
        for c, i, d in zip(n_c2i, n_i2c, deff, strict=True)
    ]
    return mcnemar_exact_many([c for c, _ in counts], [i for _, i in counts])


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
    # the smallest |delta| these pairs would show at 80% power (evalpipe.scoring.power)
    mde: float | None = None


def detectable(
    n: Sequence[int], discordant: Sequence[int], scores: Sequence[Any], level: float
) -> list[float | None]:
    """The minimum detectable effect of each row: ``n`` pairs of which ``discordant`` flipped, at
    the design effect and degrees of freedom of the row's interval (``scores``: its
    :class:`~evalpipe.scoring.intervals.PairedScore`), 80% power
    (:func:`evalpipe.scoring.power.mde_many`); None without pairs."""
    if not len(n):
        return []
    pairs = np.asarray(n, dtype=float)
    share = np.asarray(discordant, dtype=float) / np.where(pairs > 0, pairs, 1.0)
    found = mde_many(
        pairs,
        share,
        [s.design_effect for s in scores],
        [s.df for s in scores],
        level=level,
    )
    return [None if np.isnan(v) else float(v) for v in found]


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
        delta=None if acc_o is None or acc_p is None else acc_p - acc_o,
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
        mde=detectable([n], [n_c2i + n_i2c], [score], level)[0],
    )


def paired_stats_of_groups(
    original: np.ndarray,
    perturbed: np.ndarray,
    groups: Sequence[np.ndarray],
    *,
    clusters: np.ndarray | None = None,
    level: float = 0.95,
    method: str = DEFAULT_METHOD,
) -> list[PairedStats]:
    """:func:`paired_stats` of many groups of pairs at once (the same numbers, bit for bit).

    Parameters
    ----------
    original, perturbed : correctness of every pair (bool arrays).
    groups : positions of each group's pairs.
    clusters : non-negative integer example code per pair; None: independent pairs.
    level, method : as for :func:`paired_stats`.

    Returns
    -------
    list of PairedStats, one per group.
    """
    o = np.asarray(original, dtype=bool)
    p = np.asarray(perturbed, dtype=bool)
    if not len(groups):
        return []
    scores = paired_scores(o, p, groups, clusters=clusters, level=level, method=method)
    sizes = np.fromiter((g.size for g in groups), dtype=np.int64, count=len(groups))
    index = np.concatenate(groups)
    segment = np.repeat(np.arange(len(groups)), sizes)
    counts = [
        np.bincount(segment, weights=mask[index], minlength=len(groups)).astype(np.int64).tolist()
        for mask in (o, p, o & ~p, ~o & p)
    ]
    exact = clustered_mcnemar_many(counts[2], counts[3], [s.design_effect for s in scores])
    discordant = [c + i for c, i in zip(counts[2], counts[3], strict=True)]
    detectables = detectable(sizes.tolist(), discordant, scores, level)
    out = []
    for n, n_o, n_p, n_c2i, n_i2c, score, exact_p, mde_of in zip(
        sizes.tolist(), *counts, scores, exact, detectables, strict=True
    ):
        acc_o = n_o / n if n else None
        acc_p = n_p / n if n else None
        deff = score.design_effect
        out.append(
            PairedStats(
                n=n,
                accuracy_original=acc_o,
                accuracy_perturbed=acc_p,
                delta=None if acc_o is None or acc_p is None else acc_p - acc_o,
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
                mcnemar_exact_p=exact_p,
                mde=mde_of,
            )
        )
    return out


@dataclass(frozen=True)
class Originals:
    """The clean-prompt rows of one view (or of several, added up): the denominator of the
    upstream impact and the base accuracy, which the pairs alone do not give (an example no typo
    hit has no pair)."""

    n_examples: int = 0
    n_correct: int = 0
    n_unparsed: int = 0

    @property
    def accuracy(self) -> float | None:
        return self.n_correct / self.n_examples if self.n_examples else None

    def __add__(self, other: Originals) -> Originals:
        return Originals(
            self.n_examples + other.n_examples,
            self.n_correct + other.n_correct,
            self.n_unparsed + other.n_unparsed,
        )


def originals_of(scored: pd.DataFrame) -> Originals:
    """:class:`Originals` of one scored view (``variant, correct, parse_status``).

    >>> originals_of(pd.DataFrame({"variant": ["original", "the", "original"],
    ...     "correct": [True, False, False], "parse_status": ["strict", "strict", "unparsed"]}))
    Originals(n_examples=2, n_correct=1, n_unparsed=1)
    """
    rows = scored.loc[scored["variant"] == ORIGINAL]
    return Originals(
        n_examples=len(rows),
        n_correct=int(rows["correct"].astype(bool).sum()),
        n_unparsed=int((rows["parse_status"] == "unparsed").sum()),
    )


WORD_TABLE_COLUMNS = [
    "benchmark", "word", "word_rank", *PairedStats.__dataclass_fields__, "p_holm", "p_bh",
    "accuracy_drop", "perturbed_occurrences", "accuracy_base", "accuracy_merged",
    "per_occurrence_impact", "unparsed_rate",
]  # fmt: skip


def word_table(pairs: pd.DataFrame, *, originals: Originals, level: float) -> pd.DataFrame:
    """Robustness per target word of one view (the per-word plot data).

    Parameters
    ----------
    pairs : the view's rows of the pairs table (:func:`evalpipe.scoring.pairs.build_pairs`).
    originals : the view's clean-prompt rows (:func:`originals_of`).
    level : confidence level of the intervals.

    Returns
    -------
    DataFrame
        :data:`WORD_TABLE_COLUMNS`, one row per word: ``benchmark, word, word_rank``, the
        :class:`PairedStats` fields (``n`` counting examples, each once however many typo draws
        it has; the counts and rates count pairs, one per draw), ``p_holm, p_bh`` (McNemar p
        adjusted over the view's words), ``accuracy_drop`` (= -delta), ``perturbed_occurrences,
        accuracy_base, accuracy_merged, per_occurrence_impact, unparsed_rate``; sorted by word
        rank.
    """
    acc_base = originals.accuracy
    rows = []
    if len(pairs):
        o = pairs["correct_original"].to_numpy(dtype=bool)
        p = pairs["correct_perturbed"].to_numpy(dtype=bool)
        clusters = pairs["cluster"].to_numpy()
        fired = pairs["perturbed_occurrences"].to_numpy(dtype=np.int64)
        unparsed = (pairs["parse_status_perturbed"] == "unparsed").to_numpy()
        benchmark = str(pairs["benchmark"].iloc[0])
        groups = pairs.groupby(["word_rank", "variant"], sort=True).indices
        keys = sorted(groups)
        positions = [groups[key] for key in keys]
        all_stats = paired_stats_of_groups(o, p, positions, clusters=clusters, level=level)
        # With one typo draw every pair of a word is its own example: the sums below are counts.
        examples = distinct_per_group(positions, clusters)
        for (rank, word), index, stats, n_examples in zip(
            keys, positions, all_stats, examples.tolist(), strict=True
        ):
            if n_examples == index.size:
                hit_original = float(int(o[index].sum()))
                hit_perturbed = float(int(p[index].sum()))
                per_draw = float(int(fired[index].sum()))
            else:
                # Per example the word hit: with several typo draws its merged answer is the
                # mean over its draws, and the typos per draw are the mean over its draws (the
                # impact of one draw's typos).
                _, first, inverse, draws = np.unique(
                    clusters[index], return_index=True, return_inverse=True, return_counts=True
                )
                hit_original = float(o[index][first].sum())
                hit_perturbed = float((np.bincount(inverse, weights=p[index]) / draws).sum())
                per_draw = float((np.bincount(inverse, weights=fired[index]) / draws).sum())
            acc_merged = (originals.n_correct - hit_original + hit_perturbed) / originals.n_examples
            impact = (
                (acc_base - acc_merged) / per_draw if per_draw and acc_base is not None else None
            )
            rows.append(
                {
                    "benchmark": benchmark,
                    "word": str(word),
                    "word_rank": int(rank),
                    **vars(stats),
                    # examples, not pairs: K typo draws of one example are one observation
                    "n": int(n_examples),
                    "accuracy_drop": None if stats.delta is None else -stats.delta,
                    "perturbed_occurrences": int(fired[index].sum()),
                    "accuracy_base": acc_base,
                    "accuracy_merged": float(acc_merged),
                    "per_occurrence_impact": impact,
                    "unparsed_rate": float(unparsed[index].mean()),
                }
            )
    columns = [c for c in WORD_TABLE_COLUMNS if c not in ("p_holm", "p_bh")]
    table = pd.DataFrame(rows, columns=columns)
    # The family is the view's words that can reach significance (Tarone's screening).
    raw = table["mcnemar_p"].to_numpy(dtype=float)
    floor = minimum_attainable_p(
        (table["n_c2i"] + table["n_i2c"]).to_numpy(dtype=float),
        table["design_effect"].to_numpy(dtype=float),
    )
    table["p_holm"] = holm(raw, min_p=floor, alpha=1.0 - level)
    table["p_bh"] = benjamini_hochberg(raw, min_p=floor, alpha=1.0 - level)
    return table[WORD_TABLE_COLUMNS]


def benchmark_summary(
    pairs: pd.DataFrame,
    *,
    originals: Originals,
    level: float,
    words: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Robustness of one view over all its (word, example) pairs, for the robustness details.

    The interval clusters the pairs on the example (one example is paired once per word that hit
    it), see :mod:`evalpipe.scoring.intervals`.

    Parameters
    ----------
    pairs : the view's rows of the pairs table.
    originals : the view's clean-prompt rows (:func:`originals_of`).
    level : confidence level of the interval.
    words : its :func:`word_table` (computed when None), for the mean per-occurrence impact.

    Returns
    -------
    dict
        ``n`` (pairs), ``n_examples, n_words``, the :class:`PairedStats` fields,
        ``accuracy_base`` (all original rows), ``mean_score_original`` /
        ``mean_score_perturbed`` (char_f1 or 1/0 on the pairs), ``per_occurrence_impact``
        (mean over words), ``unparsed`` (count over all rows) and ``unparsed_rate``.
    """
    stats = paired_stats(
        pairs["correct_original"].to_numpy(dtype=bool),
        pairs["correct_perturbed"].to_numpy(dtype=bool),
        clusters=pairs["cluster"].to_numpy(),
        level=level,
    )
    if words is None:
        words = word_table(pairs, originals=originals, level=level)
    impacts = words["per_occurrence_impact"].dropna() if len(words) else pd.Series(dtype=float)
    unparsed = originals.n_unparsed + int((pairs["parse_status_perturbed"] == "unparsed").sum())
    rows = originals.n_examples + len(pairs)  # every row that is not an original is a pair
    return {
        "n_examples": originals.n_examples,
        "n_words": int(pairs["variant"].nunique()),
        **asdict(stats),
        "accuracy_base": originals.accuracy,
        "mean_score_original": float(pairs["score_original"].mean()) if len(pairs) else None,
        "mean_score_perturbed": float(pairs["score_perturbed"].mean()) if len(pairs) else None,
        "per_occurrence_impact": float(impacts.mean()) if len(impacts) else None,
        "unparsed": unparsed,
        "unparsed_rate": unparsed / rows if rows else None,
    }


RATE_COLUMNS = ["perturbation_rate", "bin", "n", "accuracy_original", "accuracy_perturbed", "delta"]


def accuracy_by_rate(
    pairs: pd.DataFrame, *, originals: Originals, bins: Sequence[float] = RATE_BINS
) -> pd.DataFrame:
    """Paired accuracy change by perturbation rate: the share of prompt characters changed by typos.

    Each fired operation changes one character, so a pair's rate is ``100 *
    perturbed_occurrences / prompt_chars`` (percent). Every arm row is compared with its own
    example's original row, and a bin reports the mean paired difference. Pooling unpaired rows
    instead confounds rate with benchmark: typo rate tracks prompt length, which differs by
    benchmark, so two benchmarks where typos change nothing gave a curve falling from 0.88 to 0.30.
    Paired, each difference is within one example (hence within its benchmark), and an input with
    no effect gives a flat line at 0.

    Parameters
    ----------
    pairs : pairs of one view per benchmark (:func:`evalpipe.scoring.views.primary_views`:
        otherwise an example counts once per scoring method).
    originals : the clean-prompt rows of the same views, added up (the anchor row).
    bins : bin edges in percent (right-closed).

    Returns
    -------
    DataFrame
        One row per non-empty bin: ``perturbation_rate`` (mean rate in the bin, percent), ``bin``
        (its label), ``n`` (pairs), ``accuracy_original`` and ``accuracy_perturbed`` (on those
        pairs), ``delta`` (their difference, the plotted value). A first row ``bin`` "0" anchors
        the curve: all original rows, delta 0.
    """
    ordered = pairs.sort_values(
        ["word_rank", "variant", "benchmark", "example_id", "draw"], kind="stable"
    )
    chars = ordered["prompt_chars"].to_numpy(dtype=float).clip(min=1)
    frame = pd.DataFrame(
        {
            "rate": 100.0 * ordered["perturbed_occurrences"].to_numpy(dtype=float) / chars,
            "perturbed": ordered["correct_perturbed"].to_numpy(dtype=bool),
            "original": ordered["correct_original"].to_numpy(dtype=bool),
        }
    )
    edges = list(bins)
    labels = []
    for lo, hi in itertools.pairwise(edges):
        labels.append(f"({lo:g}, {hi:g}]" if np.isfinite(hi) else f">{lo:g}")
    frame = frame.loc[frame["rate"] > 0]
    frame["bin"] = pd.cut(frame["rate"], edges, labels=labels, right=True).astype(str)
    table = (
        frame.groupby("bin", sort=False)
        .agg(
            perturbation_rate=("rate", "mean"),
            n=("rate", "size"),
            accuracy_original=("original", "mean"),
            accuracy_perturbed=("perturbed", "mean"),
        )
        .reset_index()
    )
    table["delta"] = table["accuracy_perturbed"] - table["accuracy_original"]
    base = originals.accuracy if originals.n_examples else np.nan
    anchor = pd.DataFrame(
        [{"perturbation_rate": 0.0, "bin": "0", "n": originals.n_examples,
          "accuracy_original": base, "accuracy_perturbed": base, "delta": 0.0}]
    )  # fmt: skip
    order = {label: i for i, label in enumerate(labels)}
    table["_order"] = table["bin"].map(order)
    table = table.sort_values("_order", kind="stable").drop(columns="_order")
    table = pd.concat([anchor, table], ignore_index=True) if originals.n_examples else table
    return table[RATE_COLUMNS].reset_index(drop=True)
