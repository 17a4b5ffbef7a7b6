"""A campaign in a real browser (headless Chromium via Playwright) against the real server:
training with worked examples, the qualification test (fail, retrain, pass, queue opens),
adjudication of disputed items, and the exports of both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.annotation import guidelines as gl
from evalpipe.annotation.pseudonyms import pseudonym, pseudonymise_id, rater_salt
from evalpipe.annotation.qualification import qualification_items, qualification_reference
from evalpipe.annotation.schema import AXES, read_annotations
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import ServerProcess, annotate_cli
from tests.test_annotation_web_browser import TASKS

SALT = rater_salt(Path(__file__).resolve().parents[1])

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]
SECRET = "campaign-secret-0123456789abcdef"


def write_tasks(path: Path) -> None:
    path.write_text(
        "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in TASKS), encoding="utf-8"
    )


def sign_in(page, base: str, who: str, token: str) -> None:
    page.goto(base + "/login")
    page.fill("#annotator_id", who)
    page.fill("#token", token)
    with page.expect_navigation():
        page.click("button[type=submit]")


def choose(page, scores: dict[str, int], confidence_index: int | None = 4) -> None:
    """Click the level labels (the radios themselves are visually hidden)."""
    for axis in AXES:
        page.locator(f"#axis-{axis} label.opt").nth(scores[axis] - 1).click()
        if confidence_index is not None:
            page.locator(f"#axis-{axis} label.copt").nth(confidence_index).click()


def test_training_then_qualification_fail_retrain_pass_opens_the_queue(browser, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks)
    db = tmp_path / "ann.sqlite"
    store = Store(db)
    token = store.add_annotator("ann_new")
    boss = store.add_annotator("boss", admin=True)
    examples = gl.examples()
    reference = qualification_reference()
    order = [i["id"] for i in qualification_items()]
    with ServerProcess(
        db=db,
        tasks=tasks,
        cwd=REPO,
        secret=SECRET,
        extra_args=["--overlap", "1"],
        require_qualification=True,
    ) as srv:
        page = browser.new_page(viewport={"width": 1400, "height": 950})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        sign_in(page, srv.base_url, "ann_new", token)
        assert page.url.endswith("/training")
        # The real queue is closed until the test is passed.
        page.goto(srv.base_url + "/item/1")
        assert page.url.endswith("/training")

        # Training: rate the first worked example, then see the reference and the explanation.
        assert "example 1 / 20" in page.locator(".item-head").inner_text()
        first_id = page.locator(".item-id").inner_text().strip()
        first = next(e for e in examples if e["id"] == first_id)
        mine = dict(first["gold"], social=5 if first["gold"]["social"] != 5 else 1)
        choose(page, mine, confidence_index=None)
        with page.expect_navigation():
            page.click("#training-submit")
        table = page.locator("#feedback-table").inner_text()
        assert "reference" in table
        assert first["rationale"]["ja"] in page.locator("#explanation").inner_text()
        assert page.locator("#feedback-table td.off, #feedback-table td.near").count() >= 1
        # The rest of round 1 straight into the database, as the same form would store it.
        for e in examples[1:]:
            store.save_training("ann_new", 1, e["id"], e["gold"])
        page.reload()
        assert "0 examples left" in page.locator("#feedback").inner_text()
        with page.expect_navigation():
            page.click("#training-next")

        # Attempt 1: a straight-liner (all 1) fails with kappa 0 on every axis.
        assert page.url.endswith("/qualify")
        for item_id in order:
            if item_id != page.locator(".item-id").inner_text().strip():
                store.save_qual_answer(
                    "ann_new", 1, item_id, dict.fromkeys(AXES, 1), dict.fromkeys(AXES, 1.0)
                )
        page.reload()
        assert "30 / 30" in page.locator(".item-head").inner_text()
        choose(page, dict.fromkeys(AXES, 1))
        with page.expect_navigation():
            page.click("#qualify-submit")
        assert page.url.endswith("/qualify/result")
        result = page.locator("#qualify-result").inner_text()
        assert "Not passed yet" in result and result.count("0.00") >= 4
        assert page.locator("#result-table tr.bad").count() == 4
        page.goto(srv.base_url + "/qualify")
        assert page.url.endswith("/training"), "a retry needs training first"

        # Round 2, then attempt 2 with the reference ratings: passed, the queue opens.
        for e in examples:
            store.save_training("ann_new", 2, e["id"], e["gold"])
        page.goto(srv.base_url + "/qualify")
        last = page.locator(".item-id").inner_text().strip()
        for item_id in order:
            if item_id != last:
                store.save_qual_answer(
                    "ann_new", 2, item_id, reference[item_id], dict.fromkeys(AXES, 0.8)
                )
        page.reload()
        choose(page, reference[last])
        with page.expect_navigation():
            page.click("#qualify-submit")
        assert "Passed" in page.locator("#qualify-result h1").inner_text()
        with page.expect_navigation():
            page.click("#to-queue")
        assert "/item/" in page.url
        assert not errors, errors

        # The admin sees it, and the results export.
        admin = browser.new_page()
        sign_in(admin, srv.base_url, "boss", boss)
        row = admin.locator("#progress-table tr", has_text="ann_new").inner_text()
        assert "passed" in row and "2 attempts" in row
    out = tmp_path / "qualification.jsonl"
    proc = annotate_cli("export-qualification", "--db", str(db), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["attempt"], r["passed"]) for r in rows] == [(1, False), (2, True)]
    assert rows[0]["axes"]["social"]["kappa"] == 0.0 and rows[1]["overall"] == 1.0


def test_adjudicator_settles_the_most_disputed_item_first_and_it_is_exported(browser, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks)
    db = tmp_path / "ann.sqlite"
    store = Store(db)
    store.load_tasks([])
    from evalpipe.annotation.schema import read_tasks

    store.load_tasks(read_tasks(tasks))
    for who in ("ann_a", "ann_b"):
        store.add_annotator(who)
    judy = store.add_annotator("judy", role="adjudicator")
    store.rebalance(overlap=2)
    conf = dict.fromkeys(AXES, 0.8)
    plan = {
        "b1": (
            {"social": 1, "avoidant": 1, "mechanical": 2, "self": 1},
            {"social": 5, "avoidant": 1, "mechanical": 2, "self": 1},
        ),
        "b2": (
            {"social": 2, "avoidant": 3, "mechanical": 1, "self": 1},
            {"social": 2, "avoidant": 2, "mechanical": 1, "self": 1},
        ),
        "b3": (
            {"social": 1, "avoidant": 1, "mechanical": 4, "self": 1},
            {"social": 1, "avoidant": 1, "mechanical": 4, "self": 1},
        ),
    }
    for item, (a, b) in plan.items():
        store.save_rating("ann_a", item, a, conf)
        store.save_rating("ann_b", item, b, conf)
    with ServerProcess(
        db=db, tasks=tasks, cwd=REPO, secret=SECRET, extra_args=["--overlap", "2"]
    ) as srv:
        page = browser.new_page(viewport={"width": 1400, "height": 950})
        sign_in(page, srv.base_url, "judy", judy)
        assert page.url.endswith("/adjudicate")
        ids = page.locator("#disagreement-table tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.item)"
        )
        assert ids == ["b1", "b2"], "range 4 before range 1; the agreed item b3 is not listed"
        with page.expect_navigation():
            page.locator("a.adjudicate-link", has_text="b1").click()
        side_by_side = page.locator("#ratings-table").inner_text()
        assert "ann_a" in side_by_side and "ann_b" in side_by_side
        assert "range" in side_by_side
        final = {"social": 3, "avoidant": 1, "mechanical": 2, "self": 1}
        choose(page, final)
        page.fill("#note", "Praise is explicit but mild: anchor 3.")
        with page.expect_navigation():
            page.click("#adjudicate-save")
        assert page.url.endswith("/adjudicate/b2"), "on to the next open disputed item"
        page.goto(srv.base_url + "/adjudicate")
        assert "set by judy" in page.locator("tr[data-item=b1]").inner_text()
        # Annotators cannot reach adjudication.
        assert "/item/" not in page.url
    out = tmp_path / "raw"
    proc = annotate_cli(
        "export", "--db", str(db), "--out-dir", str(out), "--notes", str(tmp_path / "n.csv")
    )
    assert proc.returncode == 0, proc.stderr
    adjudicated = read_annotations(out / "batch_001.adjudicated.jsonl")
    assert [(r.id, r.annotator_id, r.annotations) for r in adjudicated] == [
        ("b1", pseudonymise_id("adjudicated:judy", SALT), final)
    ]
    assert all(v == 1.0 for v in adjudicated[0].confidence.values())
    raw = read_annotations(out / "batch_001.jsonl")
    # Exports name annotators by their salted pseudonym, never by their login id.
    assert {r.annotator_id for r in raw} == {pseudonym("ann_a", SALT), pseudonym("ann_b", SALT)}
    assert "anchor 3" in (tmp_path / "n.csv").read_text()
