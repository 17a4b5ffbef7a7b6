"""HTTP-level tests of the annotation web app against the real `evalpipe annotate serve` process
(waitress on 127.0.0.1, SQLite WAL): auth, CSRF, blind access, escaping, overlap, commit, export."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from evalpipe.annotation.pseudonyms import pseudonym, rater_salt
from evalpipe.annotation.schema import AXES, read_annotations
from evalpipe.annotation.web.assignment import fill_assignments
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import (
    AnnotatorClient,
    ServerProcess,
    annotate_cli,
    campaign_server,
    write_tasks_file,
)

REPO = Path(__file__).resolve().parents[1]
SECRET = "test-secret-0123456789abcdef"
XSS_RESPONSE = '<script>alert("xss")</script><img src=x onerror=alert(1)> =HYPERLINK("http://x")'
XSS_USER = '"><svg onload=alert(2)>'
XSS_CONTEXT = "</div><script>document.body.innerHTML=''</script>"

SCORES = {"social": 4, "avoidant": 2, "mechanical": 1, "self": 5}
CONF = {"social": 0.8, "avoidant": 0.6, "mechanical": 1.0, "self": 0.4}


def write_tasks(path: Path, n: int = 6) -> Path:
    rows = []
    for i in range(1, n + 1):
        rows.append(
            {
                "id": f"t{i:02d}",
                "user": XSS_USER if i == 1 else f"質問 {i}",
                "response": XSS_RESPONSE if i == 1 else f"素晴らしい質問ですね {i}",
                "context": [{"turn": -1, "speaker": "ai", "text": XSS_CONTEXT}] if i == 1 else [],
            }
        )
    return write_tasks_file(path, rows)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("annweb")
    with campaign_server(
        tmp,
        tasks=write_tasks(tmp / "tasks.jsonl"),
        accounts={"ann_a": "annotator", "ann_b": "annotator", "ann_c": "annotator"}
        | {"boss": "admin"},
        secret=SECRET,
        extra_args=["--overlap", "2", "--threads", "4"],
    ) as srv:
        yield srv


def client(server, annotator: str) -> AnnotatorClient:
    c = AnnotatorClient(server.base_url, annotator, server.tokens[annotator])
    assert c.login().status_code == 303
    return c


def item_position(server, annotator: str, item_id: str) -> int | None:
    con = sqlite3.connect(server.db)
    try:
        row = con.execute(
            "SELECT position FROM assignments WHERE annotator_id = ? AND item_id = ?",
            (annotator, item_id),
        ).fetchone()
    finally:
        con.close()
    return None if row is None else int(row[0])


def stored_rating(server, annotator: str, item_id: str) -> tuple | None:
    # A fresh connection, as a crash-recovered reader would see the database.
    con = sqlite3.connect(server.db)
    try:
        return con.execute(
            "SELECT " + ", ".join(f"s_{a}" for a in AXES) + ", revisions FROM ratings "
            "WHERE annotator_id = ? AND item_id = ?",
            (annotator, item_id),
        ).fetchone()
    finally:
        con.close()


# -- auth ------------------------------------------------------------------------------------


def test_pages_require_login_and_wrong_tokens_are_refused(server):
    http = httpx.Client(base_url=server.base_url)
    resp = http.get("/item/1")
    assert resp.status_code == 302 and "/login" in resp.headers["location"]
    bad = AnnotatorClient(server.base_url, "ann_a", "not-the-token")
    assert bad.login().status_code == 401
    assert bad.http.get("/item/1").status_code == 302
    unknown = AnnotatorClient(server.base_url, "nobody", server.tokens["ann_a"])
    assert unknown.login().status_code == 401


def test_there_is_no_sign_up_route(server):
    http = httpx.Client(base_url=server.base_url)
    for path in ("/signup", "/register", "/users/new"):
        assert http.get(path).status_code == 404


def test_tokens_are_stored_only_as_hashes(server):
    con = sqlite3.connect(server.db)
    try:
        hashes = [r[0] for r in con.execute("SELECT token_hash FROM annotators")]
    finally:
        con.close()
    assert hashes and all(h.startswith("pbkdf2:") for h in hashes)
    assert not set(server.tokens.values()) & set(hashes)


def test_serve_refuses_to_start_without_a_secret_key(tmp_path):
    tasks = tmp_path / "t.jsonl"
    write_tasks(tasks, 2)
    env = {k: v for k, v in os.environ.items() if k != "EVALPIPE_SECRET_KEY"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalpipe.cli",
            "annotate",
            "serve",
            "--tasks",
            str(tasks),
            "--db",
            str(tmp_path / "db.sqlite"),
            "--port",
            "1",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "EVALPIPE_SECRET_KEY" in proc.stderr


# -- CSRF ------------------------------------------------------------------------------------


def test_rating_without_csrf_token_is_rejected_and_not_saved(server):
    c = client(server, "ann_c")
    pos = 1
    c.csrf = ""
    resp = c.submit(pos, SCORES, CONF)
    assert resp.status_code == 400
    item = c.http.get(f"/item/{pos}")
    assert "saved-badge" not in item.text


def test_csrf_token_of_another_session_is_rejected(server):
    a = client(server, "ann_a")
    c = client(server, "ann_c")
    c.csrf = a.csrf
    assert c.submit(2, SCORES, CONF).status_code == 400


def test_login_form_also_needs_csrf(server):
    http = httpx.Client(base_url=server.base_url)
    resp = http.post("/login", data={"annotator_id": "ann_a", "token": server.tokens["ann_a"]})
    assert resp.status_code == 400


# -- blind access ----------------------------------------------------------------------------


def test_annotators_see_only_their_items_and_their_own_ratings(server):
    store = Store(server.db)
    shared = next(
        i
        for i in store.item_ids()
        if item_position(server, "ann_a", i) and item_position(server, "ann_b", i)
    )
    a, b = client(server, "ann_a"), client(server, "ann_b")
    pos_a = item_position(server, "ann_a", shared)
    assert a.page(pos_a).status_code == 200
    assert a.submit(pos_a, SCORES, CONF).status_code == 303
    page_b = b.page(item_position(server, "ann_b", shared)).text
    assert shared in page_b
    assert " checked>" not in page_b and "saved-badge" not in page_b
    # Positions beyond one's own queue do not exist for that annotator.
    assert a.page(len(store.queue("ann_a")) + 1).status_code == 404
    not_mine = [i for i in store.item_ids() if item_position(server, "ann_a", i) is None]
    assert not_mine, "with overlap 2 of 3 annotators some items are not ann_a's"
    assert all(
        not_mine_id not in a.page(p).text
        for p in range(1, len(store.queue("ann_a")) + 1)
        for not_mine_id in not_mine
    )


def test_admin_pages_are_closed_to_annotators(server):
    a = client(server, "ann_a")
    assert a.http.get("/admin").status_code == 403
    assert a.http.get("/admin/export.jsonl").status_code == 403


def test_admin_sees_progress_agreement_and_can_download_the_export(server):
    boss = client(server, "boss")
    page = boss.http.get("/admin")
    assert page.status_code == 200
    for name in ("ann_a", "ann_b", "ann_c"):
        assert name in page.text
    assert "Agreement per axis" in page.text
    # An admin who opens an item link sees the item read-only with every rating, not an error.
    opened = boss.http.get("/item/1", follow_redirects=True)
    assert opened.status_code == 200 and "Read-only" in opened.text
    assert "t01" in opened.text and "<form" not in opened.text.split("</header>")[1]
    export = boss.http.get("/admin/export.jsonl")
    assert export.status_code == 200
    assert "attachment" in export.headers["content-disposition"]
    records = [json.loads(line) for line in export.text.splitlines()]
    # The download leaves the database, so it names annotators by their pseudonym.
    salt = rater_salt(REPO)
    assert all(
        r["annotator_id"] in {pseudonym(n, salt) for n in ("ann_a", "ann_b", "ann_c")}
        for r in records
    )


# -- escaping and headers ---------------------------------------------------------------------


def test_html_in_dialogue_text_is_escaped_and_csp_forbids_inline_script(server):
    a = client(server, "ann_a")
    b = client(server, "ann_b")
    # t01 carries the payloads; it is assigned to two of the three annotators.
    owner = a if item_position(server, "ann_a", "t01") else b
    resp = owner.page(item_position(server, owner.annotator_id, "t01"))
    body = resp.text
    assert "<script>alert" not in body and "<svg onload" not in body
    assert "<img src=x" not in body and "<script>document" not in body
    assert "&lt;script&gt;alert(&#34;xss&#34;)&lt;/script&gt;" in body
    assert "&#34;&gt;&lt;svg onload=alert(2)&gt;" in body
    # The only script tag on the page is the static file.
    assert re.findall(r"<script[^>]*>", body) == ['<script src="/static/annotate.js" defer>']
    csp = resp.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert resp.headers["x-content-type-options"] == "nosniff"
    cookie = owner.http.cookies.jar
    assert any(ck.has_nonstandard_attr("HttpOnly") for ck in cookie)


# -- assignment -------------------------------------------------------------------------------


def test_each_item_gets_exactly_overlap_annotators_with_balanced_load(server):
    con = sqlite3.connect(server.db)
    try:
        pairs = con.execute("SELECT item_id, annotator_id FROM assignments").fetchall()
    finally:
        con.close()
    per_item = Counter(item for item, _ in pairs)
    per_person = Counter(person for _, person in pairs)
    assert set(per_item.values()) == {2} and len(per_item) == 6
    assert "boss" not in per_person
    assert max(per_person.values()) - min(per_person.values()) <= 1
    assert len(set(pairs)) == len(pairs)


def test_adding_an_annotator_later_keeps_existing_assignments():
    items = [f"i{k}" for k in range(10)]
    first = fill_assignments(items, ["a", "b"], [], overlap=2, seed=3)
    assert len(first) == 20
    more = fill_assignments(items, ["a", "b", "c"], first, overlap=3, seed=3)
    assert {p for _, p in more} == {"c"} and len(more) == 10
    # Overlap larger than the team: everyone gets every item, nobody twice.
    capped = fill_assignments(items, ["a"], [], overlap=3)
    assert capped == [(i, "a") for i in items]


def test_overlap_one_splits_items_evenly():
    items = [f"i{k}" for k in range(9)]
    pairs = fill_assignments(items, ["a", "b", "c"], [], overlap=1, seed=0)
    assert Counter(p for _, p in pairs) == {"a": 3, "b": 3, "c": 3}


# -- saving, editing, skipping ----------------------------------------------------------------


def test_a_rating_is_committed_before_the_response_and_edits_replace_it(server):
    c = client(server, "ann_b")
    queue = Store(server.db).queue("ann_b")
    slot = queue[-1]
    resp = c.submit(slot.position, SCORES, CONF, active_ms=4200)
    assert resp.status_code == 303
    assert stored_rating(server, "ann_b", slot.item_id) == (4, 2, 1, 5, 1)
    edited = dict(SCORES, social=1)
    assert c.submit(slot.position, edited, CONF, active_ms=1000).status_code == 303
    assert stored_rating(server, "ann_b", slot.item_id) == (1, 2, 1, 5, 2)
    page = c.page(slot.position).text
    assert 'value="1" required checked' in page and "edited 1×" in page
    # The active time is that of the first rating; an edit does not add to it.
    rating = Store(server.db).rating("ann_b", slot.item_id)
    assert rating.active_ms == 4200


def test_incomplete_rating_is_reported_and_not_saved(server):
    c = client(server, "ann_c")
    slot = Store(server.db).queue("ann_c")[2]
    resp = c.submit(slot.position, {"social": 3}, {"social": 0.8})
    assert resp.status_code == 400
    assert "avoidant: choose a score 1-5" in resp.text
    assert stored_rating(server, "ann_c", slot.item_id) is None
    out_of_range = dict(SCORES, self=9)
    assert c.submit(slot.position, out_of_range, CONF).status_code == 400
    assert stored_rating(server, "ann_c", slot.item_id) is None


def test_skipped_item_comes_back_after_the_fresh_ones(server):
    c = client(server, "ann_c")
    queue = Store(server.db).queue("ann_c")
    first = c.next_position()
    assert c.submit(first, {}, {}, action="skip").status_code == 303
    order = []
    while (pos := c.next_position()) is not None and pos not in order:
        order.append(pos)
        assert c.submit(pos, SCORES, CONF).status_code == 303
    open_items = len([s for s in queue if not s.rated])
    assert order[open_items - 1] == first
    # Then, with nothing left, the items ann_c did not have come as a top-up, and "/" says done.
    assert len(order) - open_items == len(Store(server.db).item_ids()) - len(queue)
    assert c.http.get("/").headers["location"].endswith("/done")


# -- export and backup commands ---------------------------------------------------------------


def test_export_writes_the_next_free_batch_and_rewrites_it_later(server, tmp_path):
    out = tmp_path / "raw"
    out.mkdir()
    (out / "batch_001.jsonl").write_text("", encoding="utf-8")
    db_copy = tmp_path / "copy.sqlite"
    assert annotate_cli("backup", "--db", str(server.db), str(db_copy)).returncode == 0
    proc = annotate_cli(
        "export",
        "--db",
        str(db_copy),
        "--out-dir",
        str(out),
        "--timings",
        str(tmp_path / "timings.csv"),
    )
    assert proc.returncode == 0, proc.stderr
    batch = out / "batch_002.jsonl"
    assert str(batch) in proc.stdout
    records = read_annotations(batch)
    assert records and all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r.timestamp) for r in records
    )
    keys = [(r.id, r.annotator_id) for r in records]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    first_bytes = batch.read_bytes()
    again = annotate_cli("export", "--db", str(db_copy), "--out-dir", str(out))
    assert again.returncode == 0 and not (out / "batch_003.jsonl").exists()
    assert batch.read_bytes() == first_bytes
    assert "active_seconds" in (tmp_path / "timings.csv").read_text()


def test_backup_of_the_live_database_is_complete(server, tmp_path):
    dest = tmp_path / "backup.sqlite"
    proc = annotate_cli("backup", "--db", str(server.db), str(dest))
    assert proc.returncode == 0, proc.stderr
    live = sqlite3.connect(server.db)
    copy = sqlite3.connect(dest)
    try:
        q = "SELECT * FROM ratings ORDER BY annotator_id, item_id"
        assert copy.execute(q).fetchall() == live.execute(q).fetchall()
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        live.close()
        copy.close()


def test_add_annotator_prints_a_working_token_and_rejects_duplicates(tmp_path):
    db = tmp_path / "db.sqlite"
    proc = annotate_cli("add-annotator", "ann_new", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    token = proc.stdout.strip().splitlines()[-1]
    assert Store(db).authenticate("ann_new", token) is not None
    again = annotate_cli("add-annotator", "ann_new", "--db", str(db))
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = annotate_cli("add-annotator", "llm:judge", "--db", str(db))
    assert bad.returncode == 2 and "annotator id" in bad.stderr


def test_resetting_a_token_ends_existing_sessions(server):
    c = client(server, "ann_c")
    assert c.http.get("/done").status_code == 200
    new_token = Store(server.db).reset_token("ann_c")
    server.tokens["ann_c"] = new_token
    resp = c.http.get("/done")
    assert resp.status_code == 302 and "/login" in resp.headers["location"]
    assert AnnotatorClient(server.base_url, "ann_c", new_token).login().status_code == 303


def test_guidelines_are_one_click_away_with_every_anchor(server):
    from evalpipe.annotation.guidelines import AXIS_ANCHORS_EN, AXIS_ANCHORS_JA

    c = client(server, "ann_a")
    item = c.page(1).text
    assert 'href="/guidelines" target="_blank"' in item
    page = c.http.get("/guidelines")
    assert page.status_code == 200
    for axis in AXES:
        for level in range(1, 6):
            assert AXIS_ANCHORS_JA[axis][level] in page.text
            assert AXIS_ANCHORS_EN[axis][level].replace("'", "&#39;") in page.text


def test_the_queue_is_closed_until_qualified_and_a_waiver_opens_it(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, 3)
    db = tmp_path / "db.sqlite"
    store = Store(db)
    token = store.add_annotator("ann_q")
    store.close()
    with ServerProcess(
        db=db, tasks=tasks, cwd=REPO, secret=SECRET, require_qualification=True
    ) as srv:
        c = AnnotatorClient(srv.base_url, "ann_q", token)
        assert c.login().status_code == 303
        assert c.http.get("/").headers["location"].endswith("/training")
        assert c.http.get("/item/1").headers["location"].endswith("/training")
        assert c.submit(1, SCORES, CONF).status_code == 302
        assert Store(db).rating("ann_q", Store(db).slot("ann_q", 1)) is None
        bad = annotate_cli("waive-qualification", "nobody", "--reason", "x", "--db", str(db))
        assert bad.returncode == 2 and "does not exist" in bad.stderr
        proc = annotate_cli(
            "waive-qualification", "ann_q", "--reason", "qualified in round 1", "--db", str(db)
        )
        assert proc.returncode == 0, proc.stderr
        assert "/item/" in c.http.get("/").headers["location"]
        result = c.http.get("/qualify/result").text
        assert "Passed" in result and "waived: qualified in round 1" in result
