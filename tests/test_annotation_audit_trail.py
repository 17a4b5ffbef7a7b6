"""The audit trail: per rating start, end, duration, is_modified and browser metadata; a history
of deltas that replays to the stored ratings exactly; |end - start - duration| < 0.01 s."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evalpipe.annotation.schema import AXES, DialoguePair
from evalpipe.annotation.web.store import Store
from evalpipe.annotation.web.store.db import iso_ms
from evalpipe.annotation.web.store.ratings import audit_times
from tests.annotation_harness import USER_AGENT, AnnotatorClient, audit, campaign_server

SECRET = "audit-secret-0123456789abcdef"


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "a.sqlite")
    store.load_tasks([DialoguePair(f"t{i}", "u", "r") for i in range(3)])
    store.add_annotator("ann_a")
    store.rebalance(overlap=1)
    return store


def scores(v):
    return {a: v for a in AXES}


def test_every_save_is_a_delta_and_the_history_replays_to_the_ratings(tmp_path: Path):
    store = _store(tmp_path)
    opened = iso_ms(datetime.now(UTC) - timedelta(seconds=12.5))
    store.save_rating("ann_a", "t0", scores(2), {a: 0.8 for a in AXES}, started_at=opened)
    store.save_rating(
        "ann_a", "t0", scores(2) | {"social": 4}, {a: 0.8 for a in AXES} | {"self": 1.0}
    )
    store.save_rating(
        "ann_a", "t0", scores(2) | {"social": 4}, {a: 0.8 for a in AXES} | {"self": 1.0}
    )
    store.save_rating("ann_a", "t1", scores(1), {a: 0.6 for a in AXES})
    history = store.history()
    assert [(h["item_id"], h["revision"]) for h in history] == [("t0", 1), ("t0", 2), ("t1", 1)]
    assert history[0]["delta"]["scores"]["social"] == [None, 2]
    # The edit records only what changed, old and new.
    assert history[1]["delta"] == {"scores": {"social": [2, 4]}, "confidence": {"self": [0.8, 1.0]}}
    replayed = store.replay_history()
    assert replayed[("ann_a", "t0")] == (
        scores(2) | {"social": 4},
        {a: 0.8 for a in AXES} | {"self": 1.0},
    )
    assert store.check_audit_trail() == []
    first = store.rating("ann_a", "t1")
    edited = store.rating("ann_a", "t0")
    assert first.is_modified is False and edited.is_modified is True
    assert history[0]["timestamp_start"] == opened
    assert history[0]["annotation_duration"] == pytest.approx(12.5, abs=0.5)


def test_a_tampered_rating_no_longer_replays(tmp_path: Path):
    store = _store(tmp_path)
    store.save_rating("ann_a", "t0", scores(2), {a: 0.8 for a in AXES})
    con = sqlite3.connect(store.path)
    con.execute("UPDATE ratings SET s_social = 5")
    con.commit()
    con.close()
    problems = store.check_audit_trail()
    assert len(problems) == 1 and "replayed" in problems[0]


def test_audit_times_are_consistent_and_distrust_odd_starts():
    now = datetime(2025, 3, 1, 12, 0, 0, 500000, tzinfo=UTC)
    start, end, duration = audit_times("2025-03-01T11:59:30.123Z", now=now)
    gap = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    assert abs(gap - duration) < 0.01 and duration == pytest.approx(30.377)
    for odd in ("garbage", "2025-03-02T00:00:00Z", "2025-02-20T00:00:00Z", None):
        assert audit_times(odd, now=now)[2] == 0.0


def test_ratings_over_http_carry_times_browser_metadata_and_replay(tmp_path: Path):
    tasks = [{"id": f"h{i}", "user": "u", "response": "r", "context": []} for i in range(4)]
    with campaign_server(
        tmp_path, tasks=tasks, accounts={"ann_a": "annotator"}, secret=SECRET
    ) as srv:
        client = AnnotatorClient(srv.base_url, "ann_a", srv.tokens["ann_a"])
        assert client.login().status_code == 303
        client.page(1)
        assert client.opened_at
        assert client.submit(1, scores(3), {a: 0.8 for a in AXES}).status_code == 303
        client.page(1)
        assert client.submit(1, scores(4), {a: 0.8 for a in AXES}).status_code == 303
        client.close()
        store = Store(srv.tmp / "ann.sqlite")
        rating = store.ratings()[0]
        assert rating.browser_meta == {
            "user_agent": USER_AGENT,
            "os": "Linux",
            "viewport": "1400x950",
        }
        assert rating.is_modified and rating.timestamp_start <= rating.timestamp_end
        assert len(store.history()) == 2
        assert store.check_audit_trail() == []
        store.close()
    assert audit(srv.tmp / "ann.sqlite", []).audit_trail_problems == ()
