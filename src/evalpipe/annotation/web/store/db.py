"""The database under the annotation web app: one SQLite file in WAL mode.

Every write is its own ``BEGIN IMMEDIATE`` ... ``COMMIT`` with ``synchronous=FULL``, so a rating is
on disk before the HTTP response that acknowledges it is sent; a killed server loses nothing it
acknowledged. A rating's key is (annotator, item): re-submitting edits it, never duplicates it.
Backups go through SQLite's online backup API (a file copy of a live WAL database can be torn).

This module holds the schema, the per-thread connection, the write transaction, the meta table
and backups; the other modules of the package add one area each on top of :class:`Database`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from evalpipe.annotation.schema import AXES
from evalpipe.errors import InputError

# A single visit longer than this is a forgotten tab, not annotation time.
MAX_ACTIVE_MS_PER_VISIT = 60 * 60 * 1000
# The browser reports active time; whatever it claims, one item never counts for more than this.
MAX_ACTIVE_MS_PER_ITEM = 30 * 60 * 1000

_SCORE_COLS = ", ".join(f"s_{a} INTEGER NOT NULL CHECK (s_{a} BETWEEN 1 AND 5)" for a in AXES)
_CONF_COLS = ", ".join(f"c_{a} REAL NOT NULL CHECK (c_{a} BETWEEN 0 AND 1)" for a in AXES)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS annotators (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    is_admin INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    task TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS assignments (
    annotator_id TEXT NOT NULL REFERENCES annotators(id),
    item_id TEXT NOT NULL REFERENCES items(id),
    position INTEGER NOT NULL,
    assigned_at TEXT,
    PRIMARY KEY (annotator_id, item_id),
    UNIQUE (annotator_id, position)
);
CREATE TABLE IF NOT EXISTS dropped (
    annotator_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    dropped_at TEXT NOT NULL,
    PRIMARY KEY (annotator_id, position)
);
CREATE TABLE IF NOT EXISTS ratings (
    annotator_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    {_SCORE_COLS},
    {_CONF_COLS},
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    active_ms INTEGER NOT NULL DEFAULT 0,
    revisions INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (annotator_id, item_id),
    FOREIGN KEY (annotator_id, item_id) REFERENCES assignments(annotator_id, item_id)
);
CREATE TABLE IF NOT EXISTS rating_history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    annotator_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    timestamp_start TEXT NOT NULL,
    timestamp_end TEXT NOT NULL,
    annotation_duration REAL NOT NULL,
    delta TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rating_history_key ON rating_history(annotator_id, item_id);
CREATE TABLE IF NOT EXISTS gold_items (
    item_id TEXT PRIMARY KEY REFERENCES items(id),
    reference TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS reopened (
    annotator_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    priority TEXT NOT NULL,
    reopened_at TEXT NOT NULL,
    PRIMARY KEY (annotator_id, item_id)
);
CREATE TABLE IF NOT EXISTS item_revisions (
    item_id TEXT PRIMARY KEY,
    kappa REAL,
    reasons TEXT NOT NULL,
    listed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    annotator_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS notes (
    annotator_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    flag INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (annotator_id, item_id)
);
CREATE TABLE IF NOT EXISTS drafts (
    annotator_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (annotator_id, item_id)
);
CREATE TABLE IF NOT EXISTS adjudications (
    item_id TEXT PRIMARY KEY REFERENCES items(id),
    adjudicator_id TEXT NOT NULL,
    {_SCORE_COLS},
    {_CONF_COLS},
    note TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS training (
    annotator_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    example_id TEXT NOT NULL,
    {_SCORE_COLS},
    created_at TEXT NOT NULL,
    PRIMARY KEY (annotator_id, round, example_id)
);
CREATE TABLE IF NOT EXISTS qual_answers (
    annotator_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    {_SCORE_COLS},
    {_CONF_COLS},
    created_at TEXT NOT NULL,
    PRIMARY KEY (annotator_id, attempt, item_id)
);
CREATE TABLE IF NOT EXISTS qual_attempts (
    annotator_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    finished_at TEXT NOT NULL,
    passed INTEGER NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (annotator_id, attempt)
);
CREATE TABLE IF NOT EXISTS released (
    annotator_id TEXT PRIMARY KEY REFERENCES annotators(id),
    released_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS skips (
    annotator_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    skipped_at TEXT NOT NULL,
    active_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (annotator_id, item_id)
);
"""


