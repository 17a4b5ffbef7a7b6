"""The comment and adjudication-note counters in a real browser (Debian's chromium): they count
characters as the server does (code points; an emoji is one), so the page never refuses a comment
the server would take, nor the reverse."""

from __future__ import annotations

import pytest

from evalpipe.annotation.web.store import MAX_COMMENT_CHARS, Store
from tests.annotation_harness import campaign_server

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

TASKS = [
    {"id": f"c{i}", "user": f"質問 {i}", "response": f"素晴らしい質問ですね {i}", "context": []}
    for i in range(1, 4)
]


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory):
    with campaign_server(
        tmp_path_factory.mktemp("counters"),
        tasks=TASKS,
        accounts={"ann_e": "annotator", "boss": "admin"},
        secret="counters-secret-0123456789",
        extra_args=["--overlap", "1"],
    ) as srv:
        yield srv


def signed_in(browser, srv, who: str):
    page = browser.new_context(viewport={"width": 1400, "height": 950}).new_page()
    page.goto(srv.base_url + "/login")
    page.fill("#annotator_id", who)
    page.fill("#token", srv.tokens[who])
    with page.expect_navigation():
        page.click("button[type=submit]")
    return page


def test_the_comment_counter_counts_an_emoji_once_as_the_server_does(app_server, browser):
    page = signed_in(browser, app_server, "ann_e")
    first = Store(app_server.db).queue("ann_e")[0]
    page.goto(f"{app_server.base_url}/item/{first.position}")
    page.fill("#comment", "👍👍👍 ok")
    assert page.text_content("#comment-count") == f"6 / {MAX_COMMENT_CHARS:,}"
    # Exactly at the limit in code points (twice the limit in UTF-16 units): not over.
    page.fill("#comment", "😀" * MAX_COMMENT_CHARS)
    count = page.locator("#comment-count")
    assert count.text_content() == f"{MAX_COMMENT_CHARS:,} / {MAX_COMMENT_CHARS:,}"
    assert "over" not in (count.get_attribute("class") or "")
    page.fill("#comment", "😀" * (MAX_COMMENT_CHARS + 1))
    assert "over" in (count.get_attribute("class") or "")


def test_the_adjudication_note_has_the_comments_counter_and_refuses_before_sending(
    app_server, browser
):
    page = signed_in(browser, app_server, "boss")
    page.goto(f"{app_server.base_url}/adjudicate/c1")
    assert page.text_content("#note-count") == f"0 / {MAX_COMMENT_CHARS:,}"
    page.fill("#note", "🎌 ok")
    assert page.text_content("#note-count") == f"4 / {MAX_COMMENT_CHARS:,}"
    for axis in ("social", "avoidant", "mechanical", "self"):
        page.check(f"input[name=score_{axis}][value='3']", force=True)
        page.check(f"input[name=conf_{axis}][value='0.8']", force=True)
    page.fill("#note", "x" * (MAX_COMMENT_CHARS + 1))
    page.click("#adjudicate-save")
    error = page.locator("#note-error")
    assert error.is_visible()
    assert f"{MAX_COMMENT_CHARS + 1:,} characters" in error.text_content()
    assert page.url.endswith("/adjudicate/c1")  # nothing was sent
    assert Store(app_server.db).adjudication("c1") is None
