"""A team that changes during a campaign, against the real server (``evalpipe annotate
serve``): an annotator who joins after every item has its raters gets items, one with nothing to
do sees a page (never a ``/`` <-> ``/done`` loop), the unrated items of an idle annotator move to
one who needs work, and the lead's ``release`` hands a dropout's items to the others."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from evalpipe.annotation.web.assignment import top_up
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import AnnotatorClient, ServerProcess, annotate_cli
from tests.test_annotation_web_http import CONF, SCORES, write_tasks

REPO = Path(__file__).resolve().parents[1]
SECRET = "team-secret-0123456789abcdef"


def campaign(tmp: Path, *extra: str, n_items: int = 4) -> ServerProcess:
    """Two annotators, overlap 2: every item is fully covered before anyone else joins."""
    tasks = tmp / "tasks.jsonl"
    write_tasks(tasks, n_items)
    db = tmp / "ann.sqlite"
    store = Store(db)
    tokens = {a: store.add_annotator(a) for a in ("ann_a", "ann_b")}
    store.close()
    srv = ServerProcess(
        db=db, tasks=tasks, cwd=REPO, secret=SECRET, extra_args=["--overlap", "2", *extra]
    )
    srv.tokens = tokens  # type: ignore[attr-defined]
    return srv


def join(srv: ServerProcess, who: str) -> AnnotatorClient:
    """``add-annotator`` while the server runs, then sign in."""
    proc = annotate_cli("add-annotator", who, "--db", str(srv.db), "--overlap", "2")
    assert proc.returncode == 0, proc.stderr
    srv.tokens[who] = proc.stdout.strip().splitlines()[-1]  # type: ignore[attr-defined]
    c = AnnotatorClient(srv.base_url, who, srv.tokens[who])  # type: ignore[attr-defined]
    assert c.login().status_code == 303
    return c


def raters(db: Path) -> Counter[str]:
    store = Store(db)
    return Counter(
        item
        for who in ("ann_a", "ann_b", "ann_c")
        for item in (s.item_id for s in store.queue(who))
    )


def test_a_late_joiner_gets_items_beyond_the_overlap(tmp_path):
    with campaign(tmp_path) as srv:
        assert all(n == 2 for n in raters(srv.db).values())
        c = join(srv, "ann_c")
        pos = c.next_position()
        assert pos is not None, c.http.get("/").headers.get("location")
        rated = 0
        while (pos := c.next_position()) is not None:
            c.page(pos)
            assert c.submit(pos, SCORES, CONF).status_code == 303
            rated += 1
        # Every item, once each; then "all done", not a loop.
        assert rated == 4
        assert Counter(raters(srv.db).values()) == {3: 4}
        done = c.http.get("/", follow_redirects=True)
        assert done.status_code == 200 and "All done" in done.text


def test_nothing_to_do_is_a_page_not_a_redirect_loop(tmp_path):
    with campaign(tmp_path, "--top-up", "0") as srv:
        c = join(srv, "ann_c")
        c.http.max_redirects = 5
        resp = c.http.get("/", follow_redirects=True)
        assert resp.status_code == 200 and "Nothing to rate yet" in resp.text
        assert [r.headers["location"] for r in resp.history] == ["/done"]
        assert c.http.get("/done").status_code == 200


def test_unrated_items_of_an_idle_annotator_move_to_one_who_needs_work(tmp_path):
    # 1.8 s of inactivity counts as idle here (72 hours by default).
    with campaign(tmp_path, "--idle-hours", "0.0005", "--no-raise-coverage") as srv:
        b = AnnotatorClient(srv.base_url, "ann_b", srv.tokens["ann_b"])
        assert b.login().status_code == 303
        first = b.next_position()
        b.page(first)
        assert b.submit(first, SCORES, CONF).status_code == 303
        b_rated = Store(srv.db).slot("ann_b", first)
        a = AnnotatorClient(srv.base_url, "ann_a", srv.tokens["ann_a"])
        time.sleep(2.0)
        c = join(srv, "ann_c")
        # ann_a signed in just now, so only ann_b (idle) gives up items: the three unrated ones.
        assert a.login().status_code == 303
        assert c.next_position() is not None
        store = Store(srv.db)
        got = {s.item_id for s in store.queue("ann_c")}
        assert len(got) == 3 and b_rated not in got
        assert {s.item_id for s in store.queue("ann_b")} == {b_rated}
        assert store.rating("ann_b", b_rated) is not None
        # Coverage stays at the overlap: nothing was added, only moved.
        assert all(n == 2 for n in raters(srv.db).values())


def test_release_hands_a_dropouts_items_to_the_team_and_a_return_brings_work(tmp_path):
    with campaign(tmp_path, "--top-up", "0", n_items=6) as srv:
        b = AnnotatorClient(srv.base_url, "ann_b", srv.tokens["ann_b"])
        assert b.login().status_code == 303
        pos = b.next_position()
        b.page(pos)
        assert b.submit(pos, SCORES, CONF).status_code == 303
        kept = Store(srv.db).slot("ann_b", pos)
        c = join(srv, "ann_c")  # joins with nothing to do (every item has two raters)
        assert c.next_position() is None
        proc = annotate_cli("release", "ann_b", "--db", str(srv.db), "--overlap", "2")
        assert proc.returncode == 0, proc.stderr
        assert "5 unrated items taken from ann_b" in proc.stdout
        store = Store(srv.db)
        assert [s.item_id for s in store.queue("ann_b")] == [kept]
        assert len(store.queue("ann_c")) == 5 and c.next_position() is not None
        assert all(n == 2 for n in raters(srv.db).values())
        # A restart's rebalance (even with a higher overlap) does not hand them items again.
        assert store.rebalance(overlap=3) == 0
        assert [s.item_id for s in store.queue("ann_b")] == [kept]
        bad = annotate_cli("release", "nobody", "--db", str(srv.db))
        assert bad.returncode == 2 and "does not exist" in bad.stderr


def test_a_released_annotator_who_comes_back_gets_work_again(tmp_path):
    with campaign(tmp_path, n_items=4) as srv:
        assert annotate_cli("release", "ann_b", "--db", str(srv.db)).returncode == 0
        assert Store(srv.db).queue("ann_b") == []
        b = AnnotatorClient(srv.base_url, "ann_b", srv.tokens["ann_b"])
        assert b.login().status_code == 303
        assert b.next_position() is not None
        assert "ann_b" not in Store(srv.db).released()


def test_top_up_takes_from_idle_first_then_the_least_covered_items():
    rows = [
        ("i1", "x", True),
        ("i1", "y", False),
        ("i2", "x", False),
        ("i2", "y", False),
        ("i3", "x", True),
    ]
    plan = top_up(
        "z", ["i1", "i2", "i3", "i4"], rows, {"y": 100.0, "x": 5.0}, batch=3, idle_after_s=60
    )
    # y is idle: its unrated i1 and i2 move (one takeover per item); x is active.
    assert plan.takeovers == [("i1", "y"), ("i2", "y")]
    # Then the item with the fewest raters that z does not have yet.
    assert plan.extra == ["i4"]
    assert top_up("z", ["i1"], rows, {}, batch=0, idle_after_s=60).items == []
    again = top_up("z", ["i1", "i2", "i3", "i4"], rows, {"y": 100.0}, batch=3, idle_after_s=None)
    assert again.takeovers == [] and again.extra[0] == "i4" and len(again.extra) == 3


def test_the_done_page_does_not_send_staff_into_a_loop(tmp_path):
    with campaign(tmp_path) as srv:
        token = Store(srv.db).add_annotator("boss", admin=True)
        c = AnnotatorClient(srv.base_url, "boss", token)
        assert c.login().status_code == 303
        c.http.max_redirects = 5
        resp = c.http.get("/done", follow_redirects=True)
        assert resp.status_code == 200 and "/admin" in str(resp.url)
