"""Per-word, per-operation and per-script impact of typos: the study's answer table.

Input: the pairs tables (``data/scored/<model>/pairs.parquet``, :mod:`evalpipe.scoring.pairs`:
each pair's answers, example cluster, language and typo kinds), the number of examples per
benchmark (the robustness details) and the word lists (``data/words/{language}.parquet``). Output: one row per (model, language, source,
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
    script tables one example appears once per word that hit it: the interval is widened for
    those example clusters (the hull of the independent-pairs interval and the one on the counts
    divided by the CR3 variance ratio at a Student t quantile on the clusters' degrees of freedom;
    :func:`evalpipe.scoring.intervals.cluster_correction`). ``ci_method`` names the method
    (``tango_score``, ``+deff`` when a design effect widened it), ``design_effect`` the factor.

Tests
    ``mcnemar_p``: the test the interval inverts (McNemar's asymptotic statistic; with clusters
    the larger of its independent-pairs p and its clustered p), so the interval excludes 0
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
    A pair's ``op`` and ``script`` are the perturb stage's (carried by the pairs): the operation
    type (replace / insert / delete / transpose / conversion) when every operation that fired in it
    is of that type, ``mixed`` otherwise; likewise for script classes (hiragana, katakana, kanji,
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

from evalpipe.arms import is_count_variant
from evalpipe.errors import InputError
from evalpipe.scoring.adjusted import with_adjusted
from evalpipe.scoring.intervals import (
    DEFAULT_METHOD,
    distinct_per_group,
    method_label,
    minimum_attainable_p,
    paired_scores,
)
from evalpipe.scoring.multiple_testing import benjamini_hochberg, holm
from evalpipe.scoring.names import POOLED, TYPO
from evalpipe.scoring.robustness import clustered_mcnemar_many, detectable, pdr
from evalpipe.scoring.scorer import check_columns
from evalpipe.scoring.summaries import ALPHA_COLUMNS, DECIMALS, VERDICT_COLUMNS
from evalpipe.scoring.verdicts import alpha_of, verdict_rounded
from evalpipe.scoring.views import parse_view, primary_views

# What the impact tables read of a pairs table.
IMPACT_PAIR_COLUMNS = [
    "model", "view", "benchmark", "language", "example_id", "cluster", "variant", "word_rank",
    "draw", "condition", "op", "script", "occurrences", "perturbed_occurrences",
    "correct_original", "correct_perturbed", "parse_status_perturbed",
]  # fmt: skip
STAT_COLUMNS = [
    "n", "n_benchmarks", "accuracy_original", "accuracy_perturbed", "delta", "ci_low", "ci_high",
    "ci_method", "design_effect", "mde", "pdr", "flip_c2i", "flip_i2c", "n_c2i", "n_i2c", "mcnemar_p",
    "p_holm", "p_bh", "mcnemar_exact_p",
    "occurrences", "perturbed_occurrences", "per_occurrence_impact", "unparsed_rate", "small_n",
    "impact_rank",
]  # fmt: skip
IMPACT_WORD_COLUMNS = [
    "model", "language", "source", "scope", "word", "variant", "lemma", "pos", "rank",
    "frequency_score", *STAT_COLUMNS,
]  # fmt: skip
OPERATION_COLUMNS = ["model", "language", "source", "scope", "op", "n_words",
                     *STAT_COLUMNS]  # fmt: skip
SCRIPT_COLUMNS = ["model", "language", "source", "scope", "script", "n_words",
                  *STAT_COLUMNS]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ImpactSettings:
    """Interval and reporting settings: ``level`` is params ``scoring.confidence_level``,
    ``small_n`` params ``impact.small_n`` (required: their defaults live in the params schema)."""

    level: float
    small_n: int
    method: str = DEFAULT_METHOD


# ----------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class PairArrays:
    """The columns of a pairs table the statistics read, as arrays (one pass of pandas for all
    groups: a row of an impact table is then a selection of positions)."""

    original: np.ndarray  # bool
    perturbed: np.ndarray  # bool
    cluster: np.ndarray  # int64 example code
    word_rank: np.ndarray  # int64
    benchmark: np.ndarray  # int64 code
    occurrences: np.ndarray  # int64
    fired: np.ndarray  # int64: perturbed_occurrences
    unparsed: np.ndarray  # bool: the perturbed answer's parse status

    @classmethod
    def of(cls, pairs: pd.DataFrame) -> PairArrays:
        return cls(
            original=pairs["correct_original"].to_numpy(dtype=bool),
            perturbed=pairs["correct_perturbed"].to_numpy(dtype=bool),
            cluster=pairs["cluster"].to_numpy(dtype=np.int64),
            word_rank=pairs["word_rank"].to_numpy(dtype=np.int64),
            benchmark=pd.factorize(pairs["benchmark"])[0].astype(np.int64),
            occurrences=pairs["occurrences"].to_numpy(dtype=np.int64),
            fired=pairs["perturbed_occurrences"].to_numpy(dtype=np.int64),
            unparsed=(pairs["parse_status_perturbed"] == "unparsed").to_numpy(dtype=bool),
        )


def paired_effects(
    arrays: PairArrays,
    groups: Sequence[np.ndarray],
    *,
    n_bases: Sequence[int],
    settings: ImpactSettings,
) -> list[dict[str, Any]]:
    """The statistics of rows of an impact table from their pairs, all rows at once.

    Parameters
    ----------
    arrays : the pairs' columns (:meth:`PairArrays.of`).
    groups : positions of each row's pairs (in table order), possibly of several benchmarks.
    n_bases : original rows in each row's scope (for the per-occurrence impact).
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    list of dict with the :data:`STAT_COLUMNS` except ``p_holm, p_bh, impact_rank``, one per row.
    """
    if not len(groups):
        return []
    o, p = arrays.original, arrays.perturbed
    sizes = np.fromiter((g.size for g in groups), dtype=np.int64, count=len(groups))
    index = np.concatenate(groups)
    segment = np.repeat(np.arange(len(groups)), sizes)

    def total(values: np.ndarray) -> list[int]:
        return (
            np.bincount(segment, weights=values[index], minlength=len(groups))
            .astype(np.int64)
            .tolist()
        )

    # The typo draws of one (example, word) are one observation: n counts those, the flip counts
    # count pairs (one per draw). With one draw the two are the same.
    span = int(arrays.word_rank.max(initial=0)) + 1
    units = distinct_per_group(groups, arrays.cluster * span + arrays.word_rank).tolist()
    benchmarks = distinct_per_group(groups, arrays.benchmark).tolist()
    scores = paired_scores(
        o, p, groups, clusters=arrays.cluster, level=settings.level, method=settings.method
    )
    c2i, i2c = total(o & ~p), total(~o & p)
    exact = clustered_mcnemar_many(c2i, i2c, [score.design_effect for score in scores])
    detectables = detectable(
        sizes.tolist(), [a + b for a, b in zip(c2i, i2c, strict=True)], scores, settings.level
    )
    columns = zip(
        sizes.tolist(), units, benchmarks, total(o), total(p), c2i, i2c,
        total(arrays.occurrences), total(arrays.fired), total(arrays.unparsed), scores, n_bases,
        exact, detectables, strict=True,
    )  # fmt: skip
    out = []
    for (
        n,
        n_units,
        n_bench,
        n_o,
        n_p,
        n_c2i,
        n_i2c,
        occurrences,
        fired,
        bad,
        score,
        n_base,
        exact_p,
        mde_of,
    ) in columns:
        acc_o = n_o / n if n else None
        acc_p = n_p / n if n else None
        deff = score.design_effect
        out.append(
            {
                "n": n_units if n else 0,
                "n_benchmarks": n_bench,
                "accuracy_original": acc_o,
                "accuracy_perturbed": acc_p,
                "delta": None if acc_o is None or acc_p is None else acc_p - acc_o,
                "ci_low": score.low,
                "ci_high": score.high,
                "ci_method": method_label(settings.method, deff) if n else None,
                "design_effect": deff,
                "mde": mde_of,
                "pdr": pdr(acc_o, acc_p),
                "flip_c2i": n_c2i / n if n else None,
                "flip_i2c": n_i2c / n if n else None,
                "n_c2i": n_c2i,
                "n_i2c": n_i2c,
                "mcnemar_p": score.p_value,
                "mcnemar_exact_p": exact_p,
                "occurrences": occurrences,
                "perturbed_occurrences": fired,
                "per_occurrence_impact": (
                    (n_c2i - n_i2c) / n_base / fired if fired and n_base else None
                ),
                "unparsed_rate": bad / n if n else None,
                "small_n": (n_units if n else 0) < settings.small_n,
            }
        )
    return out


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
    sources: Mapping[str, str | None],
    by: Sequence[str],
    settings: ImpactSettings,
) -> list[dict[str, Any]]:
    """Stats per (model, language, scope, *by) for the pooled scope and each benchmark."""
    rows: list[dict[str, Any]] = []
    known = pairs[list(by)].notna().all(axis=1).to_numpy()
    if not known.all():  # a copy only when some pairs lack the kind
        pairs = pairs.loc[known].reset_index(drop=True)
    if pairs.empty:
        return rows
    arrays = PairArrays.of(pairs)
    # Positions of every group, in table order, from one pass each: pooled and per benchmark.
    keys = ["model", "language"]
    pooled = pairs.groupby([*keys, *by], sort=True).indices
    per_benchmark = pairs.groupby([*keys, "benchmark", *by], sort=True).indices
    scopes: dict[tuple[str, str], dict[str, list[tuple[tuple, np.ndarray]]]] = {}
    for key in sorted(pooled):
        scopes.setdefault(key[:2], {}).setdefault(POOLED, []).append((key[2:], pooled[key]))
    for key in sorted(per_benchmark):
        scopes[key[:2]].setdefault(str(key[2]), []).append((key[3:], per_benchmark[key]))
    entries = []
    for (model, language), groups in scopes.items():
        # pooled first, then the benchmarks alphabetically
        for scope in [POOLED, *sorted(s for s in groups if s != POOLED)]:
            n_base = _n_base(bases, str(model), str(language), scope)
            for values, index in groups[scope]:
                entries.append((str(model), str(language), scope, values, index, n_base))
    positions = [entry[4] for entry in entries]
    all_stats = paired_effects(
        arrays, positions, n_bases=[entry[5] for entry in entries], settings=settings
    )
    n_words = distinct_per_group(positions, arrays.word_rank).tolist()
    for (model, language, scope, values, _, _), stats, words in zip(
        entries, all_stats, n_words, strict=True
    ):
        rows.append(
            {
                "model": model,
                "language": language,
                "source": sources.get(language),
                "scope": scope,
                **dict(zip(by, values, strict=True)),
                "n_words": words,
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
    pairs : the pairs the tables are made of (:func:`select_pairs`).
    words : language -> its word list (``rank, word, lemma, pos, score, source``).
    bases : examples per (model, language, benchmark) (:func:`select_pairs`).
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    DataFrame
        :data:`IMPACT_WORD_COLUMNS`: one row per (model, language, source, scope, word variant); scope
        ``"pooled"`` or a benchmark; sorted by impact (module docstring).
    """
    sources = {lang: _source_of(frame, lang) for lang, frame in words.items()}
    rows = _grouped_table(pairs, bases, sources, ("word_rank", "variant"), settings)
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=IMPACT_WORD_COLUMNS)
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
    return table[IMPACT_WORD_COLUMNS]


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
    pairs : the pairs the tables are made of (:func:`select_pairs`).
    by : ``"op"`` (named like the perturbation records' field) or ``"script"``.
    sources : language -> word-list source (for the ``source`` column).
    bases : examples per (model, language, benchmark) (:func:`select_pairs`).
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


def select_pairs(
    pairs: pd.DataFrame, n_base: pd.DataFrame, *, source: str = "pairs", condition: str = TYPO
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pairs and example counts the impact tables are made of.

    One view per (model, benchmark) (:func:`evalpipe.scoring.views.primary_views`: the
    generated answers, else the log-likelihood ones), so an example counts once; the typo arm
    only; in the order (benchmark, model, word, example, draw) the tables' sums run in.

    Parameters
    ----------
    pairs : pairs tables of one or more models (:data:`IMPACT_PAIR_COLUMNS`).
    n_base : ``model, view, n_base``: the examples of every scored view (the robustness
        details' ``n_examples``), also those without a pair.
    source : name of the pairs for error messages.
    condition : the arm to keep (the typo arm; ``control`` for the matched control).

    Returns
    -------
    (pairs, bases)
        The chosen pairs; ``model, language, benchmark, n_base`` of the chosen views (the
        language from the pairs: a view without any pair has none and adds nothing).

    Raises
    ------
    InputError
        A missing column, or a benchmark whose pairs name several languages.
    """
    check_columns(pairs, IMPACT_PAIR_COLUMNS, source=source)
    chosen = {
        (str(model), view)
        for model, views in n_base.groupby("model", sort=True)["view"]
        for view in primary_views(views.astype(str)).values()
    }
    keep = pd.MultiIndex.from_arrays([pairs["model"], pairs["view"]]).isin(sorted(chosen))
    picked = pairs.loc[keep & (pairs["condition"] == condition).to_numpy()]
    picked = picked.sort_values(
        ["benchmark", "model", "word_rank", "variant", "example_id", "draw"],
        kind="stable",
        ignore_index=True,
    )
    languages = picked.groupby(["model", "benchmark"], sort=True)["language"].unique()
    for (model, benchmark), values in languages.items():
        if len(values) != 1 or pd.isna(values[0]):
            raise InputError(
                f"{source}: column 'language': expected one language for benchmark "
                f"{benchmark!r} (model {model!r}), got {sorted(map(str, values))}"
            )
    language = {key: values[0] for key, values in languages.items()}
    rows = []
    for model, view, count in n_base[["model", "view", "n_base"]].itertuples(index=False):
        benchmark = parse_view(str(view))[0]
        if (str(model), str(view)) in chosen and (str(model), benchmark) in language:
            rows.append((str(model), language[(str(model), benchmark)], benchmark, int(count)))
    bases = pd.DataFrame(rows, columns=["model", "language", "benchmark", "n_base"])
    return picked, bases.sort_values(["model", "benchmark"], ignore_index=True)


def build_impact(
    pairs: pd.DataFrame,
    words: Mapping[str, pd.DataFrame],
    *,
    n_base: pd.DataFrame,
    settings: ImpactSettings,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The three impact tables from the pairs tables of every model.

    Parameters
    ----------
    pairs : pairs tables of one or more models (concatenated;
        :func:`evalpipe.scoring.pairs.build_pairs`, :data:`IMPACT_PAIR_COLUMNS` at least).
    words : language -> word list.
    n_base : ``model, view, n_base``: examples per scored view (:func:`select_pairs`).
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    (words, operations, scripts) DataFrames (:func:`word_impact`, :func:`category_impact`; the
    operation and script tables end with the adjusted columns of
    :func:`evalpipe.scoring.adjusted.with_adjusted`).

    Raises
    ------
    InputError
        A missing column, several languages for one benchmark, or a language without word list.
    """
    pairs, bases = select_pairs(pairs, n_base)
    return impact_tables(pairs, words, bases=bases, settings=settings)


def impact_tables(
    chosen: pd.DataFrame,
    words: Mapping[str, pd.DataFrame],
    *,
    bases: pd.DataFrame,
    settings: ImpactSettings,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`build_impact` from the pairs and example counts :func:`select_pairs` chose (a
    caller that keeps them for other tables selects once).

    Parameters
    ----------
    chosen, bases : :func:`select_pairs`'s output.
    words : language -> word list.
    settings : confidence level, interval method and the small-n threshold.

    Returns
    -------
    (words, operations, scripts) as :func:`build_impact`.
    """
    # Count-design rows (exactly k words edited, no target word) belong to the dose table only:
    # with them alone the three tables are empty, with their columns.
    counted = is_count_variant(chosen["variant"])
    pairs = chosen.loc[~counted].reset_index(drop=True) if counted.any() else chosen
    for language in sorted(set(bases["language"])):
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


def top_words(table: pd.DataFrame, *, language: str, top_n: int, level: float) -> pd.DataFrame:
    """The most harmful words of one language, pooled over its benchmarks, for the plot CSV.

    The first ``top_n`` pooled rows per (model, source) in the table's impact order: words with
    enough examples first, then, only to fill the list (small sample runs), ``small_n`` words. The
    label carries n and marks small-n words, so the plot never hides how thin a row is.

    Parameters
    ----------
    table : :func:`word_impact` output.
    language : which language.
    top_n : rows per (model, source).
    level : the intervals' confidence level: the limits keep their side of 0 and ``mcnemar_p``
        its side of ``1 - level`` when rounded (:func:`evalpipe.scoring.verdicts.verdict_rounded`).

    Returns
    -------
    DataFrame
        ``label`` ("word (#rank, n=42)", "small n" added for small-n words, prefixed "model: "
        when there are several models), ``model, source, word, variant, rank, n, delta, ci_low,
        ci_high, ci_method, mcnemar_p, p_holm, p_bh, per_occurrence_impact, small_n,
        impact_rank``; floats rounded to 4 decimals (the limits and ``mcnemar_p`` on their side of
        the verdict, :func:`evalpipe.scoring.verdicts.verdict_rounded`).
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
    chosen_index = chosen.index
    chosen = chosen[columns].reset_index(drop=True)
    for column in ("delta", "ci_low", "ci_high", "mcnemar_p", "p_holm", "p_bh",
                   "per_occurrence_impact"):  # fmt: skip
        # 4 decimals keep the Git-tracked CSV small and its diffs readable; + 0.0 drops "-0.0".
        chosen[column] = chosen[column].astype(float).round(DECIMALS) + 0.0
    for column in (*VERDICT_COLUMNS, *ALPHA_COLUMNS[1:]):  # printed, the verdicts still agree
        threshold = alpha_of(level) if column in ALPHA_COLUMNS else 0.0
        chosen[column] = verdict_rounded(
            table.loc[chosen_index, column].to_numpy(float), threshold, DECIMALS
        )
    return chosen
