"""The re-annotation list drives the web app's queues: the same raters see an item again, added
raters receive it, and items to revise go on the revision list."""

from __future__ import annotations

import json

from evalpipe.annotation.pseudonyms import pseudonym
from evalpipe.annotation.schema import AXES, DialoguePair
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import annotate_cli

SALT = "queue-salt"


def test_reannotate_reopens_adds_raters_and_lists_revisions(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALPIPE_RATER_SALT", SALT)
    db = tmp_path / "q.sqlite"
    store = Store(db)
    store.load_tasks([DialoguePair(f"q{i}", "u", "r") for i in range(4)])
    for who in ("a1", "a2", "a3"):
        store.add_annotator(who)
    store.rebalance(overlap=2)
    for item in store.item_ids():
        for who in ("a1", "a2", "a3"):
            if store.rating(who, item) is None and item in {s.item_id for s in store.queue(who)}:
                store.save_rating(who, item, {a: 2 for a in AXES}, {a: 0.9 for a in AXES})
    holders = {
        i: sorted(w for w in ("a1", "a2", "a3") if store.rating(w, i)) for i in store.item_ids()
    }
    store.close()
    plan = [
        {
            "id": "q0",
            "priority": "high",
            "strategy": "same_raters",
            "annotators": [pseudonym(w, SALT) for w in holders["q0"]],
        },
        {"id": "q1", "priority": "medium", "strategy": "add_raters", "annotators": []},
        {
            "id": "q2",
            "priority": "low",
            "strategy": "revise_item",
            "kappa": 0.05,
            "reasons": ["low agreement on social"],
            "annotators": [],
        },
    ]
    plan_path = tmp_path / "for_reannotation.jsonl"
    plan_path.write_text("".join(json.dumps(r) + "\n" for r in plan))
    proc = annotate_cli("reannotate", str(plan_path), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert "2 ratings reopened" in proc.stdout and "1 assignments to added raters" in proc.stdout
    store = Store(db)
    for who in holders["q0"]:
        slot = next(s for s in store.queue(who) if s.item_id == "q0")
        assert slot.rated is False  # back in the queue, though the old rating is kept
        assert store.next_position(store.queue(who)) == slot.position
    newcomer = next(w for w in ("a1", "a2", "a3") if w not in holders["q1"])
    assert "q1" in {s.item_id for s in store.queue(newcomer)}
    assert [r["item_id"] for r in store.item_revisions()] == ["q2"]
    # Saving again closes the reopened item and leaves an edit in the audit trail.
    who = holders["q0"][0]
    store.save_rating(who, "q0", {a: 3 for a in AXES}, {a: 0.9 for a in AXES})
    assert next(s for s in store.queue(who) if s.item_id == "q0").rated is True
    assert store.rating(who, "q0").is_modified
    assert store.check_audit_trail() == []
    store.close()
