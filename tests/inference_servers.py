"""Real HTTP servers on 127.0.0.1 for the OpenAI backend's tests: a canned OpenAI-compatible
server (stdlib ``http.server``, run as its own process) that can answer 500s or 429s for a while,
answer slowly, or die after N answers. Run ``python tests/inference_servers.py --help``."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

CANNED_JSON = {"label": "positive", "confidence": 0.5, "reason": "canned"}


def canned_answer(prompt: str) -> str:
    """What the canned server answers to a prompt without a schema."""
    return "echo " + hashlib.sha256(prompt.encode()).hexdigest()[:8]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CannedServer:
    """A canned server process; ``requests()`` reads what it received."""

    def __init__(
        self,
        log: Path,
        *,
        fail_first: int = 0,
        status: int = 500,
        die_after: int = 0,
        delay: float = 0.0,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--port",
                str(self.port),
                "--log",
                str(log),
                "--fail-first",
                str(fail_first),
                "--status",
                str(status),
                "--die-after",
                str(die_after),
                "--delay",
                str(delay),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 60  # a fresh interpreter can take seconds on a loaded machine
        while time.time() < deadline:
            try:
                if httpx.get(self.url + "/models", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("canned server did not start")

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def __enter__(self) -> CannedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serve(args: argparse.Namespace) -> None:
    lock = threading.Lock()
    counts = {"seen": 0, "answered": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": "canned", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                counts["seen"] += 1
                failing = counts["seen"] <= args.fail_first
            if failing:
                self._send(args.status, {"error": "canned failure"}, {"Retry-After": "0"})
                return
            if args.delay:
                time.sleep(args.delay)
            prompt = body["messages"][-1]["content"]
            content = (
                json.dumps(CANNED_JSON) if "response_format" in body else canned_answer(prompt)
            )
            record = {"body": body, "authorization": self.headers.get("Authorization")}
            with lock:
                if args.die_after and counts["answered"] >= args.die_after:
                    os._exit(1)  # die mid-run: the connection drops, nothing listens any more
                counts["answered"] += 1
                with open(args.log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")
            self._send(
                200,
                {
                    "id": "c",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(prompt.split()),
                        "completion_tokens": len(content.split()),
                    },
                },
            )

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--status", type=int, default=500)
    parser.add_argument("--die-after", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    _serve(parser.parse_args())
