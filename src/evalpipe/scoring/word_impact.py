"""Per-word, per-operation and per-script impact of typos: the study's answer table.

Input: scored rows (``data/scored/*.parquet``), the perturbation records of the same rows
(``data/perturbed/*.parquet``: ``perturbations`` gives each operation's ``op`` and characters) and
the word lists (``data/words/{language}.parquet``). Output: one row per (model, language, source,
scope, word), where ``scope`` is ``"pooled"`` (all of the language's benchmarks) or a benchmark
name; the same per operation type and per script class. Definitions (docs/scoring.md):

Pairs and weighting
    A pair is one perturbed row (an example in which at least one typo of the word fired) and the
    same example's original row, for the same model. Within a benchmark every pair weighs the same.
    Pooled over benchmarks the pairs are **example-weighted**: ``delta`` is the mean paired
    difference over all pairs of all benchmarks, i.e. the stratified paired delta
    ``sum_b (n_b / N) delta_b``. Each pair is compared with itself, so benchmarks with different
    baseline accuracy cannot fake an effect (the confound of the unpaired accuracy-by-rate plot);
    weighting by n_b is the precision-weighted choice when the effect is common, and it avoids
    letting a benchmark where the word occurs in 2 examples count as much as one with 200 (which an
    equal weight per benchmark would). ``n_benchmarks`` and the per-benchmark rows show how the
    pooled figure is made up.

Typo draws
    With ``perturb.draws: K`` an example holds up to K pairs per word, one per draw in which a
    typo of the word fired. They share the example's cluster, so ``delta`` averages the word's
    effect over where its typos landed and the interval's design effect counts the draws of one
    example as dependent. ``n`` counts (example, word) observations, each once whatever its
    draws (in the word table: examples); ``n_c2i``, ``n_i2c`` and the rates count pairs. With
    one draw the two counts agree.

Confidence interval
    Tango's score interval of the paired difference (:mod:`evalpipe.scoring.intervals`) on the
    row's pooled 2x2 counts; it never has zero width. In the word tables every example contributes
    one pair per word (per typo draw), however many occurrences it carries. In the operation and
    script tables one example appears once per word that hit it: the counts are divided by the
    design effect of those example clusters (>= 1, CR2) first, and the limits use a Student t
    quantile on the clusters' degrees of freedom. ``ci_method`` names the method
    (``tango_score``, ``+deff`` when a design effect widened it), ``design_effect`` the factor.

Tests
    ``mcnemar_p``: the score test the interval inverts (McNemar's asymptotic statistic on the
    counts divided by the design effect, same reference distribution), so the interval excludes 0
    exactly when ``mcnemar_p < 1 - level``; 1.0 without discordant pairs. ``mcnemar_exact_p``:
    the exact McNemar test on the same counts, for reference. ``p_holm`` / ``p_bh``: Holm and
    Benjamini-Hochberg (Gilbert's discrete version) of ``mcnemar_p`` over the rows of the same
    (model, language, source, scope) table that can reach significance at ``1 - level``
    (Tarone's screening; the others get 1).

Upstream impact
    ``per_occurrence_impact = (acc_base - acc_merged) / perturbed_occurrences``, where acc_base is
    the accuracy of all original rows in the scope and acc_merged the same with this word's
    perturbed answers substituted: ``(n_c2i - n_i2c) / n_base / perturbed_occurrences``. Pooled,
    n_base is the number of examples of all the language's benchmarks.

Operation and script attribution
    A pair is attributed to an operation type (replace / insert / delete / transpose / conversion)
    when every operation that fired in it is of that type, and to ``mixed`` otherwise; likewise for
    script classes (the class of the (first) character replaced, deleted, swapped or converted, or
    of the character inserted: hiragana, katakana, kanji,
    latin, digit, other). Each pair thus lands in exactly one row, so the rows partition the pairs,
    deltas are not contaminated by co-occurring kinds of typo, and nothing is dropped.

Sort order
    Within a table: reliable rows first (``small_n`` False), then by ``delta`` ascending (most
    harmful first; undefined last), then ``mcnemar_p``, then frequency rank and word.
    ``impact_rank`` numbers the rows in that order from 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.errors import InputError
from evalpipe.perturb.scripts import char_class
from evalpipe.scoring.adjusted import with_adjusted
from evalpipe.scoring.intervals import (
    DEFAULT_METHOD,
    method_label,
    minimum_attainable_p,
    paired_score,
)
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
from evalpipe.scoring.pairing import MIXED as MIXED
from evalpipe.scoring.pairing import attribution, pair_rows
from evalpipe.scoring.robustness import clustered_mcnemar, pdr
from evalpipe.scoring.scorer import ORIGINAL, check_columns

POOLED = "pooled"
OPERATIONS = ("replace", "insert", "delete", "transpose", "conversion")  # perturb.ops.OPS
SCRIPTS = ("hiragana", "katakana", "kanji", "latin", "digit", "other")
# evalpipe.perturb.scripts classes -> the coarse classes of the tables.
SCRIPT_OF_CLASS = {
    "hiragana": "hiragana",
    "katakana": "katakana",
    "halfwidth_katakana": "katakana",
    "kanji": "kanji",
    "latin_lower": "latin",
    "latin_upper": "latin",
    "fullwidth_lower": "latin",
    "fullwidth_upper": "latin",
    "digit": "digit",
    "fullwidth_digit": "digit",
}
SCORED_COLUMNS = ("benchmark", "example_id", "variant", "word_rank", "correct", "model")
STAT_COLUMNS = [
    "n", "n_benchmarks", "accuracy_original", "accuracy_perturbed", "delta", "ci_low", "ci_high",
    "ci_method", "design_effect", "pdr", "flip_c2i", "flip_i2c", "n_c2i", "n_i2c", "mcnemar_p",
    "p_holm", "p_bh", "mcnemar_exact_p",
    "occurrences", "perturbed_occurrences", "per_occurrence_impact", "unparsed_rate", "small_n",
    "impact_rank",
]  # fmt: skip
WORD_COLUMNS = [
    "model", "language", "source", "scope", "word", "variant", "lemma", "pos", "rank",
    "frequency_score", *STAT_COLUMNS,
]  # fmt: skip
OPERATION_COLUMNS = ["model", "language", "source", "scope", "op", "n_words",
                     *STAT_COLUMNS]  # fmt: skip
SCRIPT_COLUMNS = ["model", "language", "source", "scope", "script", "n_words",
                  *STAT_COLUMNS]  # fmt: skip


@dataclass(frozen=True)
class ImpactSettings:
    """Interval and reporting settings (params ``scoring.confidence_level`` and the ``impact``
    section)."""

    level: float = 0.95
    small_n: int = 30
    method: str = DEFAULT_METHOD


# ----------------------------------------------------------------------------- bootstrap


def _codes(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    return np.unique(array.astype(str), return_inverse=True)[1].astype(np.int64)


def cluster_bootstrap_ci(
    diff: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Any] | np.ndarray | None = None,
    strata: Sequence[Any] | np.ndarray | None = None,
    samples: int,
    level: float,
    seed: int,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of ``mean(diff)`` resampling whole clusters within strata.

    No longer used by the tables: with no discordant pair it gives [0, 0], and a stratum of one
    pair resamples into a single value. Kept as the "before" of ``perf/interval_coverage.py``
    and :mod:`evalpipe.scoring.simulate`.

    Each bootstrap sample draws, within every stratum, as many clusters as it has, with
    replacement, and takes the row mean of the drawn clusters' rows. Clusters with the same (sum,
    size) are interchangeable, so a draw is a multinomial over those types: exact, and cheap even
    for thousands of examples.

    Parameters
    ----------
    diff : one value per row (``correct_perturbed - correct_original``: -1, 0 or 1).
    clusters : cluster key per row (the example); None makes every row its own cluster (the naive
        bootstrap).
    strata : stratum per row (the benchmark); None for one stratum.
    samples : bootstrap resamples; 0 gives (None, None).
    level : confidence level in (0, 1).
    seed : RNG seed (hash the full key with :func:`~evalpipe.seeding.hashed_seed`).

    Returns
    -------
    (low, high), or (None, None) for no rows or no resamples.

    Examples
    --------
    >>> cluster_bootstrap_ci([0, 0, 0], samples=100, level=0.9, seed=1)
    (0.0, 0.0)
    """
    d = np.asarray(diff, dtype=float)
    n = d.size
    if n == 0 or samples <= 0:
        return None, None
    if not 0 < level < 1:
        raise InputError(f"scoring.confidence_level: expected a value in (0, 1), got {level}")
    # Sorted codes (np.unique), so the result does not depend on the order of the rows.
    cluster = np.arange(n) if clusters is None else _codes(clusters)
    stratum = np.zeros(n, dtype=np.int64) if strata is None else _codes(strata)
    width = int(cluster.max()) + 1
    keys, inverse = np.unique(stratum * width + cluster, return_inverse=True)
    totals = np.bincount(inverse, weights=d)
    lengths = np.bincount(inverse).astype(float)
    types, counts = np.unique(
        np.column_stack([keys // width, totals, lengths]), axis=0, return_counts=True
    )
    rng = np.random.default_rng(seed)
    sums = np.zeros(int(samples))
    sizes = np.zeros(int(samples))
    for code in np.unique(types[:, 0]):
        mask = types[:, 0] == code
        weights = counts[mask].astype(float)
        draws = rng.multinomial(int(weights.sum()), weights / weights.sum(), size=int(samples))
        sums += draws @ types[mask, 1]
        sizes += draws @ types[mask, 2]
    deltas = sums / sizes
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(deltas, [alpha, 1.0 - alpha])
    return float(low) + 0.0, float(high) + 0.0


# ----------------------------------------------------------------------------- pairs


def _script_of_operation(op: Mapping[str, Any]) -> str:
    # An insertion is drawn from the class of the character it stands next to, so the inserted
    # character names the script; a replacement or deletion acts on the original character.
    ch = op.get("new_char") if op.get("op") == "insert" else op.get("original_char")
    if not ch:
        return "other"
    return SCRIPT_OF_CLASS.get(char_class(str(ch)[0]) or "", "other")


def impact_pairs(
    scored: pd.DataFrame,
    *,
    language: str,
    perturbations: pd.DataFrame | None = None,
    source: str = "scored",
) -> pd.DataFrame:
    """One benchmark's pairs (:func:`evalpipe.scoring.pairing.pair_rows`) with their typo kinds.

    Parameters
    ----------
    scored : one benchmark's scored rows (``benchmark, example_id, variant, word_rank, correct,
        model``; optional ``draw, occurrences, perturbed_occurrences, parse_status``).
    language : the benchmark's language (the word list its target words come from).
    perturbations : the benchmark's perturbed rows (``benchmark, example_id, word_rank,
        perturbations``; optional ``draw``), for the operation and script attribution; None
        leaves both null.
    source : file name for error messages.

    Returns
    -------
    DataFrame
        :data:`evalpipe.scoring.pairing.PAIR_COLUMNS`.

    Raises
    ------
    InputError
        A missing column, a perturbed row without its original, or two originals for one example.
    """
    check_columns(scored, SCORED_COLUMNS, source=source)
    kinds = (
        attribution(perturbations, script_of=_script_of_operation, source=source)
        if perturbations is not None
        else None
    )
    return pair_rows(scored, language=language, kinds=kinds, source=source)


def base_counts(scored: pd.DataFrame, *, language: str, source: str = "scored") -> pd.DataFrame:
    """Number of original rows per (model, benchmark): the n_base of the upstream impact.

    Parameters
    ----------
    scored : scored rows of one benchmark.
    language : its language.
    source : file name for error messages.

    Returns
    -------
    DataFrame with ``model, language, benchmark, n_base``.
    """
    check_columns(scored, ("model", "benchmark", "variant"), source=source)
    originals = scored.loc[scored["variant"] == ORIGINAL]
    counts = (
        originals.groupby(["model", "benchmark"], sort=True).size().rename("n_base").reset_index()
    )
    counts.insert(1, "language", language)
    return counts


# ----------------------------------------------------------------------------- statistics


def paired_effect(group: pd.DataFrame, *, n_base: int, settings: ImpactSettings) -> dict[str, Any]:
    """The statistics of one row of an impact table from its pairs.

    Parameters
    ----------
    group : pairs (:func:`impact_pairs` columns plus integer ``_cluster`` (example) and
        ``_stratum`` (benchmark) codes), possibly of several benchmarks.
    n_base : original rows in the scope (for the per-occurrence impact).
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    dict with the :data:`STAT_COLUMNS` except ``p_holm, p_bh, impact_rank``.
    """
    o = group["correct_original"].to_numpy(dtype=bool)
    p = group["correct_perturbed"].to_numpy(dtype=bool)
    n = int(o.size)
    # The typo draws of one (example, word) are one observation: n counts those, the flip counts
    # count pairs (one per draw). With one draw the two are the same.
    units = len(group[["_cluster", "word_rank"]].drop_duplicates()) if n else 0
    n_c2i = int((o & ~p).sum())
    n_i2c = int((~o & p).sum())
    acc_o = float(o.mean()) if n else None
    acc_p = float(p.mean()) if n else None
    score = paired_score(
        o, p, clusters=group["_cluster"].to_numpy(), level=settings.level, method=settings.method
    )
    low, high, deff = score.low, score.high, score.design_effect
    occurrences = int(group["occurrences"].sum())
    fired = int(group["perturbed_occurrences"].sum())
    return {
        "n": units,
        "n_benchmarks": int(group["benchmark"].nunique()),
        "accuracy_original": acc_o,
        "accuracy_perturbed": acc_p,
        "delta": None if n == 0 else acc_p - acc_o,
        "ci_low": low,
        "ci_high": high,
        "ci_method": method_label(settings.method, deff) if n else None,
        "design_effect": deff,
        "pdr": pdr(acc_o, acc_p),
        "flip_c2i": n_c2i / n if n else None,
        "flip_i2c": n_i2c / n if n else None,
        "n_c2i": n_c2i,
        "n_i2c": n_i2c,
        "mcnemar_p": score.p_value,
        "mcnemar_exact_p": clustered_mcnemar(n_c2i, n_i2c, deff),
        "occurrences": occurrences,
        "perturbed_occurrences": fired,
        "per_occurrence_impact": ((n_c2i - n_i2c) / n_base / fired if fired and n_base else None),
        "unparsed_rate": float(group["unparsed_perturbed"].mean()) if n else None,
        "small_n": units < settings.small_n,
    }


def _adjust_and_sort(
    table: pd.DataFrame, tie_breakers: Sequence[str], *, alpha: float = 0.05
) -> pd.DataFrame:
    """Holm / BH within each (model, language, source, scope) family, then the impact order."""
    if table.empty:
        return table
    family = ["model", "language", "source", "scope"]
    table = table.copy()
    table["p_holm"] = np.nan
    table["p_bh"] = np.nan
    for _, index in table.groupby(family, sort=False).groups.items():
        raw = table.loc[index, "mcnemar_p"].to_numpy(dtype=float)
        # Only the tests that can reach significance count in the family (Tarone / Gilbert).
        floor = minimum_attainable_p(
            table.loc[index, ["n_c2i", "n_i2c"]].sum(axis=1).to_numpy(dtype=float),
            table.loc[index, "design_effect"].to_numpy(dtype=float),
        )
        table.loc[index, "p_holm"] = holm(raw, min_p=floor, alpha=alpha)
        table.loc[index, "p_bh"] = benjamini_hochberg(raw, min_p=floor, alpha=alpha)
    # Scopes: pooled first, then benchmarks alphabetically.
    table["_scope_order"] = (table["scope"] != POOLED).astype(int)
    table["_delta"] = table["delta"].astype(float).fillna(np.inf)
    table = table.sort_values(
        ["model", "language", "source", "_scope_order", "scope", "small_n", "_delta",
         "mcnemar_p", *tie_breakers],
        kind="stable",
    ).drop(columns=["_scope_order", "_delta"])  # fmt: skip
    table["impact_rank"] = table.groupby(family, sort=False).cumcount() + 1
    return table.reset_index(drop=True)


def _n_base(bases: pd.DataFrame, model: str, language: str, scope: str) -> int:
    hit = bases.loc[(bases["model"] == model) & (bases["language"] == language)]
    if scope != POOLED:
        hit = hit.loc[hit["benchmark"] == scope]
    return int(hit["n_base"].sum())


def _grouped_table(
    pairs: pd.DataFrame,
    bases: pd.DataFrame,
    sources: Mapping[str, str],
    by: Sequence[str],
    settings: ImpactSettings,
) -> list[dict[str, Any]]:
    """Stats per (model, language, scope, *by) for the pooled scope and each benchmark."""
    rows: list[dict[str, Any]] = []
    if pairs.empty:
        return rows
    # Integer cluster (example) and stratum (benchmark) codes, computed once for all groups.
    pairs = pairs.assign(
        _cluster=_codes((pairs["benchmark"] + "\x1f" + pairs["example_id"].astype(str)).to_numpy()),
        _stratum=_codes(pairs["benchmark"].to_numpy()),
    )
    for (model, language), lang_pairs in pairs.groupby(["model", "language"], sort=True):
        scopes = [(POOLED, lang_pairs)] + [
            (str(name), bench_pairs)
            for name, bench_pairs in lang_pairs.groupby("benchmark", sort=True)
        ]
        for scope, scope_pairs in scopes:
            n_base = _n_base(bases, str(model), str(language), scope)
            for keys, group in scope_pairs.groupby(list(by), sort=True, dropna=True):
                keys = keys if isinstance(keys, tuple) else (keys,)
                stats = paired_effect(
                    group,
                    n_base=n_base,
                    settings=settings,
                )
                rows.append(
                    {
                        "model": str(model),
                        "language": str(language),
                        "source": sources.get(str(language)),
                        "scope": scope,
                        **dict(zip(by, keys, strict=True)),
                        "n_words": int(group["word_rank"].nunique()),
                        **stats,
                    }
                )
    return rows


def word_impact(
    pairs: pd.DataFrame,
    words: Mapping[str, pd.DataFrame],
    *,
    bases: pd.DataFrame,
    settings: ImpactSettings,
) -> pd.DataFrame:
    """The per-word impact table.

    Parameters
    ----------
    pairs : :func:`impact_pairs` of all benchmarks (concatenated).
    words : language -> its word list (``rank, word, lemma, pos, score, source``).
    bases : :func:`base_counts` of all benchmarks.
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    DataFrame
        :data:`WORD_COLUMNS`: one row per (model, language, source, scope, word variant); scope
        ``"pooled"`` or a benchmark; sorted by impact (module docstring).
    """
    sources = {lang: _source_of(frame, lang) for lang, frame in words.items()}
    rows = _grouped_table(pairs, bases, sources, ("word_rank", "variant"), settings)
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=WORD_COLUMNS)
    meta = []
    for language, frame in words.items():
        check_columns(frame, ("rank", "word"), source=f"data/words/{language}.parquet")
        meta.append(
            pd.DataFrame(
                {
                    "language": language,
                    "word_rank": frame["rank"].astype("int64").to_numpy(),
                    "word": frame["word"].astype(str).to_numpy(),
                    "lemma": frame["lemma"].to_numpy() if "lemma" in frame else None,
                    "pos": frame["pos"].to_numpy() if "pos" in frame else None,
                    "frequency_score": (
                        frame["score"].astype(float).to_numpy() if "score" in frame else np.nan
                    ),
                }
            )
        )
    table = table.merge(pd.concat(meta, ignore_index=True), on=["language", "word_rank"],
                        how="left", validate="many_to_one")  # fmt: skip
    # A rank missing from the word list (a stale list) still gets a row, named by its variant.
    table["word"] = table["word"].fillna(table["variant"].str.split("/").str[0])
    table = table.rename(columns={"word_rank": "rank"})
    table = table.drop(columns="n_words")
    table = _adjust_and_sort(table, ("rank", "variant"), alpha=1.0 - settings.level)
    return table[WORD_COLUMNS]


def _source_of(words: pd.DataFrame, language: str) -> str | None:
    if "source" not in words.columns or words.empty:
        return None
    values = sorted(set(words["source"].dropna().astype(str)))
    if len(values) > 1:
        raise InputError(
            f"data/words/{language}.parquet: column 'source': expected one word-list source, "
            f"got {values}"
        )
    return values[0] if values else None


def category_impact(
    pairs: pd.DataFrame,
    *,
    by: str,
    sources: Mapping[str, str | None],
    bases: pd.DataFrame,
    settings: ImpactSettings,
) -> pd.DataFrame:
    """Impact per operation type (``by="op"``) or script class (``by="script"``).

    Parameters
    ----------
    pairs : :func:`impact_pairs` of all benchmarks (with the perturbation records joined).
    by : ``"op"`` (the column name of the perturbation records) or ``"script"``.
    sources : language -> word-list source (for the ``source`` column).
    bases : :func:`base_counts` of all benchmarks.
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    DataFrame
        :data:`OPERATION_COLUMNS` or :data:`SCRIPT_COLUMNS`; one row per (model, language, scope,
        kind) with pairs; pairs with several kinds of typo form the ``mixed`` row.
    """
    if by not in ("op", "script"):
        raise ValueError(f"by: expected 'op' or 'script', got {by!r}")
    columns = OPERATION_COLUMNS if by == "op" else SCRIPT_COLUMNS
    rows = _grouped_table(pairs, bases, sources, (by,), settings)
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=columns)
    table = _adjust_and_sort(table, (by,), alpha=1.0 - settings.level)
    return table[columns]


