"""Items, assignments and each annotator's queue: who rates what, in which order, and how
unrated work moves (top-ups for annotators with nothing left, release of a dropout's items)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from evalpipe.annotation.pseudonyms import pseudonymise_id
from evalpipe.annotation.schema import DialoguePair
from evalpipe.annotation.web.assignment import (
    TopUp,
    fill_assignments,
    presentation_order,
    top_up,
)
from evalpipe.annotation.web.store.db import Database, iso, utc_now
from evalpipe.errors import InputError


@dataclass(frozen=True)
class Slot:
    """One assigned item as an annotator sees it in their queue."""

    position: int
    item_id: str
    rated: bool
    skipped: bool


# Items of the campaign: gold items are checks on the annotator, never assigned as work.
_REAL_ITEMS = "SELECT id FROM items WHERE id NOT IN (SELECT item_id FROM gold_items) ORDER BY seq"


class Queue(Database):
    """Items and assignments."""

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

    def load_gold(self, gold: Sequence[tuple[DialoguePair, dict[str, int]]]) -> int:
        """Store gold items (``gold.read_gold``): items like any other, plus their reference.
        Returns how many are new."""
        added, _known = self.load_tasks([task for task, _ref in gold])
        with self._write() as con:
            for task, ref in gold:
                con.execute(
                    "INSERT INTO gold_items(item_id, reference) VALUES (?, ?) "
                    "ON CONFLICT(item_id) DO UPDATE SET reference = excluded.reference",
                    (task.id, json.dumps(ref, sort_keys=True)),
                )
        return added

    def gold_reference(self) -> dict[str, dict[str, int]]:
        """``{item_id: {axis: 1-5}}`` of the gold items."""
        rows = self._conn().execute("SELECT item_id, reference FROM gold_items")
        return {r[0]: json.loads(r[1]) for r in rows}

    def rebalance(self, *, overlap: int, seed: int = 0, gold_share: float = 0.0) -> int:
        """Give every item ``overlap`` annotators (non-admins, not released); returns new pairs.

        With ``gold_share`` > 0, each annotator's queue also gets gold items (hidden among the
        others, in the same shuffled order) until they are that share of it, as far as the gold
        items go.
        """
        with self._write() as con:
            items = [r[0] for r in con.execute(_REAL_ITEMS)]
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
            gold = [r[0] for r in con.execute("SELECT item_id FROM gold_items ORDER BY item_id")]
            if gold and gold_share > 0:
                for person in people:
                    have = {
                        r[0]
                        for r in con.execute(
                            "SELECT item_id FROM assignments WHERE annotator_id = ?", (person,)
                        )
                    }
                    n_gold = len(have & set(gold))
                    n_real = len(have - set(gold)) + len(by_annotator.get(person, []))
                    target = round(gold_share / (1 - gold_share) * n_real) if gold_share < 1 else 0
                    fresh = [
                        g for g in presentation_order(gold, person, seed=seed) if g not in have
                    ]
                    extra = fresh[: max(0, target - n_gold)]
                    if extra:
                        by_annotator.setdefault(person, []).extend(extra)
            for person, new_items in by_annotator.items():
                self._append_items(con, person, new_items, seed)
        return len(added)

    def _append_items(
        self,
        con: sqlite3.Connection,
        person: str,
        items: list[str],
        seed: int,
        *,
        at: str | None = None,
    ) -> None:
        # Positions of dropped items are never reused: a page still open on one of them must
        # not post its rating to another item (see :meth:`reclaim`).
        start = con.execute(
            "SELECT MAX(COALESCE((SELECT MAX(position) FROM assignments WHERE annotator_id = ?), "
            "0), COALESCE((SELECT MAX(position) FROM dropped WHERE annotator_id = ?), 0))",
            (person, person),
        ).fetchone()[0]
        # Receiving items counts as activity (``idle_seconds``): a joiner's fresh items are not
        # idle items another joiner may take at once.
        at = at or utc_now()
        for offset, item in enumerate(presentation_order(items, person, seed=seed), 1):
            con.execute(
                "INSERT INTO assignments(annotator_id, item_id, position, assigned_at) "
                "VALUES (?, ?, ?, ?)",
                (person, item, start + offset, at),
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
        now = utc_now()
        for item in targets:
            # Remember where it was, so a page still open on it can save (``reclaim``).
            con.execute(
                "INSERT OR REPLACE INTO dropped(annotator_id, position, item_id, dropped_at) "
                "SELECT annotator_id, position, item_id, ? FROM assignments "
                "WHERE annotator_id = ? AND item_id = ?",
                (now, person, item),
            )
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
        """Seconds since each annotator's last sign-in, rating, skip, draft or received items (or
        account creation)."""
        now = now or datetime.now(UTC)
        last: dict[str, str] = {}
        con = self._conn()
        for sql in (
            "SELECT id, created_at FROM annotators",
            "SELECT annotator_id, MAX(created_at) FROM sessions GROUP BY annotator_id",
            "SELECT annotator_id, MAX(updated_at) FROM ratings GROUP BY annotator_id",
            "SELECT annotator_id, MAX(skipped_at) FROM skips GROUP BY annotator_id",
            "SELECT annotator_id, MAX(updated_at) FROM drafts GROUP BY annotator_id",
            "SELECT annotator_id, MAX(assigned_at) FROM assignments GROUP BY annotator_id",
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
            items = [r[0] for r in con.execute(_REAL_ITEMS)]
            rows = [
                (r[0], r[1], bool(r[2]))
                for r in con.execute(
                    "SELECT s.item_id, s.annotator_id, EXISTS (SELECT 1 FROM ratings r WHERE "
                    "r.annotator_id = s.annotator_id AND r.item_id = s.item_id) "
                    "FROM assignments s WHERE s.item_id NOT IN (SELECT item_id FROM gold_items)"
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
                at = iso(now) if now is not None else None
                self._append_items(con, annotator_id, plan.items, seed, at=at)
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
        role = (
            self._conn()
            .execute("SELECT role FROM annotators WHERE id = ?", (annotator_id,))
            .fetchone()
        )
        if role is None or role[0] != "annotator":
            raise InputError(f"annotator {annotator_id!r} does not exist (or is not an annotator)")
        with self._write() as con:
            released = self._drop_unrated(con, annotator_id, None)
            con.execute(
                "INSERT INTO released(annotator_id, released_at) VALUES (?, ?) "
                "ON CONFLICT(annotator_id) DO UPDATE SET released_at = excluded.released_at",
                (annotator_id, utc_now()),
            )
        return released, self.rebalance(overlap=overlap, seed=seed)

    def reclaim(self, annotator_id: str, position: int) -> str | None:
        """Give back an item that was taken from the annotator (release, or a top-up while they
        were idle) when a page still open on it posts: the work on that page is not lost.

        The item returns at its old position (positions of dropped items are never reused) and
        the annotator is back in the team; the colleague who received the item keeps it too.

        Returns
        -------
        str | None
            The item id, or None if nothing was taken from that position of their queue.
        """
        with self._write() as con:
            row = con.execute(
                "SELECT item_id FROM dropped WHERE annotator_id = ? AND position = ?",
                (annotator_id, position),
            ).fetchone()
            if row is None:
                return None
            item_id = str(row[0])
            con.execute(
                "DELETE FROM dropped WHERE annotator_id = ? AND position = ?",
                (annotator_id, position),
            )
            con.execute("DELETE FROM released WHERE annotator_id = ?", (annotator_id,))
            con.execute(
                "INSERT INTO assignments(annotator_id, item_id, position, assigned_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (annotator_id, item_id, position, utc_now()),
            )
        return item_id

    def was_dropped(self, annotator_id: str, position: int) -> bool:
        """Whether the item at ``position`` of the annotator's queue was handed to a colleague."""
        row = (
            self._conn()
            .execute(
                "SELECT 1 FROM dropped WHERE annotator_id = ? AND position = ?",
                (annotator_id, position),
            )
            .fetchone()
        )
        return row is not None

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
                   r.item_id IS NOT NULL AND o.item_id IS NULL AS rated,
                   k.item_id IS NOT NULL AS skipped
            FROM assignments s
            LEFT JOIN ratings r ON r.annotator_id = s.annotator_id AND r.item_id = s.item_id
            LEFT JOIN reopened o ON o.annotator_id = s.annotator_id AND o.item_id = s.item_id
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

    def reannotate(
        self, plan: Sequence[dict[str, Any]], *, salt: str, add_raters: int = 1, seed: int = 0
    ) -> dict[str, int]:
        """Feed the re-annotation list back into the queues.

        ``same_raters``: the item opens again (unrated) for each listed annotator who still has
        it, until they save it again (an edit, in the audit trail). ``add_raters``: up to
        ``add_raters`` more annotators get it, those with the fewest items first. ``revise_item``:
        the item goes on the revision list (:meth:`item_revisions`), not to anyone's queue.
        Annotators are named in the list by pseudonym; the store maps them back with ``salt``.

        Returns
        -------
        dict
            ``{"reopened", "added", "revise"}``: assignments reopened, assignments added, items
            listed for revision.
        """
        counts = {"reopened": 0, "added": 0, "revise": 0}
        now = utc_now()
        with self._write() as con:
            people = [
                str(r[0])
                for r in con.execute(
                    "SELECT id FROM annotators WHERE role = 'annotator' "
                    "AND id NOT IN (SELECT annotator_id FROM released) ORDER BY id"
                )
            ]
            alias = {pseudonymise_id(p, salt): p for p in people} | {p: p for p in people}
            known = {r[0] for r in con.execute("SELECT id FROM items")}
            for row in plan:
                item = row["id"]
                if item not in known:
                    continue
                if row["strategy"] == "revise_item":
                    con.execute(
                        "INSERT INTO item_revisions(item_id, kappa, reasons, listed_at) "
                        "VALUES (?, ?, ?, ?) ON CONFLICT(item_id) DO UPDATE SET "
                        "kappa = excluded.kappa, reasons = excluded.reasons",
                        (item, row.get("kappa"), json.dumps(row.get("reasons", [])), now),
                    )
                    counts["revise"] += 1
                elif row["strategy"] == "same_raters":
                    for name in row.get("annotators", []):
                        who = alias.get(name)
                        if who is None:
                            continue
                        cur = con.execute(
                            "INSERT INTO reopened(annotator_id, item_id, priority, reopened_at) "
                            "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM ratings WHERE "
                            "annotator_id = ? AND item_id = ?) ON CONFLICT DO NOTHING",
                            (who, item, row["priority"], now, who, item),
                        )
                        counts["reopened"] += cur.rowcount
                elif row["strategy"] == "add_raters":
                    have = {
                        r[0]
                        for r in con.execute(
                            "SELECT annotator_id FROM assignments WHERE item_id = ?", (item,)
                        )
                    }
                    load = dict(
                        con.execute(
                            "SELECT annotator_id, COUNT(*) FROM assignments GROUP BY annotator_id"
                        ).fetchall()
                    )
                    free = sorted(
                        (p for p in people if p not in have), key=lambda p: (load.get(p, 0), p)
                    )
                    for who in free[:add_raters]:
                        self._append_items(con, who, [item], seed)
                        counts["added"] += 1
            self._bump_version(con)
        return counts

    def item_revisions(self) -> list[dict[str, Any]]:
        """Items the re-annotation list sent for revision: ``{item_id, kappa, reasons}``."""
        rows = self._conn().execute("SELECT * FROM item_revisions ORDER BY item_id").fetchall()
        return [dict(r) | {"reasons": json.loads(r["reasons"])} for r in rows]

    def reopened(self, annotator_id: str) -> set[str]:
        """Items reopened for the annotator (rated, to look at again)."""
        rows = self._conn().execute(
            "SELECT item_id FROM reopened WHERE annotator_id = ?", (annotator_id,)
        )
        return {r[0] for r in rows}
