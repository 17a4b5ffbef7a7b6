"""One pairing of perturbed rows with their originals, for every paired statistic.

The headline deltas (score stage), the per-word tables of the score stage, the impact tables
(words, operations, scripts) and the model comparison all compare a perturbed answer with the
same example's original answer. They all take their pairs from :func:`pair_rows`, so a delta means
the same thing wherever it is printed.

A pair is one perturbed row (a target word whose typos fired in the example; with repeated typo
draws, one row per draw) joined with its example's single original row for the same model.
``cluster`` numbers the examples (benchmark, example_id): every pair of one example shares its
original answer, so an interval must treat the pairs of one cluster as dependent
(:mod:`evalpipe.scoring.intervals` does, through a design effect).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalpipe.errors import InputError
from evalpipe.scoring.scorer import ORIGINAL, check_columns

REQUIRED_COLUMNS = ("benchmark", "example_id", "variant", "correct")
PAIR_COLUMNS = [
    "model", "language", "benchmark", "example_id", "cluster", "draw", "variant", "word_rank",
    "occurrences", "perturbed_occurrences", "correct_original", "correct_perturbed",
    "unparsed_original", "unparsed_perturbed", "op", "script",
]  # fmt: skip
MIXED = "mixed"


def _ints(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        return np.zeros(len(frame), dtype=np.int64)
    return frame[column].fillna(0).astype("int64").to_numpy()


def _keys(frame: pd.DataFrame) -> np.ndarray:
    """One string per row naming its (model, benchmark, example)."""
    parts = [frame[c].astype(object).where(frame[c].notna(), "").astype(str).to_numpy(dtype=object)
             for c in ("model", "benchmark", "example_id")]  # fmt: skip
    return parts[0] + "\x1f" + parts[1] + "\x1f" + parts[2]


def _unparsed(frame: pd.DataFrame) -> np.ndarray:
    if "parse_status" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return (frame["parse_status"] == "unparsed").to_numpy()


def _attribute(kinds: Sequence[str]) -> str | None:
    unique = set(kinds)
    if not unique:
        return None
    return unique.pop() if len(unique) == 1 else MIXED


def attribution(
    perturbations: pd.DataFrame, *, script_of: Callable[[Any], str], source: str = "perturbed"
) -> pd.DataFrame:
    """Operation type and script class of each perturbed row's typos.

    Parameters
    ----------
    perturbations : perturbed rows (``benchmark, example_id, word_rank, perturbations``;
        optional ``draw``).
    script_of : callable mapping one operation record to its script class.
    source : file name for error messages.

    Returns
    -------
    DataFrame
        ``benchmark, example_id, word_rank, draw, op, script``: a kind when every typo that fired
        is of that kind, ``"mixed"`` otherwise, None without typos.
    """
    check_columns(perturbations, ("benchmark", "example_id", "word_rank", "perturbations"),
                  source=source)  # fmt: skip
    records = perturbations.loc[perturbations["word_rank"] != 0]
    ops = [list(v) if v is not None else [] for v in records["perturbations"]]
    return pd.DataFrame(
        {
            "benchmark": records["benchmark"].to_numpy(),
            "example_id": records["example_id"].to_numpy(),
            "word_rank": records["word_rank"].astype("int64").to_numpy(),
            "draw": _ints(records, "draw"),
            "op": [_attribute([str(op["op"]) for op in row]) for row in ops],
            "script": [_attribute([script_of(op) for op in row]) for row in ops],
        }
    )


def pair_rows(
    scored: pd.DataFrame,
    *,
    language: str | None = None,
    kinds: pd.DataFrame | None = None,
    carry: Sequence[str] = (),
    source: str = "scored",
) -> pd.DataFrame:
    """Every perturbed row joined with its example's original row (per model).

    Parameters
    ----------
    scored : scored rows of one or more benchmarks (``benchmark, example_id, variant, correct``;
        optional ``model`` (one model when absent), ``word_rank``, ``draw`` (typo draw, 0 when
        absent), ``occurrences``, ``perturbed_occurrences``, ``parse_status``).
    language : the benchmarks' language, copied into the ``language`` column.
    kinds : :func:`attribution` of the same rows, for the ``op`` and ``script`` columns; None
        leaves both null.
    carry : further columns of the perturbed rows to copy into the pairs (e.g. ``prompt``).
    source : file name for error messages.

    Returns
    -------
    DataFrame
        :data:`PAIR_COLUMNS` and the ``carry`` columns, sorted by model, word rank, variant, benchmark, example, draw.
        ``cluster`` is an integer code of (benchmark, example_id), equal for every pair of one
        example whatever the word or draw.

    Raises
    ------
    InputError
        A missing column, a perturbed row without its original, or two originals for one example.

    Examples
    --------
    >>> rows = pd.DataFrame({"benchmark": "b", "example_id": ["1", "1", "2", "2"],
    ...                      "variant": ["original", "the", "original", "the"],
    ...                      "word_rank": [0, 1, 0, 1], "correct": [True, False, True, True]})
    >>> pair_rows(rows)[["example_id", "cluster", "correct_original", "correct_perturbed"]]
      example_id  cluster  correct_original  correct_perturbed
    0          1        0              True              False
    1          2        1              True               True
    """
    check_columns(scored, (*REQUIRED_COLUMNS, *carry), source=source)
    frame = scored if "model" in scored.columns else scored.assign(model=None)
    is_original = (frame["variant"] == ORIGINAL).to_numpy()
    originals = frame.loc[is_original]
    keys = _keys(originals)
    duplicated = pd.Series(keys).duplicated(keep=False).to_numpy()
    if duplicated.any():
        row = originals.loc[duplicated].iloc[0]
        model = "" if row["model"] is None else f" (model {row['model']!r})"
        raise InputError(
            f"{source}: example_id {row['example_id']!r}{model} has more than one 'original' "
            "row; expected one"
        )
    base = pd.DataFrame(
        {
            "_key": keys,
            "correct_original": originals["correct"].astype(bool).to_numpy(),
            "unparsed_original": _unparsed(originals),
        }
    )
    pert = frame.loc[~is_original]
    pairs = pd.DataFrame(
        {
            "_key": _keys(pert),
            "model": pert["model"].to_numpy(),
            "language": language,
            "benchmark": pert["benchmark"].astype(str).to_numpy(),
            "example_id": pert["example_id"].to_numpy(),
            "draw": _ints(pert, "draw"),
            "variant": pert["variant"].astype(str).to_numpy(),
            "word_rank": _ints(pert, "word_rank"),
            "occurrences": _ints(pert, "occurrences"),
            "perturbed_occurrences": _ints(pert, "perturbed_occurrences"),
            "correct_perturbed": pert["correct"].astype(bool).to_numpy(),
            "unparsed_perturbed": _unparsed(pert),
            **{column: pert[column].to_numpy() for column in carry},
        }
    )
    pairs = pairs.merge(base, on="_key", how="left", validate="many_to_one")
    orphan = pairs["correct_original"].isna()
    if orphan.any():
        row = pairs.loc[orphan].iloc[0]
        raise InputError(
            f"{source}: example_id {row['example_id']!r} (variant {row['variant']!r}) has no "
            "'original' row to pair with"
        )
    pairs["correct_original"] = pairs["correct_original"].astype(bool)
    pairs["unparsed_original"] = pairs["unparsed_original"].astype(bool)
    pairs["op"] = None
    pairs["script"] = None
    if kinds is not None and len(pairs):
        join = ["benchmark", "example_id", "word_rank", "draw"]
        pairs = pairs.drop(columns=["op", "script"]).merge(
            kinds.astype({"benchmark": str}), on=join, how="left", validate="many_to_one"
        )
    # Sorted codes, so the numbering does not depend on the order of the rows.
    example = (pairs["benchmark"] + "\x1f" + pairs["example_id"].astype(str)).to_numpy()
    pairs["cluster"] = np.unique(example, return_inverse=True)[1].astype(np.int64)
    pairs = pairs.sort_values(
        ["model", "word_rank", "variant", "benchmark", "example_id", "draw"], kind="stable"
    )
    return pairs[[*PAIR_COLUMNS, *carry]].reset_index(drop=True)
