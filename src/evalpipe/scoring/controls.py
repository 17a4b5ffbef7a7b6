"""Two groupings of the pairs table that explain a word's harm: the matched control and the
tokenizer split.

Harm beyond a matched random word (:func:`control_effect`)
    The control arm (condition ``control``, docs/perturbation.md "Matched control") puts the
    same typo model, as many edits, on random words of the same example matched to the target
    word. Its pairs share the typo arm's keys (view, example, variant, word rank, draw), so each
    typo pair has its control partner. Per word, ``harm_beyond_control`` is the accuracy of the
    control prompts minus the accuracy of the typo prompts over the matched keys: positive when
    the word's own typos cost more than typos on comparable words of the same question. It is a
    paired difference of proportions like every other delta: Tango's score interval on the
    (typo, control) 2x2 counts, widened for the example clusters (the draws of one example) by
    their CR3 variance ratio at a Student t quantile on their Bell-McCaffrey degrees of freedom
    (:func:`evalpipe.scoring.intervals.paired_score`). Typo pairs without a control partner
    (no matching word in the example) are counted in ``control_unmatched``, not dropped silently.

Accuracy change by tokenizer split (:func:`token_split`)
    Each pair's ``tokens_after - tokens_before`` (the generate stage's counts of the edited
    words' tokens under the model's tokenizer, summed over the row's edits) falls in a bin
    (:data:`SPLIT_BINS`: fewer tokens, 0, 1, 2, 3 or more extra tokens); per bin the paired
    accuracy change against the clean prompt, clustered on the example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.arms import CONTROL
from evalpipe.scoring.intervals import paired_score
from evalpipe.scoring.names import POOLED, TYPO
from evalpipe.scoring.transitions import transition_counts

# What the token split reads of a pairs table besides the impact tables' columns.
TOKEN_PAIR_COLUMNS = ["tokens_before", "tokens_after"]
PAIR_KEYS = ["model", "view", "example_id", "variant", "word_rank", "draw"]
CONTROL_COLUMNS = [
    "control_n", "control_unmatched", "accuracy_control", "harm_beyond_control",
    "harm_ci_low", "harm_ci_high", "harm_p", "harm_design_effect", "split_matched",
]  # fmt: skip
"""The word table's matched-control columns (present only when the pairs hold a control arm)."""
SPLIT_BINS = ("<0", "0", "1", "2", "3+")
"""``extra_tokens`` bins: the typo left fewer tokens, the same number, 1, 2, 3 or more extra."""
SPLIT_COLUMNS = [
    "model", "scope", "language", "benchmark", "extra_tokens", "n", "n_examples",
    "tokens_before", "accuracy_original", "accuracy_perturbed", "delta", "ci_low", "ci_high",
    "design_effect", "answer_change",
]  # fmt: skip


def has_control(pairs: pd.DataFrame) -> bool:
    """True when the pairs hold control-arm rows."""
    return "condition" in pairs.columns and bool((pairs["condition"] == CONTROL).any())


