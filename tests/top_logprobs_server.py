"""A planted OpenAI-compatible model on 127.0.0.1 that returns known first-token top-k
log-probabilities, for the first-token KL's tests.

Chat completions asked with ``logprobs: true, top_logprobs: k`` get the first k entries of
:data:`TYPO_TOP` when the user message holds the planted typo ``tpyo``, none at all when it holds
``silent`` (a server that ignores the request), else of :data:`CLEAN_TOP`. ``/v1/completions``
asked with ``logprobs: k`` answers the same way in the completions shape (a token -> logprob
object). Every request body is kept in ``bodies``.
"""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLEAN_TOP = [(" A", math.log(0.6)), (" B", math.log(0.3)), (" C", math.log(0.05))]
TYPO_TOP = [(" B", math.log(0.5)), (" A", math.log(0.2)), (" D", math.log(0.2))]


def planted_top(text: str) -> list[tuple[str, float]] | None:
    if "silent" in text:
        return None
    return TYPO_TOP if "tpyo" in text else CLEAN_TOP


class _Handler(BaseHTTPRequestHandler):
    bodies: list[dict]

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        if self.path.endswith("/completions") and "chat" not in self.path:
            top = planted_top(str(body["prompt"]))
            k = int(body.get("logprobs") or 0)
            choice = {"text": " A", "finish_reason": "stop"}
            if k and top is not None:
                choice["logprobs"] = {
                    "tokens": [top[0][0]],
                    "token_logprobs": [top[0][1]],
                    "top_logprobs": [dict(top[:k])],
                }
            return self._send({"choices": [choice], "usage": {}})
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        top = planted_top(user)
        choice = {"message": {"content": " A"}, "finish_reason": "stop"}
        if body.get("logprobs") and top is not None:
            k = int(body.get("top_logprobs") or 0)
            entries = [{"token": t, "logprob": v, "bytes": None} for t, v in top[:k]]
            choice["logprobs"] = {
                "content": [{"token": top[0][0], "logprob": top[0][1], "top_logprobs": entries}]
            }
        self._send({"choices": [choice], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})

    def _send(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class TopLogprobsServer:
    """The server in a thread: ``with TopLogprobsServer() as server:``; ``server.url`` is its
    ``/v1`` base URL and ``server.bodies`` the request bodies it received."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        handler = type("Handler", (_Handler,), {"bodies": self.bodies})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> TopLogprobsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
