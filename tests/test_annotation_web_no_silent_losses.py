"""Campaigns without silent losses: CSV cells that cannot start a formula on a new line,
over-long comments kept as drafts, adjudication notes under the comment's limit, fresh items that
are not idle, a released annotator's open page that still saves, login delays instead of a lock,
and a 413 page that names its form. HTTP tests run against the real ``evalpipe annotate serve``."""

from __future__ import annotations

import csv
import html
import io
import re
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from openpyxl import load_workbook

from evalpipe.annotation.schema import AXES, DialoguePair
from evalpipe.annotation.spreadsheet import write_template
from evalpipe.annotation.web.store import MAX_COMMENT_CHARS, Store
from tests.annotation_harness import AnnotatorClient, annotate_cli, campaign_server

SCORES = {"social": 4, "avoidant": 2, "mechanical": 1, "self": 5}
CONF = {"social": 0.8, "avoidant": 0.6, "mechanical": 1.0, "self": 0.4}
TASKS = [
    {"id": f"n{i:02d}", "user": f"質問 {i}", "response": f"素晴らしい質問ですね {i}", "context": []}
    for i in range(1, 7)
]
SECRET = "silent-losses-secret-0123456789"
FORMULA_START = ("=", "+", "-", "@")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with campaign_server(
        tmp_path_factory.mktemp("losses"),
        tasks=TASKS,
        accounts={"ann_a": "annotator", "ann_b": "annotator", "ann_r": "annotator"}
        | {"boss": "admin"},
        secret=SECRET,
        extra_args=["--overlap", "3"],
    ) as srv:
        yield srv


def signed_in(srv, who: str) -> AnnotatorClient:
    c = AnnotatorClient(srv.base_url, who, srv.tokens[who])
    assert c.login().status_code == 303
    return c


def rating_form(csrf: str, *, comment: str = "", action: str = "save") -> dict[str, str]:
    data = {"csrf_token": csrf, "action": action, "active_ms": "0", "comment": comment}
    for axis in AXES:
        data[f"score_{axis}"] = str(SCORES[axis])
        data[f"conf_{axis}"] = str(CONF[axis])
    return data


def physical_lines(text: str) -> list[str]:
    """The text split at every CR, LF or CRLF: what a line-based reader sees."""
    return re.split(r"\r\n|\r|\n", text)


# -- CSV and spreadsheet cells ------------------------------------------------------------------


def test_notes_and_timings_csv_quote_line_breaks_and_start_no_line_with_a_formula(tmp_path):
    db = tmp_path / "ann.sqlite"
    store = Store(db)
    odd_id = 'n\r=HYPERLINK("http://x")'
    store.load_tasks(
        [
            DialoguePair(id="n01", user="u", response="r", context=[]),
            DialoguePair(id=odd_id, user="u", response="r", context=[]),
        ]
    )
    store.add_annotator("ann_a")
    store.add_annotator("lead", role="admin")
    store.rebalance(overlap=1)
    for item in ("n01", odd_id):
        store.save_rating("ann_a", item, SCORES, CONF, active_ms=1500)
    comment = "fine\r=cmd|' /C calc'!A0"
    store.save_note("ann_a", "n01", comment=comment, flag=False)
    store.save_adjudication("n01", "lead", SCORES, CONF, "agreed\n+1 from the team\r\n@SUM(A1)")
    store.close()
    notes, timings = tmp_path / "notes.csv", tmp_path / "timings.csv"
    proc = annotate_cli(
        "export",
        "--db",
        str(db),
        "--out-dir",
        str(tmp_path / "raw"),
        "--notes",
        str(notes),
        "--timings",
        str(timings),
    )
    assert proc.returncode == 0, proc.stderr
    for path, n_rows in ((notes, 2), (timings, 2)):
        text = path.read_bytes().decode("utf-8")
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert len(rows) == 1 + n_rows, rows  # no row starts inside a field
        assert not any(line.startswith(FORMULA_START) for line in physical_lines(text)), text
    notes_text = notes.read_bytes().decode("utf-8")
    note_rows = {r[2]: r for r in csv.reader(io.StringIO(notes_text, newline=""))}
    assert note_rows["comment"][4] == "fine\r'=cmd|' /C calc'!A0"
    assert note_rows["adjudication"][4] == "agreed\n'+1 from the team\r\n'@SUM(A1)"
    timings_text = timings.read_bytes().decode("utf-8")
    ids = [r[0] for r in csv.reader(io.StringIO(timings_text, newline=""))][1:]
    assert sorted(ids) == sorted(["n01", 'n\r\'=HYPERLINK("http://x")'])