def matched_pairs(typo: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """Each typo pair beside its control partner (same view, example, variant, word, draw).

    Returns the typo pairs with ``correct_control`` (bool, False where unmatched), ``matched``
    and ``tokens_before_control`` (when the pairs carry token counts).
    """
    keep = [*PAIR_KEYS, "correct_perturbed"]
    if "tokens_before" in control.columns:
        keep.append("tokens_before")
    partner = control[keep].rename(
        columns={"correct_perturbed": "correct_control", "tokens_before": "tokens_before_control"}
    )
    merged = typo.merge(
        partner.assign(matched=True), on=PAIR_KEYS, how="left", validate="one_to_one"
    )
    merged["matched"] = merged["matched"].fillna(False).astype(bool)
    merged["correct_control"] = merged["correct_control"].fillna(False).astype(bool)
    return merged


def _effect(group: pd.DataFrame, *, level: float) -> dict[str, Any]:
    done = group.loc[group["matched"]]
    typo = done["correct_perturbed"].to_numpy(dtype=bool)
    ctl = done["correct_control"].to_numpy(dtype=bool)
    units = done[["cluster", "word_rank"]].drop_duplicates()
    score = paired_score(typo, ctl, clusters=done["cluster"].to_numpy(), level=level)
    split = None
    if "tokens_before_control" in done.columns and len(done):
        both = done[["tokens_before", "tokens_before_control"]].dropna()
        if len(both):
            split = float((both["tokens_before"] == both["tokens_before_control"]).mean())
    return {
        "control_n": len(units),
        "control_unmatched": int((~group["matched"]).sum()),
        "accuracy_control": float(ctl.mean()) if len(done) else None,
        "harm_beyond_control": float(ctl.mean() - typo.mean()) if len(done) else None,
        "harm_ci_low": score.low,
        "harm_ci_high": score.high,
        "harm_p": score.p_value if len(done) else None,
        "harm_design_effect": score.design_effect,
        "split_matched": split,
    }


def control_effect(typo: pd.DataFrame, control: pd.DataFrame, *, level: float) -> pd.DataFrame:
    """Harm beyond a matched random word per (model, language, scope, word).

    Parameters
    ----------
    typo, control : the typo arm's and the control arm's pairs of the same views
        (``select_pairs`` with ``condition`` "typo" and "control").
    level : confidence level of the intervals.

    Returns
    -------
    DataFrame
        ``model, language, scope, word_rank, variant`` and :data:`CONTROL_COLUMNS`; ``scope``
        "pooled" or a benchmark, like the word table.

    Examples
    --------
    >>> keys = {"model": "m", "view": "b", "benchmark": "b", "language": "english",
    ...         "variant": "the", "word_rank": 1, "draw": 0}
    >>> typo = pd.DataFrame({**keys, "example_id": ["1", "2", "3"], "cluster": [0, 1, 2],
    ...                      "correct_perturbed": [False, False, True]})
    >>> control = pd.DataFrame({**keys, "example_id": ["1", "2"], "cluster": [0, 1],
    ...                         "correct_perturbed": [True, False]})
    >>> row = control_effect(typo, control, level=0.95).iloc[0]
    >>> float(row["harm_beyond_control"]), int(row["control_n"]), int(row["control_unmatched"])
    (0.5, 2, 1)
    """
    merged = matched_pairs(typo, control)
    rows = []
    scopes: list[tuple[str, list[str]]] = [(POOLED, []), ("benchmark", ["benchmark"])]
    for scope, extra in scopes:
        keys = ["model", "language", *extra, "word_rank", "variant"]
        for values, group in merged.groupby(keys, sort=True):
            named = dict(zip(keys, values, strict=True))
            rows.append(
                {
                    "model": named["model"],
                    "language": named["language"],
                    "scope": named.get("benchmark", POOLED) if scope != POOLED else POOLED,
                    "word_rank": int(named["word_rank"]),
                    "variant": named["variant"],
                    **_effect(group, level=level),
                }
            )
    columns = ["model", "language", "scope", "word_rank", "variant", *CONTROL_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def with_control(words: pd.DataFrame, effect: pd.DataFrame) -> pd.DataFrame:
    """The word table with :data:`CONTROL_COLUMNS` joined on (model, language, scope, rank,
    variant); words without control pairs get nulls (and their typo pairs as unmatched)."""
    table = words.merge(
        effect.rename(columns={"word_rank": "rank"}),
        on=["model", "language", "scope", "rank", "variant"],
        how="left",
        validate="one_to_one",
    )
    return table


def split_bin(extra: int) -> str:
    """The :data:`SPLIT_BINS` label of a number of extra tokens.

    >>> [split_bin(k) for k in (-2, 0, 1, 2, 5)]
    ['<0', '0', '1', '2', '3+']
    """
    if extra < 0:
        return "<0"
    return "3+" if extra >= 3 else str(extra)


def split_bins(extra: np.ndarray) -> np.ndarray:
    """:func:`split_bin` of every value of an integer array, as an object array of labels
    (one lookup instead of a Python call per pair).

    >>> split_bins(np.array([-2, 0, 1, 2, 5])).tolist()
    ['<0', '0', '1', '2', '3+']
    """
    labels = np.array(SPLIT_BINS, dtype=object)  # SPLIT_BINS[k + 1] is the label of k in -1..3
    return labels[np.clip(np.asarray(extra, dtype=np.int64), -1, 3) + 1]


def token_split(
    pairs: pd.DataFrame, *, level: float, by: Sequence[str] = ("benchmark",)
) -> pd.DataFrame:
    """Accuracy change by the typo's extra tokens, pooled per language and per ``by``.

    Parameters
    ----------
    pairs : the typo arm's pairs (``model, language, benchmark, cluster, tokens_before,
        tokens_after, correct_original, correct_perturbed``, ``prediction_*``); pairs without
        token counts are left out.
    level : confidence level.
    by : the finer scopes besides the pooled one.

    Returns
    -------
    DataFrame
        :data:`SPLIT_COLUMNS`, one row per (model, scope, language, benchmark, bin) with pairs,
        bins in :data:`SPLIT_BINS` order; ``tokens_before`` is the mean tokens of the edited
        words before the typo.

    Examples
    --------
    >>> pairs = pd.DataFrame({"model": "m", "language": "english", "benchmark": "b",
    ...     "cluster": [0, 1, 2, 3], "tokens_before": [1, 1, 2, 1], "tokens_after": [1, 2, 4, 3],
    ...     "correct_original": True, "correct_perturbed": [True, False, False, True],
    ...     "prediction_original": "A", "prediction_perturbed": ["A", "B", "C", "A"]})
    >>> token_split(pairs, level=0.95, by=())[["extra_tokens", "n", "delta"]]
      extra_tokens  n  delta
    0            0  1    0.0
    1            1  1   -1.0
    2            2  2   -0.5
    """
    data = pairs.dropna(subset=["tokens_before", "tokens_after"])
    if "condition" in data.columns:
        data = data.loc[data["condition"] == TYPO]
    extra = data["tokens_after"].astype("int64") - data["tokens_before"].astype("int64")
    data = data.assign(extra_tokens=split_bins(extra.to_numpy()))
    order = {label: i for i, label in enumerate(SPLIT_BINS)}
    rows: list[dict[str, Any]] = []
    scopes: list[tuple[str, list[str]]] = [(POOLED, ["model", "language"])]
    scopes += [(column, ["model", "language", column]) for column in by]
    for scope, keys in scopes:
        for values, group in data.groupby(keys, sort=True):
            named = dict(zip(keys, values, strict=True))
            bins = sorted(group.groupby("extra_tokens"), key=lambda item: order[item[0]])
            for label, at in bins:
                o = at["correct_original"].to_numpy(dtype=bool)
                p = at["correct_perturbed"].to_numpy(dtype=bool)
                score = paired_score(o, p, clusters=at["cluster"].to_numpy(), level=level)
                rows.append(
                    {
                        "model": named["model"],
                        "scope": scope,
                        "language": named["language"],
                        "benchmark": named.get("benchmark"),
                        "extra_tokens": label,
                        "n": len(at),
                        "n_examples": int(at["cluster"].nunique()),
                        "tokens_before": float(at["tokens_before"].astype(float).mean()),
                        "accuracy_original": float(o.mean()),
                        "accuracy_perturbed": float(p.mean()),
                        "delta": float(p.mean() - o.mean()),
                        "ci_low": score.low,
                        "ci_high": score.high,
                        "design_effect": score.design_effect,
                        "answer_change": transition_counts(at)["answer_change"],
                    }
                )
    table = pd.DataFrame(rows, columns=SPLIT_COLUMNS)
    return table.reset_index(drop=True)
