"""What a study adds to the score stage (:class:`ScorePart`): figures grouped from the model's
pairs table, and the files it writes. The parts are listed in :mod:`evalpipe.studies.score`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalpipe.paths import ProjectPaths


@dataclass(frozen=True)
class ScoreInputs:
    """What every score part reads: the model's scored views (a mapping that may read each view
    from disk when asked: :class:`~evalpipe.scoring.staged_views.StagedViews`), its pairs table
    and, when the stage computed it as it scored, each view's usage
    (:func:`~evalpipe.scoring.defences.usage_table`; None: computed from ``scored``)."""

    slug: str
    paths: ProjectPaths
    scored: Mapping[str, pd.DataFrame]
    pairs: pd.DataFrame
    level: float
    usage: pd.DataFrame | None = None


def _nothing(figures: Any) -> list[str]:
    return []


@dataclass(frozen=True)
class ScorePart:
    """One study's part of score@<model>.

    Attributes
    ----------
    name : the study's name.
    reserved : the metrics file it writes (``metrics/<model>/<stem>.json``): no benchmark may
        take its stem, whether the study runs or not.
    figures : ``figures(inputs) -> figures`` (None when the study is off or has nothing),
        computed before anything of the model is written.
    write : ``write(inputs, figures)``: writes its files (or removes those an earlier run left).
    lines : ``lines(figures)``: what the stage prints about them.
    """

    name: str
    reserved: Callable[[ProjectPaths, str], Path]
    figures: Callable[[ScoreInputs], Any]
    write: Callable[[ScoreInputs, Any], None]
    lines: Callable[[Any], list[str]] = _nothing


@dataclass(frozen=True)
class ImpactInputs:
    """What every impact part reads: every model's pairs of the matched control arm
    (``pairs``; the impact stage holds the typo arm's once, as ``chosen``), the typo arm's pairs
    the impact tables use (``chosen``: one view per benchmark), each view's examples
    (``n_base``), and the models with their labels."""

    paths: ProjectPaths
    pairs: pd.DataFrame
    chosen: pd.DataFrame
    n_base: pd.DataFrame
    level: float
    models: list[str]
    labels: dict[str, dict]


def _unchanged(inputs: ImpactInputs, words: pd.DataFrame) -> pd.DataFrame:
    return words


def _no_files(inputs: ImpactInputs) -> None:
    return None


@dataclass(frozen=True)
class ImpactPart:
    """One study's part of the impact stage: groupings of every model's pairs.

    Attributes
    ----------
    name : the study's name.
    columns : the pairs columns its groupings read (the stage reads their union).
    words : ``words(inputs, table) -> table``: columns it adds to the per-word impact table.
    write : ``write(inputs)``: its own tables and plots (or removes those it no longer has).
    """

    name: str
    columns: tuple[str, ...] = ()
    words: Callable[[ImpactInputs, pd.DataFrame], pd.DataFrame] = _unchanged
    write: Callable[[ImpactInputs], None] = _no_files
