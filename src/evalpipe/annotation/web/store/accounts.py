"""Accounts, tokens and server-side sessions of the annotation database."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from evalpipe.annotation.pseudonyms import pseudonymise_id
from evalpipe.annotation.web import auth
from evalpipe.annotation.web.store.db import Database, iso, utc_now
from evalpipe.errors import InputError

ANNOTATOR_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Reserved by the schema for the judge / marker rater / consensus, never for a human login.
RESERVED_IDS = {"consensus", "markers"}
SESSION_HOURS = 12
ROLES = ("annotator", "adjudicator", "admin")


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


# Every table that holds a person's data, and the column naming them.
PERSONAL_TABLES = (
    ("rating_history", "annotator_id"),
    ("ratings", "annotator_id"),
    ("notes", "annotator_id"),
    ("drafts", "annotator_id"),
    ("skips", "annotator_id"),
    ("dropped", "annotator_id"),
    ("training", "annotator_id"),
    ("qual_answers", "annotator_id"),
    ("qual_attempts", "annotator_id"),
    ("released", "annotator_id"),
    ("sessions", "annotator_id"),
    ("adjudications", "adjudicator_id"),
    ("reopened", "annotator_id"),
    ("assignments", "annotator_id"),
    ("annotators", "id"),
)


class Accounts(Database):
    """Annotator accounts (roles, hashed tokens) and the sessions that sign them in."""

    def login_for(self, name: str, *, salt: str) -> str | None:
        """The login id of an account given its login id or its pseudonym (None: no such
        account)."""
        for (who,) in self._conn().execute("SELECT id FROM annotators"):
            if name in (who, pseudonymise_id(who, salt)):
                return str(who)
        return None

    def forget_annotator(self, annotator_id: str) -> int:
        """Delete an account and every row naming it (ratings, their history, notes, drafts,
        training, qualification, sessions, adjudications, assignments); returns rows deleted."""
        total = 0
        with self._write() as con:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
            for table, column in PERSONAL_TABLES:
                if table in tables:
                    cur = con.execute(f"DELETE FROM {table} WHERE {column} = ?", (annotator_id,))
                    total += cur.rowcount
            self._bump_version(con)
        return total

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
            con.execute("DELETE FROM sessions WHERE expires_at < ?", (iso(now),))
            con.execute(
                "INSERT INTO sessions(id, annotator_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                (_sid_hash(sid), annotator_id, iso(now), iso(now + timedelta(hours=hours))),
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


def _sid_hash(sid: str) -> str:
    return hashlib.sha256(sid.encode("utf-8")).hexdigest()


def _annotator(row: sqlite3.Row) -> Annotator:
    return Annotator(id=row["id"], is_admin=bool(row["is_admin"]), role=str(row["role"]))
