"""Real HTTP servers on 127.0.0.1 for the OpenAI backend's tests: a canned OpenAI-compatible
server (stdlib ``http.server``, run as its own process) that can answer 500s or 429s for a while,
answer slowly (or after a delay hashed from the prompt, so answers finish out of order), drop
the connection without answering, die after N answers, publish a context length and refuse longer prompts (HTTP 400),
refuse a request outright, tokenize (``/tokenize``: one id per UTF-8 byte) and echo token-id
prompts with log-probabilities (or, with ``no_echo``, answer completions without them, as
chat-only APIs and some proxies do); or act as a planted model that knows every clean prompt's
answer and fails once a prompt carries enough typos (``oracle``, ``oracle_answer``). Run
``python tests/inference_servers.py --help``."""

from __future__ import annotations

import argparse
import difflib
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


def canned_tokens(text: str, special: bool) -> list[int]:
    """The canned server's tokenizer: one id per UTF-8 byte, id 1 as BOS when ``special``
    (so a Japanese character is several byte tokens, as byte fallback makes it)."""
    return [1] * special + [2 + b for b in text.encode("utf-8")]


def canned_logprob(position: int, token: int) -> float:
    """The log-probability the canned server gives token ``token`` at ``position``."""
    return -((position * 7 + token) % 11) / 4 - 0.25


def _echo_completion(body: dict) -> dict:
    """``/v1/completions`` with ``echo`` over a token-id prompt: each prompt token with its
    canned log-probability (None for the first), tokens as ``token_id:<id>``; every text offset
    0, as byte-fallback tokens give (so nothing can be matched by offset)."""
    ids = list(body["prompt"])
    tokens = [f"token_id:{t}" for t in ids]
    values = [None] + [canned_logprob(i, t) for i, t in enumerate(ids) if i]
    # the prompt token is the top one at even positions, another token tops it at odd ones
    tops = [None] + [
        {tokens[i]: values[i], **({"token_id:0": 0.0} if i % 2 else {})} for i in range(1, len(ids))
    ]
    return {
        "object": "text_completion",
        "choices": [
            {
                "index": 0,
                "text": "",
                "finish_reason": "length",
                "logprobs": {
                    "tokens": [*tokens, "token_id:5"],
                    "token_logprobs": [*values, -1.0],
                    "top_logprobs": [*tops, {"token_id:5": -1.0}],
                    "text_offset": [0] * (len(ids) + 1),
                },
            }
        ],
        "usage": {"prompt_tokens": len(ids), "completion_tokens": 1},
    }


ORACLE_THRESHOLDS = (1, 2, 3, 5, 9)  # typos a planted example tolerates: fewer than this many


def oracle_tolerance(clean: str) -> int:
    """How many typo'd words the planted model reads through on this clean prompt (it fails at
    this many or more): one of ``ORACLE_THRESHOLDS``, hashed from the prompt."""
    digest = hashlib.sha256(clean.encode("utf-8")).digest()
    return ORACLE_THRESHOLDS[digest[0] % len(ORACLE_THRESHOLDS)]


