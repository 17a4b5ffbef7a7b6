"""Keyboard shortcuts on the training, qualification and adjudication forms, in a real browser
(headless Chromium via Playwright) against the real server with qualification required."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.annotation import guidelines as gl
from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import campaign_server
from tests.test_annotation_web_browser import TASKS

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory):
    def trained(store) -> None:
        # The candidate has finished training: their next step is the qualification test.
        for example in gl.examples():
            store.save_training("candidate", 1, example["id"], dict.fromkeys(AXES, 1))

    with campaign_server(
        tmp_path_factory.mktemp("formkeys"),
        tasks=TASKS,
        accounts={"trainee": "annotator", "candidate": "annotator", "senior": "adjudicator"},
        secret="formkeys-secret-0123456789",
        extra_args=["--overlap", "2"],
        require_qualification=True,
        prepare=trained,
    ) as srv:
        yield srv


def signed_in(browser, srv, who: str):
    page = browser.new_context(viewport={"width": 1400, "height": 950}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(srv.base_url + "/login")
    page.fill("#annotator_id", who)
    page.fill("#token", srv.tokens[who])
    with page.expect_navigation():
        page.click("button[type=submit]")
    page.errors = errors  # type: ignore[attr-defined]
    return page


def test_training_by_keyboard_digits_enter_and_enter_again(browser, app_server):
    page = signed_in(browser, app_server, "trainee")
    assert "/training" in page.url
    first = page.locator(".item-id").inner_text().strip()
    for digit in "2345":  # training asks for scores only
        page.keyboard.press(digit)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator("#feedback").is_visible()
    store = Store(app_server.db)
    assert store.training("trainee", 1)[first] == dict(zip(AXES, (2, 3, 4, 5), strict=True))
    with page.expect_navigation():
        page.keyboard.press("Enter")  # on to the next example
    assert "/training" in page.url and page.locator(".item-id").inner_text().strip() != first
    assert not page.errors  # type: ignore[attr-defined]


def test_qualification_by_keyboard(browser, app_server):
    page = signed_in(browser, app_server, "candidate")
    assert "/qualify" in page.url
    item = page.locator(".item-id").inner_text().strip()
    page.keyboard.press("Enter")  # incomplete: highlighted, not sent
    page.wait_for_timeout(200)
    assert Store(app_server.db).qual_answers("candidate", 1) == {}
    for _ in AXES:
        page.keyboard.press("4")
        page.keyboard.press("5")
    page.keyboard.press("m")  # jump to mechanical and change it
    page.keyboard.press("1")
    page.keyboard.press("5")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    answers = Store(app_server.db).qual_answers("candidate", 1)
    assert answers[item] == {"social": 4, "avoidant": 4, "mechanical": 1, "self": 4}
    assert page.locator(".item-id").inner_text().strip() != item
    assert not page.errors  # type: ignore[attr-defined]


def test_adjudication_by_keyboard_with_a_multi_line_note(browser, app_server):
    store = Store(app_server.db)
    # Two more annotators, on every item (overlap 4), disagree on b1.
    for who in ("ann_x", "ann_y"):
        store.add_annotator(who)
    store.rebalance(overlap=4)
    for who, score in (("ann_x", 1), ("ann_y", 5)):
        store.save_rating(who, "b1", dict.fromkeys(AXES, score), dict.fromkeys(AXES, 1.0))
    page = signed_in(browser, app_server, "senior")
    page.goto(app_server.base_url + "/adjudicate/b1")
    for _ in AXES:
        page.keyboard.press("3")
        page.keyboard.press("4")
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.id") == "note"
    page.keyboard.type("both defensible;")
    page.keyboard.press("Enter")  # a new line in the note, not a submit
    page.keyboard.type("anchor 3 fits best")
    assert store.adjudication("b1") is None
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    final = Store(app_server.db).adjudication("b1")
    assert final is not None and final.scores == dict.fromkeys(AXES, 3)
    # (a form sends a new line in a textarea as CR LF)
    assert final.note.splitlines() == ["both defensible;", "anchor 3 fits best"]
    assert not page.errors  # type: ignore[attr-defined]