def utc_now() -> str:
    """Current time as ISO 8601 UTC with a ``Z`` (the annotation format's timestamp form)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now_ms() -> str:
    """Current time as ISO 8601 UTC with milliseconds (the audit trail's timestamps)."""
    return iso_ms(datetime.now(UTC))


def iso_ms(when: datetime) -> str:
    """``when`` as ISO 8601 UTC with milliseconds and a ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def iso(when: datetime) -> str:
    """``when`` as ISO 8601 UTC with a ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_values(scores: dict[str, int], confidence: dict[str, float]) -> None:
    """Raise InputError unless every axis has a score 1-5 and a confidence 0-1."""
    for axis in AXES:
        if scores.get(axis) not in (1, 2, 3, 4, 5):
            raise InputError(f'field "{axis}": expected an integer 1-5, got {scores.get(axis)!r}')
        c = confidence.get(axis)
        if not isinstance(c, (int, float)) or not 0.0 <= float(c) <= 1.0:
            raise InputError(f'field "{axis}_confidence": expected a number 0-1, got {c!r}')


class Database:
    """The connection, transactions, meta table and backup shared by every part of the store.

    Parameters
    ----------
    path:
        The SQLite file (created with its folder if missing).
    synchronous:
        ``"FULL"`` (default): each commit is fsynced before the response, so an acknowledged
        rating survives a power cut. ``"NORMAL"``: commits reach the OS before the response and
        are fsynced at checkpoints; still nothing lost if the server process is killed.
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in {"FULL", "NORMAL"}:
            raise InputError(f"synchronous: expected FULL or NORMAL, got {synchronous!r}")
        self.synchronous = synchronous.upper()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection per thread: waitress serves from a fixed pool of threads.
        self._local = threading.local()
        # executescript manages its own transaction; CREATE ... IF NOT EXISTS is idempotent.
        self._conn().executescript(SCHEMA)
        cols = {r[1] for r in self._conn().execute("PRAGMA table_info(annotators)")}
        if "role" not in cols:  # databases made before roles existed
            with self._write() as con:
                con.execute(
                    "ALTER TABLE annotators ADD COLUMN role TEXT NOT NULL DEFAULT 'annotator'"
                )
                con.execute("UPDATE annotators SET role = 'admin' WHERE is_admin = 1")
        cols = {r[1] for r in self._conn().execute("PRAGMA table_info(ratings)")}
        if "timestamp_start" not in cols:  # databases made before the audit trail
            with self._write() as con:
                for col in (
                    "timestamp_start TEXT",
                    "timestamp_end TEXT",
                    "annotation_duration REAL",
                    "is_modified INTEGER NOT NULL DEFAULT 0",
                    "browser_meta TEXT NOT NULL DEFAULT '{}'",
                ):
                    con.execute(f"ALTER TABLE ratings ADD COLUMN {col}")
        cols = {r[1] for r in self._conn().execute("PRAGMA table_info(assignments)")}
        if "assigned_at" not in cols:  # databases made before receiving items counted as activity
            with self._write() as con:
                con.execute("ALTER TABLE assignments ADD COLUMN assigned_at TEXT")

    # -- connections ----------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            con.row_factory = sqlite3.Row
            con.execute("PRAGMA journal_mode=WAL")
            # The commit precedes the response either way; FULL also fsyncs it.
            con.execute(f"PRAGMA synchronous={self.synchronous}")
            con.execute("PRAGMA foreign_keys=ON")
            con.execute("PRAGMA busy_timeout=30000")
            self._local.con = con
        return con

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        con = self._conn()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def journal_mode(self) -> str:
        return str(self._conn().execute("PRAGMA journal_mode").fetchone()[0])

    # -- meta -----------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as con:
            con.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    @staticmethod
    def _bump_version(con: sqlite3.Connection) -> None:
        # A counter that changes with every rating or adjudication write: caches of derived
        # statistics (the admin page's agreement) are keyed by it.
        con.execute(
            "INSERT INTO meta(key, value) VALUES ('ratings_version', '1') ON CONFLICT(key) "
            "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )

    def ratings_version(self) -> int:
        """A number that changes whenever a rating or adjudication is written."""
        return int(self.get_meta("ratings_version") or 0)

    def backup(self, dest: str | Path) -> Path:
        """Copy the live database with SQLite's online backup API (consistent, WAL included)."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        tmp.unlink(missing_ok=True)
        target = sqlite3.connect(tmp)
        try:
            self._conn().backup(target)
        finally:
            target.close()
        tmp.replace(dest)
        return dest
