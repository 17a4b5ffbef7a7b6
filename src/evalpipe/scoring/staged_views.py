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

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import pandas as pd
import pyarrow as pa

from evalpipe import atomic
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.defences import usage_table
from evalpipe.scoring.names import ORIGINAL
from evalpipe.scoring.nested_columns import Records, with_records
from evalpipe.scoring.pairs import concat_pairs, view_pairs
from evalpipe.scoring.scorer import error_preview

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


class ViewStaging:
    """A model's scored views as they come, one benchmark at a time: each view written to
    ``folder`` (its rows and its error preview), paired, and kept as its compact view and its
    usage; :meth:`publish` moves the files to ``data/scored/<model>/`` at the end.

    Parameters
    ----------
    folder : the staging folder (beside ``data/scored/<model>/``, on the same file system).
    paths, model : where the views go, and the model's slug (the pairs' ``model``).
    """

    def __init__(self, folder: Path, *, paths: ProjectPaths, model: str) -> None:
        self.folder = Path(folder)
        self.paths = paths
        self.model = model
        self.compact: dict[str, pd.DataFrame] = {}
        self._pairs: dict[str, pd.DataFrame] = {}
        self._usage: list[pd.DataFrame] = []
        self.rows = 0
        self.unparsed = 0

    def add(self, view: str, frame: pd.DataFrame, records: Records | None = None) -> None:
        """Stage one scored view (``frame``, and the outputs' record columns kept in Arrow:
        :mod:`evalpipe.scoring.nested_columns`); afterwards nothing refers to ``frame``."""
        table = pa.Table.from_pandas(frame, preserve_index=False)
        atomic.write_parquet(self.folder / f"{view}.parquet", with_records(table, records or {}))
        del table
        atomic.write_jsonl(self.folder / "errors" / f"{view}.jsonl", error_preview(frame, limit=20))
        source = str(self.paths.scored(view, self.model))
        self._pairs[view] = view_pairs(frame, view=view, model=self.model, source=source)
        self.compact[view] = compact_view(frame)
        usage = usage_table({view: frame})
        if len(usage):
            self._usage.append(usage)
        self.rows += len(frame)
        self.unparsed += int((frame["parse_status"] == "unparsed").sum())

    def pairs(self) -> pd.DataFrame:
        """The pairs table of every staged view (:func:`~evalpipe.scoring.pairs.concat_pairs`);
        the parts are let go."""
        pairs = concat_pairs(self._pairs)
        self._pairs.clear()
        return pairs

    def usage(self) -> pd.DataFrame:
        """Every staged view's :func:`~evalpipe.scoring.defences.usage_table`, in staging order."""
        return pd.concat(self._usage, ignore_index=True) if self._usage else usage_table({})

    def views(self) -> StagedViews:
        """The staged views, read back on access."""
        return StagedViews(self.folder, list(self.compact))

    def publish(self) -> None:
        """Move every staged view and error preview to its place under data/scored/<model>/."""
        for view in self.compact:
            for staged, target in (
                (self.folder / f"{view}.parquet", self.paths.scored(view, self.model)),
                (
                    self.folder / "errors" / f"{view}.jsonl",
                    self.paths.errors_preview(view, self.model),
                ),
            ):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, target)
