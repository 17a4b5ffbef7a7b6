"""Live work controls over HTTP against the real server: the review/confirm step, the timer and
autosave settings on the page, the idle session timeout, and gold items hidden in the queue."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from evalpipe.annotation.gold import read_gold, score_gold
from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.export import export_records
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import AnnotatorClient, annotate_cli, campaign_server

SECRET = "live-secret-0123456789abcdef"
TASKS = [
    {"id": f"t{i:02d}", "user": f"q{i}", "response": f"r{i}", "context": []} for i in range(18)
]


def test_review_step_timer_autosave_and_idle_timeout(tmp_path: Path):
    extra = ["--review-step", "--session-timeout-minutes", "0.03", "--autosave-seconds", "30"]
    with campaign_server(
        tmp_path, tasks=TASKS[:4], accounts={"ann_a": "annotator"}, secret=SECRET, extra_args=extra
    ) as srv:
        client = AnnotatorClient(srv.base_url, "ann_a", srv.tokens["ann_a"])
        assert client.login().status_code == 303
        page = client.page(1)
        assert 'id="timer"' in page.text and 'data-autosave="30"' in page.text
        scores = {"social": 4, "avoidant": 2, "mechanical": 1, "self": 3}
        review = client.submit(1, scores, {a: 0.8 for a in AXES})
        assert review.status_code == 200 and 'id="confirm_button"' in review.text
        assert 'id="score_display_social">4<' in review.text
        store = Store(srv.tmp / "ann.sqlite")
        assert store.ratings() == []  # nothing saved before the confirmation
        assert store.draft("ann_a", store.slot("ann_a", 1))["score_social"] == "4"
        confirm = client.http.post(
            "/item/1",
            data={
                "csrf_token": client.csrf,
                "action": "save",
                "opened_at": client.opened_at,
                "confirmed": "1",
                **{f"score_{a}": str(v) for a, v in scores.items()},
                **{f"conf_{a}": "0.8" for a in AXES},
            },
        )
        assert confirm.status_code == 303
        assert [r.scores for r in store.ratings()] == [scores]
        # 0.03 minutes without a request: the next one finds the session ended.
        time.sleep(2.5)
        assert client.http.get("/").headers["location"].startswith("/login")
        store.close()
        client.close()


def test_gold_items_are_mixed_in_scored_and_never_exported(tmp_path: Path):
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_text(
        "".join(
            json.dumps(
                {"id": f"t9{i}", "user": f"q9{i}", "response": f"r9{i}", "context": []}
                | {"reference": {a: 1 + i for a in AXES}}
            )
            + "\n"
            for i in range(3)
        )
    )
    extra = ["--gold", str(gold_path), "--gold-share", "0.25", "--overlap", "1"]
    with campaign_server(
        tmp_path, tasks=TASKS[:9], accounts={"ann_a": "annotator"}, secret=SECRET, extra_args=extra
    ) as srv:
        client = AnnotatorClient(srv.base_url, "ann_a", srv.tokens["ann_a"])
        client.login()
        store = Store(srv.tmp / "ann.sqlite")
        queue = store.queue("ann_a")
        gold_ids = set(store.gold_reference())
        # 9 real items, 25%: 3 gold items in the queue, not all at the end.
        assert sum(s.item_id in gold_ids for s in queue) == 3
        assert [s.item_id in gold_ids for s in queue][-3:] != [True, True, True]
        pages = {}
        for slot in queue:
            page = client.page(slot.position)
            pages[slot.item_id] = page.text
            gold = slot.item_id in gold_ids
            value = 1 + int(slot.item_id[-1]) if gold else 2
            resp = client.submit(slot.position, {a: value for a in AXES}, {a: 0.9 for a in AXES})
            assert resp.status_code == 303

        # A gold page is built like any other item's page: the same fields and classes.
        def shape(html: str) -> tuple[set[str], set[str]]:
            return set(re.findall(r'name="([^"]+)"', html)), set(
                re.findall(r'class="([^"]+)"', html)
            )

        assert shape(pages["t90"]) == shape(pages["t00"])
        exported = export_records(store)
        assert {r["id"] for r in exported} == {t["id"] for t in TASKS[:9]}
        assert len(store.ratings()) == 9 and len(store.gold_ratings()) == 3
        scores = score_gold(store.gold_ratings(), store.gold_reference())
        assert scores[0]["accuracy"] == 1.0 and scores[0]["n"] == 3
        assert store.check_audit_trail() == []
        store.close()
        client.close()
    out = tmp_path / "gold_results.jsonl"
    proc = annotate_cli("export-gold", "--db", str(srv.tmp / "ann.sqlite"), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    row = json.loads(out.read_text())
    assert len(row["annotator_id"]) == 64 and row["accuracy"] == 1.0
    assert len(read_gold(gold_path)) == 3


def test_gold_drift_shows_an_annotator_getting_worse():
    ref = {f"g{i}": {a: 3 for a in AXES} for i in range(6)}
    rows = [
        {
            "annotator_id": "x",
            "item_id": f"g{i}",
            "scores": {a: 3 if i < 3 else 5 for a in AXES},
            "saved_at": f"2025-01-0{i + 1}T00:00:00Z",
        }
        for i in range(6)
    ]
    result = score_gold(rows, ref)[0]
    assert (result["early_accuracy"], result["late_accuracy"], result["drift"]) == (1.0, 0.0, -1.0)
