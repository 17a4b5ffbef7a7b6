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
    stratum with only one kind, and an example with a single informative pair, carry no
    information and drop out (repeatedly, as reghdfe drops singletons); ``adjusted_n`` counts the
    pairs that remain.

Interval and test
    Cluster-robust (example) sandwich variance of the coefficient with Stata's CR1 small-sample
    factors ``G / (G - 1) * (n - 1) / (n - S - 1)`` (G examples, n pairs, S word strata: the
    example effects are nested in the clusters and cost nothing) and Student t quantiles on
    ``G - 1`` degrees of freedom. One example's pairs over several words are correlated (a
    fragile example flips under many words); clustering keeps the interval honest about that.
    The sandwich is floored by two model-based variances (independent pairs, residual variance
    over ``n - S - G`` degrees of freedom): the pooled one, and one with each word stratum's own
    residual variance, ``sum(x_t**2 * s2[stratum]) / sxx**2``. The second matters where a kind
    leans to the words that hurt (their pairs flip more, so their residuals vary more): there
    the CR1 sandwich alone was narrow (1,000 simulated studies without an operation effect:
    6.7% rejections, 5.9% with the floor; docs/scoring.md). Neither goes below what one flip
    in the ``n`` pairs would give (a binomial flip rate ``1 / (n + 2)``), so that a scope
    without flips never gets a zero-width interval. ``adjusted_p`` is the two-sided t test of
    0; ``adjusted_p_holm`` is Holm-adjusted over the kinds of one (model, language, source,
    scope) table. :data:`VARIANCES` holds the alternatives compared (CR2 / CR3 on the absorbed
    regressor, which ignore the word strata's leverage and came out narrower).

Fragility diagnostic
    ``adjusted_warning`` (:func:`fragility_tilt`): a sentence when the kind lands more often on
    fragile examples (leave-one-out flip share of the example's other pairs, within word strata;
    p < :data:`TILT_ALPHA` and |r| >= :data:`TILT_MIN_R`), null otherwise.

Same bytes everywhere
    Dot products are exact products summed by ``math.fsum`` (no BLAS), and the four figures are
    rounded to :data:`DIGITS` decimals before they reach an artifact.

Assumptions: within a word's stratum the kind of typo is assigned independently of anything
else about the example that changes the outcome (evalpipe draws operations by hashed seeds). The
effect of a kind is taken as additive on the accuracy scale and common to the words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from evalpipe.scoring import demean, exact_sums
from evalpipe.scoring.multiple_testing import holm
from evalpipe.scoring.names import POOLED

METHOD = "two-way fixed effects (word x original correctness, example), example-clustered"
ADJUSTED_COLUMNS = [
    "adjusted_delta", "adjusted_ci_low", "adjusted_ci_high", "adjusted_p", "adjusted_p_holm",
    "adjusted_n", "adjusted_warning",
]  # fmt: skip
# Decimal places of the adjusted figures written to data/impact (their last bits depend on the
# floating-point path; 12 places keep every figure far beyond the 4 the tables print).
DIGITS = 12
# The fragility diagnostic warns below this p and from this correlation on (a planted tilt gave
# r = 0.1-0.2; without one |r| stayed below 0.05 in the pooled scope).
TILT_ALPHA = 0.01
TILT_MIN_R = 0.05
# What the estimator reads of the pairs table (evalpipe.scoring.pairs), besides the kind.
_NEEDS = ("model", "language", "benchmark", "cluster", "variant", "word_rank", "correct_original",
          "correct_perturbed")  # fmt: skip

# Variances of the coefficient (:func:`_variance`) and the one the tables use: CR1 floored by
# the pooled and the per-stratum model-based variance (``cr1h``).
VARIANCES = ("cr1", "cr1h", "cr2", "cr2h", "cr3")
VARIANCE = "cr1h"

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
    if matrix.size >= demean.COMPILED_FROM and len(groups):
        # the same operations in the same order, compiled (evalpipe.scoring.demean)
        rows = np.ascontiguousarray(matrix)
        demean.absorb_compiled(rows, groups, tolerance=_TOLERANCE, max_sweeps=_MAX_SWEEPS)
        matrix[...] = rows
        return out
    # Contiguous columns (a column of a 2-D array is strided): the same sums in the same order.
    columns = [np.array(matrix[:, j]) for j in range(matrix.shape[1])]
    sizes = [np.bincount(g).astype(float) for g in groups]
    # Where every level holds a row, the largest shift of the rows is the largest mean's.
    present = [None if size.all() else size > 0 for size in sizes]
    for _ in range(_MAX_SWEEPS):
        change = 0.0
        for g, size, has in zip(groups, sizes, present, strict=True):
            for column in columns:
                means = np.bincount(g, weights=column, minlength=size.size) / size
                moved = means if has is None else means[has]
                change = max(change, float(np.abs(moved).max(initial=0.0)))
                column -= means.take(g)
        if change < _TOLERANCE:
            break
    for j, column in enumerate(columns):
        matrix[:, j] = column
    return out


def codes_of(values: np.ndarray) -> np.ndarray:
    """``np.unique(values, return_inverse=True)[1]``: 0..k-1 in sorted order of the values
    (without a sort when they are small non-negative integers).

    >>> codes_of(np.array([7, 3, 7, 9])).tolist()
    [1, 0, 1, 2]
    """
    v = np.asarray(values).ravel()
    if v.dtype.kind in "iu" and v.size:
        low, high = int(v.min()), int(v.max())
        if low >= 0 and high < 4 * v.size + 1024:
            present = np.zeros(high + 1, dtype=bool)
            present[v] = True
            return (np.cumsum(present) - 1).astype(np.intp)[v]
    return np.unique(v, return_inverse=True)[1].ravel()


def exact_sum(values: np.ndarray) -> float:
    """``math.fsum`` of an array (its correctly rounded sum), on integers instead of a list.

    Each value is a 53-bit integer times a power of two; the integers are added per power of two
    (exactly: in two halves of 27 bits, whose sums doubles hold without rounding), the sums are
    combined into one Python integer and divided once, which rounds correctly as ``math.fsum``
    does.

    >>> values = [1e16, 1.0, -1e16] + [0.1] * 40
    >>> exact_sum(np.array(values)) == math.fsum(values)
    True
    """
    v = np.ascontiguousarray(values, dtype=float).ravel()
    if v.size < 32 or v.size >= 1 << 26 or not np.isfinite(v).all():
        return math.fsum(v.tolist())
    if v.size >= exact_sums.COMPILED_FROM:
        return exact_sums.exact_sum_compiled(v)  # the same sum in one compiled pass
    mantissa, exponent = np.frexp(v)
    whole = (mantissa * 9007199254740992.0).astype(np.int64)  # times 2**53: an integer
    base = int(exponent.min())
    bins = exponent - base
    sums_high = np.bincount(bins, weights=whole >> 26)
    sums_low = np.bincount(bins, weights=whole & ((1 << 26) - 1))
    total = 0
    for k in np.flatnonzero((sums_high != 0) | (sums_low != 0)).tolist():
        total += ((int(sums_high[k]) << 26) + int(sums_low[k])) << k
    shift = base - 53
    return float(total << shift) if shift >= 0 else total / (1 << -shift)


def _informative(stratum: np.ndarray, example: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Pairs that inform the contrast: in a stratum holding this kind and another, and of an
    example with two or more such pairs (a single pair is all absorbed by its example's effect).
    Dropping one kind of pair can create the other, so repeat until nothing changes (reghdfe's
    singleton rule). ``stratum`` and ``example`` are codes 0..k-1 (:func:`codes_of`)."""
    keep = np.ones(x.size, dtype=bool)
    every = True  # all pairs kept: the codes are already 0..k-1
    while True:
        s = stratum if every else codes_of(stratum[keep])
        share = np.bincount(s, weights=x[keep]) / np.bincount(s)
        informative = (share[s] > 0) & (share[s] < 1)
        e = example if every else codes_of(example[keep])
        informative &= np.bincount(e)[e] >= 2
        if informative.all():
            return keep
        index = np.flatnonzero(keep)
        keep[index[~informative]] = False
        every = False
        if not keep.any():
            return keep


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """A dot product whose result does not depend on the BLAS kernel or thread count: exact
    products, correctly rounded sum (the BLAS ``@`` rounds differently per kernel)."""
    return exact_sum(a * b)


def fragility_tilt(
    diff: np.ndarray,
    indicator: np.ndarray,
    *,
    original: np.ndarray,
    strata: np.ndarray,
    examples: np.ndarray,
) -> tuple[float | None, float | None]:
    """Does this kind of typo land more often on fragile examples? Correlation and p-value.

    An example's fragility, seen from one of its pairs, is the share of its *other* originally
    correct pairs that turned wrong (leave-one-out, so a pair's own flip does not count). Both it
    and the kind indicator are centred within the word strata (the comparison the adjusted
    estimate makes); the slope of one on the other is tested with an example-clustered sandwich
    on ``G - 1`` degrees of freedom. The example effects of the adjusted estimator remove an
    additive fragility, not one that multiplies a word's harm: a kind drawn more often on fragile
    examples then looks harmful, which this diagnostic flags.

    Returns
    -------
    (r, p): correlation and two-sided p; (None, None) when it cannot be computed.
    """
    loss = ((np.asarray(original, dtype=bool)) & (np.asarray(diff) < 0)).astype(float)
    correct = np.asarray(original, dtype=bool).astype(float)
    e = codes_of(examples)
    lost = np.bincount(e, weights=loss)[e] - loss
    others = np.bincount(e, weights=correct)[e] - correct
    usable = others > 0
    if usable.sum() < 3:
        return None, None
    s = codes_of(np.asarray(strata)[usable])
    f = absorb(lost[usable] / others[usable], [s])
    x = absorb(np.asarray(indicator, dtype=float)[usable], [s])
    sxx, sff = _dot(x, x), _dot(f, f)
    if sxx < 1e-9 or sff < 1e-12:
        return None, None
    sxf = _dot(x, f)
    r = sxf / math.sqrt(sxx * sff)
    slope = sxf / sff
    resid = x - slope * f
    cluster = codes_of(e[usable])
    g = int(cluster.max()) + 1
    if g < 3:
        return None, None
    scores = np.bincount(cluster, weights=f * resid, minlength=g)
    variance = _dot(scores, scores) / sff**2 * g / (g - 1)
    if variance <= 0:
        return r, None
    from scipy import stats

    p = float(2.0 * stats.t.sf(abs(slope) / math.sqrt(variance), g - 1))
    return r, p


def adjusted_effect(
    diff: np.ndarray,
    indicator: np.ndarray,
    *,
    strata: np.ndarray,
    examples: np.ndarray,
    level: float = 0.95,
    original: np.ndarray | None = None,
) -> dict[str, float | int | str | None]:
    """The adjusted effect of one kind of typo (:data:`ADJUSTED_COLUMNS` but the Holm column).

    Parameters
    ----------
    diff : paired difference per pair (-1, 0, 1).
    indicator : True where the pair's typos are of the kind.
    strata : integer code of the pair's (benchmark, word, original correctness) stratum.
    examples : integer code of the pair's (benchmark, example); also the cluster.
    level : confidence level.
    original : original correctness per pair, for the fragility diagnostic (taken as
        ``diff <= 0`` when None).

    Returns
    -------
    dict
        ``adjusted_delta, adjusted_ci_low, adjusted_ci_high, adjusted_p`` (None when no stratum
        holds both this kind and another), ``adjusted_n`` and ``adjusted_warning``.

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
    empty: dict[str, float | int | str | None] = {
        "adjusted_delta": None,
        "adjusted_ci_low": None,
        "adjusted_ci_high": None,
        "adjusted_p": None,
        "adjusted_n": 0,
        "adjusted_warning": None,
    }
    if d.size == 0:
        return empty
    return _coded_effect(
        d, x, stratum=codes_of(strata), example=codes_of(examples), level=level, original=original
    )


def _coded_effect(
    d: np.ndarray,
    x: np.ndarray,
    *,
    stratum: np.ndarray,
    example: np.ndarray,
    level: float,
    original: np.ndarray | None,
    compare: Sequence[str] = (),
) -> dict[str, float | int | str | None]:
    """:func:`adjusted_effect` of pairs (at least one) whose strata and examples are coded
    0..k-1 (:func:`codes_of`), ``d`` and ``x`` as floats; with ``se_<method>`` and
    ``dof_<method>`` of each method in ``compare`` (:data:`VARIANCES`) when given."""
    empty: dict[str, float | int | str | None] = {
        "adjusted_delta": None,
        "adjusted_ci_low": None,
        "adjusted_ci_high": None,
        "adjusted_p": None,
        "adjusted_n": 0,
        "adjusted_warning": None,
    }
    keep = _informative(stratum, example, x)
    if not keep.any():
        return empty
    warning = None
    r, tilt_p = fragility_tilt(
        d[keep], x[keep] > 0,
        original=(d[keep] <= 0) if original is None else np.asarray(original, dtype=bool)[keep],
        strata=stratum[keep], examples=example[keep],
    )  # fmt: skip
    if r is not None and tilt_p is not None and tilt_p < TILT_ALPHA and abs(r) >= TILT_MIN_R:
        warning = (
            f"this kind lands more often on {'more' if r > 0 else 'less'} fragile examples "
            f"(r = {r:.3f}, p = {tilt_p:.2g}): the adjusted estimate may be biased"
        )
    fit = _fit(d[keep], x[keep], stratum[keep], example[keep])
    if fit is None:  # the kind is fully explained by the examples: nothing left to compare
        return {**empty, "adjusted_n": int(keep.sum()), "adjusted_warning": warning}
    beta = fit["beta"]
    variance, dof = _variance(fit, VARIANCE)
    se = math.sqrt(variance)
    from scipy import stats  # SciPy takes a second to import: only when needed

    half = float(stats.t.ppf(0.5 + level / 2.0, dof)) * se
    p = float(2.0 * stats.t.sf(abs(beta) / se, dof))
    extra = {}
    for method in compare:
        other, other_dof = _variance(fit, method)
        extra[f"se_{method}"], extra[f"dof_{method}"] = math.sqrt(other), other_dof
    # Rounded: the last bits of the estimate move with the floating-point path (BLAS kernel,
    # thread count, summation order), which would change the artifact's bytes between machines.
    return {
        "adjusted_delta": round(beta, DIGITS) + 0.0,
        "adjusted_ci_low": round(beta - half, DIGITS) + 0.0,
        "adjusted_ci_high": round(beta + half, DIGITS) + 0.0,
        "adjusted_p": round(min(1.0, p), DIGITS),
        "adjusted_n": fit["n"],
        "adjusted_warning": warning,
        **extra,
    }


def _fit(d: np.ndarray, x: np.ndarray, stratum: np.ndarray, example: np.ndarray) -> dict | None:
    """The coefficient of ``x`` with both sets of effects absorbed, and what its variances need
    (informative pairs only); None when nothing of ``x`` is left after absorbing."""
    groups = [codes_of(stratum), codes_of(example)]
    resid = absorb(np.column_stack([d, x]), groups)
    d_t, x_t = resid[:, 0], resid[:, 1]
    sxx = _dot(x_t, x_t)
    if sxx < 1e-9:
        return None
    beta = _dot(x_t, d_t) / sxx
    e = d_t - beta * x_t
    cluster = groups[1]
    n_clusters = int(cluster.max()) + 1
    return {
        "beta": beta,
        "sxx": sxx,
        "e": e,
        "scores": np.bincount(cluster, weights=x_t * e, minlength=n_clusters),
        "cluster": cluster,
        "x_t": x_t,
        "stratum": groups[0],
        "n": int(d.size),
        "n_strata": int(groups[0].max()) + 1,
        "n_clusters": n_clusters,
    }


def _variance(fit: dict, method: str) -> tuple[float, float]:
    """Variance of the coefficient and its t degrees of freedom, by ``method``:

    - ``cr1``: the CR1 sandwich (Stata's factors), t on ``G - 1`` df;
    - ``cr1h``: ``cr1``, floored by the per-stratum model-based variance (the tables' method);
    - ``cr2``: Bell-McCaffrey on the absorbed regressor (each cluster's score over
      ``sqrt(1 - h_g)``, ``h_g`` its share of ``sum(x_t**2)``) with Satterthwaite df under
      independent errors; the word strata's leverage is not in ``h_g``;
    - ``cr2h``: ``cr2`` floored as ``cr1h``;
    - ``cr3``: the jackknife counterpart of ``cr2`` (scores over ``1 - h_g``), ``G - 1`` df.

    Every method is floored by the pooled model-based variance (residual variance over
    ``n - S - G`` df) and at what one flip in the ``n`` pairs would give (a binomial flip rate
    ``1 / (n + 2)``), so that a scope without flips never gets a zero-width interval."""
    sxx, n, g = fit["sxx"], fit["n"], fit["n_clusters"]
    n_strata = fit["n_strata"]
    scores = fit["scores"]
    if method in ("cr2", "cr2h", "cr3"):
        # each cluster's leverage on the coefficient: its share of sum(x_t ** 2)
        x_t = fit["x_t"]
        h = np.bincount(fit["cluster"], weights=x_t * x_t, minlength=g) / sxx
        one_minus_h = np.maximum(1.0 - h, 1e-12)
    dof = float(max(g - 1, 1))
    if method in ("cr1", "cr1h"):
        # Stata's CR1 factors: clusters, and the word strata's fixed effects (not nested in the
        # example clusters, so they cost residual degrees of freedom; the example effects do not).
        small_sample = g / max(g - 1, 1) * (n - 1) / max(n - n_strata - 1, 1)
        robust = small_sample * _dot(scores, scores) / sxx**2
    elif method in ("cr2", "cr2h"):
        # Bell-McCaffrey: each cluster's score divided by sqrt(1 - h_g) (the rank-one
        # (I - H_gg)^(-1/2) of the absorbed regressor), Satterthwaite df under a working model
        # of independent errors: 1 / (sum h^2 + (sum t)^2 - sum t^2), t = h^2 / (1 - h).
        robust = exact_sum(scores * scores / one_minus_h) / sxx**2
        t = h * h / one_minus_h
        dof = 1.0 / (exact_sum(h * h) + exact_sum(t) ** 2 - exact_sum(t * t))
        dof = max(1.0, min(dof, float(g - 1)))
    elif method == "cr3":
        robust = (g - 1) / g * exact_sum(scores * scores / one_minus_h**2) / sxx**2
    else:
        raise ValueError(f"unknown variance method {method!r}; expected one of {VARIANCES}")
    residual_df = max(n - n_strata - g, 1)
    model = _dot(fit["e"], fit["e"]) / residual_df / sxx
    rate = 1.0 / (n + 2.0)
    floor = rate * (1.0 - rate) / sxx
    if method in ("cr1h", "cr2h"):
        # model-based with each word stratum's own residual variance (independent pairs)
        s = fit["stratum"]
        per = np.bincount(s, weights=fit["e"] ** 2) / np.bincount(s) * (n / residual_df)
        model = max(model, exact_sum(fit["x_t"] ** 2 * per[s]) / sxx**2)
    return max(robust, model, floor), dof


def adjusted_effects(
    pairs: pd.DataFrame, *, by: str, level: float = 0.95, compare: Sequence[str] = ()
) -> pd.DataFrame:
    """Adjusted effect of every kind of typo, per (model, language, scope).

    Parameters
    ----------
    pairs : rows of the pairs table (:mod:`evalpipe.scoring.pairs`: ``model, language,
        benchmark, cluster, variant, word_rank, correct_original, correct_perturbed`` and the
        ``by`` column; ``cluster`` is the example); pairs whose ``by`` is null are left out.
    by : the column holding the kind (``"op"`` or ``"script"``); its labels are taken as they
        come, so new operation types need no change here.
    level : confidence level.
    compare : variance methods (:data:`VARIANCES`) whose standard error and t degrees of freedom
        are added as ``se_<method>``, ``dof_<method>`` (perf/adjusted_effects.py compares them
        on the same fits); none by default.

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
    [['pooled', 'delete', 0], ['pooled', 'insert', 0], ['b', 'delete', 0], ['b', 'insert', 0]]
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
    labels, kinds = pd.factorize(pairs[by].astype(str), sort=True)
    original = pairs["correct_original"].astype(bool).to_numpy()
    rows = []
    for (model, language), index in pairs.groupby(["model", "language"], sort=True).indices.items():
        scopes = [(POOLED, index)] + [
            (str(name), index[benchmark[index] == name]) for name in sorted(set(benchmark[index]))
        ]
        for scope, rows_in in scopes:
            labels_in = labels[rows_in]
            # what adjusted_effect computes of the scope's pairs, once for all kinds
            d_in = np.asarray(diff[rows_in], dtype=float)
            stratum_in, example_in = codes_of(strata[rows_in]), codes_of(examples[rows_in])
            for code in np.unique(labels_in).tolist():
                kind = str(kinds[code])
                effect = _coded_effect(
                    d_in,
                    np.asarray(labels_in == code, dtype=float),
                    stratum=stratum_in,
                    example=example_in,
                    level=level,
                    original=original[rows_in],
                    compare=compare,
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
        if column not in ("adjusted_n", "adjusted_warning"):
            table[column] = table[column].astype(float)
    table["adjusted_warning"] = table["adjusted_warning"].astype(object)
    table["adjusted_n"] = table["adjusted_n"].astype("int64")
    extra = [c for c in table.columns if c.startswith(("se_", "dof_"))]
    return table[[*keys, *ADJUSTED_COLUMNS, *extra]]


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
