"""Operation and script effects adjusted for the word, the example and the benchmark.

The marginal rows of the operation and script tables answer "how much accuracy do typos of this
kind cost?". They do not answer "does this kind of typo cost more than another?": a word that
hurts a lot spreads its pairs over every operation type, so every operation row shows its drop
(issue: with no operation effect at all, every pooled operation row was significant). The
adjusted estimate compares kinds of typo on the *same word* and the *same example*.

Estimator
    For one kind ``k`` (an operation or a script class; any label the pairs carry) and one scope
    (a benchmark, or all of a language's benchmarks pooled), regress the paired difference
    ``d = correct_perturbed - correct_original`` of every pair on ``x = [kind == k]`` with two
    sets of fixed effects absorbed: one per (benchmark, word, original correctness, number of
    typos that fired) stratum and one per (benchmark, example). The coefficient is
    ``adjusted_delta``: how much more accuracy typos of kind ``k`` cost than the other kinds of
    typo of the same word, on the same example (negative = ``k`` hurts more). With only the word
    strata this coefficient *is* the Mantel-Haenszel risk difference over the strata
    (within-stratum OLS weights each stratum by ``n_k n_rest / n``, the MH weights); the example
    effects remove what an example's fragility adds. The number of typos is in the stratum
    because two typos can hurt more than one and ``mixed`` pairs always have two or more. A
    stratum with only one kind carries no information and drops out; ``adjusted_n`` counts the
    pairs that do.

Interval and test
    Cluster-robust (example) sandwich variance of the coefficient with Stata's CR1 small-sample
    factors ``G / (G - 1) * (n - 1) / (n - S - 1)`` (G examples, n pairs, S word strata: the
    example effects are nested in the clusters and cost nothing) and Student t quantiles on
    ``G - 1`` degrees of freedom. One example's pairs over several words are correlated (a
    fragile example flips under many words); clustering keeps the interval honest about that.
    The variance is floored at what one flip in the ``n`` pairs would give (a binomial flip rate
    ``1 / (n + 2)``), so that a scope without flips never gets a zero-width interval; the floor
    is far below the sandwich whenever there are flips. ``adjusted_p`` is the two-sided t test
    of 0; ``adjusted_p_holm`` is Holm-adjusted over the kinds of one (model, language, source,
    scope) table.

Assumptions: within a word's stratum the kind of typo is assigned independently of anything
else about the example that changes the outcome (evalpipe draws operations by hashed seeds). The
effect of a kind is taken as additive on the accuracy scale and common to the words.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from evalpipe.scoring.multiple_testing import holm
from evalpipe.scoring.names import POOLED

METHOD = "two-way fixed effects (word x original correctness, example), example-clustered"
ADJUSTED_COLUMNS = [
    "adjusted_delta", "adjusted_ci_low", "adjusted_ci_high", "adjusted_p", "adjusted_p_holm",
    "adjusted_n",
]  # fmt: skip
# What the estimator reads of the pairs table (evalpipe.scoring.pairs), besides the kind.
_NEEDS = ("model", "language", "benchmark", "cluster", "variant", "word_rank", "correct_original",
          "correct_perturbed")  # fmt: skip

_TOLERANCE = 1e-10
_MAX_SWEEPS = 10_000


def absorb(values: np.ndarray, groups: Sequence[np.ndarray]) -> np.ndarray:
    """Residuals of ``values`` after removing one fixed effect per level of each grouping.

    Alternating projections (demean by one grouping, then the next, until nothing changes): the
    method of reghdfe and pyfixest, exact at convergence for any number of crossed groupings.

    Parameters
    ----------
    values : 1-D or 2-D (rows x columns) array.
    groups : integer codes 0..G-1 per row, one array per grouping.

    Returns
    -------
    numpy.ndarray
        Same shape as ``values``.

    Examples
    --------
    >>> absorb(np.array([1.0, 3.0, 2.0, 6.0]), [np.array([0, 0, 1, 1])]).tolist()
    [-1.0, 1.0, -2.0, 2.0]
    """
    out = np.array(values, dtype=float, copy=True)
    matrix = out if out.ndim == 2 else out[:, None]
    sizes = [np.bincount(g).astype(float) for g in groups]
    for _ in range(_MAX_SWEEPS):
        change = 0.0
        for g, size in zip(groups, sizes, strict=True):
            for j in range(matrix.shape[1]):
                means = np.bincount(g, weights=matrix[:, j], minlength=size.size) / size
                shift = means[g]
                change = max(change, float(np.abs(shift).max(initial=0.0)))
                matrix[:, j] -= shift
        if change < _TOLERANCE:
            break
    return out


def adjusted_effect(
    diff: np.ndarray,
    indicator: np.ndarray,
    *,
    strata: np.ndarray,
    examples: np.ndarray,
    level: float = 0.95,
) -> dict[str, float | int | None]:
    """The adjusted effect of one kind of typo (:data:`ADJUSTED_COLUMNS` but the Holm column).

    Parameters
    ----------
    diff : paired difference per pair (-1, 0, 1).
    indicator : True where the pair's typos are of the kind.
    strata : integer code of the pair's (benchmark, word, original correctness) stratum.
    examples : integer code of the pair's (benchmark, example); also the cluster.
    level : confidence level.

    Returns
    -------
    dict
        ``adjusted_delta, adjusted_ci_low, adjusted_ci_high, adjusted_p`` (None when no stratum
        holds both this kind and another) and ``adjusted_n``.

    Examples
    --------
    Two words on two examples, each word with one delete and one other typo; the delete typos
    flipped:

    >>> d, x = np.array([-1, 0, 0, -1]), np.array([True, False, False, True])
    >>> s, e = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    >>> adjusted_effect(d, x, strata=s, examples=e)["adjusted_delta"]
    -1.0
    """
    d = np.asarray(diff, dtype=float)
    x = np.asarray(indicator, dtype=float)
    empty: dict[str, float | int | None] = {
        "adjusted_delta": None,
        "adjusted_ci_low": None,
        "adjusted_ci_high": None,
        "adjusted_p": None,
        "adjusted_n": 0,
    }
    if d.size == 0:
        return empty
    # Only strata holding this kind and another inform the contrast.
    stratum = np.unique(np.asarray(strata), return_inverse=True)[1]
    share = np.bincount(stratum, weights=x) / np.bincount(stratum)
    keep = (share[stratum] > 0) & (share[stratum] < 1)
    if not keep.any():
        return empty
    d, x = d[keep], x[keep]
    groups = [
        np.unique(stratum[keep], return_inverse=True)[1],
        np.unique(np.asarray(examples)[keep], return_inverse=True)[1],
    ]
    resid = absorb(np.column_stack([d, x]), groups)
    d_t, x_t = resid[:, 0], resid[:, 1]
    sxx = float(x_t @ x_t)
    if sxx < 1e-9:  # the kind is fully explained by the examples: nothing left to compare
        return {**empty, "adjusted_n": int(keep.sum())}
    beta = float(x_t @ d_t) / sxx
    e = d_t - beta * x_t
    cluster = groups[1]
    n_clusters = int(cluster.max()) + 1
    scores = np.bincount(cluster, weights=x_t * e, minlength=n_clusters)
    n = int(d.size)
    # Stata's CR1 factors: clusters, and the word strata's fixed effects (not nested in the
    # example clusters, so they cost residual degrees of freedom; the example effects do not).
    n_strata = int(groups[0].max()) + 1
    small_sample = n_clusters / max(n_clusters - 1, 1) * (n - 1) / max(n - n_strata - 1, 1)
    robust = small_sample * float(scores @ scores) / sxx**2
    rate = 1.0 / (n + 2.0)
    floor = rate * (1.0 - rate) / sxx
    se = float(np.sqrt(max(robust, floor)))
    from scipy import stats  # SciPy takes a second to import: only when needed

    dof = max(n_clusters - 1, 1)
    half = float(stats.t.ppf(0.5 + level / 2.0, dof)) * se
    p = float(2.0 * stats.t.sf(abs(beta) / se, dof))
    return {
        "adjusted_delta": beta + 0.0,
        "adjusted_ci_low": beta - half,
        "adjusted_ci_high": beta + half,
        "adjusted_p": min(1.0, p),
        "adjusted_n": n,
    }


def adjusted_effects(pairs: pd.DataFrame, *, by: str, level: float = 0.95) -> pd.DataFrame:
    """Adjusted effect of every kind of typo, per (model, language, scope).

    Parameters
    ----------
    pairs : rows of the pairs table (:mod:`evalpipe.scoring.pairs`: ``model, language,
        benchmark, cluster, variant, word_rank, correct_original, correct_perturbed`` and the
        ``by`` column; ``cluster`` is the example); pairs whose ``by`` is null are left out.
    by : the column holding the kind (``"op"`` or ``"script"``); its labels are taken as they
        come, so new operation types need no change here.
    level : confidence level.

    Returns
    -------
    DataFrame
        ``model, language, scope, <by>`` and :data:`ADJUSTED_COLUMNS`; scope ``"pooled"`` (all
        of the language's benchmarks) or a benchmark.

    Examples
    --------
    >>> pairs = pd.DataFrame({"model": "m", "language": "english", "benchmark": "b",
    ...     "cluster": [0, 1, 0, 1], "variant": ["w", "w", "v", "v"],
    ...     "word_rank": [1, 1, 2, 2], "correct_original": True,
    ...     "correct_perturbed": [False, True, True, True],
    ...     "op": ["delete", "insert", "insert", "insert"]})
    >>> adjusted_effects(pairs, by="op")[["scope", "op", "adjusted_n"]].values.tolist()
    [['pooled', 'delete', 2], ['pooled', 'insert', 2], ['b', 'delete', 2], ['b', 'insert', 2]]
    """
    keys = ["model", "language", "scope", by]
    missing = [c for c in (*_NEEDS, by) if c not in pairs.columns]
    if missing:
        raise ValueError(f"pairs: missing columns {missing}")
    pairs = pairs.loc[pairs[by].notna()]
    if pairs.empty:
        return pd.DataFrame(columns=[*keys, *ADJUSTED_COLUMNS])
    benchmark = pairs["benchmark"].astype(str).to_numpy()
    # One stratum per (benchmark, word, original correctness, typos that fired): kinds are
    # compared at equal numbers of typos (a mixed pair has two or more).
    stratum_keys = ["benchmark", "word_rank", "variant", "correct_original"]
    if "perturbed_occurrences" in pairs.columns:
        stratum_keys.append("perturbed_occurrences")
    strata = pairs.groupby(stratum_keys, sort=True, dropna=False).ngroup().to_numpy(np.int64)
    examples = pairs["cluster"].to_numpy()
    diff = (
        pairs["correct_perturbed"].astype(int).to_numpy()
        - pairs["correct_original"].astype(int).to_numpy()
    )
    labels = pairs[by].astype(str).to_numpy()
    rows = []
    for (model, language), index in pairs.groupby(["model", "language"], sort=True).indices.items():
        scopes = [(POOLED, index)] + [
            (str(name), index[benchmark[index] == name]) for name in sorted(set(benchmark[index]))
        ]
        for scope, rows_in in scopes:
            for kind in sorted(set(labels[rows_in])):
                effect = adjusted_effect(
                    diff[rows_in],
                    labels[rows_in] == kind,
                    strata=strata[rows_in],
                    examples=examples[rows_in],
                    level=level,
                )
                rows.append(
                    {"model": model, "language": language, "scope": scope, by: kind, **effect}
                )
    table = pd.DataFrame(rows)
    table["adjusted_p_holm"] = np.nan
    for _, index in table.groupby(["model", "language", "scope"], sort=False).groups.items():
        raw = table.loc[index, "adjusted_p"].astype(float).to_numpy()
        known = ~np.isnan(raw)
        if known.any():
            adjusted = np.full(raw.shape, np.nan)
            adjusted[known] = holm(raw[known])
            table.loc[index, "adjusted_p_holm"] = adjusted
    for column in ADJUSTED_COLUMNS:
        if column != "adjusted_n":
            table[column] = table[column].astype(float)
    table["adjusted_n"] = table["adjusted_n"].astype("int64")
    return table[[*keys, *ADJUSTED_COLUMNS]]


def with_adjusted(
    table: pd.DataFrame, pairs: pd.DataFrame, *, by: str, level: float = 0.95
) -> pd.DataFrame:
    """``table`` (an operation or script impact table) with the adjusted columns merged in.

    Parameters
    ----------
    table : rows keyed by ``model, language, scope, <by>``.
    pairs : the pairs the table was made from.
    by : ``"op"`` or ``"script"``.
    level : confidence level.

    Returns
    -------
    DataFrame
        ``table``'s rows in its order, its columns followed by :data:`ADJUSTED_COLUMNS`.
    """
    keys = ["model", "language", "scope", by]
    if table.empty:
        return table.reindex(columns=[*table.columns, *ADJUSTED_COLUMNS])
    effects = adjusted_effects(pairs, by=by, level=level)
    merged = table.merge(effects, on=keys, how="left", validate="one_to_one")
    merged["adjusted_n"] = merged["adjusted_n"].fillna(0).astype("int64")
    return merged
