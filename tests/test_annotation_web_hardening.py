"""Attacks on the real annotation server (``evalpipe annotate serve`` under waitress on
127.0.0.1): server-side logout, open redirects through ``?next=``, login throttling per address
and overall, tampered forms, inflated active time, a styled 500 page, and export next to
unrelated JSONL files."""

from __future__ import annotations

import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from evalpipe.annotation.pseudonyms import pseudonym, rater_salt
from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.store import MAX_ACTIVE_MS_PER_ITEM, Store
from tests.annotation_harness import AnnotatorClient, annotate_cli, campaign_server
from tests.test_annotation_web_http import CONF, SCORES, write_tasks

REPO = Path(__file__).resolve().parents[1]
SECRET = "hardening-secret-0123456789abcdef"
# Past a login limit each attempt waits 60 s: long enough that a slow machine sees the refusal.
LONG_DELAY = ("--login-delay", "60", "60")


def start(tmp: Path, *extra: str, annotators: tuple[str, ...] = ("ann_a", "ann_b")):
    """A server on 4 tasks with ``annotators`` and the admin ``boss`` (the shared fixture)."""
    tmp.mkdir(parents=True, exist_ok=True)
    return campaign_server(
        tmp,
        tasks=write_tasks(tmp / "tasks.jsonl", 4),
        accounts=dict.fromkeys(annotators, "annotator") | {"boss": "admin"},
        secret=SECRET,
        extra_args=["--overlap", "2", *extra],
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with start(tmp_path_factory.mktemp("hard")) as srv:
        yield srv


def login(server, who: str) -> AnnotatorClient:
    c = AnnotatorClient(server.base_url, who, server.tokens[who])
    assert c.login().status_code == 303
    return c


def from_address(base_url: str, address: str) -> httpx.Client:
    """A client whose connections come from another loopback address (127.0.0.0/8)."""
    return httpx.Client(
        base_url=base_url, transport=httpx.HTTPTransport(local_address=address), timeout=30
    )


def csrf_of(http: httpx.Client) -> str:
    import re

    return re.search(r'name="csrf_token" value="([^"]+)"', http.get("/login").text).group(1)


# -- sessions --------------------------------------------------------------------------------


def test_logout_ends_the_session_on_the_server_so_a_saved_cookie_is_useless(server):
    c = login(server, "ann_a")
    assert c.page(1).status_code == 200
    saved = httpx.Cookies(c.http.cookies)
    assert c.http.post("/logout", data={"csrf_token": c.csrf}).status_code == 303
    replay = httpx.Client(base_url=server.base_url, cookies=saved)
    resp = replay.get("/item/1")
    assert resp.status_code == 302 and "/login" in resp.headers["location"]


def test_logging_in_again_does_not_revive_a_logged_out_cookie(server):
    c = login(server, "ann_b")
    saved = httpx.Cookies(c.http.cookies)
    assert c.http.post("/logout", data={"csrf_token": c.csrf}).status_code == 303
    assert login(server, "ann_b").page(1).status_code == 200
    replay = httpx.Client(base_url=server.base_url, cookies=saved)
    assert replay.get("/item/1").status_code == 302


# -- ?next= ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["/%09/evil.example", "//evil.example", "/%5Cevil.example", "https://evil.example/", "/%0A/x"],
)
def test_next_accepts_only_same_site_paths(server, target):
    http = httpx.Client(base_url=server.base_url)
    csrf = csrf_of(http)
    resp = http.post(
        f"/login?next={target}",
        data={"csrf_token": csrf, "annotator_id": "ann_a", "token": server.tokens["ann_a"]},
    )
    assert resp.status_code == 303, resp.text[:300]
    assert resp.headers["location"] == "/"


def test_next_to_a_page_of_this_site_is_followed(server):
    http = httpx.Client(base_url=server.base_url)
    csrf = csrf_of(http)
    resp = http.post(
        "/login?next=/guidelines",
        data={"csrf_token": csrf, "annotator_id": "ann_a", "token": server.tokens["ann_a"]},
    )
    assert resp.status_code == 303 and resp.headers["location"] == "/guidelines"


# -- login throttling ----------------------------------------------------------------------------


def attempt_login(http: httpx.Client, who: str, token: str, **headers: str) -> int:
    return http.post(
        "/login",
        data={"csrf_token": csrf_of(http), "annotator_id": who, "token": token},
        headers=headers,
    ).status_code


