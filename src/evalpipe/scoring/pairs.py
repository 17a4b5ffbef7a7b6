"""The pairs table: each arm's answer beside the clean prompt's answer, built once per model.

Every paired statistic evalpipe prints (the headline deltas and the per-word tables of the score
stage, accuracy by typo rate, the impact tables of words, operations and scripts, the model
comparison, the report) is a grouping of this one table, so a delta means the same thing wherever
it is printed. The score stage writes it to ``data/scored/<model>/pairs.parquet``.

A pair is one row of a scored view that is not a clean prompt (a target word whose typos fired in
the example, one row per typo draw) joined with the same view's single ``original`` row of the
example *in the same arm*: ``condition`` names the arm (:mod:`evalpipe.arms`; the plain perturbed
sets are :data:`~evalpipe.arms.TYPO`, a defence's rows hold their own clean row), so an arm's
``_original`` columns are the arm applied to the clean prompt.
``cluster`` numbers the examples (benchmark, example_id) in sorted order
(:func:`cluster_codes`, the one place examples are numbered): every pair of one example shares
its original answer, so an interval treats the pairs of one cluster as dependent
(:mod:`evalpipe.scoring.intervals`). The typo kinds (``op``, ``script``) and counts (``n_typos``,
``n_edited_chars``) are the perturb stage's, carried by the outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.errors import InputError
from evalpipe.scoring.names import ORIGINAL, PAIR_COLUMNS
from evalpipe.scoring.scorer import check_columns
from evalpipe.scoring.views import parse_view

# What build_pairs reads of a scored view (the outputs' columns plus score_frame's).
SCORED_COLUMNS = (
    "benchmark", "example_id", "variant", "word_rank", "draw", "condition", "subtask", "language",
    "n_typos", "n_edited_chars", "op", "script", "occurrences", "perturbed_occurrences",
    "prompt", "correct", "score", "prediction", "parse_status", "finish_reason",
)  # fmt: skip
# Integer columns and their dtypes in the pairs table.
_INTEGERS = {
    "word_rank": "int64",
    "draw": "int32",
    "n_typos": "int32",
    "n_edited_chars": "int32",
    "occurrences": "int64",
    "perturbed_occurrences": "int64",
}
# The edited words' tokens before / after their typos (generate's counts under the model's
# tokenizer; null when it had none, or for outputs written before they were counted).
TOKEN_COUNTS = ("tokens_before", "tokens_after")
# Columns taken from both rows of a pair: <name>_original, <name>_perturbed.
_BOTH = ("correct", "score", "prediction", "parse_status", "finish_reason")


def cluster_codes(benchmark: Any, example_id: Any) -> np.ndarray:
    """The example code of each row: equal for rows of one (benchmark, example_id), numbered in
    sorted order of the pair, so the numbering does not depend on the order of the rows.

    Parameters
    ----------
    benchmark, example_id : array-likes of equal length.

    Returns
    -------
    numpy.ndarray of int64 codes 0..k-1.

    Examples
    --------
    >>> cluster_codes(["b", "a", "b", "a"], ["2", "9", "10", "9"]).tolist()
    [2, 0, 1, 0]
    """
    benchmarks = pd.Series(benchmark, dtype=object).astype("str")
    examples = pd.Series(example_id, dtype=object).astype("str")
    if benchmarks.size == 0:
        return np.zeros(0, dtype=np.int64)
    b_codes, _ = pd.factorize(benchmarks, sort=True)
    e_codes, e_uniques = pd.factorize(examples, sort=True)
    # (benchmark, example) in lexicographic order of the two parts.
    combined = b_codes.astype(np.int64) * len(e_uniques) + e_codes
    return np.unique(combined, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _integers(frame: pd.DataFrame, column: str, positions: np.ndarray, source: str) -> np.ndarray:
    values = frame[column].to_numpy()[positions]
    missing = pd.isna(values)
    if missing.any():
        row = int(positions[np.flatnonzero(missing)[0]])
        raise InputError(f"{source}, row {row}: column {column!r}: expected an integer, got null")
    return values.astype(_INTEGERS[column])


def _text(column: pd.Series, positions: np.ndarray) -> pd.Series:
    """The rows at ``positions`` of a text column as str (missing where null)."""
    return column.take(positions).astype("str").reset_index(drop=True)


def view_pairs(frame: pd.DataFrame, *, view: str, model: str, source: str) -> pd.DataFrame:
    """One scored view's part of the pairs table, in table order, with ``cluster`` 0 (numbered
    over the whole table by :func:`concat_pairs`): what :func:`build_pairs` makes of each view,
    so a stage can pair each view as it is scored and let its text go."""
    check_columns(frame, SCORED_COLUMNS, source=source)
    benchmarks = frame["benchmark"].astype(str).unique()
    if len(benchmarks) > 1:
        raise InputError(
            f"{source}: column 'benchmark': a view holds one benchmark, got {sorted(benchmarks)}"
        )
    example_ids = frame["example_id"].astype("str")
    conditions = frame["condition"].astype("str")
    missing = frame["condition"].isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise InputError(f"{source}, row {row}: column 'condition': expected an arm name, got null")
    keys = example_ids + "\x1f" + conditions  # (example, arm): the clean row a pair needs
    is_original = (frame["variant"] == ORIGINAL).to_numpy()
    originals = np.flatnonzero(is_original)
    index = pd.Index(keys.take(originals))
    if index.has_duplicates:
        at = int(originals[np.flatnonzero(index.duplicated())[0]])
        raise InputError(
            f"{source}, row {at}: example_id {example_ids.iloc[at]!r} has more than one "
            f"'original' row in condition {conditions.iloc[at]!r}; expected one"
        )
    arm = np.flatnonzero(~is_original)
    match = index.get_indexer(keys.take(arm))
    if (match < 0).any():
        row = int(arm[np.flatnonzero(match < 0)[0]])
        raise InputError(
            f"{source}, row {row}: example_id {example_ids.iloc[row]!r} (variant "
            f"{frame['variant'].iloc[row]!r}, condition {conditions.iloc[row]!r}) has no "
            "'original' row of its condition to pair with"
        )
    # In table order: arm, word rank, variant, example, draw (the view is one benchmark).
    order = np.lexsort(
        (
            _integers(frame, "draw", arm, source),
            pd.factorize(example_ids.take(arm), sort=True)[0],
            pd.factorize(frame["variant"].take(arm).astype("str"), sort=True)[0],
            _integers(frame, "word_rank", arm, source),
            pd.factorize(conditions.take(arm), sort=True)[0],
        )
    )
    arm, match = arm[order], match[order]
    base = originals[match]
    _, method = parse_view(view)
    columns: dict[str, Any] = {
        "model": model,
        "view": view,
        "method": method,
        "benchmark": _text(frame["benchmark"], arm),
        "subtask": _text(frame["subtask"], arm),
        "language": _text(frame["language"], arm),
        "example_id": example_ids.take(arm).reset_index(drop=True),
        "cluster": np.zeros(arm.size, dtype=np.int64),  # numbered over the whole table
        "variant": _text(frame["variant"], arm),
        "condition": conditions.take(arm).reset_index(drop=True),
        "op": _text(frame["op"], arm),
        "script": _text(frame["script"], arm),
        "prompt_chars": frame["prompt"].take(arm).str.len().fillna(0).to_numpy(dtype=np.int64),
    }
    for column in _INTEGERS:
        columns[column] = _integers(frame, column, arm, source)
    for column in TOKEN_COUNTS:
        values = frame[column].take(arm) if column in frame.columns else [None] * arm.size
        columns[column] = pd.array(list(values), dtype="Int32")
    for column in _BOTH:
        for suffix, positions in (("_original", base), ("_perturbed", arm)):
            if column == "correct":
                columns[column + suffix] = frame[column].to_numpy(dtype=bool)[positions]
            elif column == "score":
                columns[column + suffix] = frame[column].to_numpy(dtype="float64")[positions]
            else:
                columns[column + suffix] = _text(frame[column], positions)
    return pd.DataFrame(columns)[PAIR_COLUMNS]


def build_pairs(
    views: Mapping[str, pd.DataFrame],
    *,
    model: str,
    source_dir: str = "data/scored",
) -> pd.DataFrame:
    """Every arm row of every scored view joined with its example's original row.

    Parameters
    ----------
    views : view name (``gsm8k``, ``mmlu.ll``; :mod:`evalpipe.scoring.views`) -> scored frame
        (:data:`SCORED_COLUMNS`: the outputs' columns and :func:`~evalpipe.scoring.scorer.score_frame`'s).
    model : the model's slug (the ``model`` column).
    source_dir : where the scored views are written, for error messages.

    Returns
    -------
    DataFrame
        :data:`~evalpipe.scoring.names.PAIR_COLUMNS`, one row per (view, example_id, variant,
        word_rank, draw, condition), sorted by view, condition, word rank, variant, example,
        draw; ``cluster`` from :func:`cluster_codes` over the whole table.

    Raises
    ------
    InputError
        A missing column, a null count or condition, a view holding several benchmarks, two
        original rows of one example and condition, or an arm row without its condition's
        original.

    Examples
    --------
    >>> rows = pd.DataFrame({"benchmark": "b", "example_id": ["1", "1", "2", "2"],
    ...     "variant": ["original", "the", "original", "the"], "word_rank": [0, 1, 0, 1],
    ...     "draw": 0, "condition": "typo", "subtask": None, "language": "english", "n_typos": [0, 1, 0, 1],
    ...     "n_edited_chars": [0, 1, 0, 1], "op": [None, "replace", None, "delete"],
    ...     "script": [None, "latin", None, "latin"], "occurrences": [0, 1, 0, 2],
    ...     "perturbed_occurrences": [0, 1, 0, 1], "prompt": "Q?", "correct": [True, False, True, True],
    ...     "score": 1.0, "prediction": "A", "parse_status": "strict", "finish_reason": "stop"})
    >>> build_pairs({"b": rows}, model="m")[["example_id", "cluster", "correct_original",
    ...                                       "correct_perturbed", "op"]]
      example_id  cluster  correct_original  correct_perturbed       op
    0          1        0              True              False  replace
    1          2        1              True               True   delete
    """
    return concat_pairs(
        {
            name: view_pairs(
                views[name], view=name, model=model, source=f"{source_dir}/{name}.parquet"
            )
            for name in views
        }
    )


def concat_pairs(parts: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The pairs table from every view's part (:func:`view_pairs`): the views in sorted order,
    ``cluster`` numbered over the whole table (:func:`cluster_codes`).

    The parts are consumed: each column is dropped from them once it is joined, so the table and
    its parts are not held whole side by side (at millions of pairs, twice the table's memory).
    """
    frames = [parts[name] for name in sorted(parts) if len(parts[name])]
    if not frames:
        return empty_pairs()
    columns = {}
    for column in list(frames[0].columns):  # views in sorted order, each sorted
        columns[column] = pd.concat([f[column] for f in frames], ignore_index=True)
        for frame in frames:
            del frame[column]
    pairs = pd.DataFrame(columns, copy=False)
    pairs["cluster"] = cluster_codes(pairs["benchmark"].to_numpy(), pairs["example_id"].to_numpy())
    return pairs


def empty_pairs() -> pd.DataFrame:
    """A pairs table without rows, with the table's dtypes."""
    dtypes = {
        **dict.fromkeys(PAIR_COLUMNS, "object"),
        **_INTEGERS,
        "cluster": "int64",
        "prompt_chars": "int64",
        **dict.fromkeys(TOKEN_COUNTS, "Int32"),
        "correct_original": "bool",
        "correct_perturbed": "bool",
        "score_original": "float64",
        "score_perturbed": "float64",
    }
    return pd.DataFrame({c: pd.Series(dtype=dtypes[c]) for c in PAIR_COLUMNS})
