"""Drive a real annotation server over HTTP: start ``evalpipe annotate serve`` as a process on
127.0.0.1, log in as an annotator, submit ratings the way the browser form does.

Used by the load benchmark (perf/annotation_load.py) and the HTTP tests; nothing here is a
mock: the server is the production command under waitress, the client speaks plain HTTP.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.store import Store

_CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')
_ITEM_RE = re.compile(r"/item/(\d+)$")
_OPENED_RE = re.compile(r'name="opened_at" value="([^"]+)"')
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) evalpipe-harness/1.0"


REPO = Path(__file__).resolve().parents[1]


def annotate_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``evalpipe annotate ARGS...`` from the repository root, output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "evalpipe.cli", "annotate", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``evalpipe annotate serve`` in a child process, ready when ``/healthz`` answers.

    Parameters
    ----------
    db, tasks:
        Database and tasks JSONL paths.
    cwd:
        The repository root (where ``stages`` is importable).
    secret:
        Session secret, passed through EVALPIPE_SECRET_KEY.
    port:
        Default: a free port.
    extra_args:
        More ``serve`` options, e.g. ``["--overlap", "3"]``.
    require_qualification:
        Off by default here, so tests about rating get items right after login.
    """

    def __init__(
        self,
        *,
        db: str | Path,
        tasks: str | Path,
        cwd: str | Path,
        secret: str,
        port: int | None = None,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
        require_qualification: bool = False,
    ) -> None:
        self.db = Path(db)
        self.tasks = Path(tasks)
        self.cwd = Path(cwd)
        self.port = port or free_port()
        self.secret = secret
        self.extra_args = list(extra_args or [])
        if not require_qualification and not any("qualification" in a for a in self.extra_args):
            self.extra_args.append("--no-require-qualification")
        self.env = dict(env or os.environ)
        self.proc: subprocess.Popen[str] | None = None
        self.log_path = self.db.with_suffix(".serve.log")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        env = self.env | {"EVALPIPE_SECRET_KEY": self.secret, "PYTHONUNBUFFERED": "1"}
        cmd = [
            sys.executable,
            "-m",
            "evalpipe.cli",
            "annotate",
            "serve",
            "--tasks",
            str(self.tasks),
            "--db",
            str(self.db),
            "--port",
            str(self.port),
            "--host",
            "127.0.0.1",
            *self.extra_args,
        ]
        log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 (outlives this call)
        self.proc = subprocess.Popen(
            cmd, cwd=self.cwd, env=env, stdout=log, stderr=log, text=True, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.base_url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server not ready after {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no shutdown handlers, no flushing; what was committed must survive."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def write_tasks_file(path: str | Path, tasks: list[dict[str, Any]]) -> Path:
    """Tasks as JSONL (the task input format), one object per line."""
    path = Path(path)
    path.write_text(
        "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks), encoding="utf-8"
    )
    return path


@contextmanager
def campaign_server(
    tmp: str | Path,
    *,
    tasks: list[dict[str, Any]] | Path,
    accounts: dict[str, str],
    secret: str,
    extra_args: list[str] | None = None,
    require_qualification: bool = False,
    prepare: Callable[[Any], None] | None = None,
) -> Iterator[ServerProcess]:
    """The one server fixture of the web tests: a database with ``accounts`` and a running
    ``evalpipe annotate serve`` on it.

    Parameters
    ----------
    tmp:
        Folder for the tasks file, the database and the server log.
    tasks:
        Task dicts (written to ``tmp/tasks.jsonl``) or an existing tasks file.
    accounts:
        ``{annotator_id: role}`` (``annotator`` | ``adjudicator`` | ``admin``).
    secret, extra_args, require_qualification:
        As for :class:`ServerProcess`.
    prepare:
        Called with the open ``Store`` before the server starts (e.g. finished training).

    Yields
    ------
    ServerProcess
        With ``tokens`` (``{annotator_id: token}``) and ``tmp`` set.
    """
    tmp = Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    tasks_path = tasks if isinstance(tasks, Path) else write_tasks_file(tmp / "tasks.jsonl", tasks)
    db = tmp / "ann.sqlite"
    store = Store(db)
    tokens = {who: store.add_annotator(who, role=role) for who, role in accounts.items()}
    if prepare is not None:
        prepare(store)
    store.close()
    with ServerProcess(
        db=db,
        tasks=tasks_path,
        cwd=REPO,
        secret=secret,
        extra_args=extra_args,
        require_qualification=require_qualification,
    ) as srv:
        srv.tokens = tokens  # type: ignore[attr-defined]
        srv.tmp = tmp  # type: ignore[attr-defined]
        yield srv


class AnnotatorClient:
    """One annotator's browser-equivalent session (cookies, CSRF token) over plain HTTP."""

    def __init__(
        self, base_url: str, annotator_id: str, token: str, *, timeout: float = 30.0
    ) -> None:
        self.base_url = base_url
        self.annotator_id = annotator_id
        self.token = token
        self.http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
        )
        self.csrf = ""
        self.opened_at = ""

    def close(self) -> None:
        self.http.close()

    def _remember_csrf(self, html: str) -> None:
        m = _CSRF_RE.search(html)
        if m:
            self.csrf = m.group(1)

    def login(self) -> httpx.Response:
        """GET the form (CSRF token), POST the credentials; returns the POST response."""
        self._remember_csrf(self.http.get("/login").text)
        resp = self.http.post(
            "/login",
            data={"csrf_token": self.csrf, "annotator_id": self.annotator_id, "token": self.token},
        )
        if resp.status_code == 303:
            self._remember_csrf(self.http.get("/guidelines").text)
        return resp

    def page(self, position: int) -> httpx.Response:
        resp = self.http.get(f"/item/{position}")
        self._remember_csrf(resp.text)
        m = _OPENED_RE.search(resp.text)
        self.opened_at = m.group(1) if m else ""
        return resp

    def next_position(self) -> int | None:
        """Where ``/`` sends the annotator now (None when everything is rated)."""
        resp = self.http.get("/")
        m = _ITEM_RE.search(resp.headers.get("location", ""))
        return int(m.group(1)) if m else None

    def submit(
        self,
        position: int,
        scores: dict[str, int],
        confidence: dict[str, float],
        *,
        active_ms: int = 0,
        action: str = "save",
    ) -> httpx.Response:
        """POST the rating form exactly as the page does; 303 means committed."""
        data: dict[str, Any] = {
            "csrf_token": self.csrf,
            "action": action,
            "active_ms": str(active_ms),
            "opened_at": self.opened_at,
            "viewport": "1400x950",
        }
        for axis in AXES:
            if axis in scores:
                data[f"score_{axis}"] = str(scores[axis])
            if axis in confidence:
                data[f"conf_{axis}"] = str(confidence[axis])
        return self.http.post(f"/item/{position}", data=data)


# -- load generation ---------------------------------------------------------------------------


@dataclass
class Ack:
    """A rating the server acknowledged (HTTP 303 after the commit)."""

    annotator_id: str
    position: int
    scores: dict[str, int]
    confidence: dict[str, float]


@dataclass
class LoadResult:
    acks: list[Ack] = field(default_factory=list)
    post_ms: list[float] = field(default_factory=list)
    get_ms: list[float] = field(default_factory=list)
    errors: int = 0
    wall_s: float = 0.0


def _rating_for(
    annotator_id: str, position: int, seed: int
) -> tuple[dict[str, int], dict[str, float]]:
    rng = random.Random(f"{seed}:{annotator_id}:{position}")
    scores = {a: rng.randint(1, 5) for a in AXES}
    confidence = {a: rng.choice((0.2, 0.4, 0.6, 0.8, 1.0)) for a in AXES}
    return scores, confidence


def run_load(
    base_url: str,
    accounts: dict[str, str],
    *,
    per_annotator: int,
    seed: int = 0,
    think_ms: float = 0.0,
    stop_after_acks: int | None = None,
    on_ack: Callable[[int], None] | None = None,
) -> LoadResult:
    """Every annotator in its own thread: log in, then open and submit items one after another.

    Parameters
    ----------
    base_url:
        The running server.
    accounts:
        annotator_id -> token.
    per_annotator:
        Ratings each annotator submits (positions 1..per_annotator of their queue).
    seed:
        Makes the submitted scores reproducible.
    think_ms:
        Mean pause between opening an item and submitting it (uniform 0.5x-1.5x); 0 is a
        closed loop that measures the server at saturation.
    stop_after_acks, on_ack:
        Stop early / get a callback with the running ack count (the kill test kills the server
        from the callback; requests in flight then fail and are not acknowledged).

    Returns
    -------
    LoadResult
        Acknowledged ratings, per-request latencies (ms) and the count of failed requests.
    """
    result = LoadResult()
    lock = threading.Lock()
    stop = threading.Event()

    def worker(annotator_id: str, token: str) -> None:
        client = AnnotatorClient(base_url, annotator_id, token, timeout=10.0)
        pause = random.Random(f"think:{seed}:{annotator_id}")
        try:
            if client.login().status_code != 303:
                with lock:
                    result.errors += 1
                return
            for position in range(1, per_annotator + 1):
                if stop.is_set():
                    return
                scores, conf = _rating_for(annotator_id, position, seed)
                try:
                    t0 = time.perf_counter()
                    page = client.page(position)
                    get_ms = (time.perf_counter() - t0) * 1000
                    if think_ms > 0:
                        time.sleep(think_ms * pause.uniform(0.5, 1.5) / 1000)
                    t1 = time.perf_counter()
                    resp = client.submit(position, scores, conf, active_ms=1500)
                    post_ms = (time.perf_counter() - t1) * 1000
                except httpx.HTTPError:
                    with lock:
                        result.errors += 1
                    return
                with lock:
                    if page.status_code == 200:
                        result.get_ms.append(get_ms)
                    if resp.status_code == 303:
                        result.post_ms.append(post_ms)
                        result.acks.append(Ack(annotator_id, position, scores, conf))
                        n = len(result.acks)
                        if stop_after_acks is not None and n >= stop_after_acks:
                            stop.set()
                    else:
                        result.errors += 1
                        n = len(result.acks)
                if on_ack is not None and resp.status_code == 303:
                    on_ack(n)
        finally:
            client.close()

    threads = [
        threading.Thread(target=worker, args=(a, t), daemon=True)
        for a, t in sorted(accounts.items())
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.wall_s = time.perf_counter() - start
    return result


@dataclass(frozen=True)
class Audit:
    acknowledged: int
    stored: int
    lost: int
    mismatched: int
    duplicated: int
    unacknowledged_but_stored: int
    audit_trail_problems: tuple[str, ...] = ()


def audit(db_path: str | Path, acks: list[Ack]) -> Audit:
    """Compare acknowledged ratings with what a fresh connection finds in the database."""
    con = sqlite3.connect(db_path)
    try:
        rows = con.execute(
            "SELECT s.annotator_id, s.position, "
            + ", ".join(f"r.s_{a}" for a in AXES)
            + ", "
            + ", ".join(f"r.c_{a}" for a in AXES)
            + " FROM ratings r JOIN assignments s ON s.annotator_id = r.annotator_id "
            "AND s.item_id = r.item_id"
        ).fetchall()
        dup = con.execute(
            "SELECT COUNT(*) FROM (SELECT annotator_id, item_id, COUNT(*) c "
            "FROM ratings GROUP BY 1, 2 HAVING c > 1)"
        ).fetchone()[0]
    finally:
        con.close()
    store = Store(db_path)
    try:
        trail = tuple(store.check_audit_trail())
    finally:
        store.close()
    n = len(AXES)
    stored = {(r[0], r[1]): (list(r[2 : 2 + n]), list(r[2 + n :])) for r in rows}
    lost = mismatched = 0
    acked_keys = set()
    for ack in acks:
        key = (ack.annotator_id, ack.position)
        acked_keys.add(key)
        if key not in stored:
            lost += 1
        elif stored[key] != ([ack.scores[a] for a in AXES], [ack.confidence[a] for a in AXES]):
            mismatched += 1
    return Audit(
        acknowledged=len(acks),
        stored=len(rows),
        lost=lost,
        mismatched=mismatched,
        duplicated=int(dup),
        unacknowledged_but_stored=len(set(stored) - acked_keys),
        audit_trail_problems=trail,
    )


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0-100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
