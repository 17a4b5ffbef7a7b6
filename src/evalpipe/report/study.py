"""What a study adds to the report (:class:`ReportPart`): the files it reads
(:class:`ReportInput`, loaded by :func:`evalpipe.report.inputs.load_report_data` into
``data.study_inputs``) and its sections, each ``(id, title, body)`` with ``body`` None when the
study has no data (the section is left out). The parts are listed in
:mod:`evalpipe.studies.report`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalpipe.paths import ProjectPaths
from evalpipe.report.data import ReportData

Section = tuple[str, str, str | None]
# after the models compared; after the transitions; after the typos section
PLACES = ("effects", "figures", "arms")
FORMATS = ("json", "parquet")


@dataclass(frozen=True)
class ReportInput:
    """One file a study's sections read, loaded into ``data.study_inputs[name]``.

    ``model_path(paths, slug)`` names one file per model of params.yaml ``models`` (the value is
    ``{slug: content}`` of the files found, ``{}`` without any); ``path(paths)`` names one file
    (the value is its content, absent when not found). ``format`` is ``json`` or ``parquet``.
    An absent file leaves the section out; with ``needed`` (which stage writes it) it is also
    listed among the missing inputs. ``when(data)``, given the core inputs, says whether the
    file is read at all (e.g. only for the count design's summaries).
    """

    name: str
    format: str
    path: Callable[[ProjectPaths], Path] | None = None
    model_path: Callable[[ProjectPaths, str], Path] | None = None
    needed: str | None = None
    when: Callable[[ReportData], bool] | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"{self.name}: format {self.format!r}: expected one of {FORMATS}")
        if (self.path is None) == (self.model_path is None):
            raise ValueError(f"{self.name}: expected exactly one of path and model_path")

    def files(self, paths: ProjectPaths, slugs: list[str]) -> list[tuple[str | None, Path]]:
        """``(slug, path)`` of every file this input names (slug None: one file)."""
        if self.model_path is not None:
            return [(slug, self.model_path(paths, slug)) for slug in slugs]
        assert self.path is not None
        return [(None, self.path(paths))]


@dataclass(frozen=True)
class ReportPart:
    """One study's sections, where they go on the page (one of :data:`PLACES`), and the files
    they read (``data.study_inputs``, keyed by each input's name)."""

    name: str
    place: str
    sections: Callable[[ReportData], list[Section]]
    inputs: tuple[ReportInput, ...] = ()


def sections_at(parts: tuple[ReportPart, ...], place: str, data: ReportData) -> list[Section]:
    """The sections of every part placed at ``place``, in the parts' order."""
    if place not in PLACES:
        raise ValueError(f"place {place!r}: expected one of {', '.join(PLACES)}")
    return [s for part in parts if part.place == place for s in part.sections(data)]
