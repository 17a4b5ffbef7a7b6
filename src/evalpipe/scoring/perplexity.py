"""Perplexity of the perturbable text under typos: ``metrics/<model>/perplexity.json``.

The generate stage scores, with ``scoring.perplexity`` on, each prompt's perturbable text in its
prompt context (:mod:`evalpipe.inference.perplexity`): per row ``ppl_logprob`` (the total
log-probability) and ``ppl_tokens``. Here each typo pair of the pairs table (condition "typo", one
view per benchmark) looks both rows up by key in its scored view, and:

- per pair, the mean token log-likelihood of the original and of the perturbed text,
  ``ll = ppl_logprob / ppl_tokens``, and their difference ``d = ll_original - ll_perturbed``,
  which is the log of the pair's perplexity ratio ``exp(-ll_perturbed) / exp(-ll_original)``;
- per benchmark and pooled per language, the means of ``ll_original`` and ``ll_perturbed`` over
  the pairs, and ``ratio = exp(mean d) = exp(ll_original - ll_perturbed)``: the geometric mean of
  the pairs' perplexity ratios (> 1: typos make the text less likely);
- its interval: the tail-augmented cluster bootstrap-t on ``d``
  (:func:`evalpipe.scoring.skewed_mean.tail_augmented_mean_interval`: the guarded cluster
  bootstrap-t, examples resampled and each resample studentised with its CR2 standard error,
  neither side narrower than the CR2 t interval's; each side then reaches at least where it
  would lie had the sample held its most extreme example on that side twice; seeded by the
  row's key), then ``exp``. Per-pair log-ratios are right-skewed (a few typos cost many nats):
  the symmetric CR2 t interval missed on the high side, and the guarded bootstrap-t still
  missed there when a sample held too few of the rare costly typos; docs/scoring.md ("Arms'
  means and ratios") has the coverage of each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.errors import InputError
from evalpipe.scoring.names import ORIGINAL, TYPO
from evalpipe.scoring.skewed_mean import tail_augmented_mean_interval
from evalpipe.scoring.views import primary_views
from evalpipe.seeding import hashed_seed

PPL_COLUMNS = ("ppl_logprob", "ppl_tokens")
CI_METHOD = "tail_augmented_cluster_bootstrap_t_log_ratio"
KEYS = ["example_id", "variant", "word_rank", "draw"]
# What a per-pair perplexity row holds (:func:`perplexity_pairs`).
PAIR_PPL_COLUMNS = [
    "benchmark", "language", "cluster", "example_id", "variant", "word_rank", "draw",
    "logprob_original", "tokens_original", "logprob_perturbed", "tokens_perturbed",
]  # fmt: skip


def perplexity_pairs(
    pairs: pd.DataFrame, views: Mapping[str, pd.DataFrame], *, source: str = "scored views"
) -> pd.DataFrame:
    """Each typo pair with both rows' perplexity scores, looked up by key in its view.

    Parameters
    ----------
    pairs : the model's pairs table (:data:`~evalpipe.scoring.names.PAIR_COLUMNS`).
    views : ``{view: scored frame}``; the frames carry :data:`PPL_COLUMNS`.
    source : for error messages.

    Returns
    -------
    DataFrame
        :data:`PAIR_PPL_COLUMNS`, one row per typo pair of one view per benchmark (the
        generated answers, else the log-likelihood view: the scores are the prompt's, the same
        in every view of a benchmark).
    """
    chosen = set(primary_views(views).values())
    picked = pairs.loc[pairs["view"].isin(chosen) & (pairs["condition"] == TYPO)]
    parts = []
    for view, group in picked.groupby("view", sort=True):
        frame = views[str(view)]
        missing = [c for c in PPL_COLUMNS if c not in frame.columns]
        if missing:
            raise InputError(
                f"{source}: view {view!r}: no column {', '.join(missing)} "
                "(generate with scoring.perplexity: true)"
            )
        if "condition" in frame.columns:
            frame = frame.loc[frame["condition"].fillna(TYPO) == TYPO]
        table = frame[[*KEYS, *PPL_COLUMNS]].astype({"example_id": str, "variant": str})
        table = table.astype({"word_rank": "int64", "draw": "int32"})
        originals = table.loc[table["variant"] == ORIGINAL, ["example_id", *PPL_COLUMNS]]
        keyed = group[["benchmark", "language", "cluster", *KEYS]]
        keyed = keyed.merge(table, on=KEYS, how="left", validate="one_to_one")
        keyed = keyed.merge(
            originals, on="example_id", how="left", suffixes=("_perturbed", "_original")
        )
        parts.append(keyed)
    if not parts:
        return pd.DataFrame(columns=PAIR_PPL_COLUMNS)
    out = pd.concat(parts, ignore_index=True).rename(
        columns={
            "ppl_logprob_original": "logprob_original",
            "ppl_tokens_original": "tokens_original",
            "ppl_logprob_perturbed": "logprob_perturbed",
            "ppl_tokens_perturbed": "tokens_perturbed",
        }
    )
    return out[PAIR_PPL_COLUMNS]


def _figures(rows: pd.DataFrame, *, level: float, key: tuple[str, str]) -> dict[str, Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        ll_o = rows["logprob_original"].to_numpy(float) / rows["tokens_original"].to_numpy(float)
        ll_p = rows["logprob_perturbed"].to_numpy(float) / rows["tokens_perturbed"].to_numpy(float)
    ok = np.isfinite(ll_o) & np.isfinite(ll_p)
    clusters = rows["cluster"].to_numpy()[ok]
    result = tail_augmented_mean_interval(
        ll_o[ok] - ll_p[ok], clusters, level=level, seed=hashed_seed("perplexity", *key)
    )
    out: dict[str, Any] = {
        "n": int(ok.sum()),
        "n_examples": int(np.unique(clusters).size),
        "n_unscored": int((~ok).sum()),
        "tokens_original": float(rows["tokens_original"].to_numpy(float)[ok].mean())
        if ok.any()
        else None,
        "tokens_perturbed": float(rows["tokens_perturbed"].to_numpy(float)[ok].mean())
        if ok.any()
        else None,
        "ll_original": float(ll_o[ok].mean()) if ok.any() else None,
        "ll_perturbed": float(ll_p[ok].mean()) if ok.any() else None,
        "ratio": None if result.mean is None else math.exp(result.mean),
        "ci_low": None if result.low is None else math.exp(result.low),
        "ci_high": None if result.high is None else math.exp(result.high),
        "ci_method": CI_METHOD,
    }
    return out


def perplexity_summary(table: pd.DataFrame, *, level: float) -> dict[str, Any]:
    """``metrics/<model>/perplexity.json``: per benchmark and pooled per language.

    Parameters
    ----------
    table : :func:`perplexity_pairs`.
    level : confidence level of the ratio's interval.

    Returns
    -------
    dict
        ``{"enabled": true, "benchmarks": {name: figures}, "pooled": {language: figures}}``;
        figures: ``n`` (pairs scored), ``n_examples``, ``n_unscored`` (pairs without a score on
        either side), ``tokens_original, tokens_perturbed`` (mean tokens of the scored text),
        ``ll_original, ll_perturbed`` (mean token log-likelihood, averaged over pairs),
        ``ratio`` (perplexity perturbed / original, ``exp(ll_original - ll_perturbed)``),
        ``ci_low, ci_high`` and ``ci_method``.

    Examples
    --------
    >>> t = pd.DataFrame({"benchmark": "b", "language": "english", "cluster": [0, 1, 2],
    ...     "example_id": ["1", "2", "3"], "variant": "w", "word_rank": 1, "draw": 0,
    ...     "logprob_original": [-4.0, -6.0, -5.0], "tokens_original": [2, 3, 5],
    ...     "logprob_perturbed": [-6.0, -9.0, -5.0], "tokens_perturbed": [2, 3, 5]})
    >>> s = perplexity_summary(t, level=0.95)["benchmarks"]["b"]
    >>> round(s["ll_original"], 4), round(s["ll_perturbed"], 4), round(s["ratio"], 4)
    (-1.6667, -2.3333, 1.9477)
    """
    out: dict[str, Any] = {"enabled": True, "benchmarks": {}, "pooled": {}}
    for name, rows in table.groupby("benchmark", sort=True):
        out["benchmarks"][str(name)] = _figures(rows, level=level, key=("benchmark", str(name)))
    for language, rows in table.groupby("language", sort=True):
        out["pooled"][str(language)] = _figures(rows, level=level, key=("pooled", str(language)))
    return out
