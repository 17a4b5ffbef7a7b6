"""Training rounds and qualification attempts of the annotation database."""

from __future__ import annotations

import json
from typing import Any

from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.store.db import Database, check_values, utc_now
from evalpipe.errors import InputError


class Training(Database):
    """Worked-example ratings per training round; qualification answers and scored attempts."""

    def save_training(
        self, annotator_id: str, round_: int, example_id: str, scores: dict[str, int]
    ) -> None:
        """Record the annotator's rating of a worked example in training round ``round_``."""
        check_values(scores, dict.fromkeys(AXES, 1.0))
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
        check_values(scores, confidence)
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