def oracle_answer(prompt: str, oracle: list[list[str]]) -> str:
    """The planted model: ``oracle`` lists ``[clean prompt, right answer, wrong answer]``. A
    clean prompt gets its right answer; another prompt is matched to its nearest clean prompt
    (difflib) and gets the wrong answer when it differs from it in at least
    ``oracle_tolerance(clean)`` places (each typo'd word is one place), else the right one. So
    accuracy falls as the number of typo'd words grows, the same way for nested edits."""
    for clean, right, _wrong in oracle:
        if prompt == clean:
            return right
    best, changed = None, 0
    for entry in oracle:
        matcher = difflib.SequenceMatcher(None, entry[0], prompt, autojunk=False)
        if best is None or matcher.ratio() > best[0]:
            ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
            best, changed = (matcher.ratio(), entry), len(ops)
    if best is None:
        return canned_answer(prompt)
    clean, right, wrong = best[1]
    return wrong if changed >= oracle_tolerance(clean) else right


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
        max_model_len: int = 0,
        oracle: Path | None = None,
        no_echo: bool = False,
        jitter: float = 0.0,
        drop_first: int = 0,
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
                "--max-model-len",
                str(max_model_len),
                *(["--oracle", str(oracle)] if oracle else []),
                *(["--no-echo"] if no_echo else []),
                "--jitter",
                str(jitter),
                "--drop-first",
                str(drop_first),
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
    counts = {"seen": 0, "answered": 0, "dropped": 0}
    active: list[str] = []  # what is being answered now: chat prompts, or the path
    oracle = json.loads(Path(args.oracle).read_text("utf-8")) if args.oracle else None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers: clients reuse connections

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
            card = {"id": "canned", "object": "model"}
            if args.max_model_len:
                card["max_model_len"] = args.max_model_len  # as vLLM publishes it
            self._send(200, {"object": "list", "data": [card]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/tokenize":
                self._send(
                    200, {"tokens": canned_tokens(body["prompt"], body["add_special_tokens"])}
                )
                return
            with lock:
                counts["seen"] += 1
                failing = counts["seen"] <= args.fail_first
                dropping = counts["dropped"] < args.drop_first
                counts["dropped"] += dropping
            if dropping:  # the connection goes down with no answer, as a crashing proxy's
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if failing:
                self._send(args.status, {"error": "canned failure"}, {"Retry-After": "0"})
                return
            key = body["messages"][-1]["content"] if "messages" in body else self.path
            with lock:
                active.append(key)
                in_flight = sorted(active)
            try:
                self._answer(body, in_flight)
            finally:
                with lock:
                    active.remove(key)

        def _answer(self, body: dict, in_flight: list[str]) -> None:
            if args.delay:
                time.sleep(args.delay)
            if args.jitter:
                text = json.dumps(body, sort_keys=True).encode()
                time.sleep(args.jitter * hashlib.sha256(text).digest()[0] / 255)
            if self.path.endswith("/completions") and "prompt" in body:
                with lock, open(args.log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"body": body, "path": self.path}) + "\n")
                answer = _echo_completion(body)
                if args.no_echo:  # a completion, but no prompt log-probabilities
                    answer["choices"][0]["logprobs"] = None
                self._send(200, answer)
                return
            prompt = body["messages"][-1]["content"]
            if "REFUSE" in prompt:  # a request the server cannot take, whatever the retries
                self._send(400, {"error": {"message": "canned: unsupported request", "code": 400}})
                return
            if args.max_model_len and len(prompt.split()) > args.max_model_len:
                message = (
                    f"This model's maximum context length is {args.max_model_len} tokens. "
                    f"However, your request has {len(prompt.split())} input tokens."
                )
                self._send(400, {"error": {"message": message, "type": "BadRequestError"}})
                return
            if oracle is not None:
                content = oracle_answer(prompt, oracle)
            else:
                content = (
                    json.dumps(CANNED_JSON) if "response_format" in body else canned_answer(prompt)
                )
            record = {
                "body": body,
                "authorization": self.headers.get("Authorization"),
                "in_flight": in_flight,  # what was being answered when it arrived, itself too
            }
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

    class Server(ThreadingHTTPServer):
        request_queue_size = 256  # a client opening many connections at once is not refused
        daemon_threads = True

    Server(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--status", type=int, default=500)
    parser.add_argument("--die-after", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--max-model-len", type=int, default=0)
    parser.add_argument(
        "--oracle", help="JSON [[clean prompt, right, wrong], ...]: a planted model"
    )
    parser.add_argument("--no-echo", action="store_true")
    parser.add_argument("--jitter", type=float, default=0.0, help="up to this many s, hashed")
    parser.add_argument("--drop-first", type=int, default=0)
    _serve(parser.parse_args())
