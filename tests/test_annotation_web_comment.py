"""The comment box against the real server: Save is the form's default button (Enter in a field,
or implicit submission without JavaScript, saves and never skips), the length limit is shown in
the form, and an over-long comment is refused with a styled message while the rating sent with
it is saved: no bare 413, no silent truncation."""

from __future__ import annotations

import html
import re

import pytest

from evalpipe.annotation.web.store import MAX_COMMENT_CHARS, Store
from tests.test_annotation_web_hardening import login, start
from tests.test_annotation_web_http import CONF, SCORES


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with start(tmp_path_factory.mktemp("comment"), annotators=("ann_a", "ann_b", "ann_c")) as srv:
        yield srv


def rating_form(data_comment: str, *, csrf: str, action: str = "save") -> dict[str, str]:
    data = {"csrf_token": csrf, "action": action, "active_ms": "0", "comment": data_comment}
    for axis, score in SCORES.items():
        data[f"score_{axis}"] = str(score)
        data[f"conf_{axis}"] = str(CONF[axis])
    return data


def slot(server, who: str, n: int):
    return Store(server.db).queue(who)[n]


def test_save_is_the_default_button_and_the_limit_is_shown(server):
    c = login(server, "ann_a")
    page = c.page(slot(server, "ann_a", 0).position).text
    form = page[page.index('id="rating-form"') :]
    buttons = re.findall(r'<button type="submit" name="action" value="(\w+)"', form)
    # The first submit button is what Enter in a field (implicit submission) presses.
    assert buttons[0] == "save" and "skip" in buttons
    assert f"up to {MAX_COMMENT_CHARS:,} characters" in page
    # No maxlength: a browser would cut a pasted comment silently.
    assert "maxlength" not in re.search(r'<input[^>]*id="comment"[^>]*>', page).group(0)


def test_a_comment_at_the_limit_is_kept_whole(server):
    c = login(server, "ann_a")
    s = slot(server, "ann_a", 0)
    c.page(s.position)
    text = "あ" * (MAX_COMMENT_CHARS - 1) + "!"
    assert (
        c.http.post(f"/item/{s.position}", data=rating_form(text, csrf=c.csrf)).status_code == 303
    )
    assert Store(server.db).note("ann_a", s.item_id)["comment"] == text


@pytest.mark.parametrize("size", [MAX_COMMENT_CHARS + 1, 60_000, 1_000_000])
def test_an_over_long_comment_is_refused_with_a_message_and_the_rating_is_saved(server, size):
    who = {MAX_COMMENT_CHARS + 1: "ann_a", 60_000: "ann_b", 1_000_000: "ann_c"}[size]
    c = login(server, who)
    s = slot(server, who, 1)
    c.page(s.position)
    text = "x" * size
    resp = c.http.post(f"/item/{s.position}", data=rating_form(text, csrf=c.csrf))
    assert resp.status_code == 400
    assert "app.css" in resp.text  # the styled page, not a bare error
    message = re.search(r'id="comment-error">([^<]*)<', resp.text).group(1)
    assert f"{size:,} characters" in message and f"limit is {MAX_COMMENT_CHARS:,}" in message
    assert 'id="rating-saved"' in resp.text
    store = Store(server.db)
    rating = store.rating(who, s.item_id)
    assert rating is not None and rating.scores == SCORES
    assert store.note(who, s.item_id) is None  # not cut to the limit and stored
    # The whole comment comes back in the form to be shortened.
    value = re.search(r'<input[^>]*id="comment"[^>]*value="([^"]*)"', resp.text).group(1)
    assert html.unescape(value) == text


def test_skip_with_an_over_long_comment_does_not_skip_and_says_why(server):
    c = login(server, "ann_b")
    s = slot(server, "ann_b", 0)
    c.page(s.position)
    resp = c.http.post(
        f"/item/{s.position}", data=rating_form("y" * 5000, csrf=c.csrf, action="skip")
    )
    assert resp.status_code == 400 and "not skipped" in resp.text
    assert not Store(server.db).queue("ann_b")[0].skipped


def test_a_request_beyond_the_form_limit_gets_a_styled_page(server):
    c = login(server, "ann_c")
    s = slot(server, "ann_c", 0)
    c.page(s.position)
    resp = c.http.post(f"/item/{s.position}", data=rating_form("z" * 5_000_000, csrf=c.csrf))
    assert resp.status_code == 413
    assert "Too much text" in resp.text and "app.css" in resp.text
    assert f"{MAX_COMMENT_CHARS:,} characters" in resp.text
