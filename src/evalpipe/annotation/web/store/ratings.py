"""Ratings, skips, comments, flags and drafts of the annotation database."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from evalpipe.annotation.schema import AXES, Annotation
from evalpipe.annotation.web.store.db import (
    MAX_ACTIVE_MS_PER_ITEM,
    MAX_ACTIVE_MS_PER_VISIT,
    Database,
    check_values,
    iso_ms,
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
    timestamp_start: str | None = None
    timestamp_end: str | None = None
    annotation_duration: float | None = None
    is_modified: bool = False
    browser_meta: dict[str, str] = field(default_factory=dict)


# A page open longer than this is a forgotten tab: its start is not trusted as the rating's.
MAX_OPEN_SECONDS = 24 * 3600
BROWSER_META_KEYS = ("user_agent", "os", "viewport")


def _parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def audit_times(started_at: str | None, *, now: datetime | None = None) -> tuple[str, str, float]:
    """``(timestamp_start, timestamp_end, annotation_duration)`` of a save happening ``now``.

    ``started_at`` is when the item's page was served (the form carries it); a missing, garbled,
    future or day-old value starts the clock at the save. Both stamps have milliseconds and the
    duration is their difference, so ``end - start - duration`` is 0 to the millisecond.

    >>> audit_times("2025-01-01T10:00:00.250Z", now=datetime(2025, 1, 1, 10, 0, 42, tzinfo=UTC))
    ('2025-01-01T10:00:00.250Z', '2025-01-01T10:00:42.000Z', 41.75)
    """
    end = now or datetime.now(UTC)
    end_s = iso_ms(end)
    end = _parse_iso(end_s)
    start = end
    if started_at:
        try:
            parsed = _parse_iso(started_at)
        except ValueError:
            parsed = None
        if (
            parsed is not None
            and parsed.tzinfo is not None
            and end - timedelta(seconds=MAX_OPEN_SECONDS) <= parsed <= end
        ):
            start = _parse_iso(iso_ms(parsed))
    return iso_ms(start), end_s, round((end - start).total_seconds(), 3)


def clean_browser_meta(meta: Mapping[str, Any] | None) -> dict[str, str]:
    """The logging spec's ``browser_meta`` (``user_agent, os, viewport``), each cut to 300 chars."""
    meta = meta or {}
    return {k: str(meta.get(k) or "")[:300] for k in BROWSER_META_KEYS}


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
        started_at: str | None = None,
        browser_meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """Insert or edit one rating and commit before returning.

        Every write also appends to the audit trail (``rating_history``): the delta of each
        changed score and confidence (``{"scores": {axis: [old, new]}, "confidence": ...}``;
        ``old`` is null on the first save), with ``timestamp_start`` (``started_at``: when the
        page was served), ``timestamp_end`` (now) and ``annotation_duration`` (their
        difference, seconds); the rating keeps its latest ones, ``is_modified`` (edited since
        its first save) and ``browser_meta``. :meth:`replay_history` rebuilds the ratings from
        the deltas alone.

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
        t_start, t_end, duration = audit_times(started_at)
        meta = json.dumps(clean_browser_meta(browser_meta), sort_keys=True)
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
            # A reopened item is done again once saved, whether or not the values changed.
            con.execute(
                "DELETE FROM reopened WHERE annotator_id = ? AND item_id = ?",
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
                    f"revisions = revisions + 1, timestamp_start = ?, timestamp_end = ?, "
                    f"annotation_duration = ?, is_modified = 1, browser_meta = ? "
                    f"WHERE annotator_id = ? AND item_id = ?",
                    [*values, now, t_start, t_end, duration, meta, annotator_id, item_id],
                )
                self._log_change(
                    con, annotator_id, item_id, list(old), values, (t_start, t_end, duration)
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
                f"updated_at, active_ms, revisions, timestamp_start, timestamp_end, "
                f"annotation_duration, is_modified, browser_meta) VALUES (?, ?, "
                f"{', '.join('?' * len(cols))}, ?, ?, ?, 1, ?, ?, ?, 0, ?)",
                [
                    annotator_id,
                    item_id,
                    *values,
                    now,
                    now,
                    active_ms,
                    t_start,
                    t_end,
                    duration,
                    meta,
                ],
            )
            self._log_change(con, annotator_id, item_id, None, values, (t_start, t_end, duration))
            self._bump_version(con)
        return True

    @staticmethod
    def _log_change(
        con: sqlite3.Connection,
        annotator_id: str,
        item_id: str,
        old: list[Any] | None,
        new: list[Any],
        times: tuple[str, str, float],
    ) -> None:
        n = len(AXES)
        delta: dict[str, dict[str, list[Any]]] = {"scores": {}, "confidence": {}}
        for i, axis in enumerate(AXES):
            for part, j in (("scores", i), ("confidence", n + i)):
                before = None if old is None else old[j]
                if before != new[j]:
                    delta[part][axis] = [before, new[j]]
        revision = con.execute(
            "SELECT COUNT(*) + 1 FROM rating_history WHERE annotator_id = ? AND item_id = ?",
            (annotator_id, item_id),
        ).fetchone()[0]
        con.execute(
            "INSERT INTO rating_history(annotator_id, item_id, revision, timestamp_start, "
            "timestamp_end, annotation_duration, delta) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (annotator_id, item_id, revision, *times, json.dumps(delta, sort_keys=True)),
        )

    def history(self, *, annotator_id: str | None = None) -> list[dict[str, Any]]:
        """The audit trail in write order: ``{seq, annotator_id, item_id, revision,
        timestamp_start, timestamp_end, annotation_duration, delta}``."""
        sql = "SELECT * FROM rating_history"
        args: tuple[str, ...] = ()
        if annotator_id is not None:
            sql += " WHERE annotator_id = ?"
            args = (annotator_id,)
        rows = self._conn().execute(sql + " ORDER BY seq", args).fetchall()
        return [dict(r) | {"delta": json.loads(r["delta"])} for r in rows]

    def replay_history(self) -> dict[tuple[str, str], tuple[dict[str, int], dict[str, float]]]:
        """Ratings rebuilt from the audit trail's deltas alone: ``{(annotator, item): (scores,
        confidence)}``. Equal to the stored ratings when the trail is complete.

        Raises
        ------
        InputError
            If a delta's old value is not the value the replay holds at that point.
        """
        state: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
        for h in self.history():
            key = (h["annotator_id"], h["item_id"])
            scores, conf = state.setdefault(key, ({}, {}))
            for part, target in (("scores", scores), ("confidence", conf)):
                for axis, (old, new) in h["delta"][part].items():
                    if target.get(axis) != old:
                        raise InputError(
                            f"rating_history seq {h['seq']}: {part}.{axis} was "
                            f"{target.get(axis)!r}, the delta says {old!r}"
                        )
                    target[axis] = new
        return state

    def check_audit_trail(self, *, tolerance_s: float = 0.01) -> list[str]:
        """Problems with the audit trail: ratings the replay does not give back exactly, and
        history rows or ratings whose ``|end - start - duration|`` reaches ``tolerance_s``."""
        problems: list[str] = []
        try:
            replayed = self.replay_history()
        except InputError as exc:
            return [str(exc)]
        stored = {
            (r.annotator_id, r.item_id): (r.scores, r.confidence)
            for r in self.ratings(include_gold=True)
        }
        for key in sorted(set(stored) | set(replayed)):
            if stored.get(key) != replayed.get(key):
                problems.append(f"{key}: stored {stored.get(key)} != replayed {replayed.get(key)}")
        rows = [("history", h) for h in self.history()]
        rows += [("rating", r.__dict__) for r in self.ratings(include_gold=True)]
        for kind, row in rows:
            if row.get("timestamp_start") is None:
                continue
            gap = (
                _parse_iso(row["timestamp_end"]) - _parse_iso(row["timestamp_start"])
            ).total_seconds() - float(row["annotation_duration"])
            if abs(gap) >= tolerance_s:
                problems.append(
                    f"{kind} {row.get('annotator_id')}/{row.get('item_id')}: end - start - "
                    f"duration = {gap:.3f} s"
                )
        return problems

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

    def ratings(
        self, *, annotator_id: str | None = None, include_gold: bool = False
    ) -> list[Rating]:
        """All ratings (or one annotator's), sorted by item id then annotator id.

        Ratings of gold items are left out unless ``include_gold``: they are a check on the
        annotator, never a rating of the campaign (:meth:`gold_ratings` has them).
        """
        sql = "SELECT * FROM ratings WHERE 1 = 1"
        args: tuple[str, ...] = ()
        if not include_gold:
            sql += " AND item_id NOT IN (SELECT item_id FROM gold_items)"
        if annotator_id is not None:
            sql += " AND annotator_id = ?"
            args = (annotator_id,)
        rows = self._conn().execute(sql + " ORDER BY item_id, annotator_id", args).fetchall()
        return [_rating(r) for r in rows]

    def gold_ratings(self) -> list[dict[str, Any]]:
        """Ratings of gold items: ``{annotator_id, item_id, scores, saved_at}``, by save time."""
        rows = (
            self._conn()
            .execute(
                "SELECT * FROM ratings WHERE item_id IN (SELECT item_id FROM gold_items) "
                "ORDER BY updated_at, item_id, annotator_id"
            )
            .fetchall()
        )
        return [
            {
                "annotator_id": r["annotator_id"],
                "item_id": r["item_id"],
                "scores": {a: int(r[f"s_{a}"]) for a in AXES},
                "saved_at": r["timestamp_end"] or r["updated_at"],
            }
            for r in rows
        ]

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
        timestamp_start=row["timestamp_start"],
        timestamp_end=row["timestamp_end"],
        annotation_duration=row["annotation_duration"],
        is_modified=bool(row["is_modified"]),
        browser_meta=json.loads(row["browser_meta"] or "{}"),
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
