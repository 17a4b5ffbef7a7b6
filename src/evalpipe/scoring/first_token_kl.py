"""First-token KL, clean -> typo'd: the ``first_token_kl`` block of ``metrics/<model>/readouts.json``.

With ``scoring.top_logprobs: k`` (k > 0), every generated answer carries its first token's k most
probable tokens with their log-probabilities, as the backend returns them (vLLM's ``logprobs``,
an OpenAI-compatible server's ``top_logprobs``): the outputs' ``first_token_logprobs`` column.
Per typo pair of a generated view (the typo'd row and its example's clean row of the same draw),
``KL(clean || typo'd)`` of the two first-token distributions says how far the typo moves what
the model was about to say first, right or wrong.

**Aligning the two top-k supports.** Each side knows only its own k tokens, and they differ.
The distributions are compared on the **union** of both supports. A token missing from one
side's top k has, on that side, a log-probability at most that side's k-th (smallest) returned
value; it is given exactly that value (the floor). Each side is then renormalised over the
union (softmax of the log-probabilities), and ``KL = sum_t p_t log(p_t / q_t)`` over the union.
Why this rule:

- it is always finite (no token gets probability 0), so no pair is lost to an infinite KL;
- the floor is the largest value the data allow for a missing token, so it never invents a
  larger shift than the top k show: a token that leaves the typo'd side's top k counts as just
  below its k-th token, not as impossible;
- renormalising only the clean top k (the other usual choice) would drop the typo'd side's new
  tokens from the support and miss exactly the shift a typo causes (the typo'd model
  putting its mass on a token the clean model did not rank).

The mass outside both top k is ignored (the renormalisation), so the figure is the KL of the
renormalised top-k views, not of the full vocabulary distributions; it grows with k toward
the full KL. Tokens are matched by their text; two tokens with the same text on one side are
merged (their probabilities added).

A pair whose clean or typo'd row came back without top-k log-probabilities (a backend that
does not return them, a prompt not sent) is **unavailable**: counted in ``n_unavailable``,
never a zero. The mean per pair comes with the cluster bootstrap-t interval clustered on the
example (:func:`evalpipe.scoring.skewed_mean.bootstrap_t_mean_interval`: per-pair KLs are
non-negative and right-skewed, as the choice KL's are).

This is distinct from the **choice KL** of :mod:`evalpipe.scoring.calibration`, the KL of the
log-likelihood views' option probabilities, which needs no top-k request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.scoring.names import ORIGINAL, TYPO
from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval
from evalpipe.scoring.views import parse_view
from evalpipe.seeding import hashed_seed

COLUMN = "first_token_logprobs"
KL_CI = "cluster_bootstrap_t"
KEYS = ["example_id", "variant", "word_rank", "draw"]
# One row per typo pair of a generated view (:func:`first_token_pairs`).
PAIR_COLUMNS = ["view", "benchmark", "language", "cluster", *KEYS, "first_token_kl"]


def parse_top(value: Any) -> list[tuple[str, float]] | None:
    """The outputs' JSON ``[[token, logprob], ...]`` as pairs; None when null or empty.

    >>> parse_top('[["a", -0.1], ["b", -2.5]]')
    [('a', -0.1), ('b', -2.5)]
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    pairs = [(str(t), float(v)) for t, v in json.loads(str(value))]
    return pairs or None


