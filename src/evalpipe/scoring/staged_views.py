"""The score stage one benchmark at a time: what it keeps of a scored view once the view is
written to its staging folder and paired, and the staged views read back when a study asks.

A scored view carries every prompt and output; at millions of rows a model's views do not fit
in memory together. The stage writes each view as soon as it is scored, pairs it
(:func:`evalpipe.scoring.pairs.view_pairs`) and keeps only :func:`compact_view`: what the
summaries (:func:`evalpipe.scoring.summaries.build_reports`) read of a view, in small dtypes.
A study that reads whole views (perplexity, calibration, formats) gets :class:`StagedViews`,
which reads one view back from its staged file each time it is asked for one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pandas as pd

from evalpipe.scoring.names import ORIGINAL

# Read of every row: the arm, whether the row is a clean prompt, and the answer's outcome.
_LABELS = ("condition", "variant", "parse_status", "finish_reason")
# Read of the clean rows only (the classification report and the confusion table).
_CLEAN_TEXT = ("example_id", "gold", "prediction")
# The scored columns held as Python objects (None where missing; evalpipe.scoring.scorer's
# with_scores): read back as objects, so a study sees the frame the scorer made.
_OBJECTS = ("gold", "prediction", "parse_status", "parse_extra")


def compact_view(frame: pd.DataFrame) -> pd.DataFrame:
    """What :func:`~evalpipe.scoring.summaries.build_reports` reads of a scored view, small: the
    labels as categoricals, ``correct`` as bool, and the answer text (``example_id, gold,
    prediction``) of the clean (``original``) rows only, None on the others.

    The summaries give the same figures for the compact view as for the whole one: they read
    every row's labels and correctness, and the answer text of the clean rows alone.

    Examples
    --------
    >>> frame = pd.DataFrame({"condition": "typo", "variant": ["original", "the"],
    ...     "example_id": ["1", "1"], "gold": "A", "prediction": ["A", "B"],
    ...     "parse_status": "strict", "correct": [True, False], "prompt": "Q?"})
    >>> compact_view(frame)[["variant", "prediction", "correct"]]
        variant prediction  correct
    0  original          A     True
    1       the       None    False
    """
    clean = (frame["variant"] == ORIGINAL).to_numpy()
    out = {}
    for column in frame.columns:
        if column in _LABELS:
            out[column] = frame[column].astype("category")
        elif column == "correct":
            out[column] = frame[column].astype(bool)
        elif column in _CLEAN_TEXT:
            values = frame[column].astype(object).where(clean, None)
            out[column] = values.where(values.notna(), None)
    return pd.DataFrame(out, index=frame.index)


class StagedViews(Mapping[str, pd.DataFrame]):
    """``{view: scored frame}`` read from ``folder/<view>.parquet`` on each access (nothing is
    kept: a study that walks the views holds one at a time), in the order of ``names``."""

    def __init__(self, folder: Path, names: list[str]) -> None:
        self._folder = Path(folder)
        self._names = list(names)

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._names:
            raise KeyError(name)
        frame = pd.read_parquet(self._folder / f"{name}.parquet")
        for column in _OBJECTS:
            if column in frame.columns:
                values = frame[column].astype(object)
                frame[column] = values.where(values.notna(), None)
        return frame

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