def test_one_annotators_typos_throttle_only_that_id_at_that_address(tmp_path):
    """Everyone behind one address (SSH tunnel, proxy): ann_a's wrong tokens lock out nobody else.
    (A long first delay here, so the throttle holds for the whole test.)"""
    with start(tmp_path, "--login-delay", "60", "60") as srv:
        http = from_address(srv.base_url, "127.0.0.1")
        csrf = csrf_of(http)

        def attempt(i: int) -> int:
            return http.post(
                "/login", data={"csrf_token": csrf, "annotator_id": "ann_a", "token": f"guess{i}"}
            ).status_code

        t0 = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(attempt, range(240)))
        elapsed = time.perf_counter() - t0
        # Only the first ten are checked against a hash; the rest are refused unheard.
        assert codes.count(401) == 10 and codes.count(429) == 230, codes
        assert elapsed < 30
        # ann_a cannot sign in from this address for now, even with the right token ...
        right = {"csrf_token": csrf, "annotator_id": "ann_a", "token": srv.tokens["ann_a"]}
        refused = http.post("/login", data=right)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "Too many" in refused.text
        # ... but a colleague behind the same address signs in with their own token,
        assert attempt_login(http, "ann_b", srv.tokens["ann_b"]) == 303
        assert attempt_login(http, "boss", srv.tokens["boss"]) == 303
        # and ann_a can from another address.
        assert (
            attempt_login(from_address(srv.base_url, "127.0.0.2"), "ann_a", srv.tokens["ann_a"])
            == 303
        )


def test_guesses_at_one_id_from_many_addresses_are_limited_per_id(tmp_path):
    with start(tmp_path, "--login-limit", "3", "5", "100", "60", *LONG_DELAY) as srv:
        codes = []
        for address, tries in (("127.0.0.2", 4), ("127.0.0.3", 3)):
            http = from_address(srv.base_url, address)
            codes += [attempt_login(http, "ann_b", f"x{i}") for i in range(tries)]
        # 3 from the first address (4th: its (address, id) limit), 2 more from the second
        # (5 for the id in all).
        assert codes == [401, 401, 401, 429, 401, 401, 429]
        # The id's own delay holds back only addresses that failed with it: the owner signing
        # in from an address with no failure of its own is not locked out by the guesses.
        fresh = from_address(srv.base_url, "127.0.0.4")
        assert attempt_login(fresh, "ann_b", srv.tokens["ann_b"]) == 303
        # The other accounts are untouched, from any address.
        assert attempt_login(fresh, "ann_a", srv.tokens["ann_a"]) == 303
        assert (
            attempt_login(from_address(srv.base_url, "127.0.0.2"), "boss", srv.tokens["boss"])
            == 303
        )


def test_unknown_ids_share_one_ceiling_that_never_refuses_a_real_account(tmp_path):
    with start(tmp_path, "--login-limit", "3", "5", "4", "60") as srv:
        codes = [
            attempt_login(from_address(srv.base_url, f"127.0.1.{i}"), f"ghost_{i}", "x")
            for i in range(1, 7)
        ]
        assert codes == [401, 401, 401, 401, 429, 429]
        http = from_address(srv.base_url, "127.0.1.1")
        # A real id is still checked (a wrong token is a 401, not a 429) and signs in.
        assert attempt_login(http, "ann_a", "wrong") == 401
        assert attempt_login(http, "ann_a", srv.tokens["ann_a"]) == 303


def test_forwarded_for_is_ignored_unless_proxies_are_trusted(tmp_path):
    with start(tmp_path / "direct", "--login-limit", "2", "50", "100", "60", *LONG_DELAY) as srv:
        http = from_address(srv.base_url, "127.0.0.1")
        # A client cannot dodge its (address, id) limit by making up addresses.
        codes = [
            attempt_login(http, "ann_a", "x", **{"X-Forwarded-For": f"10.0.0.{i}"})
            for i in range(1, 4)
        ]
        assert codes == [401, 401, 429]


def test_behind_a_trusted_proxy_the_forwarded_client_address_is_counted(tmp_path):
    with start(
        tmp_path, "--login-limit", "2", "50", "100", "60", "--trusted-proxies", "1", *LONG_DELAY
    ) as srv:
        proxy = from_address(srv.base_url, "127.0.0.1")  # every request comes through the proxy
        alice = {"X-Forwarded-For": "10.0.0.1"}
        bob = {"X-Forwarded-For": "10.0.0.2"}
        assert [attempt_login(proxy, "ann_a", "x", **alice) for _ in range(3)] == [401, 401, 429]
        # The same id from another real client behind the proxy is not throttled.
        assert attempt_login(proxy, "ann_a", srv.tokens["ann_a"], **bob) == 303
        # With one trusted hop, only the address the proxy appended counts: a client-supplied
        # entry in front of it is not believed.
        spoofed = {"X-Forwarded-For": "10.9.9.9, 10.0.0.1"}
        assert attempt_login(proxy, "ann_a", srv.tokens["ann_a"], **spoofed) == 429


def test_successful_logins_do_not_use_up_the_limit(tmp_path):
    with start(tmp_path, "--login-limit", "2", "2", "2", "60") as srv:
        for _ in range(6):
            assert login(srv, "ann_a").page(1).status_code == 200


# -- tampered forms and time -------------------------------------------------------------------


