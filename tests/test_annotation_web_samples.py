"""The admin page of the real server says when its items are the bundled sample tasks (for trying
the app), and says nothing of the kind for a campaign's own tasks."""

from __future__ import annotations

import re
from pathlib import Path

from evalpipe.annotation.schema import sample_tasks_path
from evalpipe.annotation.web.store import Store
from tests.annotation_harness import AnnotatorClient, ServerProcess
from tests.test_annotation_web_http import write_tasks

REPO = Path(__file__).resolve().parents[1]


def admin_page(tmp: Path, tasks: Path) -> str:
    db = tmp / "ann.sqlite"
    store = Store(db)
    store.add_annotator("ann_a")
    token = store.add_annotator("boss", admin=True)
    store.close()
    with ServerProcess(
        db=db,
        tasks=tasks,
        cwd=REPO,
        secret="samples-secret-0123456789",
        extra_args=["--overlap", "1"],
    ) as srv:
        boss = AnnotatorClient(srv.base_url, "boss", token)
        assert boss.login().status_code == 303
        resp = boss.http.get("/admin")
        assert resp.status_code == 200
        return resp.text


def test_the_admin_page_labels_sample_tasks_as_sample_data(tmp_path):
    html = admin_page(tmp_path, sample_tasks_path())
    banner = re.search(r'id="sample-banner">(.*?)</div>', html, re.S)
    assert banner and "Sample data" in banner.group(1)
    assert "30 of the 30 items" in re.sub(r"\s+", " ", banner.group(1))


def test_a_campaigns_own_tasks_get_no_sample_label(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, 3)
    html = admin_page(tmp_path, tasks)
    assert "sample-banner" not in html and "within the hour" in html
