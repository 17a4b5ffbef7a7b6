"""A planted multiple-choice model behind a real OpenAI-compatible HTTP server on 127.0.0.1, for
the format arms' tests: it knows which option texts are correct and answers the correct one with
a probability set by the position the option is shown at (a known position bias), lowered under
digit labels (a known label-format effect); asked for an incorrect option, it names the option
after the correct one. Its draw is hashed from the question (the line before the options): one
latent difficulty per question, shared by all its formats as a real model's would be, and the
same on every rerun."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# P(correct) when the correct option is shown at position 0, 1, 2, 3 (primacy bias)
POSITION = (0.9, 0.7, 0.5, 0.3)
DIGIT_DROP = 0.2  # less under labels 1-4
_OPTION = re.compile(r"^(\S)\. (.*)$")


def _uniform(prompt: str) -> float:
    return int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:8], "big") / 2**64


def planted_answer(prompt: str, correct: set[str]) -> str:
    """The planted model's answer to one prompt (the last block of ``X. text`` lines)."""
    lines = prompt.rstrip().splitlines()
    block: list[tuple[str, str]] = []
    for line in reversed(lines[:-1]):  # the last line is the answer cue
        match = _OPTION.match(line)
        if not match:
            break
        block.insert(0, (match.group(1), match.group(2)))
    question = lines[len(lines) - 2 - len(block)] if len(lines) > len(block) + 1 else ""
    labels = [label for label, _ in block]
    where = [i for i, (_, text) in enumerate(block) if text in correct]
    if not where:
        return "I do not know."
    gold = where[0]
    other = labels[(gold + 1) % len(labels)]
    if "NOT correct" in prompt:
        return f"Answer: {other}"
    p = POSITION[gold] - (DIGIT_DROP if labels[0] == "1" else 0.0)
    return f"Answer: {labels[gold] if _uniform(question) < p else other}"


class PlantedServer:
    """``with PlantedServer(correct_texts) as url:`` an OpenAI-compatible ``/v1`` on 127.0.0.1."""

    def __init__(self, correct: Sequence[str]) -> None:
        known = set(correct)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, body: dict) -> None:
                data = json.dumps(body).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "planted", "object": "model"}]})

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(size) or b"{}")
                if not self.path.endswith("/chat/completions"):  # no tokenizer, no completions
                    data = b'{"error": {"message": "not found"}}'
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                prompt = body["messages"][-1]["content"]
                answer = planted_answer(prompt, known)
                self._send(
                    {
                        "id": "planted",
                        "object": "chat.completion",
                        "model": "planted",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": answer},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 2},
                    }
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
