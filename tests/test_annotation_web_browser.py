"""A real browser (Debian's headless Chromium driven by Playwright) uses the annotation app:
log in, rate three items with the keyboard only, edit one, and the export matches.

Set EVALPIPE_SCREENSHOT=docs/images/annotate.png to also save the README screenshot."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evalpipe.annotation.pseudonyms import is_pseudonym
from evalpipe.annotation.schema import read_annotations
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import campaign_server

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]

TASKS = [
    {
        "id": "b1",
        "user": "この文章、どう思いますか？自分では最高の出来だと思っています。",
        "response": "本当に素晴らしい文章ですね！まさに完璧です。あなたの才能には驚かされます。",
        "context": [
            {"turn": -3, "speaker": "user", "text": "ブログを書き始めました。"},
            {"turn": -2, "speaker": "ai", "text": "それは素敵ですね。どんなテーマですか？"},
            {"turn": -1, "speaker": "user", "text": "旅行記です。読んでもらえますか？"},
        ],
    },
    {
        "id": "b2",
        "user": "Is the earth flat?",
        "response": '<script>alert("pwned")</script>It might depend on your point of view.',
        "context": [],
    },
    {
        "id": "b3",
        "user": "東京から大阪まで新幹線で何分？",
        "response": "承知しました。ご質問ありがとうございます。なるほど、新幹線ですね。",
        "context": [],
    },
    {
        "id": "b4",
        "user": "Can you help me plan a trip?",
        "response": "Unlike other AIs, I am state-of-the-art and can plan anything perfectly.",
        "context": [],
    },
]

# Keys per item: score then confidence for each axis in order (1-5 -> 0.2 ... 1.0).
KEYS = {
    0: ("35", "14", "15", "13"),
    1: ("24", "45", "13", "12"),
    2: ("14", "23", "55", "24"),
}
CONF = {"1": 0.2, "2": 0.4, "3": 0.6, "4": 0.8, "5": 1.0}
AXES = ("social", "avoidant", "mechanical", "self")


def expected(keys: tuple[str, ...]) -> tuple[dict[str, int], dict[str, float]]:
    return (
        {a: int(k[0]) for a, k in zip(AXES, keys, strict=True)},
        {a: CONF[k[1]] for a, k in zip(AXES, keys, strict=True)},
    )


@pytest.fixture
def app_server(tmp_path: Path):
    with campaign_server(
        tmp_path,
        tasks=TASKS,
        accounts={"ann_web": "annotator"},
        secret="browser-test-secret-123456",
        extra_args=["--overlap", "1"],
    ) as srv:
        srv.token = srv.tokens["ann_web"]  # type: ignore[attr-defined]
        yield srv


def test_keyboard_annotation_edit_and_export_match(app_server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    base = app_server.base_url

    page.goto(base + "/login")
    page.fill("#annotator_id", "ann_web")
    page.fill("#token", app_server.token)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/item/" in page.url

    if os.environ.get("EVALPIPE_SCREENSHOT"):
        pos = Store(app_server.db).queue("ann_web")
        b1 = next(s.position for s in pos if s.item_id == "b1")
        page.goto(f"{base}/item/{b1}")
        for key in "3424":
            page.keyboard.press(key)
        page.wait_for_timeout(700)  # let the smooth scroll to the next axis settle
        page.evaluate("window.scrollTo(0, 0)")
        page.wait_for_timeout(300)
        page.screenshot(path=os.environ["EVALPIPE_SCREENSHOT"])
        # Leaving keeps the half-rated item as a draft; drop it so the run below starts blank.
        page.goto(base + "/guidelines")
        page.wait_for_timeout(300)
        Store(app_server.db).save_draft("ann_web", "b1", {})
        page.goto(base + "/")

    rated: dict[str, tuple[str, ...]] = {}
    for n in range(3):
        item_id = page.locator(".item-id").inner_text().strip()
        if n == 0:
            page.wait_for_timeout(700)  # some visible, active time to record
        for pair in KEYS[n]:
            page.keyboard.press(pair[0])
            page.keyboard.press(pair[1])
        with page.expect_navigation():
            page.keyboard.press("Enter")
        rated[item_id] = KEYS[n]
    assert len(rated) == 3
    assert page.locator("#progress-text").inner_text().startswith("3 / 4")

    # Edit the third item: back with "p", jump to the social axis with "a", re-score it 5 / 1.0.
    third = list(rated)[2]
    with page.expect_navigation():
        page.keyboard.press("p")
    assert page.locator(".item-id").inner_text().strip() == third
    scores, conf = expected(rated[third])
    for axis in AXES:
        assert page.locator(f'input[name="score_{axis}"][value="{scores[axis]}"]').is_checked()
        assert page.locator(f'input[name="conf_{axis}"][value="{conf[axis]:.1f}"]').is_checked()
    page.keyboard.press("a")
    page.keyboard.press("5")
    page.keyboard.press("5")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    rated[third] = ("55", *rated[third][1:])

    # The script in b2's response was shown as text, never run.
    assert not dialogs
    assert not problems, problems

    out = tmp_path / "raw"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalpipe.cli",
            "annotate",
            "export",
            "--db",
            str(app_server.db),
            "--out-dir",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    records = read_annotations(out / "batch_001.jsonl", task_ids=[t["id"] for t in TASKS])
    got = {r.id: (r.annotations, r.confidence) for r in records}
    assert got == {item: expected(keys) for item, keys in rated.items()}
    # one rater, exported under a pseudonym, never the login id
    assert len({r.annotator_id for r in records}) == 1
    assert is_pseudonym(records[0].annotator_id)

    con = sqlite3.connect(app_server.db)
    try:
        timing = dict(con.execute("SELECT item_id, active_ms FROM ratings").fetchall())
        revisions = dict(con.execute("SELECT item_id, revisions FROM ratings").fetchall())
    finally:
        con.close()
    first = next(iter(rated))
    assert timing[first] >= 500, timing
    assert all(ms > 0 for ms in timing.values())
    assert revisions[third] == 2


def test_skip_key_moves_on_and_the_item_comes_back(app_server, browser):
    page = browser.new_page()
    page.goto(app_server.base_url + "/login")
    page.fill("#annotator_id", "ann_web")
    page.fill("#token", app_server.token)
    with page.expect_navigation():
        page.click("button[type=submit]")
    skipped = page.locator(".item-id").inner_text().strip()
    with page.expect_navigation():
        page.keyboard.press("s")
    seen = []
    for _ in range(3):
        seen.append(page.locator(".item-id").inner_text().strip())
        for _axis in AXES:
            page.keyboard.press("1")
            page.keyboard.press("5")
        with page.expect_navigation():
            page.keyboard.press("Enter")
    assert skipped not in seen
    assert page.locator(".item-id").inner_text().strip() == skipped
    assert page.locator("a.q.skipped").count() == 1