def _merged(top: Sequence[tuple[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for token, logprob in top:
        out[token] = float(np.logaddexp(out[token], logprob)) if token in out else float(logprob)
    return out


def aligned(
    clean: Sequence[tuple[str, float]], typo: Sequence[tuple[str, float]]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Both sides on the union of their top-k tokens (sorted), a missing token floored at the
    side's smallest returned log-probability, each renormalised over the union.

    >>> tokens, p, q = aligned([("a", math.log(0.6)), ("b", math.log(0.3))],
    ...                        [("b", math.log(0.5)), ("c", math.log(0.4))])
    >>> tokens, [round(float(x), 4) for x in p], [round(float(x), 4) for x in q]
    (['a', 'b', 'c'], [0.5, 0.25, 0.25], [0.3077, 0.3846, 0.3077])
    """
    left, right = _merged(clean), _merged(typo)
    tokens = sorted(set(left) | set(right))

    def side(values: dict[str, float]) -> np.ndarray:
        floor = min(values.values())
        logs = np.asarray([values.get(t, floor) for t in tokens], dtype=float)
        weights = np.exp(logs - logs.max())
        return weights / weights.sum()

    return tokens, side(left), side(right)


def first_token_kl(
    clean: Sequence[tuple[str, float]] | None, typo: Sequence[tuple[str, float]] | None
) -> float:
    """``KL(clean || typo'd)`` in nats of one pair's aligned first-token distributions; NaN
    when a side has no top-k log-probabilities (unavailable).

    >>> round(first_token_kl([("a", math.log(0.6)), ("b", math.log(0.3))],
    ...                      [("b", math.log(0.5)), ("c", math.log(0.4))]), 4)
    0.0831
    >>> first_token_kl([("a", -0.1)], None)
    nan
    """
    if not clean or not typo:
        return math.nan
    _, p, q = aligned(clean, typo)
    return float((p * np.log(p / q)).sum())


def _typo_rows(outputs: pd.DataFrame) -> pd.DataFrame:
    frame = outputs
    if "condition" in frame.columns:
        frame = frame.loc[frame["condition"].fillna(TYPO) == TYPO]
    out = frame[KEYS].astype({"example_id": str, "variant": str})
    out = out.astype({"word_rank": "int64", "draw": "int32"})
    out["top"] = [parse_top(v) for v in frame[COLUMN]]
    return out


def first_token_pairs(pairs: pd.DataFrame, outputs: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each typo pair of every generated view with its first-token KL (NaN: unavailable).

    Parameters
    ----------
    pairs : the model's pairs table (:data:`~evalpipe.scoring.names.PAIR_COLUMNS`).
    outputs : ``{benchmark: outputs frame}`` holding the ``first_token_logprobs`` column;
        a generated view whose benchmark has none is left out.

    Returns
    -------
    DataFrame
        :data:`PAIR_COLUMNS`, sorted by view then the pairs' order.
    """
    parts = []
    for view in sorted(pairs["view"].unique()):
        benchmark, method = parse_view(str(view))
        frame = outputs.get(benchmark)
        if method != "generate" or frame is None or COLUMN not in frame.columns:
            continue
        rows = _typo_rows(frame)
        clean = rows.loc[rows["variant"] == ORIGINAL, ["example_id", "draw", "top"]]
        clean = clean.drop_duplicates(["example_id", "draw"])
        picked = pairs.loc[(pairs["view"] == view) & (pairs["condition"] == TYPO)]
        keyed = picked[["view", "benchmark", "language", "cluster", *KEYS]]
        keyed = keyed.astype({"example_id": str, "variant": str})
        keyed = keyed.astype({"word_rank": "int64", "draw": "int32"})
        keyed = keyed.merge(rows, on=KEYS, how="left", validate="one_to_one")
        keyed = keyed.merge(
            clean, on=["example_id", "draw"], how="left", suffixes=("_perturbed", "_original")
        )
        keyed["first_token_kl"] = [
            first_token_kl(o if isinstance(o, list) else None, t if isinstance(t, list) else None)
            for o, t in zip(keyed["top_original"], keyed["top_perturbed"], strict=True)
        ]
        parts.append(keyed)
    if not parts:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    return pd.concat(parts, ignore_index=True)[PAIR_COLUMNS]


def first_token_summary(table: pd.DataFrame, *, level: float) -> dict[str, Any]:
    """Per generated view: ``n`` (pairs with both sides' top k), ``n_unavailable`` (pairs
    without), ``first_token_kl`` (mean per-pair KL, nats) with ``ci_low, ci_high, ci_method``."""
    out = {}
    for view, rows in table.groupby("view", sort=True):
        kl = rows["first_token_kl"].to_numpy(float)
        ok = np.isfinite(kl)
        clusters = rows["cluster"].to_numpy()[ok]
        mean = bootstrap_t_mean_interval(
            kl[ok], clusters, level=level, seed=hashed_seed("first_token_kl", "view", str(view))
        )
        out[str(view)] = {
            "n": int(ok.sum()),
            "n_unavailable": int((~ok).sum()),
            "first_token_kl": mean.mean,
            "ci_low": mean.low,
            "ci_high": mean.high,
            "ci_method": KL_CI,
        }
    return out
