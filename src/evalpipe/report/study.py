"""What a study adds to the report (:class:`ReportPart`): its sections, each ``(id, title,
body)`` with ``body`` None when the study has no data (the section is left out). The parts are
listed in :mod:`evalpipe.studies.report`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evalpipe.report.data import ReportData

Section = tuple[str, str, str | None]
# after the models compared; after the transitions; after the typos section
PLACES = ("effects", "figures", "arms")


@dataclass(frozen=True)
class ReportPart:
    """One study's sections and where they go on the page (one of :data:`PLACES`)."""

    name: str
    place: str
    sections: Callable[[ReportData], list[Section]]


def sections_at(parts: tuple[ReportPart, ...], place: str, data: ReportData) -> list[Section]:
    """The sections of every part placed at ``place``, in the parts' order."""
    if place not in PLACES:
        raise ValueError(f"place {place!r}: expected one of {', '.join(PLACES)}")
    return [s for part in parts if part.place == place for s in part.sections(data)]
