"""How fast the admin and adjudication pages answer at a realistic campaign size.

Builds a database with R ratings (default 2,000: 500 items x 4 annotators, overlap 4, random
but reproducible scores), serves it with the real server (``evalpipe annotate serve`` under
waitress on 127.0.0.1), signs in as the admin and times page loads over HTTP:

- cold: the first load after ratings changed (agreement with a 200-resample bootstrap and the
  per-item disagreement are computed; before the cache, every load cost this);
- warm: later loads while the ratings are unchanged (served from the cache keyed by the
  ratings' version);
- after an edit: the first load after a rating changed (the admin page serves the previous
  statistics at once and refreshes them in the background; the adjudication queue recomputes
  the per-item disagreement, which is cheap);
- the same for the adjudication queue.

    python perf/annotation_admin.py [--items 500] [--annotators 4] [--loads 20]
"""

from __future__ import annotations

import json
import random
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

import click

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalpipe.annotation.schema import AXES, DialoguePair  # noqa: E402
from evalpipe.annotation.web.store import Store  # noqa: E402
from tests.annotation_harness import AnnotatorClient, ServerProcess  # noqa: E402


def build(db: Path, tasks: Path, items: int, annotators: int, seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    pairs = [DialoguePair(f"adm_{i:05d}", f"質問 {i}", f"応答 {i}", []) for i in range(items)]
    tasks.write_text(
        "".join(
            json.dumps({"id": t.id, "user": t.user, "response": t.response, "context": []}) + "\n"
            for t in pairs
        ),
        encoding="utf-8",
    )
    store = Store(db, synchronous="NORMAL")
    store.load_tasks(pairs)
    tokens = {f"ann_{k:02d}": store.add_annotator(f"ann_{k:02d}") for k in range(annotators)}
    tokens["lead"] = store.add_annotator("lead", admin=True)
    store.rebalance(overlap=annotators, seed=seed)
    for t in pairs:
        base = {a: rng.choice([1, 1, 1, 2, 2, 3, 4, 5]) for a in AXES}
        for who in tokens:
            if who == "lead":
                continue
            scores = {a: min(5, max(1, base[a] + rng.choice([-1, 0, 0, 0, 1]))) for a in AXES}
            store.save_rating(who, t.id, scores, {a: 0.8 for a in AXES})
    store.close()
    return tokens


def timed(client: AnnotatorClient, path: str) -> float:
    t0 = time.perf_counter()
    resp = client.http.get(path)
    elapsed = (time.perf_counter() - t0) * 1000
    if resp.status_code != 200:
        raise RuntimeError(f"{path}: HTTP {resp.status_code}")
    return elapsed


@click.command()
@click.option("--items", default=500, show_default=True)
@click.option("--annotators", default=4, show_default=True)
@click.option("--loads", default=20, show_default=True, help="Warm loads to time per page.")
@click.option("--seed", default=0, show_default=True)
def main(items: int, annotators: int, loads: int, seed: int) -> None:
    """Time the admin page and the adjudication queue, cold and warm."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        db, tasks = tmp / "admin.sqlite", tmp / "tasks.jsonl"
        tokens = build(db, tasks, items, annotators, seed)
        n = items * annotators
        with ServerProcess(
            db=db,
            tasks=tasks,
            cwd=REPO,
            secret=secrets.token_hex(16),
            extra_args=["--overlap", str(annotators), "--synchronous", "normal"],
        ) as srv:
            lead = AnnotatorClient(srv.base_url, "lead", tokens["lead"])
            lead.login()
            rater = AnnotatorClient(srv.base_url, "ann_00", tokens["ann_00"])
            rater.login()
            click.echo(f"{n} ratings ({items} items x {annotators} annotators)")
            for path in ("/admin", "/adjudicate"):
                time.sleep(3)  # let background refreshes of the previous page finish
                cold = timed(lead, path)
                warm = sorted(timed(lead, path) for _ in range(loads))
                # One edited rating invalidates the cache: the next load is cold again.
                pos = rater.next_position() or 1
                rater.page(pos)
                flip = random.Random(len(warm)).choice([1, 5])
                rater.submit(pos, dict.fromkeys(AXES, flip), dict.fromkeys(AXES, 0.8))
                after_edit = timed(lead, path)
                click.echo(
                    f"{path:<12} cold {cold:7.1f} ms | warm p50 {statistics.median(warm):6.1f} ms, "
                    f"p95 {warm[int(0.95 * (len(warm) - 1))]:6.1f} ms (n={loads}) | "
                    f"first load after an edit {after_edit:7.1f} ms"
                )


if __name__ == "__main__":
    main()
