"""Load and crash benchmark of the annotation web app on 127.0.0.1.

Phase 1: N concurrent annotators (default 20) submit R ratings in total (default 2,000) through
the real server (``evalpipe annotate serve`` under waitress, SQLite WAL): prints latency
percentiles and checks that nothing acknowledged is lost or duplicated.
Phase 2: the same load on a fresh database, and the server is SIGKILLed after K acknowledged
ratings; a fresh connection then checks that every acknowledged rating is in the database.

    python perf/annotation_load.py [--annotators 20] [--ratings 2000] [--kill-after 600]
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import tempfile
import threading
from pathlib import Path

import click

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalpipe.annotation.web.store import Store  # noqa: E402
from tests.annotation_harness import (  # noqa: E402
    ServerProcess,
    audit,
    percentile,
    run_load,
)


def write_tasks(path: Path, n: int) -> None:
    """Synthetic tasks, half Japanese, some with context, some with HTML in the response."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            ja = i % 2 == 0
            task = {
                "id": f"load_{i:05d}",
                "user": f"質問 {i}: この説明は正しいですか？"
                if ja
                else f"Question {i}: is this right?",
                "response": (
                    f"素晴らしいご質問ですね！{i} <b>本当に</b>その通りです。"
                    if ja
                    else f"Great question! {i} <script>alert({i})</script> Exactly right."
                ),
                "context": [{"turn": -1, "speaker": "user", "text": f"前の発話 {i}"}]
                if i % 3 == 0
                else [],
            }
            f.write(json.dumps(task, ensure_ascii=False) + "\n")


def setup(tmp: Path, name: str, annotators: int, items: int) -> tuple[Path, Path, dict[str, str]]:
    db = tmp / f"{name}.sqlite"
    tasks = tmp / "tasks.jsonl"
    if not tasks.exists():
        write_tasks(tasks, items)
    store = Store(db)
    accounts = {
        f"ann_{i:03d}": store.add_annotator(f"ann_{i:03d}") for i in range(1, annotators + 1)
    }
    store.close()
    return db, tasks, accounts


def fmt_ms(values: list[float]) -> str:
    return (
        f"p50 {percentile(values, 50):.1f} ms, p95 {percentile(values, 95):.1f} ms, "
        f"p99 {percentile(values, 99):.1f} ms, max {max(values, default=float('nan')):.1f} ms"
    )


@click.command()
@click.option("--annotators", default=20, show_default=True)
@click.option("--ratings", default=2000, show_default=True, help="Total ratings in phase 1.")
@click.option("--overlap", default=2, show_default=True)
@click.option("--threads", default=8, show_default=True, help="waitress threads.")
@click.option(
    "--synchronous",
    type=click.Choice(["full", "normal"]),
    default="full",
    show_default=True,
    help="SQLite durability setting of the server.",
)
@click.option(
    "--think-ms",
    default=250.0,
    show_default=True,
    help="Mean pause per item between opening and submitting (a person reading). "
    "Real annotators take seconds; 0 = closed loop at saturation.",
)
@click.option(
    "--closed-loop/--no-closed-loop",
    default=True,
    show_default=True,
    help="Also run the load once with no pauses (the server's saturation figures).",
)
@click.option(
    "--kill-after",
    default=600,
    show_default=True,
    help="Phase 2: SIGKILL the server after this many acknowledged ratings.",
)
def main(
    annotators: int,
    ratings: int,
    overlap: int,
    threads: int,
    synchronous: str,
    think_ms: float,
    closed_loop: bool,
    kill_after: int,
) -> None:
    per = -(-ratings // annotators)
    items = -(-per * annotators // overlap)
    secret = secrets.token_hex(32)
    extra = ["--overlap", str(overlap), "--threads", str(threads), "--synchronous", synchronous]
    with tempfile.TemporaryDirectory(prefix="evalpipe-load-") as tmpdir:
        tmp = Path(tmpdir)
        print(f"load average (1/5/15 min) at the start: {os.getloadavg()} on {os.cpu_count()} CPUs")
        ok = True
        for name, pause in [("paced", think_ms)] + ([("closed-loop", 0.0)] if closed_loop else []):
            db, tasks, accounts = setup(tmp, f"load-{name}", annotators, items)
            with ServerProcess(
                db=db, tasks=tasks, cwd=REPO, secret=secret, extra_args=extra
            ) as srv:
                res = run_load(srv.base_url, accounts, per_annotator=per, seed=1, think_ms=pause)
            a = audit(db, res.acks)
            print(
                f"load ({name}, think {pause:.0f} ms): {annotators} annotators x {per} ratings "
                f"on {items} items (overlap {overlap}), waitress {threads} threads, "
                f"synchronous={synchronous}, "
                f"{res.wall_s:.1f} s wall, {len(res.acks) / res.wall_s:.0f} ratings/s"
            )
            print(f"  submit (POST, commit + redirect): {fmt_ms(res.post_ms)}")
            print(f"  item page (GET):                  {fmt_ms(res.get_ms)}")
            print(
                f"  acknowledged {a.acknowledged}, stored {a.stored}, lost {a.lost}, "
                f"mismatched {a.mismatched}, duplicated {a.duplicated}, "
                f"failed requests {res.errors}"
            )
            print(
                f"  audit trail (history replays to the stored ratings, |end - start - "
                f"duration| < 0.01 s): {len(a.audit_trail_problems)} problem(s)"
            )
            ok = ok and a.lost == a.duplicated == a.mismatched == 0
            ok = ok and len(res.acks) == per * annotators and not a.audit_trail_problems

        db2, tasks, accounts2 = setup(tmp, "kill", annotators, items)
        srv2 = ServerProcess(db=db2, tasks=tasks, cwd=REPO, secret=secret, extra_args=extra)
        srv2.start()
        killed = threading.Event()

        def maybe_kill(n_acks: int) -> None:
            if n_acks >= kill_after and not killed.is_set():
                killed.set()
                srv2.kill()

        res2 = run_load(
            srv2.base_url,
            accounts2,
            per_annotator=per,
            seed=2,
            think_ms=think_ms,
            on_ack=maybe_kill,
        )
        srv2.stop()
        b = audit(db2, res2.acks)
        print(
            f"kill: SIGKILL after {kill_after} acknowledged ratings: acknowledged "
            f"{b.acknowledged}, stored {b.stored}, lost {b.lost}, mismatched {b.mismatched}, "
            f"duplicated {b.duplicated}, committed but unacknowledged "
            f"{b.unacknowledged_but_stored}, failed requests {res2.errors}"
        )
        # The database must reopen cleanly after the crash (WAL recovery) and serve again.
        with ServerProcess(db=db2, tasks=tasks, cwd=REPO, secret=secret, extra_args=extra):
            reopened = Store(db2).count_ratings()
        print(f"  restarted server on the crashed database: {reopened} ratings readable")
        ok = (
            ok
            and a.lost == a.duplicated == a.mismatched == 0
            and b.lost == b.duplicated == 0
            and b.mismatched == 0
            and len(res.acks) == per * annotators
        )
        print(
            f"load average (1/5/15 min) at the end: {os.getloadavg()} on {os.cpu_count()} CPUs "
            f"(server and clients share them)"
        )
        print("result:", "OK" if ok else "FAILED")
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
