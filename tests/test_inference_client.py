"""The OpenAI-compatible client's transport against real HTTP servers on 127.0.0.1: how many
requests it keeps in flight, the order of its answers, dropped connections, the cache in front of
it, and requests kept in flight across checkpoint chunks."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest

from evalpipe.inference.cache import GenerationCache
from evalpipe.inference.engine import make_engine
from evalpipe.inference.http_client import Client
from evalpipe.inference.types import GenerationRequest
from tests.inference_servers import CannedServer, canned_answer


def _cfg(url: str, **extra: object) -> dict:
    cfg = {
        "name": "canned",
        "backend": "openai",
        "base_urls": [url],
        "api_key_env": None,
        "max_concurrency": 4,
        "max_retries": 4,
        "retry_backoff_s": 0.01,
        "request_timeout_s": 60,  # generous: a timeout on a loaded machine would send twice
    }
    cfg.update(extra)
    return cfg


def _requests(n: int) -> list[GenerationRequest]:
    # zero-padded: the engine sends misses in prompt order, which is then request order
    return [GenerationRequest(f"prompt number {i:03d}", max_tokens=8) for i in range(n)]


def _prompt(record: dict) -> str:
    return record["body"]["messages"][-1]["content"]


@pytest.mark.parametrize("concurrency", [1, 8])
def test_the_server_sees_as_many_requests_in_flight_as_the_concurrency_and_no_more(
    tmp_path: Path, concurrency: int
) -> None:
    # every answer takes 0.4 s: the workers' requests pile up at the server
    with CannedServer(tmp_path / "log.jsonl", delay=0.4) as server:
        engine = make_engine(_cfg(server.url, max_concurrency=concurrency), cache_dir=None)
        out = engine.generate(_requests(3 * concurrency), progress=False)
        most = max(len(r["in_flight"]) for r in server.requests())
    assert [g.output for g in out] == [canned_answer(r.prompt) for r in _requests(len(out))]
    assert most == concurrency


def test_answers_come_back_in_request_order_whatever_order_they_finish_in(
    tmp_path: Path,
) -> None:
    reqs = _requests(24)
    with CannedServer(tmp_path / "log.jsonl", jitter=0.3) as server:
        runs = [
            make_engine(_cfg(server.url, max_concurrency=6), cache_dir=None).generate(
                reqs, progress=False
            )
            for _ in range(2)
        ]
        finished = [_prompt(r) for r in server.requests()]
    expected = [canned_answer(r.prompt) for r in reqs]
    assert [g.output for g in runs[0]] == [g.output for g in runs[1]] == expected
    # the server answered in another order than the requests were sent (prompt order)
    assert finished[:24] != sorted(finished[:24])


def test_a_dropped_connection_is_retried_and_every_prompt_answered_once(tmp_path: Path) -> None:
    reqs = _requests(6)
    with CannedServer(tmp_path / "log.jsonl", drop_first=3) as server:
        engine = make_engine(_cfg(server.url, max_concurrency=2), cache_dir=None)
        out = engine.generate(reqs, progress=False)
        answered = sorted(_prompt(r) for r in server.requests())
    assert [g.output for g in out] == [canned_answer(r.prompt) for r in reqs]
    assert answered == [r.prompt for r in reqs]  # each once: a drop had answered nothing
    assert 1 <= engine.backend.retries <= 3


def test_cached_prompts_are_not_requested_again(tmp_path: Path) -> None:
    first, more = _requests(10), _requests(15)
    with CannedServer(tmp_path / "log.jsonl") as server:
        make_engine(_cfg(server.url), cache_dir=tmp_path / "cache").generate(first, progress=False)
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        out = engine.generate(more, progress=False)
        sent = [_prompt(r) for r in server.requests()]
    assert sorted(sent[10:]) == [r.prompt for r in more[10:]]  # only the five new ones
    assert [g.from_cache for g in out] == [True] * 10 + [False] * 5
    assert [g.output for g in out] == [canned_answer(r.prompt) for r in more]
    assert len(GenerationCache(tmp_path / "cache")) == 15


def test_the_next_chunk_is_in_flight_while_a_chunk_finishes(tmp_path: Path) -> None:
    # chunks of 4 at concurrency 4: a worker done with chunk 0 starts on chunk 1 while chunk 0's
    # slower answers are still being made, and every chunk is checkpointed to the cache
    reqs = _requests(16)
    chunk_of = {r.prompt: i // 4 for i, r in enumerate(reqs)}
    with CannedServer(tmp_path / "log.jsonl", jitter=0.3) as server:
        engine = make_engine(
            _cfg(server.url, max_concurrency=4, checkpoint_every=4), cache_dir=tmp_path / "cache"
        )
        out = engine.generate(reqs, progress=False)
        records = server.requests()
    assert [g.output for g in out] == [canned_answer(r.prompt) for r in reqs]
    overlapping = [
        r
        for r in records
        if any(chunk_of[p] < chunk_of[_prompt(r)] for p in r["in_flight"] if p in chunk_of)
    ]
    assert overlapping, "no request of a later chunk arrived while an earlier one was answered"
    assert max(len(r["in_flight"]) for r in records) <= 4
    assert len(list((tmp_path / "cache").glob("seg-*.parquet"))) >= 1
    assert len(GenerationCache(tmp_path / "cache")) == 16


def test_replies_in_chunks_or_ended_by_the_connection_are_read_whole() -> None:
    # llama.cpp-style proxies and HTTP/1.0 servers frame replies these two other ways
    replies = [
        b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"a": 1}',
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        b'3\r\n{"a\r\n5\r\n": 2}\r\n0\r\n\r\n',
    ]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(2)
        port = listener.getsockname()[1]

        def serve() -> None:
            for reply in replies:
                conn, _ = listener.accept()
                with conn:
                    conn.recv(65536)
                    conn.sendall(reply)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()

        async def ask() -> list[tuple[int, object]]:
            client = Client({}, timeout_s=30)
            try:
                out = []
                for _ in replies:
                    reply = await client.request("POST", f"http://127.0.0.1:{port}/v1/x", b"{}")
                    out.append((reply.status, reply.json()))
                return out
            finally:
                client.close()

        assert asyncio.run(ask()) == [(200, {"a": 1}), (200, {"a": 2})]
        thread.join(timeout=10)
