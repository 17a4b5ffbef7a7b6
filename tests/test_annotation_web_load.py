"""Concurrency and crash safety of the real server (bounded versions of
perf/annotation_load.py): concurrent annotators lose and duplicate nothing, and a SIGKILL
in the middle of the load loses nothing that was acknowledged."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from evalpipe.annotation.web.store import Store
from tests.annotation_harness import AnnotatorClient, ServerProcess, audit, run_load

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]
SECRET = "load-test-secret-0123456789"


def prepare(tmp: Path, *, annotators: int, items: int) -> tuple[Path, Path, dict[str, str]]:
    tasks = tmp / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"L{i:04d}",
                    "user": f"質問 {i}",
                    "response": f"<b>応答</b> {i}",
                    "context": [],
                },
                ensure_ascii=False,
            )
            + "\n"
            for i in range(items)
        ),
        encoding="utf-8",
    )
    db = tmp / "load.sqlite"
    store = Store(db)
    accounts = {f"ann_{i:02d}": store.add_annotator(f"ann_{i:02d}") for i in range(annotators)}
    store.close()
    return db, tasks, accounts


def test_concurrent_annotators_lose_and_duplicate_nothing(tmp_path: Path):
    db, tasks, accounts = prepare(tmp_path, annotators=8, items=60)
    with ServerProcess(
        db=db, tasks=tasks, cwd=REPO, secret=SECRET, extra_args=["--overlap", "2", "--threads", "4"]
    ) as srv:
        result = run_load(srv.base_url, accounts, per_annotator=15, seed=7)
    report = audit(db, result.acks)
    assert result.errors == 0
    assert report.acknowledged == 8 * 15
    assert (report.lost, report.mismatched, report.duplicated) == (0, 0, 0)
    assert report.stored == report.acknowledged


def test_sigkill_mid_load_loses_nothing_acknowledged(tmp_path: Path):
    db, tasks, accounts = prepare(tmp_path, annotators=6, items=60)
    srv = ServerProcess(
        db=db, tasks=tasks, cwd=REPO, secret=SECRET, extra_args=["--overlap", "2", "--threads", "4"]
    ).start()
    killed = threading.Event()

    def kill_at(n_acks: int) -> None:
        if n_acks >= 25 and not killed.is_set():
            killed.set()
            srv.kill()

    try:
        result = run_load(srv.base_url, accounts, per_annotator=20, seed=3, on_ack=kill_at)
    finally:
        srv.stop()
    assert killed.is_set() and srv.proc is not None and srv.proc.returncode == -9
    assert len(result.acks) < 6 * 20, "the kill must land in the middle of the load"
    report = audit(db, result.acks)
    assert report.acknowledged >= 25
    assert (report.lost, report.mismatched, report.duplicated) == (0, 0, 0)
    # WAL recovery: the crashed database opens, passes an integrity check and serves again.
    store = Store(db)
    assert store._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with ServerProcess(db=db, tasks=tasks, cwd=REPO, secret=SECRET) as again:
        client = AnnotatorClient(again.base_url, "ann_00", accounts["ann_00"])
        assert client.login().status_code == 303
    assert store.count_ratings() == report.stored


def test_fifty_annotators_lose_nothing_and_the_audit_trail_replays(tmp_path: Path):
    # The protocol's load: 50 concurrent annotators; each rates, then edits, three items.
    db, tasks, accounts = prepare(tmp_path, annotators=50, items=75)
    with ServerProcess(
        db=db, tasks=tasks, cwd=REPO, secret=SECRET, extra_args=["--overlap", "2", "--threads", "8"]
    ) as srv:
        first = run_load(srv.base_url, accounts, per_annotator=3, seed=11)
        second = run_load(srv.base_url, accounts, per_annotator=3, seed=12)
    report = audit(db, second.acks)
    assert first.errors == second.errors == 0
    assert report.acknowledged == 150 and report.stored == 150
    assert (report.lost, report.mismatched, report.duplicated) == (0, 0, 0)
    # Every rating and every edit is in the history, and replaying it gives the stored ratings.
    assert report.audit_trail_problems == ()
    store = Store(db)
    edits = sum(
        a.scores != b.scores or a.confidence != b.confidence
        for a, b in zip(
            sorted(first.acks, key=lambda a: (a.annotator_id, a.position)),
            sorted(second.acks, key=lambda a: (a.annotator_id, a.position)),
            strict=True,
        )
    )
    assert len(store.history()) == 150 + edits
    assert all(r.is_modified for r in store.ratings() if r.revisions > 1)
    store.close()