def test_the_template_keeps_a_cell_with_a_formula_after_a_line_break_as_text(tmp_path):
    path = tmp_path / "t.xlsx"
    odd = DialoguePair(id="t\n=1+1", user="hi", response="fine\r\n@SUM(A1)", context=[])
    plain = DialoguePair(id="t2", user="hi", response="a - b", context=[])
    write_template([odd, plain], path)
    ws = load_workbook(path)["annotate"]
    header = {c.value: c.column for c in ws[1]}
    assert ws.cell(row=2, column=header["id"]).value == "t\n=1+1"  # the id is kept exactly
    assert ws.cell(row=2, column=header["id"]).quotePrefix
    assert ws.cell(row=2, column=header["response"]).quotePrefix
    assert not ws.cell(row=3, column=header["response"]).quotePrefix


# -- comments and notes -------------------------------------------------------------------------


def test_an_over_long_comment_is_kept_as_a_flagged_draft_when_the_annotator_moves_on(server):
    c = signed_in(server, "ann_a")
    first, second = Store(server.db).queue("ann_a")[:2]
    long_comment = "あ" * MAX_COMMENT_CHARS + "い"
    c.page(first.position)
    # Moving to another item (what the page's links do): the draft carries the comment.
    data = {
        "csrf_token": c.csrf,
        "action": "draft",
        "active_ms": "0",
        "score_social": "3",
        "comment": long_comment,
    }
    assert c.http.post(f"/item/{first.position}", data=data).status_code == 204
    c.page(second.position)
    back = c.page(first.position)
    assert back.status_code == 200
    assert long_comment in back.text
    error = re.search(
        r'<div class="error" role="alert" id="comment-error"([^>]*)>([^<]*)<', back.text
    )
    assert error and "hidden" not in error.group(1)
    assert f"{MAX_COMMENT_CHARS + 1:,} characters" in error.group(2)
    assert 'id="draft-badge"' in back.text
    assert re.search(r'name="score_social" value="3"[^>]*checked', back.text)  # draft values too

    # Saving with it: the rating is stored, the comment refused and still kept after moving on.
    page = c.http.post(f"/item/{second.position}", data=rating_form(c.csrf, comment=long_comment))
    assert page.status_code == 400 and 'id="rating-saved"' in page.text
    c.page(first.position)
    again = c.page(second.position)
    assert long_comment in again.text and 'id="draft-badge"' in again.text
    assert Store(server.db).rating("ann_a", second.item_id) is not None
    # Shortened: the comment is saved and the draft is gone.
    short = long_comment[: MAX_COMMENT_CHARS - 1]
    resp = c.http.post(f"/item/{second.position}", data=rating_form(c.csrf, comment=short))
    assert resp.status_code == 303
    store = Store(server.db)
    assert store.note("ann_a", second.item_id)["comment"] == short
    assert store.draft("ann_a", second.item_id) == {}


def test_an_adjudication_note_has_the_comment_limit_counter_and_message_and_is_never_cut(server):
    boss = signed_in(server, "boss")
    page = boss.http.get("/adjudicate/n03")
    boss._remember_csrf(page.text)
    textarea = re.search(r"<textarea[^>]*id=\"note\"[^>]*>", page.text).group(0)
    assert "maxlength" not in textarea and f'data-max="{MAX_COMMENT_CHARS}"' in textarea
    assert f'id="note-count" aria-live="polite">0 / {MAX_COMMENT_CHARS:,}<' in page.text
    note = "理由" * 2250  # 4,500 characters: main cut this to 4,000 without a word
    data = rating_form(boss.csrf) | {"note": note}
    resp = boss.http.post("/adjudicate/n03", data=data)
    assert resp.status_code == 400
    assert (
        f"Note not saved: it has 4,500 characters and the limit is {MAX_COMMENT_CHARS:,}. "
        "Shorten it and save again." in html.unescape(resp.text)
    )
    assert note in resp.text  # kept whole in the form
    assert Store(server.db).adjudication("n03") is None
    ok = boss.http.post("/adjudicate/n03", data=data | {"note": note[:MAX_COMMENT_CHARS]})
    assert ok.status_code == 303
    assert Store(server.db).adjudication("n03").note == note[:MAX_COMMENT_CHARS]


