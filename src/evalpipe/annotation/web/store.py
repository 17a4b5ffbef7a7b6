"""The annotation web app's storage: one SQLite database in WAL mode.

Every write is its own ``BEGIN IMMEDIATE`` ... ``COMMIT`` with ``synchronous=FULL``, so a rating is
on disk before the HTTP response that acknowledges it is sent; a killed server loses nothing it
acknowledged. A rating's key is (annotator, item): re-submitting edits it, never duplicates it.
Backups go through SQLite's online backup API (a file copy of a live WAL database can be torn).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evalpipe.annotation.schema import ADJUDICATED_PREFIX, AXES, Annotation, DialoguePair
from evalpipe.annotation.web import auth
from evalpipe.annotation.web.assignment import (
    TopUp,
    fill_assignments,
    presentation_order,
    top_up,
)
from evalpipe.errors import InputError

ANNOTATOR_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Reserved by the schema for the judge / marker rater / consensus, never for a human login.
RESERVED_IDS = {"consensus", "markers"}
# A single visit longer than this is a forgotten tab, not annotation time.
MAX_ACTIVE_MS_PER_VISIT = 60 * 60 * 1000
# The browser reports active time; whatever it claims, one item never counts for more than this.
MAX_ACTIVE_MS_PER_ITEM = 30 * 60 * 1000
SESSION_HOURS = 12
# Longest comment on an item; a longer one is refused with a message, never cut.
MAX_COMMENT_CHARS = 2000
ROLES = ("annotator", "adjudicator", "admin")

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
    PRIMARY KEY (annotator_id, item_id),
    UNIQUE (annotator_id, position)
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
    """Current time as ISO 8601 UTC with a ``Z`` (the spec's timestamp form)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def comment_too_long(n_chars: int) -> str:
    """The message for a comment over the limit (shown in the form, raised by the store)."""
    return (
        f"Comment not saved: it has {n_chars:,} characters and the limit is "
        f"{MAX_COMMENT_CHARS:,}. Shorten it and save again."
    )


def check_annotator_id(annotator_id: str) -> str:
    """Return the id or raise InputError saying what an annotator id may look like."""
    if not ANNOTATOR_ID_RE.match(annotator_id) or annotator_id in RESERVED_IDS:
        raise InputError(
            f"annotator id {annotator_id!r}: expected 1-64 letters, digits, '_', '.', '-' "
            f"starting with a letter or digit (not {', '.join(sorted(RESERVED_IDS))})"
        )
    return annotator_id


@dataclass(frozen=True)
class Annotator:
    id: str
    is_admin: bool
    role: str = "annotator"

    @property
    def can_adjudicate(self) -> bool:
        return self.role in {"admin", "adjudicator"}

    @property
    def rates_items(self) -> bool:
        return self.role == "annotator"


@dataclass(frozen=True)
class Rating:
    item_id: str
    annotator_id: str
    scores: dict[str, int]
    confidence: dict[str, float]
    updated_at: str
    active_ms: int
    revisions: int


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


@dataclass(frozen=True)
class Slot:
    """One assigned item as an annotator sees it in their queue."""

    position: int
    item_id: str
    rated: bool
    skipped: bool


class Store:
    """All reads and writes of the annotation database.

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

    # -- items ----------------------------------------------------------------------------------
    def load_tasks(self, tasks: Sequence[DialoguePair]) -> tuple[int, int]:
        """Insert new tasks and refresh the text of known ones (ids are the key).

        Returns
        -------
        tuple[int, int]
            (added, already known).
        """
        with self._write() as con:
            known = {r[0] for r in con.execute("SELECT id FROM items")}
            next_seq = con.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM items").fetchone()[0]
            added = 0
            for task in tasks:
                payload = json.dumps(
                    {
                        "id": task.id,
                        "user": task.user,
                        "response": task.response,
                        "context": task.context,
                    },
                    ensure_ascii=False,
                )
                if task.id in known:
                    con.execute("UPDATE items SET task = ? WHERE id = ?", (payload, task.id))
                else:
                    con.execute(
                        "INSERT INTO items(id, seq, task) VALUES (?, ?, ?)",
                        (task.id, next_seq, payload),
                    )
                    next_seq += 1
                    added += 1
        return added, len(tasks) - added

    def item_ids(self) -> list[str]:
        return [r[0] for r in self._conn().execute("SELECT id FROM items ORDER BY seq")]

    def task(self, item_id: str) -> DialoguePair | None:
        row = self._conn().execute("SELECT task FROM items WHERE id = ?", (item_id,)).fetchone()
        if row is None:
            return None
        obj = json.loads(row[0])
        return DialoguePair(
            id=obj["id"], user=obj["user"], response=obj["response"], context=obj.get("context", [])
        )

    # -- annotators -----------------------------------------------------------------------------
    def add_annotator(
        self,
        annotator_id: str,
        *,
        admin: bool = False,
        role: str | None = None,
        token: str | None = None,
    ) -> str:
        """Create an account and return its login token (shown once, stored hashed).

        Parameters
        ----------
        annotator_id:
            The login id (and the ``annotator_id`` of exported ratings).
        admin:
            Shorthand for ``role="admin"``.
        role:
            ``annotator`` (rates items), ``adjudicator`` (settles disagreements, rates nothing)
            or ``admin`` (sees everything, adjudicates, rates nothing).
        token:
            A fixed token (tests); default a fresh random one.

        Raises
        ------
        InputError
            If the id is malformed or already taken, or the role unknown.
        """
        check_annotator_id(annotator_id)
        role = role or ("admin" if admin else "annotator")
        if role not in ROLES:
            raise InputError(f"role {role!r}: expected one of {', '.join(ROLES)}")
        token = token or auth.new_token()
        hashed = auth.hash_token(token)
        with self._write() as con:
            if con.execute("SELECT 1 FROM annotators WHERE id = ?", (annotator_id,)).fetchone():
                raise InputError(
                    f"annotator {annotator_id!r} already exists "
                    f"(use --reset-token to issue a new token)"
                )
            con.execute(
                "INSERT INTO annotators(id, token_hash, is_admin, role, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (annotator_id, hashed, int(role == "admin"), role, utc_now()),
            )
        return token

    def reset_token(self, annotator_id: str) -> str:
        """Issue a new token for an existing annotator; the old one stops working."""
        token = auth.new_token()
        with self._write() as con:
            cur = con.execute(
                "UPDATE annotators SET token_hash = ? WHERE id = ?",
                (auth.hash_token(token), annotator_id),
            )
            if cur.rowcount == 0:
                raise InputError(f"annotator {annotator_id!r} does not exist")
            con.execute("DELETE FROM sessions WHERE annotator_id = ?", (annotator_id,))
        return token

    # -- server-side sessions -------------------------------------------------------------------
    # The cookie carries a random session id; only its hash is stored, and a session is valid
    # only while its row exists, so logging out (row deleted) ends it even for a copied cookie.
    def create_session(self, annotator_id: str, *, hours: int = SESSION_HOURS) -> str:
        """Start a session and return its secret id (goes into the signed cookie)."""
        sid = auth.new_token()
        now = datetime.now(UTC)
        with self._write() as con:
            con.execute("DELETE FROM sessions WHERE expires_at < ?", (_iso(now),))
            con.execute(
                "INSERT INTO sessions(id, annotator_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                (_sid_hash(sid), annotator_id, _iso(now), _iso(now + timedelta(hours=hours))),
            )
        return sid

    def session_user(self, sid: str) -> str | None:
        """The annotator of a live, unexpired session, else None."""
        row = (
            self._conn()
            .execute(
                "SELECT annotator_id FROM sessions WHERE id = ? AND expires_at >= ?",
                (_sid_hash(sid), utc_now()),
            )
            .fetchone()
        )
        return None if row is None else str(row[0])

    def end_session(self, sid: str) -> None:
        with self._write() as con:
            con.execute("DELETE FROM sessions WHERE id = ?", (_sid_hash(sid),))

    def authenticate(self, annotator_id: str, token: str) -> Annotator | None:
        row = (
            self._conn()
            .execute(
                "SELECT id, token_hash, is_admin, role FROM annotators WHERE id = ?",
                (annotator_id,),
            )
            .fetchone()
        )
        if row is None:
            auth.burn_time()  # same cost as a wrong token, so ids cannot be probed by timing
            return None
        if not auth.check_token(row["token_hash"], token):
            return None
        return _annotator(row)

    def session_fingerprint(self, annotator_id: str) -> str | None:
        """A digest of the current token hash; sessions carry it, so a token reset ends them."""
        row = (
            self._conn()
            .execute("SELECT token_hash FROM annotators WHERE id = ?", (annotator_id,))
            .fetchone()
        )
        return None if row is None else hashlib.sha256(row[0].encode()).hexdigest()[:16]

    def annotator(self, annotator_id: str) -> Annotator | None:
        row = (
            self._conn()
            .execute("SELECT id, is_admin, role FROM annotators WHERE id = ?", (annotator_id,))
            .fetchone()
        )
        return None if row is None else _annotator(row)

    def annotators(self) -> list[dict[str, Any]]:
        """Every account with its progress: id, is_admin, assigned, rated, skipped, active_ms."""
        rows = (
            self._conn()
            .execute(
                """
            SELECT a.id, a.is_admin, a.role,
                   (SELECT COUNT(*) FROM assignments s WHERE s.annotator_id = a.id) AS assigned,
                   (SELECT COUNT(*) FROM ratings r WHERE r.annotator_id = a.id) AS rated,
                   (SELECT COUNT(*) FROM skips k WHERE k.annotator_id = a.id AND NOT EXISTS
                      (SELECT 1 FROM ratings r WHERE r.annotator_id = k.annotator_id
                         AND r.item_id = k.item_id)) AS skipped,
                   (SELECT COALESCE(SUM(active_ms), 0) FROM ratings r
                      WHERE r.annotator_id = a.id) AS active_ms
            FROM annotators a ORDER BY a.is_admin DESC, a.id
            """
            )
            .fetchall()
        )
        return [dict(r) | {"is_admin": bool(r["is_admin"])} for r in rows]

    # -- assignment -----------------------------------------------------------------------------
    def rebalance(self, *, overlap: int, seed: int = 0) -> int:
        """Give every item ``overlap`` annotators (non-admins, not released); returns new pairs."""
        with self._write() as con:
            items = [r[0] for r in con.execute("SELECT id FROM items ORDER BY seq")]
            people = [
                r[0]
                for r in con.execute(
                    "SELECT id FROM annotators WHERE role = 'annotator' "
                    "AND id NOT IN (SELECT annotator_id FROM released)"
                )
            ]
            existing = [
                (r[0], r[1]) for r in con.execute("SELECT item_id, annotator_id FROM assignments")
            ]
            added = fill_assignments(items, people, existing, overlap=overlap, seed=seed)
            by_annotator: dict[str, list[str]] = {}
            for item, person in added:
                by_annotator.setdefault(person, []).append(item)
            for person, new_items in by_annotator.items():
                self._append_items(con, person, new_items, seed)
        return len(added)

    def _append_items(
        self, con: sqlite3.Connection, person: str, items: list[str], seed: int
    ) -> None:
        start = con.execute(
            "SELECT COALESCE(MAX(position), 0) FROM assignments WHERE annotator_id = ?",
            (person,),
        ).fetchone()[0]
        for offset, item in enumerate(presentation_order(items, person, seed=seed), 1):
            con.execute(
                "INSERT INTO assignments(annotator_id, item_id, position) VALUES (?, ?, ?)",
                (person, item, start + offset),
            )

    @staticmethod
    def _drop_unrated(con: sqlite3.Connection, person: str, items: Iterable[str] | None) -> int:
        """Remove ``person``'s unrated assignments (all, or of ``items``) with drafts and skips."""
        unrated = (
            "annotator_id = ? AND NOT EXISTS (SELECT 1 FROM ratings r WHERE r.annotator_id = "
            "{t}.annotator_id AND r.item_id = {t}.item_id)"
        )
        if items is None:
            targets = [
                r[0]
                for r in con.execute(
                    "SELECT item_id FROM assignments WHERE " + unrated.format(t="assignments"),
                    (person,),
                )
            ]
        else:
            targets = list(items)
        for item in targets:
            for table in ("drafts", "skips"):
                con.execute(
                    f"DELETE FROM {table} WHERE annotator_id = ? AND item_id = ?", (person, item)
                )
            con.execute(
                "DELETE FROM assignments WHERE item_id = ? AND " + unrated.format(t="assignments"),
                (item, person),
            )
        return len(targets)

    def idle_seconds(self, *, now: datetime | None = None) -> dict[str, float]:
        """Seconds since each annotator's last sign-in, rating, skip or draft (or account creation)."""
        now = now or datetime.now(UTC)
        last: dict[str, str] = {}
        con = self._conn()
        for sql in (
            "SELECT id, created_at FROM annotators",
            "SELECT annotator_id, MAX(created_at) FROM sessions GROUP BY annotator_id",
            "SELECT annotator_id, MAX(updated_at) FROM ratings GROUP BY annotator_id",
            "SELECT annotator_id, MAX(skipped_at) FROM skips GROUP BY annotator_id",
            "SELECT annotator_id, MAX(updated_at) FROM drafts GROUP BY annotator_id",
        ):
            for who, when in con.execute(sql):
                if when and (who not in last or when > last[who]):
                    last[who] = when
        return {
            who: (
                now - datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            ).total_seconds()
            for who, when in last.items()
        }

    def assign_more(
        self,
        annotator_id: str,
        *,
        batch: int,
        idle_after_s: float | None,
        raise_coverage: bool = True,
        seed: int = 0,
        now: datetime | None = None,
    ) -> TopUp:
        """Give an annotator with no unrated item more work (see ``assignment.top_up``).

        Does nothing while the annotator still has an unrated item. A released annotator who asks
        for work is back in the team (no longer released).

        Returns
        -------
        TopUp
            The items moved from idle colleagues and the ones added beyond ``overlap``.
        """
        idle = self.idle_seconds(now=now)
        with self._write() as con:
            open_items = con.execute(
                "SELECT COUNT(*) FROM assignments s WHERE s.annotator_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM ratings r WHERE r.annotator_id = s.annotator_id "
                "AND r.item_id = s.item_id)",
                (annotator_id,),
            ).fetchone()[0]
            if open_items:
                return TopUp([], [])
            con.execute("DELETE FROM released WHERE annotator_id = ?", (annotator_id,))
            items = [r[0] for r in con.execute("SELECT id FROM items ORDER BY seq")]
            rows = [
                (r[0], r[1], bool(r[2]))
                for r in con.execute(
                    "SELECT s.item_id, s.annotator_id, EXISTS (SELECT 1 FROM ratings r WHERE "
                    "r.annotator_id = s.annotator_id AND r.item_id = s.item_id) "
                    "FROM assignments s"
                )
            ]
            plan = top_up(
                annotator_id,
                items,
                rows,
                idle,
                batch=batch,
                idle_after_s=idle_after_s,
                raise_coverage=raise_coverage,
                seed=seed,
            )
            for item, holder in plan.takeovers:
                self._drop_unrated(con, holder, [item])
            if plan.items:
                self._append_items(con, annotator_id, plan.items, seed)
        return plan

    def release(self, annotator_id: str, *, overlap: int, seed: int = 0) -> tuple[int, int]:
        """Take a dropout's unrated items away and give them to the rest of the team.

        Their ratings stay; they get no new items from :meth:`rebalance` until they sign in and
        ask for work again.

        Returns
        -------
        tuple[int, int]
            (items released, new assignments made for other annotators).

        Raises
        ------
        InputError
            If there is no annotator with that id.
        """
        person = self.annotator(annotator_id)
        if person is None or person.role != "annotator":
            raise InputError(f"annotator {annotator_id!r} does not exist (or is not an annotator)")
        with self._write() as con:
            released = self._drop_unrated(con, annotator_id, None)
            con.execute(
                "INSERT INTO released(annotator_id, released_at) VALUES (?, ?) "
                "ON CONFLICT(annotator_id) DO UPDATE SET released_at = excluded.released_at",
                (annotator_id, utc_now()),
            )
        return released, self.rebalance(overlap=overlap, seed=seed)

    def released(self) -> set[str]:
        """Annotators released by the lead who have not asked for work since."""
        return {r[0] for r in self._conn().execute("SELECT annotator_id FROM released")}

    def queue(self, annotator_id: str) -> list[Slot]:
        """The annotator's assigned items in order, with rated/skipped flags."""
        rows = (
            self._conn()
            .execute(
                """
            SELECT s.position, s.item_id,
                   r.item_id IS NOT NULL AS rated, k.item_id IS NOT NULL AS skipped
            FROM assignments s
            LEFT JOIN ratings r ON r.annotator_id = s.annotator_id AND r.item_id = s.item_id
            LEFT JOIN skips k ON k.annotator_id = s.annotator_id AND k.item_id = s.item_id
            WHERE s.annotator_id = ? ORDER BY s.position
            """,
                (annotator_id,),
            )
            .fetchall()
        )
        return [
            Slot(r["position"], r["item_id"], bool(r["rated"]), bool(r["skipped"])) for r in rows
        ]

    @staticmethod
    def next_position(queue: Sequence[Slot], after: int = 0) -> int | None:
        """First unrated, unskipped slot after ``after`` (wrapping), else the first skipped one."""
        fresh = [s.position for s in queue if not s.rated and not s.skipped]
        later = [p for p in fresh if p > after]
        if later or fresh:
            return (later or fresh)[0]
        skipped = [s.position for s in queue if not s.rated]
        return skipped[0] if skipped else None

    def slot(self, annotator_id: str, position: int) -> str | None:
        """The item at ``position`` of the annotator's queue; None if not theirs (blindness)."""
        row = (
            self._conn()
            .execute(
                "SELECT item_id FROM assignments WHERE annotator_id = ? AND position = ?",
                (annotator_id, position),
            )
            .fetchone()
        )
        return None if row is None else str(row[0])

    # -- ratings --------------------------------------------------------------------------------
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
        _check_values(scores, confidence)
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
        """Keep half-entered form values (``score_<axis>``/``conf_<axis>``) until the next save."""
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

    # -- adjudication ---------------------------------------------------------------------------
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
            Unknown item, a value out of range, or an empty note.
        """
        _check_values(scores, confidence)
        note = note.strip()
        if not note:
            raise InputError('field "note": say briefly why this is the final rating')
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
                [item_id, adjudicator_id, *values, note[:4000], now, now],
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

    # -- training and qualification -----------------------------------------------------------
    def save_training(
        self, annotator_id: str, round_: int, example_id: str, scores: dict[str, int]
    ) -> None:
        """Record the annotator's rating of a worked example in training round ``round_``."""
        _check_values(scores, dict.fromkeys(AXES, 1.0))
        cols = [f"s_{a}" for a in AXES]
        with self._write() as con:
            con.execute(
                f"INSERT INTO training(annotator_id, round, example_id, {', '.join(cols)}, "
                f"created_at) VALUES (?, ?, ?, {', '.join('?' * len(cols))}, ?) "
                f"ON CONFLICT DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in cols),
                [annotator_id, round_, example_id, *[scores[a] for a in AXES], utc_now()],
            )

    def training(self, annotator_id: str, round_: int) -> dict[str, dict[str, int]]:
        """``{example_id: scores}`` the annotator gave in one training round."""
        rows = self._conn().execute(
            "SELECT * FROM training WHERE annotator_id = ? AND round = ?", (annotator_id, round_)
        )
        return {r["example_id"]: {a: int(r[f"s_{a}"]) for a in AXES} for r in rows}

    def save_qual_answer(
        self,
        annotator_id: str,
        attempt: int,
        item_id: str,
        scores: dict[str, int],
        confidence: dict[str, float],
    ) -> None:
        """Record one answer of a qualification attempt (re-answering replaces it)."""
        _check_values(scores, confidence)
        cols = [f"s_{a}" for a in AXES] + [f"c_{a}" for a in AXES]
        values = [scores[a] for a in AXES] + [float(confidence[a]) for a in AXES]
        with self._write() as con:
            if con.execute(
                "SELECT 1 FROM qual_attempts WHERE annotator_id = ? AND attempt = ?",
                (annotator_id, attempt),
            ).fetchone():
                raise InputError(f"qualification attempt {attempt} is already scored")
            con.execute(
                f"INSERT INTO qual_answers(annotator_id, attempt, item_id, {', '.join(cols)}, "
                f"created_at) VALUES (?, ?, ?, {', '.join('?' * len(cols))}, ?) "
                f"ON CONFLICT DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in cols),
                [annotator_id, attempt, item_id, *values, utc_now()],
            )

    def qual_answers(self, annotator_id: str, attempt: int) -> dict[str, dict[str, int]]:
        """``{item_id: scores}`` of one qualification attempt."""
        rows = self._conn().execute(
            "SELECT * FROM qual_answers WHERE annotator_id = ? AND attempt = ?",
            (annotator_id, attempt),
        )
        return {r["item_id"]: {a: int(r[f"s_{a}"]) for a in AXES} for r in rows}

    def finish_qualification(self, annotator_id: str, attempt: int, result: dict[str, Any]) -> None:
        """Store the scored result of an attempt (``qualification.score_qualification``)."""
        with self._write() as con:
            con.execute(
                "INSERT INTO qual_attempts(annotator_id, attempt, finished_at, passed, result) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    annotator_id,
                    attempt,
                    utc_now(),
                    int(bool(result["passed"])),
                    json.dumps(result, sort_keys=True),
                ),
            )

    def qual_attempts(self, annotator_id: str | None = None) -> list[dict[str, Any]]:
        """Scored attempts: ``{annotator_id, attempt, finished_at, passed, result}``, in order."""
        sql = "SELECT * FROM qual_attempts"
        args: tuple[str, ...] = ()
        if annotator_id is not None:
            sql += " WHERE annotator_id = ?"
            args = (annotator_id,)
        rows = self._conn().execute(sql + " ORDER BY annotator_id, attempt", args).fetchall()
        return [
            dict(r) | {"passed": bool(r["passed"]), "result": json.loads(r["result"])} for r in rows
        ]

    # -- backup ---------------------------------------------------------------------------------
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


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _sid_hash(sid: str) -> str:
    return hashlib.sha256(sid.encode("utf-8")).hexdigest()


def _annotator(row: sqlite3.Row) -> Annotator:
    return Annotator(id=row["id"], is_admin=bool(row["is_admin"]), role=str(row["role"]))


def _check_values(scores: dict[str, int], confidence: dict[str, float]) -> None:
    for axis in AXES:
        if scores.get(axis) not in (1, 2, 3, 4, 5):
            raise InputError(f'field "{axis}": expected an integer 1-5, got {scores.get(axis)!r}')
        c = confidence.get(axis)
        if not isinstance(c, (int, float)) or not 0.0 <= float(c) <= 1.0:
            raise InputError(f'field "{axis}_confidence": expected a number 0-1, got {c!r}')


def _adjudication(row: sqlite3.Row) -> Adjudication:
    return Adjudication(
        item_id=row["item_id"],
        adjudicator_id=row["adjudicator_id"],
        scores={a: int(row[f"s_{a}"]) for a in AXES},
        confidence={a: float(row[f"c_{a}"]) for a in AXES},
        note=row["note"],
        updated_at=row["updated_at"],
    )


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
    """Ratings as the spec's Annotation records (timestamp = time of the last edit, UTC)."""
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
