"""Usability of the annotation page in a real browser (headless Chromium via Playwright): the
compact layout fits a 1400x950 window, the phone layout does not overflow, drafts survive moving
away, Enter on a focused link follows it, the done page only when done, confidence names agree
with min_confidence, and comments and flags reach the admin's drill-down."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import campaign_server
from tests.test_annotation_web_browser import TASKS

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]

LONG_CONTEXT = {
    "id": "b5",
    "user": "長い質問です。" * 40,
    "response": "とても長い応答です。" * 60,
    "context": [
        {"turn": -k, "speaker": "user" if k % 2 else "ai", "text": "前の発話。" * 20}
        for k in range(7, 0, -1)
    ],
}


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory):
    with campaign_server(
        tmp_path_factory.mktemp("usability"),
        tasks=[*TASKS, LONG_CONTEXT],
        accounts={"ann_u": "annotator", "boss": "admin"},
        secret="usability-secret-0123456789",
        extra_args=["--overlap", "1"],
    ) as srv:
        yield srv


def signed_in(browser, srv, who: str = "ann_u", **context):
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.goto(srv.base_url + "/login")
    page.fill("#annotator_id", who)
    page.fill("#token", srv.tokens[who])
    with page.expect_navigation():
        page.click("button[type=submit]")
    return page


def position_of(srv, item_id: str) -> int:
    return next(s.position for s in Store(srv.db).queue("ann_u") if s.item_id == item_id)


def test_all_four_axes_and_save_fit_a_1400x950_window_even_with_long_text(browser, app_server):
    page = signed_in(browser, app_server, viewport={"width": 1400, "height": 950})
    page.goto(f"{app_server.base_url}/item/{position_of(app_server, 'b5')}")
    assert page.evaluate("window.scrollY") == 0
    for sel in [*(f"#axis-{a}" for a in AXES), "#save-button", "#comment", "#flag"]:
        box = page.locator(sel).bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 950, (sel, box)
    # Anchors: on hover for one level, for all levels with the toggle ("h").
    anchor = page.locator("#axis-social label.opt").nth(2).locator(".anchor")
    assert not anchor.is_visible()
    page.locator("#axis-social label.opt").nth(2).hover()
    assert anchor.is_visible()
    page.mouse.move(5, 5)
    page.keyboard.press("h")
    assert page.locator("#axis-self label.opt .anchor").nth(4).is_visible()


def test_the_phone_layout_does_not_overflow_and_keeps_touch_targets(browser, app_server):
    page = signed_in(
        browser,
        app_server,
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=2,
    )
    assert "/item/" in page.url
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    for a in AXES:
        box = page.locator(f"#axis-{a} label.opt").first.bounding_box()
        assert box["height"] >= 36 and box["width"] >= 50, box
    page.locator("#save-button").scroll_into_view_if_needed()
    assert page.locator("#save-button").is_visible()


def test_half_entered_ratings_are_kept_as_a_draft_when_moving_away(browser, app_server):
    page = signed_in(browser, app_server)
    first = page.locator(".item-id").inner_text().strip()
    page.keyboard.press("3")
    page.keyboard.press("4")
    page.keyboard.press("2")
    with page.expect_navigation():
        page.keyboard.press("n")
    assert page.locator(".item-id").inner_text().strip() != first
    with page.expect_navigation():
        page.keyboard.press("p")
    assert page.locator(".item-id").inner_text().strip() == first
    assert page.locator("#draft-badge").is_visible()
    assert page.locator('input[name="score_social"][value="3"]').is_checked()
    assert page.locator('input[name="conf_social"][value="0.8"]').is_checked()
    assert page.locator('input[name="score_avoidant"][value="2"]').is_checked()
    # A draft is not a rating.
    assert Store(app_server.db).rating("ann_u", first) is None


def test_enter_on_a_focused_link_follows_the_link_instead_of_saving(browser, app_server):
    page = signed_in(browser, app_server)
    first = page.locator(".item-id").inner_text().strip()
    for _ in AXES:
        page.keyboard.press("1")
        page.keyboard.press("5")
    page.focus("#next-link")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator(".item-id").inner_text().strip() != first
    assert Store(app_server.db).rating("ann_u", first) is None


def test_done_page_only_when_every_item_is_rated(browser, app_server):
    page = signed_in(browser, app_server)
    page.goto(app_server.base_url + "/done")
    assert "/item/" in page.url and "All done" not in page.content()


def test_confidence_names_agree_with_min_confidence(browser, app_server):
    page = signed_in(browser, app_server)
    names = page.locator("#axis-social label.copt").all_inner_texts()
    low = page.locator("#axis-social label.copt.low").all_inner_texts()
    # params annotation.min_confidence = 0.7: 0.2-0.6 are below it, 0.8 and 1.0 at or above.
    assert [n.split()[0] for n in low] == ["0.2", "0.4", "0.6"]
    assert all("sure" not in n or "unsure" in n for n in low)
    assert [n for n in names if n not in low] == ["0.8 sure", "1.0 certain"]


def test_comment_and_flag_reach_the_admin_drill_down(browser, app_server):
    page = signed_in(browser, app_server)
    item_id = page.locator(".item-id").inner_text().strip()
    for _ in AXES:
        page.keyboard.press("2")
        page.keyboard.press("4")
    page.fill("#comment", "Response cut off mid-sentence")
    page.check("#flag")
    with page.expect_navigation():
        page.click("#save-button")
    admin = signed_in(browser, app_server, who="boss")
    # One annotator: agreement is undefined, and the admin page says why instead of a blank.
    assert "n/a (" in admin.locator("#agreement-table").inner_text()
    assert "1" in admin.locator("#progress-table tr", has_text="ann_u").inner_text()
    with admin.expect_navigation():
        admin.click("#progress-table a:text('ann_u')")
    notes = admin.content()
    assert "Response cut off mid-sentence" in notes and "flagged" in notes and item_id in notes
    with admin.expect_navigation():
        admin.locator("#annotator-ratings a", has_text=item_id).click()
    assert (
        "Read-only" in admin.content() and "ann_u" in admin.locator("#ratings-table").inner_text()
    )