def build_impact(
    scored: Mapping[str, pd.DataFrame],
    perturbed: Mapping[str, pd.DataFrame],
    words: Mapping[str, pd.DataFrame],
    *,
    languages: Mapping[str, str],
    settings: ImpactSettings,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The three impact tables from all benchmarks.

    Parameters
    ----------
    scored : benchmark -> scored rows.
    perturbed : benchmark -> perturbed rows (``perturbations``); a benchmark missing here gets no
        operation or script attribution.
    words : language -> word list.
    languages : benchmark -> language.
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    (words, operations, scripts) DataFrames (:func:`word_impact`, :func:`category_impact`; the
    operation and script tables end with the adjusted columns of
    :func:`evalpipe.scoring.adjusted.with_adjusted`).
    """
    all_pairs, all_bases = [], []
    for name in sorted(scored):
        source = f"data/scored/{name}.parquet"
        if name not in languages:
            raise InputError(f"{source}: no language known for benchmark {name!r}")
        all_pairs.append(
            impact_pairs(
                scored[name],
                language=languages[name],
                perturbations=perturbed.get(name),
                source=source,
            )
        )
        all_bases.append(base_counts(scored[name], language=languages[name], source=source))
    pairs = pd.concat(all_pairs, ignore_index=True) if all_pairs else pd.DataFrame()
    bases = (
        pd.concat(all_bases, ignore_index=True)
        if all_bases
        else pd.DataFrame(columns=["model", "language", "benchmark", "n_base"])
    )
    for language in sorted(set(languages[n] for n in scored)):
        if language not in words:
            raise InputError(f"data/words/{language}.parquet: word list missing for {language}")
    sources = {lang: _source_of(frame, lang) for lang, frame in words.items()}
    word_table = word_impact(pairs, words, bases=bases, settings=settings)
    operations = category_impact(pairs, by="op", sources=sources, bases=bases, settings=settings)
    scripts = category_impact(pairs, by="script", sources=sources, bases=bases, settings=settings)
    # Beside each marginal row: the kind's effect adjusted for word, example and benchmark.
    operations = with_adjusted(operations, pairs, by="op", level=settings.level)
    scripts = with_adjusted(scripts, pairs, by="script", level=settings.level)
    return word_table, operations, scripts


def top_words(table: pd.DataFrame, *, language: str, top_n: int) -> pd.DataFrame:
    """The most harmful words of one language, pooled over its benchmarks, for the plot CSV.

    The first ``top_n`` pooled rows per (model, source) in the table's impact order: words with
    enough examples first, then, only to fill the list (small sample runs), ``small_n`` words. The
    label carries n and marks small-n words, so the plot never hides how thin a row is.

    Parameters
    ----------
    table : :func:`word_impact` output.
    language : which language.
    top_n : rows per (model, source).

    Returns
    -------
    DataFrame
        ``label`` ("word (#rank, n=42)", "small n" added for small-n words, prefixed "model: "
        when there are several models), ``model, source, word, variant, rank, n, delta, ci_low,
        ci_high, ci_method, mcnemar_p, p_holm, p_bh, per_occurrence_impact, small_n,
        impact_rank``; floats rounded to 4 decimals.
    """
    columns = ["label", "model", "source", "word", "variant", "rank", "n", "delta", "ci_low",
               "ci_high", "ci_method", "mcnemar_p", "p_holm", "p_bh", "per_occurrence_impact",
               "small_n", "impact_rank"]  # fmt: skip
    if table.empty:
        return pd.DataFrame(columns=columns)
    chosen = table.loc[(table["language"] == language) & (table["scope"] == POOLED)]
    chosen = chosen.groupby(["model", "source"], sort=True, dropna=False).head(int(top_n))
    chosen = chosen.copy()
    label = (
        chosen["variant"].astype(str)
        + " (#"
        + chosen["rank"].astype(str)
        + ", n="
        + chosen["n"].astype(str)
        + np.where(chosen["small_n"].astype(bool), ", small n", "")
        + ")"
    )
    if chosen["model"].nunique() > 1:
        label = chosen["model"].astype(str) + ": " + label
    chosen["label"] = label
    chosen = chosen[columns].reset_index(drop=True)
    for column in ("delta", "ci_low", "ci_high", "mcnemar_p", "p_holm", "p_bh",
                   "per_occurrence_impact"):  # fmt: skip
        # 4 decimals keep the Git-tracked CSV small and its diffs readable; + 0.0 drops "-0.0".
        chosen[column] = chosen[column].astype(float).round(4) + 0.0
    return chosen
