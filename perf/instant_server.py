"""An instant OpenAI-compatible server for client benchmarks: answers at once, costs little CPU.

A raw asyncio protocol (uvloop when installed) parses HTTP/1.1 with keep-alive and pipelining,
and answers ``POST /v1/chat/completions`` with ``echo <sha256(prompt)[:8]>`` (the same answer
as the tests' canned server, so a client's outputs can be checked), ``POST /v1/completions``
with a one-token text completion, and ``GET /v1/models`` with one model card. ``--workers N``
runs N processes on one port (``SO_REUSEPORT``), so the server is not what a client benchmark
measures. ``--report`` prints, per process, the most connections it had open at once and the requests
it served when it is stopped (SIGTERM/SIGINT).

    python perf/instant_server.py --port 8123 [--workers 1] [--model instant]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import signal
import socket
import sys

MODELS = b""


def _answer(prompt: str) -> str:
    return "echo " + hashlib.sha256(prompt.encode()).hexdigest()[:8]


def _response(status: bytes, body: bytes) -> bytes:
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


def _chat(body: dict) -> bytes:
    prompt = body["messages"][-1]["content"]
    content = _answer(prompt)
    return json.dumps(
        {
            "id": "instant",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "instant"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 2},
        }
    ).encode()


def _completion(body: dict) -> bytes:
    return json.dumps(
        {
            "id": "instant",
            "object": "text_completion",
            "model": body.get("model", "instant"),
            "choices": [{"index": 0, "text": " A", "finish_reason": "length", "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        }
    ).encode()


class Stats:
    open = 0
    most_open = 0
    served = 0


class HTTP(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.buf = b""
        Stats.open += 1
        Stats.most_open = max(Stats.most_open, Stats.open)

    def connection_lost(self, exc: Exception | None) -> None:
        Stats.open -= 1

    def data_received(self, data: bytes) -> None:
        self.buf += data
        out = []
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = self.buf[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buf) < end + 4 + length:
                break
            raw = self.buf[end + 4 : end + 4 + length]
            self.buf = self.buf[end + 4 + length :]
            out.append(self._handle(head.split(b" ", 2), raw))
            Stats.served += 1
        if out:
            self.transport.write(b"".join(out))

    def _handle(self, request_line: list[bytes], raw: bytes) -> bytes:
        method, path = request_line[0], request_line[1]
        if method == b"GET" and path.endswith(b"/models"):
            return _response(b"200 OK", MODELS)
        try:
            body = json.loads(raw)
            if path.endswith(b"/chat/completions"):
                return _response(b"200 OK", _chat(body))
            if path.endswith(b"/completions"):
                return _response(b"200 OK", _completion(body))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return _response(b"400 Bad Request", json.dumps({"error": str(exc)}).encode())
        return _response(b"404 Not Found", b'{"error": "not found"}')


def _serve(sock: socket.socket, report: bool) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
        server = await loop.create_server(HTTP, sock=sock, backlog=4096)
        async with server:
            await stop
        if report:
            print(
                json.dumps({"most_connections": Stats.most_open, "served": Stats.served}),
                flush=True,
            )

    asyncio.run(main())


def _socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    return sock


def main() -> None:
    global MODELS
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--model", default="instant")
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    MODELS = json.dumps(
        {"object": "list", "data": [{"id": args.model, "object": "model", "max_model_len": 4096}]}
    ).encode()
    children = []
    for _ in range(args.workers - 1):
        pid = os.fork()
        if pid == 0:
            _serve(_socket(args.port), args.report)
            os._exit(0)
        children.append(pid)

    _serve(_socket(args.port), args.report)
    for pid in children:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
