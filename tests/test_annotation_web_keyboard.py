"""Keyboard-only annotators in a real browser (headless Chromium via Playwright) against the real
server: Enter in the comment box saves (never skips), ``c`` reaches the comment box, an over-long
comment is stopped in the page with the ratings kept; on a long item PageDown / Space / End scroll
the dialogue column, and a response that was never in view is marked and brought into view before
the first save."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.store import MAX_COMMENT_CHARS, Store
from tests.annotation_harness import campaign_server

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]
VIEWPORT = {"width": 1400, "height": 950}

SHORT = [
    {"id": f"s{i}", "user": f"Question {i}?", "response": f"Great question {i}!", "context": []}
    for i in range(1, 4)
]
# The response starts far below a 950 px window: long context and a long user turn.
LONG = {
    "id": "long",
    "user": "\n".join(f"段落 {k}: 長い質問の本文です。" * 3 for k in range(40)),
    "response": "RESPONSE-START とても長い応答です。" * 30,
    "context": [
        {"turn": -k, "speaker": "user" if k % 2 else "ai", "text": "前の発話。" * 40}
        for k in range(7, 0, -1)
    ],
}


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory):
    # Overlap 3: every annotator has every item, so each test uses its own account.
    with campaign_server(
        tmp_path_factory.mktemp("keyboard"),
        tasks=[*SHORT, LONG],
        accounts=dict.fromkeys(("ann_k1", "ann_k2", "ann_k3"), "annotator"),
        secret="keyboard-secret-0123456789",
        extra_args=["--overlap", "3"],
    ) as srv:
        yield srv


def open_item(browser, srv, who: str, item_id: str):
    page = browser.new_context(viewport=VIEWPORT).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(srv.base_url + "/login")
    page.fill("#annotator_id", who)
    page.fill("#token", srv.tokens[who])
    with page.expect_navigation():
        page.click("button[type=submit]")
    pos = next(s.position for s in Store(srv.db).queue(who) if s.item_id == item_id)
    page.goto(f"{srv.base_url}/item/{pos}")
    page.errors = errors  # type: ignore[attr-defined]
    return page


def rate_by_keys(page) -> None:
    for _ in AXES:
        page.keyboard.press("3")
        page.keyboard.press("4")


def test_enter_in_the_comment_box_saves_and_never_skips(browser, app_server):
    page = open_item(browser, app_server, "ann_k1", "s1")
    rate_by_keys(page)
    page.keyboard.press("c")  # a key reaches the comment box, and is not typed into it
    assert page.evaluate("document.activeElement.id") == "comment"
    page.keyboard.type("cut off mid-sentence")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    store = Store(app_server.db)
    rating = store.rating("ann_k1", "s1")
    assert rating is not None and rating.scores == dict.fromkeys(AXES, 3)
    assert store.note("ann_k1", "s1")["comment"] == "cut off mid-sentence"
    assert not any(s.skipped for s in store.queue("ann_k1"))
    assert not page.errors  # type: ignore[attr-defined]


def test_escape_leaves_the_comment_box_and_an_incomplete_rating_is_not_sent(browser, app_server):
    page = open_item(browser, app_server, "ann_k1", "s2")
    page.keyboard.press("c")
    page.keyboard.type("first thoughts")
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") != "comment"
    page.keyboard.press("c")
    page.keyboard.press("Enter")  # nothing rated yet: the first axis is highlighted instead
    page.wait_for_timeout(300)
    assert "/item/" in page.url and Store(app_server.db).rating("ann_k1", "s2") is None
    assert "active" in page.locator("#axis-social").get_attribute("class")


def test_an_over_long_comment_is_stopped_in_the_page_with_the_ratings_kept(browser, app_server):
    page = open_item(browser, app_server, "ann_k2", "s1")
    rate_by_keys(page)
    page.fill("#comment", "x" * (MAX_COMMENT_CHARS + 500))
    # Nothing cut: the whole text stays in the box, the counter says it is over.
    assert len(page.input_value("#comment")) == MAX_COMMENT_CHARS + 500
    assert "over" in page.locator("#comment-count").get_attribute("class")
    url = page.url
    page.locator("#comment").press("Enter")
    page.wait_for_timeout(300)
    assert page.url == url
    message = page.locator("#comment-error")
    assert message.is_visible() and f"limit is {MAX_COMMENT_CHARS:,}" in message.inner_text()
    assert all(page.locator(f'input[name="score_{a}"][value="3"]').is_checked() for a in AXES)
    page.fill("#comment", "short now")
    with page.expect_navigation():
        page.click("#save-button")
    assert Store(app_server.db).note("ann_k2", "s1")["comment"] == "short now"


def test_page_keys_scroll_the_dialogue_of_a_long_item(browser, app_server):
    page = open_item(browser, app_server, "ann_k3", "long")
    top = "document.getElementById('dialogue').scrollTop"
    assert page.evaluate(top) == 0
    response_y = page.locator("#response-block").bounding_box()["y"]
    assert response_y > VIEWPORT["height"]  # below the window: the case in question
    assert page.locator("#response-unseen").is_visible()
    page.keyboard.press("PageDown")
    first = page.evaluate(top)
    assert first > 300
    page.keyboard.press(" ")
    assert page.evaluate(top) > first
    page.keyboard.press("Shift+ ")
    assert page.evaluate(top) == pytest.approx(first, abs=2)
    page.keyboard.press("End")
    box = page.locator("#response-block").bounding_box()
    assert box["y"] < VIEWPORT["height"]
    assert not page.locator("#response-unseen").is_visible()
    page.keyboard.press("Home")
    assert page.evaluate(top) == 0
    assert not page.errors  # type: ignore[attr-defined]


def test_rating_without_seeing_the_response_brings_it_into_view_before_saving(browser, app_server):
    page = open_item(browser, app_server, "ann_k1", "long")
    assert page.locator("#response-unseen").is_visible()
    rate_by_keys(page)
    url = page.url
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    # Not saved: the response is scrolled into view and the page says why.
    assert page.url == url and Store(app_server.db).rating("ann_k1", "long") is None
    assert page.locator("#unseen-warning").is_visible()
    box = page.locator("#response-block").bounding_box()
    assert 0 <= box["y"] < VIEWPORT["height"] - 100
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert Store(app_server.db).rating("ann_k1", "long") is not None


def test_a_mouse_click_on_save_is_held_back_the_same_way(browser, app_server):
    page = open_item(browser, app_server, "ann_k2", "long")
    for axis in AXES:
        page.locator(f"#axis-{axis} label.opt").nth(1).click()
        page.locator(f"#axis-{axis} label.copt").nth(4).click()
    page.click("#save-button")
    page.wait_for_timeout(300)
    assert Store(app_server.db).rating("ann_k2", "long") is None
    assert page.locator("#unseen-warning").is_visible()
    with page.expect_navigation():
        page.click("#save-button")
    assert Store(app_server.db).rating("ann_k2", "long").scores == dict.fromkeys(AXES, 2)
