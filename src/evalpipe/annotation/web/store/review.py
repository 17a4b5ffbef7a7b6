"""Adjudication: the final rating of a disputed item, with the adjudicator's note."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from evalpipe.annotation.schema import ADJUDICATED_PREFIX, AXES
from evalpipe.annotation.web.store.db import Database, check_values, utc_now
from evalpipe.annotation.web.store.ratings import MAX_COMMENT_CHARS, comment_too_long
from evalpipe.errors import InputError


@dataclass(frozen=True)
class Adjudication:
    """The final rating of a disputed item, set by an adjudicator with a note."""

    item_id: str
    adjudicator_id: str
    scores: dict[str, int]
    confidence: dict[str, float]
    note: str
    updated_at: str

    @property
    def annotator_id(self) -> str:
        """How the record is exported (spec format): ``adjudicated:<adjudicator>``."""
        return f"{ADJUDICATED_PREFIX}{self.adjudicator_id}"


class Review(Database):
    """Final ratings set by adjudicators."""

    def save_adjudication(
        self,
        item_id: str,
        adjudicator_id: str,
        scores: dict[str, int],
        confidence: dict[str, float],
        note: str,
    ) -> None:
        """Set (or replace) the final rating of an item, with the adjudicator's note.

        Raises
        ------
        InputError
            Unknown item, a value out of range, an empty note, or a note longer than
            ``MAX_COMMENT_CHARS`` (the comments' limit; a note is never cut).
        """
        check_values(scores, confidence)
        note = note.strip()
        if not note:
            raise InputError('field "note": say briefly why this is the final rating')
        if len(note) > MAX_COMMENT_CHARS:
            raise InputError(comment_too_long(len(note), what="Note"))
        values = [scores[a] for a in AXES] + [float(confidence[a]) for a in AXES]
        cols = [f"s_{a}" for a in AXES] + [f"c_{a}" for a in AXES]
        now = utc_now()
        with self._write() as con:
            if not con.execute("SELECT 1 FROM items WHERE id = ?", (item_id,)).fetchone():
                raise InputError(f"item {item_id!r} does not exist")
            con.execute(
                f"INSERT INTO adjudications(item_id, adjudicator_id, {', '.join(cols)}, note, "
                f"created_at, updated_at) VALUES (?, ?, {', '.join('?' * len(cols))}, ?, ?, ?) "
                f"ON CONFLICT(item_id) DO UPDATE SET adjudicator_id = excluded.adjudicator_id, "
                + ", ".join(f"{c} = excluded.{c}" for c in cols)
                + ", note = excluded.note, updated_at = excluded.updated_at",
                [item_id, adjudicator_id, *values, note, now, now],
            )
            self._bump_version(con)

    def adjudications(self) -> list[Adjudication]:
        """Every final rating, sorted by item id."""
        rows = self._conn().execute("SELECT * FROM adjudications ORDER BY item_id").fetchall()
        return [_adjudication(r) for r in rows]

    def adjudication(self, item_id: str) -> Adjudication | None:
        row = (
            self._conn()
            .execute("SELECT * FROM adjudications WHERE item_id = ?", (item_id,))
            .fetchone()
        )
        return None if row is None else _adjudication(row)


def _adjudication(row: sqlite3.Row) -> Adjudication:
    return Adjudication(
        item_id=row["item_id"],
        adjudicator_id=row["adjudicator_id"],
        scores={a: int(row[f"s_{a}"]) for a in AXES},
        confidence={a: float(row[f"c_{a}"]) for a in AXES},
        note=row["note"],
        updated_at=row["updated_at"],
    )