def stored(server, annotator: str, item_id: str):
    con = sqlite3.connect(server.db)
    try:
        return con.execute(
            "SELECT " + ", ".join(f"s_{a}" for a in AXES) + ", active_ms, revisions "
            "FROM ratings WHERE annotator_id = ? AND item_id = ?",
            (annotator, item_id),
        ).fetchone()
    finally:
        con.close()


def test_a_field_for_an_unknown_axis_is_a_400_and_nothing_is_saved(server):
    c = login(server, "ann_a")
    slot = Store(server.db).queue("ann_a")[0]
    c.page(slot.position)
    data = {"csrf_token": c.csrf, "action": "save", "active_ms": "0", "score_flattery": "5"}
    for axis in AXES:
        data[f"score_{axis}"] = str(SCORES[axis])
        data[f"conf_{axis}"] = str(CONF[axis])
    resp = c.http.post(f"/item/{slot.position}", data=data)
    assert resp.status_code == 400
    assert "unknown axis" in resp.text and "flattery" in resp.text
    assert stored(server, "ann_a", slot.item_id) is None


def test_active_time_is_bounded_per_item_and_not_summed_over_resaves(server):
    c = login(server, "ann_b")
    slot = Store(server.db).queue("ann_b")[1]
    c.page(slot.position)
    # Skip visits count towards the item, but never beyond the per-item bound.
    for _ in range(3):
        assert c.submit(slot.position, {}, {}, action="skip", active_ms=10**9).status_code == 303
    assert c.submit(slot.position, SCORES, CONF, active_ms=10**9).status_code == 303
    first = stored(server, "ann_b", slot.item_id)
    assert first[4] == MAX_ACTIVE_MS_PER_ITEM and first[5] == 1
    # An edit changes the values, not the active time of the rating.
    assert c.submit(slot.position, dict(SCORES, social=1), CONF, active_ms=9000).status_code == 303
    edited = stored(server, "ann_b", slot.item_id)
    assert edited[0] == 1 and edited[4] == MAX_ACTIVE_MS_PER_ITEM and edited[5] == 2
    # Saving the same values again is not an edit.
    assert c.submit(slot.position, dict(SCORES, social=1), CONF, active_ms=5).status_code == 303
    assert stored(server, "ann_b", slot.item_id) == edited


# -- errors ------------------------------------------------------------------------------------


def test_an_internal_error_answers_a_styled_500_page_without_a_traceback(tmp_path):
    with start(tmp_path) as srv:
        slot = Store(srv.db).queue("ann_a")[0]
        con = sqlite3.connect(srv.db)
        con.execute("UPDATE items SET task = '{broken' WHERE id = ?", (slot.item_id,))
        con.commit()
        con.close()
        resp = login(srv, "ann_a").page(slot.position)
        assert resp.status_code == 500
        assert "Something went wrong" in resp.text and "app.css" in resp.text
        assert "Traceback" not in resp.text and "JSONDecodeError" not in resp.text
        assert "script-src 'self'" in resp.headers["content-security-policy"]


# -- export ------------------------------------------------------------------------------------


def test_export_works_next_to_unrelated_jsonl_files_but_still_refuses_real_clashes(
    server, tmp_path
):
    c = login(server, "ann_a")
    pos = Store(server.db).queue("ann_a")[-1].position
    assert c.submit(pos, SCORES, CONF).status_code == 303
    out = tmp_path / "raw"
    out.mkdir()
    # A task file, a log, a binary file and a folder that merely end in .jsonl.
    task = {"id": "t01", "user": "u", "response": "r", "context": []}
    (out / "tasks.jsonl").write_text(json.dumps(task) + "\n", encoding="utf-8")
    (out / "server-log.jsonl").write_text('{"id": "t01", "annotator_id": "ann_a", "event": 1}\n')
    (out / "dump.jsonl").write_bytes(b"\x1f\x8b\x08\x00\xff\xfe binary")
    (out / "folder.jsonl").mkdir()
    proc = annotate_cli("export", "--db", str(server.db), "--out-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    batch = out / "batch_001.jsonl"
    records = [json.loads(line) for line in batch.read_text().splitlines()]
    salt = rater_salt(Path(__file__).resolve().parents[1])
    assert records and {r["annotator_id"] for r in records} <= {
        pseudonym("ann_a", salt),
        pseudonym("ann_b", salt),
    }
    # A real batch holding the same (id, annotator) pairs is still a clash.
    clash = out / "old_round.jsonl"
    clash.write_text(batch.read_text(), encoding="utf-8")
    proc = annotate_cli("export", "--db", str(server.db), "--out-dir", str(out))
    assert proc.returncode == 2 and "already in old_round.jsonl" in proc.stderr


@pytest.mark.parametrize("position", ["123456789012345678901", "9223372036854775808", "2147483648"])
def test_an_out_of_range_item_number_is_a_404_not_a_500(server, position):
    c = login(server, "ann_a")
    resp = c.http.get(f"/item/{position}")
    assert resp.status_code == 404 and "Not found" in resp.text
    c.page(1)
    assert c.submit(int(position), {}, {}).status_code == 404