# -- activity and released annotators -----------------------------------------------------------


def test_items_a_joiner_just_received_are_not_idle_items_for_the_next_joiner(tmp_path):
    store = Store(tmp_path / "ann.sqlite")
    store.load_tasks([DialoguePair(id=f"i{i}", user="u", response="r", context=[]) for i in (1, 2)])
    store.add_annotator("old")
    store.rebalance(overlap=1)  # "old" holds both items, then goes quiet
    store.add_annotator("j1")
    store.add_annotator("j2")
    later = datetime.now(UTC) + timedelta(hours=2)
    options = {"batch": 2, "idle_after_s": 3600.0, "raise_coverage": False, "now": later}
    first = store.assign_more("j1", **options)
    assert sorted(first.items) == ["i1", "i2"]  # taken over from the idle "old"
    second = store.assign_more("j2", **options)
    assert second.items == []  # j1 just received them: not idle
    assert sorted(s.item_id for s in store.queue("j1")) == ["i1", "i2"]


def test_a_released_annotators_open_page_still_saves_its_rating(server):
    c = signed_in(server, "ann_r")
    queue = Store(server.db).queue("ann_r")
    open_slot, other = queue[0], queue[1]
    c.page(open_slot.position)  # the page stays open while the lead releases ann_r
    proc = annotate_cli("release", "ann_r", "--db", str(server.db), "--overlap", "3")
    assert proc.returncode == 0, proc.stderr
    assert Store(server.db).slot("ann_r", open_slot.position) is None
    resp = c.http.post(f"/item/{open_slot.position}", data=rating_form(c.csrf))
    assert resp.status_code == 303, resp.text
    store = Store(server.db)
    assert store.rating("ann_r", open_slot.item_id).scores == SCORES
    assert "ann_r" not in store.released()  # rating again brings them back
    # Another item that went away answers with a page that says so, not a bare 404.
    gone = c.http.get(f"/item/{other.position}")
    assert gone.status_code == 410 and "handed to a colleague" in gone.text


# -- sign-in ------------------------------------------------------------------------------------


def attempt(http: httpx.Client, who: str, token: str) -> httpx.Response:
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', http.get("/login").text).group(1)
    return http.post("/login", data={"csrf_token": csrf, "annotator_id": who, "token": token})


def test_guesses_at_an_id_from_a_shared_address_slow_down_but_never_lock_the_owner_out(
    tmp_path,
):
    with campaign_server(
        tmp_path,
        tasks=TASKS,
        accounts={"ann_a": "annotator"},
        secret=SECRET,
        extra_args=["--login-limit", "2", "50", "100", "300", "--login-delay", "3", "60"],
    ) as srv:
        shared = httpx.Client(base_url=srv.base_url, timeout=30)  # e.g. everyone's SSH tunnel
        assert [attempt(shared, "ann_a", "guess").status_code for _ in range(2)] == [401, 401]
        held = attempt(shared, "ann_a", "guess")
        assert held.status_code == 429 and held.headers["Retry-After"] == "3"
        assert "the wait doubles" in held.text
        time.sleep(3.2)
        assert attempt(shared, "ann_a", "guess").status_code == 401
        longer = attempt(shared, "ann_a", "guess")
        assert longer.status_code == 429 and 3 < int(longer.headers["Retry-After"]) <= 6
        # The owner, behind the same address, gets in once the (short) wait is over.
        time.sleep(int(longer.headers["Retry-After"]) + 0.2)
        assert attempt(shared, "ann_a", srv.tokens["ann_a"]).status_code == 303


# -- 413 ----------------------------------------------------------------------------------------


def test_the_too_large_page_speaks_of_the_form_it_came_from(server):
    http = httpx.Client(base_url=server.base_url, timeout=60)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', http.get("/login").text).group(1)
    login = http.post(
        "/login", data={"csrf_token": csrf, "annotator_id": "ann_a", "token": "x" * 70_000}
    )
    assert login.status_code == 413
    assert "sign-in form" in login.text and "comment" not in login.text
    boss = signed_in(server, "boss")
    boss._remember_csrf(boss.http.get("/adjudicate/n04").text)
    big = boss.http.post(
        "/adjudicate/n04", data=rating_form(boss.csrf) | {"note": "x" * (4 * 1024 * 1024 + 10)}
    )
    assert big.status_code == 413
    assert "note" in big.text and "comment" not in big.text
    assert "sign-in" not in big.text
