"""Pseudonymous raters: salted SHA-256 ids everywhere outside the web app's database, and one
person's data deleted on request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.annotation.pseudonyms import (
    PSEUDONYM_RE,
    pseudonym,
    pseudonymise,
    pseudonymise_id,
    rater_salt,
)
from evalpipe.annotation.schema import AXES, Annotation, DialoguePair, read_tasks, sample_tasks_path
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import annotate_cli

SALT = "test-salt-5f1c"
PEOPLE = ("ann_zeta", "ann_omega", "ann_kappa")


def test_pseudonyms_are_salted_sha256_and_leave_other_raters_alone(tmp_path, monkeypatch):
    p = pseudonym("ann_zeta", SALT)
    assert PSEUDONYM_RE.match(p) and p != pseudonym("ann_zeta", SALT + "x")
    assert pseudonymise_id(p, SALT) == p  # idempotent
    for other in ("llm:qwen", "markers", "consensus", "illustrative_001"):
        assert pseudonymise_id(other, SALT) == other
    assert pseudonymise_id("adjudicated:kim", SALT) == "adjudicated:" + pseudonym("kim", SALT)
    rows = [Annotation("x", "ann_zeta", "2025-01-01T00:00:00Z", {a: 1 for a in AXES}, {})]
    assert pseudonymise(rows, SALT)[0].annotator_id == p
    monkeypatch.delenv("EVALPIPE_RATER_SALT", raising=False)
    made = rater_salt(tmp_path)
    assert (
        rater_salt(tmp_path) == made and (tmp_path / ".annotation-salt").stat().st_mode & 0o077 == 0
    )
    monkeypatch.setenv("EVALPIPE_RATER_SALT", SALT)
    assert rater_salt(tmp_path) == SALT


def _campaign_db(path: Path, tasks: list[DialoguePair]) -> Store:
    store = Store(path)
    store.load_tasks(tasks)
    for who in PEOPLE:
        store.add_annotator(who)
    store.rebalance(overlap=3)
    for k, task in enumerate(tasks):
        for j, who in enumerate(PEOPLE):
            score = 1 + (k + (j if k % 7 == 0 else 0)) % 5
            store.save_rating(who, task.id, {a: score for a in AXES}, {a: 0.9 for a in AXES})
    return store


@pytest.mark.e2e
def test_no_plain_annotator_id_under_data_metrics_plots_after_a_real_run(project):
    env = project.env | {"EVALPIPE_RATER_SALT": SALT}
    tasks = read_tasks(sample_tasks_path())
    db = project.root / "annotation_db" / "annotations.sqlite"
    store = _campaign_db(db, tasks)
    store.close()
    project.run("python", "-m", "evalpipe.cli", "annotate", "export", env=env)
    proc = project.run("python", "-m", "stages.agreement", env=env)
    assert "3 annotators" in proc.stdout and "SAMPLE" not in proc.stdout
    batch = (project.root / "data/raw/annotations/batch_001.jsonl").read_text()
    ids = {json.loads(line)["annotator_id"] for line in batch.splitlines()}
    assert ids == {pseudonym(p, SALT) for p in PEOPLE}
    leaks = [
        (str(path.relative_to(project.root)), who)
        for folder in ("data", "metrics", "plots")
        for path in (project.root / folder).rglob("*")
        if path.is_file()
        for who in PEOPLE
        if who in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert leaks == []
    flagged = json.loads(
        (project.root / "data/annotations/quality_reports/outlier_report.json").read_text()
    )
    reannotate = (project.root / "data/annotations/for_reannotation.jsonl").read_text()
    for line in reannotate.splitlines():
        assert all(PSEUDONYM_RE.match(a) for a in json.loads(line)["annotators"])
    assert all(PSEUDONYM_RE.match(f["annotator_id"]) for f in flagged["bias"])


def test_forget_deletes_one_person_from_the_database_and_the_batches(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALPIPE_RATER_SALT", SALT)
    tasks = [DialoguePair(f"f{i}", "u", "r") for i in range(6)]
    db = tmp_path / "f.sqlite"
    _campaign_db(db, tasks).close()
    out = tmp_path / "raw"
    assert annotate_cli("export", "--db", str(db), "--out-dir", str(out)).returncode == 0
    gone = pseudonym("ann_omega", SALT)
    proc = annotate_cli(
        "forget",
        gone,
        "--db",
        str(db),
        "--raw-dir",
        str(out),
        "--yes",
        "--qualification",
        str(tmp_path / "none.jsonl"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "6 exported records" in proc.stdout
    text = (out / "batch_001.jsonl").read_text()
    assert gone not in text and pseudonym("ann_zeta", SALT) in text
    store = Store(db)
    assert store.annotator("ann_omega") is None
    assert not store.ratings(annotator_id="ann_omega") and not store.history(
        annotator_id="ann_omega"
    )
    assert len(store.ratings()) == 12 and store.check_audit_trail() == []
    store.close()
