"""Ratings, skips, comments, flags and drafts of the annotation database."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evalpipe.annotation.schema import AXES, Annotation
from evalpipe.annotation.web.store.db import (
    MAX_ACTIVE_MS_PER_ITEM,
    MAX_ACTIVE_MS_PER_VISIT,
    Database,
    check_values,
    utc_now,
)
from evalpipe.errors import InputError

# Longest comment on an item (and adjudication note); a longer one is refused with a message,
# never cut.
MAX_COMMENT_CHARS = 2000


def comment_too_long(n_chars: int, *, what: str = "Comment") -> str:
    """The message for a comment (or adjudication note, ``what="Note"``) over the limit, shown
    in the form and raised by the store. Characters are code points, as the page counts them."""
    return (
        f"{what} not saved: it has {n_chars:,} characters and the limit is "
        f"{MAX_COMMENT_CHARS:,}. Shorten it and save again."
    )


@dataclass(frozen=True)
class Rating:
    item_id: str
    annotator_id: str
    scores: dict[str, int]
    confidence: dict[str, float]
    updated_at: str
    active_ms: int
    revisions: int


class Ratings(Database):
    """One rating per (annotator, item), with skips, comments, flags and drafts."""

    def save_rating(
        self,
        annotator_id: str,
        item_id: str,
        scores: dict[str, int],
        confidence: dict[str, float],
        *,
        active_ms: int = 0,
    ) -> bool:
        """Insert or edit one rating and commit before returning.

        Returns
        -------
        bool
            False when the values equal the stored rating (nothing written, not an edit).

        Raises
        ------
        InputError
            If the item is not assigned to the annotator or a value is out of range.
        """
        check_values(scores, confidence)
        active_ms = max(0, min(int(active_ms), MAX_ACTIVE_MS_PER_VISIT))
        now = utc_now()
        values = [scores[a] for a in AXES] + [float(confidence[a]) for a in AXES]
        cols = [f"s_{a}" for a in AXES] + [f"c_{a}" for a in AXES]
        with self._write() as con:
            if not con.execute(
                "SELECT 1 FROM assignments WHERE annotator_id = ? AND item_id = ?",
                (annotator_id, item_id),
            ).fetchone():
                raise InputError(f"item {item_id!r} is not assigned to {annotator_id!r}")
            con.execute(
                "DELETE FROM drafts WHERE annotator_id = ? AND item_id = ?",
                (annotator_id, item_id),
            )
            old = con.execute(
                f"SELECT {', '.join(cols)} FROM ratings WHERE annotator_id = ? AND item_id = ?",
                (annotator_id, item_id),
            ).fetchone()
            if old is not None:
                # Re-saving the same values is not an edit; an edit changes values and the time
                # of the last edit but not the active time: that measures the first rating (a
                # browser re-posting a large active_ms cannot inflate it).
                if list(old) == values:
                    return False
                con.execute(
                    f"UPDATE ratings SET {', '.join(f'{c} = ?' for c in cols)}, updated_at = ?, "
                    f"revisions = revisions + 1 WHERE annotator_id = ? AND item_id = ?",
                    [*values, now, annotator_id, item_id],
                )
                self._bump_version(con)
                return True
            # Time spent on the item before skipping it counts towards its rating.
            skipped = con.execute(
                "DELETE FROM skips WHERE annotator_id = ? AND item_id = ? RETURNING active_ms",
                (annotator_id, item_id),
            ).fetchone()
            active_ms += int(skipped[0]) if skipped else 0
            active_ms = min(active_ms, MAX_ACTIVE_MS_PER_ITEM)
            con.execute(
                f"INSERT INTO ratings(annotator_id, item_id, {', '.join(cols)}, created_at, "
                f"updated_at, active_ms, revisions) VALUES (?, ?, {', '.join('?' * len(cols))}, "
                f"?, ?, ?, 1)",
                [annotator_id, item_id, *values, now, now, active_ms],
            )
            self._bump_version(con)
        return True

    def skip(self, annotator_id: str, item_id: str, *, active_ms: int = 0) -> None:
        """Mark an item skipped (it comes back after the fresh ones); a no-op if already rated."""
        active_ms = max(0, min(int(active_ms), MAX_ACTIVE_MS_PER_VISIT))
        with self._write() as con:
            con.execute(
                "INSERT INTO skips(annotator_id, item_id, skipped_at, active_ms) "
                "SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM ratings WHERE "
                "annotator_id = ? AND item_id = ?) ON CONFLICT DO UPDATE SET "
                "skipped_at = excluded.skipped_at, "
                f"active_ms = MIN(active_ms + excluded.active_ms, {MAX_ACTIVE_MS_PER_ITEM})",
                (annotator_id, item_id, utc_now(), active_ms, annotator_id, item_id),
            )

    def rating(self, annotator_id: str, item_id: str) -> Rating | None:
        row = (
            self._conn()
            .execute(
                "SELECT * FROM ratings WHERE annotator_id = ? AND item_id = ?",
                (annotator_id, item_id),
            )
            .fetchone()
        )
        return None if row is None else _rating(row)

    def ratings(self, *, annotator_id: str | None = None) -> list[Rating]:
        """All ratings (or one annotator's), sorted by item id then annotator id."""
        sql = "SELECT * FROM ratings"
        args: tuple[str, ...] = ()
        if annotator_id is not None:
            sql += " WHERE annotator_id = ?"
            args = (annotator_id,)
        rows = self._conn().execute(sql + " ORDER BY item_id, annotator_id", args).fetchall()
        return [_rating(r) for r in rows]

    def count_ratings(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM ratings").fetchone()[0])

    def item_ratings(self, item_id: str) -> list[Rating]:
        """Every rating of one item, by annotator id (for adjudication; never shown to raters)."""
        rows = (
            self._conn()
            .execute("SELECT * FROM ratings WHERE item_id = ? ORDER BY annotator_id", (item_id,))
            .fetchall()
        )
        return [_rating(r) for r in rows]

    # -- comments, flags, drafts ----------------------------------------------------------------
    def save_note(self, annotator_id: str, item_id: str, *, comment: str, flag: bool) -> None:
        """Store the annotator's comment and flag on an item (empty and unflagged: removed).

        Raises
        ------
        InputError
            If the comment is longer than ``MAX_COMMENT_CHARS`` (it is never cut silently).
        """
        comment = comment.strip()
        if len(comment) > MAX_COMMENT_CHARS:
            raise InputError(comment_too_long(len(comment)))
        with self._write() as con:
            if not comment and not flag:
                con.execute(
                    "DELETE FROM notes WHERE annotator_id = ? AND item_id = ?",
                    (annotator_id, item_id),
                )
                return
            con.execute(
                "INSERT INTO notes(annotator_id, item_id, comment, flag, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(annotator_id, item_id) DO UPDATE SET "
                "comment = excluded.comment, flag = excluded.flag, "
                "updated_at = excluded.updated_at",
                (annotator_id, item_id, comment, int(flag), utc_now()),
            )

    def notes(self, *, item_id: str | None = None) -> list[dict[str, Any]]:
        """Comments and flags: ``{annotator_id, item_id, comment, flag, updated_at}``."""
        sql = "SELECT * FROM notes"
        args: tuple[str, ...] = ()
        if item_id is not None:
            sql += " WHERE item_id = ?"
            args = (item_id,)
        rows = self._conn().execute(sql + " ORDER BY item_id, annotator_id", args).fetchall()
        return [dict(r) | {"flag": bool(r["flag"])} for r in rows]

    def note(self, annotator_id: str, item_id: str) -> dict[str, Any] | None:
        row = (
            self._conn()
            .execute(
                "SELECT * FROM notes WHERE annotator_id = ? AND item_id = ?",
                (annotator_id, item_id),
            )
            .fetchone()
        )
        return None if row is None else dict(row) | {"flag": bool(row["flag"])}

    def save_draft(self, annotator_id: str, item_id: str, values: dict[str, str]) -> None:
        """Keep half-entered form values (``score_<axis>``/``conf_<axis>``, and a comment over the
        limit with its flag: ``comment``/``flag``) until the next save."""
        with self._write() as con:
            if not values:
                con.execute(
                    "DELETE FROM drafts WHERE annotator_id = ? AND item_id = ?",
                    (annotator_id, item_id),
                )
                return
            con.execute(
                "INSERT INTO drafts(annotator_id, item_id, payload, updated_at) VALUES "
                "(?, ?, ?, ?) ON CONFLICT(annotator_id, item_id) DO UPDATE SET "
                "payload = excluded.payload, updated_at = excluded.updated_at",
                (annotator_id, item_id, json.dumps(values, sort_keys=True), utc_now()),
            )

    def draft(self, annotator_id: str, item_id: str) -> dict[str, str]:
        row = (
            self._conn()
            .execute(
                "SELECT payload FROM drafts WHERE annotator_id = ? AND item_id = ?",
                (annotator_id, item_id),
            )
            .fetchone()
        )
        return {} if row is None else dict(json.loads(row[0]))


def _rating(row: sqlite3.Row) -> Rating:
    return Rating(
        item_id=row["item_id"],
        annotator_id=row["annotator_id"],
        scores={a: int(row[f"s_{a}"]) for a in AXES},
        confidence={a: float(row[f"c_{a}"]) for a in AXES},
        updated_at=row["updated_at"],
        active_ms=int(row["active_ms"]),
        revisions=int(row["revisions"]),
    )


def to_annotations(ratings: Iterable[Rating]) -> list[Annotation]:
    """Ratings as Annotation records (:mod:`evalpipe.annotation.schema`) (timestamp = time of the last edit, UTC)."""
    return [
        Annotation(
            id=r.item_id,
            annotator_id=r.annotator_id,
            timestamp=r.updated_at,
            annotations=dict(r.scores),
            confidence=dict(r.confidence),
        )
        for r in ratings
    ]
